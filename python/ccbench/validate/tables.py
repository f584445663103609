"""The grid's results as rows (terminal and Markdown), CSV and JSON."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

from .judge import (
    COMPLETION_TOLERANCE,
    GOODPUT_TOLERANCE,
    RETRANSMIT_FACTOR,
    RETRANSMIT_FLOOR,
    RTT_TOLERANCE,
    RWND_LIMITED_POINTS,
    Check,
    CellResult,
)
from .runner import BenchPoint

HEADERS = (
    "scenario",
    "goodput Mbit/s sim / kernel",
    "RTT mean ms",
    "completion s",
    "retransmits",
    "window-limited %",
    "emulator",
    "verdict",
)
FIGURES = ("goodput", "rtt_mean", "completion", "retransmits", "rwnd_limited")
FORMATS: dict[str, Callable[[Optional[float]], str]] = {
    "goodput": lambda x: "-" if x is None else f"{x / 1e6:.2f}",
    "rtt_mean": lambda x: "-" if x is None or math.isnan(x) else f"{x:.1f}",
    "completion": lambda x: "-" if x is None else f"{x:.2f}",
    "retransmits": lambda x: "-" if x is None else f"{x:.0f}",
    "rwnd_limited": lambda x: "-" if x is None else f"{x:.1f}",
    "udp_delivered": lambda x: "-" if x is None else f"UDP {x / 1e6:.2f}",
    "fct_p50": lambda x: "-" if x is None else f"FCT p50 {x:.0f} ms",
    "fct_p99": lambda x: "-" if x is None else f"FCT p99 {x:.0f} ms",
}
# The figures each column shows: a UDP flow's rate beside the goodputs, arrivals' FCTs
# beside completion times.
SHOWN_WITH = {"goodput": ("goodput", "udp_delivered"), "completion": ("completion", "fct_p50", "fct_p99")}


def tolerances_line() -> str:
    return (
        f"goodput within {GOODPUT_TOLERANCE:.0%} (of capacity where loss or sharing makes a flow's goodput "
        f"small), mean RTT within {RTT_TOLERANCE:.0%}, completion and arrivals' median and p99 FCT within "
        f"{COMPLETION_TOLERANCE:.0%}, "
        f"retransmissions within a factor {RETRANSMIT_FACTOR:g} or both under {RETRANSMIT_FLOOR:.1%} of "
        f"packets, receive-window-limited time within {RWND_LIMITED_POINTS:g} points of the run; or inside "
        "the kernel's spread"
    )


def check_text(c: Check) -> str:
    fmt = FORMATS[c.figure]
    k = c.kernel
    spread = "" if k.low is None or k.low == k.high else f" [{fmt(k.low)}–{fmt(k.high)}]"
    ratio = "" if c.ratio is None else f" ({c.ratio:.2f})"
    return f"{fmt(c.sim)} / {fmt(k.median)}{spread}{ratio} {'✓' if c.ok else '✗'}"


def _column(r: CellResult, figure: str) -> str:
    shown = SHOWN_WITH.get(figure, (figure,))
    return "; ".join(check_text(c) for c in r.checks if c.figure in shown)


def _emu(r: CellResult) -> str:
    if r.emulator_ratio is None:
        return "-"
    return f"{100 * r.emulator_ratio:.1f}%" + (" (short)" if r.emulator_flagged else "")


def ordered(results: list[CellResult]) -> list[CellResult]:
    """Failing cells first, then the others in grid order."""
    return sorted(results, key=lambda r: {"FAIL": 0, "testbed": 1, "pass": 2}.get(r.verdict, 3))


def table_rows(results: list[CellResult]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for r in results:
        if not (r.sim.available and r.kernel.available):
            missing = r.sim.reason if not r.sim.available else r.kernel.reason
            rows.append((r.cell.name, missing, "", "", "", "", _emu(r), r.verdict))
            continue
        rows.append((r.cell.name, *(_column(r, f) for f in FIGURES), _emu(r), r.verdict))
    return rows


def markdown(results: list[CellResult], bench: list[BenchPoint]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(results)]
    if bench:
        lines += [
            "",
            "| emulator at | delivered / configured | lateness p50 µs | lateness p99 µs |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {b.rate} | {'-' if b.delivered_rate_ratio is None else f'{100 * b.delivered_rate_ratio:.2f}%'} "
            f"| {b.lateness_p50_us:.0f} | {b.lateness_p99_us:.0f} |"
            for b in bench
        ]
    return "\n".join(lines) + "\n"


CSV_COLUMNS = (
    "family",
    "cell",
    "verdict",
    "figure",
    "flow",
    "sim",
    "kernel_median",
    "kernel_low",
    "kernel_high",
    "ratio",
    "ok",
    "emulator_delivered_ratio",
    "note",
)


def _csv_rows(r: CellResult) -> list[list[Any]]:
    head = [r.cell.family, r.cell.name, r.verdict]
    if not r.checks:
        note = r.sim.reason if not r.sim.available else r.kernel.reason
        return [head + [None] * 8 + [r.emulator_ratio, note]]
    return [
        head
        + [c.figure, c.flow, c.sim, c.kernel.median, c.kernel.low, c.kernel.high, c.ratio, c.ok, r.emulator_ratio, ""]
        for c in r.checks
    ]


def to_json(results: list[CellResult], bench: list[BenchPoint], meta: dict[str, Any]) -> dict[str, Any]:
    return {
        **meta,
        "tolerances": {
            "goodput": GOODPUT_TOLERANCE,
            "rtt_mean": RTT_TOLERANCE,
            "completion": COMPLETION_TOLERANCE,
            "retransmit_factor": RETRANSMIT_FACTOR,
            "retransmit_floor": RETRANSMIT_FLOOR,
            "rwnd_limited_points": RWND_LIMITED_POINTS,
        },
        "cells": [
            {
                "family": r.cell.family,
                "name": r.cell.name,
                "axes": dict(r.cell.axes),
                "scenario": r.cell.doc,
                "goodput_judged": r.cell.goodput,
                "verdict": r.verdict,
                "checks": [{**asdict(c), "label": c.label} for c in r.checks],
                "sim": asdict(r.sim),
                "kernel": asdict(r.kernel),
                "emulator_delivered_ratio": r.emulator_ratio,
                "emulator_flag_short": r.emulator_flagged,
            }
            for r in results
        ],
        "emulator_benchmark": [asdict(b) for b in bench],
    }


def write(out: Path, results: list[CellResult], bench: list[BenchPoint], meta: dict[str, Any]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "validate.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in results:
            w.writerows(_csv_rows(r))
    doc = to_json(results, bench, meta)
    (out / "validate.json").write_text(json.dumps(doc, indent=1, allow_nan=False, default=_json_default) + "\n")
    (out / "validate.md").write_text(markdown(ordered(results), bench))
    return [out / "validate.csv", out / "validate.json", out / "validate.md"]


def _json_default(x: Any) -> Any:
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")
