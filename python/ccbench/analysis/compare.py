"""Algorithms side by side: which conditions a sweep varied, per-algorithm means over
repetitions, and the ratio of two algorithms' goodput at each point."""

from __future__ import annotations

import math
import re
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from .frames import ARRIVAL_METRICS, CONDITIONS, RUN_METRICS, UPLINK_METRICS
from .stats import aggregate

# Point keys that the derived condition columns already describe.
_MAPPED = re.compile(
    r"^(link\.(rate|rtt|buffer|loss)|flows\[\d+\]\.(cca|count)|arrivals\[\d+\]\.(cca|load)|seed|host\..*|cpu\..*)$"
)
_IDENTITY = {"run_id", "sweep", "repetition", "seed", "engine", "cca", "cca_mix", "duration_s"}


def point_columns(runs: pd.DataFrame) -> list[str]:
    """Swept keys that no condition column covers (e.g. ``tcp.mss``)."""
    return [c for c in runs.columns if "." in c and not _MAPPED.match(c)]


def dimensions(runs: pd.DataFrame) -> list[str]:
    """The conditions that vary across ``runs``, in :data:`CONDITIONS` order, then any
    other swept keys. Of buffer in BDP and in KB, the one with fewer distinct values
    is kept: that is the one the sweep set (the other follows from rate and RTT)."""
    varying = [c for c in (*CONDITIONS, *point_columns(runs)) if c in runs.columns and runs[c].nunique(dropna=True) > 1]
    if "buffer_bdp" in varying and "buffer_kb" in varying:
        drop = "buffer_kb" if _distinct(runs, "buffer_bdp") <= _distinct(runs, "buffer_kb") else "buffer_bdp"
        varying.remove(drop)
    return varying


def _distinct(runs: pd.DataFrame, column: str) -> int:
    # Rounded so that 0.5 BDP computed from different rates counts once.
    return int(pd.Series(np.round(runs[column].to_numpy(dtype=float), 6)).nunique())


def group_keys(runs: pd.DataFrame) -> list[str]:
    """Every condition (varying or not) plus the algorithm: what makes runs repetitions
    of each other."""
    return [c for c in (*CONDITIONS, *point_columns(runs), "cca", "cca_mix") if c in runs.columns]


def algorithm_table(runs: pd.DataFrame, metrics: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """Means and 95% intervals over repetitions, one row per point and algorithm mix."""
    if runs.empty:
        return pd.DataFrame()
    metrics = [m for m in (metrics or (*RUN_METRICS, *UPLINK_METRICS, *ARRIVAL_METRICS)) if m in runs.columns]
    return aggregate(runs, group_keys(runs), metrics)


def goodput_ratio(
    runs: pd.DataFrame, numerator: str = "bbr", denominator: str = "cubic", metric: str = "goodput_mbps"
) -> pd.DataFrame:
    """Per point where both algorithms ran alone (one algorithm per run): the mean of
    ``metric`` for each and their ratio ``ratio`` (numerator / denominator)."""
    single = runs[runs["cca"].isin([numerator, denominator])] if "cca" in runs else runs.iloc[0:0]
    if single.empty:
        return pd.DataFrame()
    # Keys never set (NaN everywhere, e.g. no CPU share) would drop every row of the pivot.
    keys = [c for c in group_keys(single) if c not in ("cca", "cca_mix") and single[c].notna().any()]
    table = aggregate(single, [*keys, "cca"], [metric])
    wide = table.pivot_table(index=keys, columns="cca", values=f"{metric}_mean", dropna=False)
    if numerator not in wide or denominator not in wide:
        return pd.DataFrame()
    out = wide[[numerator, denominator]].reset_index()
    out = out.dropna(subset=[numerator, denominator])
    den = out[denominator].to_numpy(dtype=float)
    num = out[numerator].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(den > 0, num / den, math.nan)
    out.columns.name = None
    return out.reset_index(drop=True)
