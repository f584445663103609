"""``ccbench validate``: the simulator against the real kernel, scenario by scenario.

Each cell of a grid (rate x RTT x buffer x algorithm, one bulk flow) runs on both
engines with repetitions. The table puts the engines side by side: goodput, mean and
p95 RTT, retransmissions (each the median over the repetitions), their ratios
(simulator / kernel) and a verdict against the tolerances below, plus the emulator's
delivered-capacity figure for the kernel runs.
Both engines run the same scenario with the kernel's tick rate (``tcp.hz``).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from . import _core
from .kernel import host
from .kernel.host import KernelEngineError, KernelRunError
from .kernel.scenario import from_dict
from .scenario import Scenario

# Tolerances (simulator relative to kernel).
GOODPUT_TOLERANCE = 0.10
RTT_TOLERANCE = 0.20
RETRANSMIT_FACTOR = 2.0
RETRANSMIT_FLOOR = 0.001  # both below 0.1% of packets sent: equal enough

DEFAULT_RATES = ("20Mbit", "50Mbit")
DEFAULT_RTTS = ("10ms", "40ms")
DEFAULT_BUFFERS = (0.5, 2.0, 8.0)
DEFAULT_CCAS = ("bbr", "cubic")
DEFAULT_DURATION = "20s"
DEFAULT_REPS = 3
QUICK = dict(rates=("20Mbit",), rtts=("20ms",), buffers=(0.5, 2.0), ccas=("bbr", "cubic"), duration="5s", reps=1)
BENCH_RATES = ("20Mbit", "50Mbit", "100Mbit")


@dataclass(frozen=True)
class Cell:
    rate: str
    rtt: str
    buffer_bdp: float
    cca: str

    @property
    def name(self) -> str:
        return f"{self.cca} {self.rate} {self.rtt} {self.buffer_bdp:g}bdp"

    @property
    def slug(self) -> str:
        return self.name.replace(" ", "-")

    def scenario(self, duration: str, seed: int, hz: Optional[int]) -> Scenario:
        doc: dict[str, Any] = {
            "seed": seed,
            "duration": duration,
            "link": {"rate": self.rate, "rtt": self.rtt, "buffer": f"{self.buffer_bdp:g}bdp"},
            "flows": [{"cca": self.cca}],
        }
        if hz is not None:
            doc["tcp"] = {"hz": hz}
        return from_dict(doc)


def grid(rates: tuple[str, ...] = DEFAULT_RATES, rtts: tuple[str, ...] = DEFAULT_RTTS,
         buffers: tuple[float, ...] = DEFAULT_BUFFERS, ccas: tuple[str, ...] = DEFAULT_CCAS) -> list[Cell]:
    return [Cell(r, t, b, c) for c, r, t, b in itertools.product(ccas, rates, rtts, buffers)]


@dataclass
class EngineFigures:
    """Medians over the repetitions of one engine (None: not run)."""

    available: bool
    reason: str = ""
    goodput_bps: Optional[float] = None
    rtt_mean_ms: Optional[float] = None
    rtt_p95_ms: Optional[float] = None
    retransmits: Optional[float] = None
    retransmit_fraction: Optional[float] = None
    runs: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CellResult:
    cell: Cell
    sim: EngineFigures
    kernel: EngineFigures
    emulator_ratio: Optional[float] = None
    emulator_flagged: bool = False
    checks: dict[str, Optional[bool]] = field(default_factory=dict)
    ratios: dict[str, Optional[float]] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        if not (self.sim.available and self.kernel.available):
            return "n/a"
        return "pass" if all(v is True for v in self.checks.values()) else "FAIL"


def _flow_figures(summary: dict[str, Any], mss: int) -> dict[str, Any]:
    f = summary["flows"][0]
    sent = f.get("sent_bytes") or f["delivered_bytes"]
    packets = max(1.0, sent / mss)
    return {
        "goodput_bps": f["goodput_bps"],
        "rtt_mean_ms": f["rtt_ms"]["mean"],
        "rtt_p95_ms": f["rtt_ms"]["p95"],
        "retransmits": f["retransmits"],
        "retransmit_fraction": f["retransmits"] / packets,
        "dropped": f["dropped"],
        "rto_count": f.get("rto_count"),
        "emulator_ratio": (summary.get("emulator") or {}).get("delivered_rate_ratio"),
        "emulator_flag_short": (summary.get("emulator") or {}).get("flag_short"),
        "rwnd_limited_ms": f.get("rwnd_limited_ms"),
        "sndbuf_limited_ms": f.get("sndbuf_limited_ms"),
        "notes": summary.get("notes", []),
    }


def _medians(runs: list[dict[str, Any]]) -> EngineFigures:
    """Medians over the repetitions: one disturbed kernel run does not decide a cell
    (every repetition is kept in ``runs``)."""
    def median(key: str) -> float:
        return float(statistics.median(r[key] for r in runs))

    return EngineFigures(True, "", median("goodput_bps"), median("rtt_mean_ms"), median("rtt_p95_ms"),
                         median("retransmits"), median("retransmit_fraction"), runs)


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def compare(cell: Cell, sim: EngineFigures, kernel: EngineFigures) -> CellResult:
    res = CellResult(cell, sim, kernel)
    if kernel.available:
        ratios = [r["emulator_ratio"] for r in kernel.runs if r["emulator_ratio"] is not None]
        res.emulator_ratio = min(ratios) if ratios else None
        res.emulator_flagged = any(r["emulator_flag_short"] for r in kernel.runs)
    if not (sim.available and kernel.available):
        return res
    g = _ratio(sim.goodput_bps, kernel.goodput_bps)
    t = _ratio(sim.rtt_mean_ms, kernel.rtt_mean_ms)
    p = _ratio(sim.rtt_p95_ms, kernel.rtt_p95_ms)
    x = _ratio(sim.retransmits, kernel.retransmits)
    res.ratios = {"goodput": g, "rtt_mean": t, "rtt_p95": p, "retransmits": x}
    both_low = (sim.retransmit_fraction or 0.0) < RETRANSMIT_FLOOR and (kernel.retransmit_fraction or 0.0) < RETRANSMIT_FLOOR
    res.checks = {
        "goodput": g is not None and abs(g - 1) <= GOODPUT_TOLERANCE,
        "rtt_mean": t is not None and abs(t - 1) <= RTT_TOLERANCE,
        "retransmits": both_low or (x is not None and 1 / RETRANSMIT_FACTOR <= x <= RETRANSMIT_FACTOR),
    }
    return res


Progress = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_cell(cell: Cell, duration: str, reps: int, progress: Progress = _stderr,
             keep: Optional[Path] = None) -> CellResult:
    """Run ``cell`` ``reps`` times on each engine (seeds 1, 2, ...). With ``keep``, every
    run's files are written to ``keep/<cell>/<engine>-seed<N>``."""
    from .engines import kernel as kernel_engine
    from .engines import sim as sim_engine

    hz = host.kernel_hz()
    sim_runs: list[dict[str, Any]] = []
    kernel_runs: list[dict[str, Any]] = []
    sim_reason = kernel_reason = ""
    kernel_failures: list[str] = []
    if cell.cca not in _core.algorithms():
        sim_reason = "not available in the simulator"
    for rep in range(reps):
        sc = cell.scenario(duration, seed=rep + 1, hz=hz)
        mss = sc.tcp.mss
        if not sim_reason:
            result = sim_engine.run(sc)
            sim_runs.append(_flow_figures(result.summary, mss))
            if keep is not None:
                result.save(keep / cell.slug / f"sim-seed{rep + 1}")
        if not kernel_reason:
            try:
                result = kernel_engine.run(sc)
            except KernelEngineError as e:
                kernel_reason = f"not available in the kernel engine: {e.message}"
            except KernelRunError as e:
                progress(f"  {cell.name} rep {rep + 1}/{reps}: kernel run failed: {e}")
                kernel_failures.append(str(e))
                continue
            else:
                kernel_runs.append(_flow_figures(result.summary, mss))
                if keep is not None:
                    result.save(keep / cell.slug / f"kernel-seed{rep + 1}")
        k = kernel_runs[-1] if kernel_runs and not kernel_reason else None
        progress(f"  {cell.name} rep {rep + 1}/{reps}: "
                 + (f"kernel {k['goodput_bps'] / 1e6:.2f} Mbit/s, RTT {k['rtt_mean_ms']:.1f} ms, "
                    f"{k['retransmits']} retx" if k else kernel_reason or "kernel not run"))
    sim = _medians(sim_runs) if sim_runs else EngineFigures(False, sim_reason)
    if not kernel_runs and not kernel_reason:
        kernel_reason = "every kernel run failed: " + (kernel_failures[-1] if kernel_failures else "?")
    kern = _medians(kernel_runs) if kernel_runs else EngineFigures(False, kernel_reason)
    return compare(cell, sim, kern)


