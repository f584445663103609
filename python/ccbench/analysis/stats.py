"""Means with Student-t confidence intervals, per group of repetitions."""

from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95


def mean_ci(values: Iterable[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """(mean, half-width) of a Student-t interval; half-width NaN with fewer than two
    finite values, and 0 when they are all equal."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        return mean, 0.0
    t = float(stats.t.ppf(0.5 + confidence / 2, len(x) - 1))
    return mean, t * sd / math.sqrt(len(x))


def aggregate(
    frame: pd.DataFrame, by: Sequence[str], metrics: Optional[Sequence[str]] = None, confidence: float = CONFIDENCE
) -> pd.DataFrame:
    """One row per group of ``by``: ``n`` (runs), and for each metric ``<m>_mean``,
    ``<m>_ci`` (half-width of the interval), ``<m>_lo`` and ``<m>_hi``.

    Missing group values (NaN, e.g. no CPU share) form their own group."""
    by = [c for c in by if c in frame.columns]
    if metrics is None:
        metrics = [c for c in frame.columns if c not in by and pd.api.types.is_numeric_dtype(frame[c])]
    metrics = [m for m in metrics if m in frame.columns]
    rows: list[dict[str, object]] = []
    groups = frame.groupby(by, dropna=False, sort=True) if by else [((), frame)]
    for key, group in groups:
        key_tuple = key if isinstance(key, tuple) else (key,)
        row: dict[str, object] = dict(zip(by, key_tuple))
        row["n"] = len(group)
        for m in metrics:
            mean, half = mean_ci(group[m].to_numpy(dtype=float), confidence)
            row[f"{m}_mean"] = mean
            row[f"{m}_ci"] = half
            row[f"{m}_lo"] = mean - half if math.isfinite(half) else math.nan
            row[f"{m}_hi"] = mean + half if math.isfinite(half) else math.nan
        rows.append(row)
    columns = [*by, "n", *(f"{m}_{s}" for m in metrics for s in ("mean", "ci", "lo", "hi"))]
    return pd.DataFrame(rows, columns=columns)
