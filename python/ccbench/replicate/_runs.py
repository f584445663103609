"""Shared by the replications of the CPU studies: run named sweep plans into the store,
and reduce their records to one row per run with the swept values as columns."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from rich.console import Console

from .. import engines
from ..analysis.stats import mean_ci
from .compare import Finding, print_comparison, save_comparison


def execute_plans(
    plans: Mapping[str, dict[str, Any]],
    store: Any,
    workers: Optional[int],
    console: Console,
    label: str,
    keep_series: bool = False,
    engine: str = engines.DEFAULT,
) -> dict[str, list[Any]]:
    """Run each plan (a TOML-shaped document with a ``[sweep]`` table) through the sweep
    executor on ``engine``; returns the records by plan name."""
    from ..sweep import execute, plan_from_dict

    records: dict[str, list[Any]] = {}
    for part, doc in plans.items():
        plan = plan_from_dict(doc, default_name=doc["sweep"]["name"], engine=engine)
        console.print(f"{label}, {part}: {plan.point_count} points x {plan.repetitions} repetitions", markup=False)
        records[part] = execute(
            plan, store, engine=engine, workers=workers, progress=console.is_terminal, keep_series=keep_series
        )
    return records


def conclude(
    findings: Sequence[Finding],
    console: Console,
    out: Path,
    title: str,
    note: str,
    write_report: Callable[[Path], Path],
) -> None:
    """Print the comparison and the note; write it (CSV, Markdown) and the report."""
    print_comparison(findings, console, title)
    console.print(note, markup=False)
    out.mkdir(parents=True, exist_ok=True)
    written = save_comparison(findings, out)
    written.append(write_report(out))
    console.print(f"wrote {', '.join(str(p) for p in written)} (figures beside the report)", markup=False)


def runs(records: Iterable[Any]) -> pd.DataFrame:
    """One row per run: the swept values (dotted keys as columns), the flows' algorithms,
    the aggregate goodput of all flows, their mean RTT, retransmissions, the host
    CPU's busy fraction, and the flows' mean share of the run spent waiting for the
    send buffer."""
    rows = []
    for r in records:
        flows = r.summary["flows"]
        host = r.summary.get("host") or {}
        rows.append(
            {
                **r.point,
                "repetition": r.repetition,
                "ccas": ",".join(str(f["cca"]) for f in flows),
                "goodput_mbps": sum(f["goodput_bps"] for f in flows) / 1e6,
                "rtt_ms": float(np.mean([f["rtt_ms"]["mean"] for f in flows])),
                "retransmits": sum(f["retransmits"] for f in flows),
                "cpu_busy": host.get("busy_fraction", math.nan),
                "sndbuf_limited": float(np.mean([f.get("sndbuf_limited_ms", 0.0) for f in flows]))
                / (1e3 * r.summary["duration_s"]),
            }
        )
    return pd.DataFrame(rows)


def means(frame: pd.DataFrame, by: Sequence[str], metric: str = "goodput_mbps") -> pd.DataFrame:
    """Mean and 95% confidence half-width of ``metric`` per combination of ``by``."""
    out = []
    for key, group in frame.groupby(list(by), sort=True):
        mean, ci = mean_ci(group[metric])
        out.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "mean": mean, "ci": ci})
    return pd.DataFrame(out)


def value(table: pd.DataFrame, **where: Any) -> float:
    """The ``mean`` of the one row matching ``where`` (NaN if none)."""
    sel = table
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return float(sel["mean"].iloc[0]) if len(sel) else math.nan


def line(ax: Axes, table: pd.DataFrame, x: str, label: str, color: str, marker: str = "o", ls: str = "-") -> None:
    """One mean line with 95% CI error bars."""
    t = table.sort_values(x)
    err = t["ci"].to_numpy()
    ax.errorbar(
        t[x],
        t["mean"],
        yerr=np.where(np.isfinite(err), err, 0.0),
        label=label,
        color=color,
        marker=marker,
        ms=4,
        lw=1.2,
        ls=ls,
        capsize=2,
    )


def mbps(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.0f} Mbit/s" if x >= 20 else f"{x:.1f} Mbit/s"


def pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:+.0f}%"