@dataclass
class BenchPoint:
    rate: str
    delivered_rate_ratio: Optional[float]
    lateness_p50_us: float
    lateness_p99_us: float
    busy_s: float
    flag_short: bool


def emulator_benchmark(rates: tuple[str, ...] = BENCH_RATES, duration: str = "4s",
                       progress: Progress = _stderr) -> list[BenchPoint]:
    """Delivered capacity of the emulator at each rate, with a saturating Cubic flow
    over a 2-BDP buffer (the link is busy nearly all the time)."""
    from .engines import kernel as kernel_engine

    points = []
    for rate in rates:
        sc = Cell(rate, "20ms", 2.0, "cubic").scenario(duration, seed=1, hz=host.kernel_hz())
        check = kernel_engine.run(sc).summary["emulator"]
        p = BenchPoint(rate, check["delivered_rate_ratio"], check["lateness_forward_us"]["p50"],
                       check["lateness_forward_us"]["p99"], check["busy_s"], check["flag_short"])
        ratio = "-" if p.delivered_rate_ratio is None else f"{100 * p.delivered_rate_ratio:.2f}%"
        progress(f"  emulator at {rate}: delivered {ratio} of the configured rate, "
                 f"lateness p50 {p.lateness_p50_us:.0f} µs, p99 {p.lateness_p99_us:.0f} µs")
        points.append(p)
    return points


# Output


def _mbit(x: Optional[float]) -> str:
    return "-" if x is None else f"{x / 1e6:.2f}"


def _num(x: Optional[float], digits: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _pair(a: Optional[float], b: Optional[float], fmt: Callable[[Optional[float]], str], ratio: Optional[float],
          ok: Optional[bool]) -> str:
    mark = "" if ok is None else (" ✓" if ok else " ✗")
    r = "" if ratio is None else f" ({ratio:.2f})"
    return f"{fmt(a)} / {fmt(b)}{r}{mark}"


HEADERS = ("scenario", "goodput Mbit/s sim / kernel", "RTT mean ms", "RTT p95 ms", "retransmits",
           "emulator", "verdict")


def table_rows(results: list[CellResult]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for r in results:
        s, k = r.sim, r.kernel
        if not s.available or not k.available:
            missing = s.reason if not s.available else k.reason
            rows.append((r.cell.name, missing, "", "", "", _emu(r), r.verdict))
            continue
        rows.append((
            r.cell.name,
            _pair(s.goodput_bps, k.goodput_bps, _mbit, r.ratios.get("goodput"), r.checks.get("goodput")),
            _pair(s.rtt_mean_ms, k.rtt_mean_ms, _num, r.ratios.get("rtt_mean"), r.checks.get("rtt_mean")),
            _pair(s.rtt_p95_ms, k.rtt_p95_ms, _num, r.ratios.get("rtt_p95"), None),
            _pair(s.retransmits, k.retransmits, lambda v: _num(v, 0), r.ratios.get("retransmits"),
                  r.checks.get("retransmits")),
            _emu(r),
            r.verdict,
        ))
    return rows


def _emu(r: CellResult) -> str:
    if r.emulator_ratio is None:
        return "-"
    return f"{100 * r.emulator_ratio:.1f}%" + (" (short)" if r.emulator_flagged else "")


def markdown(results: list[CellResult], bench: list[BenchPoint]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(results)]
    if bench:
        lines += ["", "| emulator at | delivered / configured | lateness p50 µs | lateness p99 µs |", "|---|---|---|---|"]
        lines += [f"| {b.rate} | {'-' if b.delivered_rate_ratio is None else f'{100 * b.delivered_rate_ratio:.2f}%'} "
                  f"| {b.lateness_p50_us:.0f} | {b.lateness_p99_us:.0f} |" for b in bench]
    return "\n".join(lines) + "\n"


def write(out: Path, results: list[CellResult], bench: list[BenchPoint], meta: dict[str, Any]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "validate.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cca", "rate", "rtt", "buffer_bdp", "verdict",
                    "sim_goodput_bps", "kernel_goodput_bps", "goodput_ratio", "goodput_ok",
                    "sim_rtt_mean_ms", "kernel_rtt_mean_ms", "rtt_mean_ratio", "rtt_mean_ok",
                    "sim_rtt_p95_ms", "kernel_rtt_p95_ms", "rtt_p95_ratio",
                    "sim_retransmits", "kernel_retransmits", "retransmits_ratio", "retransmits_ok",
                    "sim_retransmit_fraction", "kernel_retransmit_fraction",
                    "emulator_delivered_ratio", "emulator_flag_short", "sim_note", "kernel_note"])
        for r in results:
            c, s, k = r.cell, r.sim, r.kernel
            w.writerow([c.cca, c.rate, c.rtt, c.buffer_bdp, r.verdict,
                        s.goodput_bps, k.goodput_bps, r.ratios.get("goodput"), r.checks.get("goodput"),
                        s.rtt_mean_ms, k.rtt_mean_ms, r.ratios.get("rtt_mean"), r.checks.get("rtt_mean"),
                        s.rtt_p95_ms, k.rtt_p95_ms, r.ratios.get("rtt_p95"),
                        s.retransmits, k.retransmits, r.ratios.get("retransmits"), r.checks.get("retransmits"),
                        s.retransmit_fraction, k.retransmit_fraction,
                        r.emulator_ratio, r.emulator_flagged, s.reason, k.reason])
    doc = {
        **meta,
        "tolerances": {"goodput": GOODPUT_TOLERANCE, "rtt_mean": RTT_TOLERANCE,
                       "retransmit_factor": RETRANSMIT_FACTOR, "retransmit_floor": RETRANSMIT_FLOOR},
        "cells": [{"cell": asdict(r.cell), "verdict": r.verdict, "sim": asdict(r.sim), "kernel": asdict(r.kernel),
                   "ratios": r.ratios, "checks": r.checks, "emulator_delivered_ratio": r.emulator_ratio,
                   "emulator_flag_short": r.emulator_flagged} for r in results],
        "emulator_benchmark": [asdict(b) for b in bench],
    }
    (out / "validate.json").write_text(json.dumps(doc, indent=1, allow_nan=False, default=_json_default) + "\n")
    (out / "validate.md").write_text(markdown(results, bench))
    return [out / "validate.csv", out / "validate.json", out / "validate.md"]


def _json_default(x: Any) -> Any:
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")
