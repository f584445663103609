"""Which algorithm wins at each point of a sweep, on goodput, delay, retransmissions, a
weighted score of the three, or (for runs with arrivals) the p99 slowdown."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..analysis import aggregate
from ..analysis.compare import group_keys
from ..errors import ScenarioError

OBJECTIVES = ("goodput", "delay", "retrans", "score", "slowdown")
# The run metric each objective reads, and whether more is better.
OBJECTIVE_METRIC = {
    "goodput": ("goodput_mbps", True),
    "delay": ("rtt_mean_ms", False),
    "retrans": ("retrans_rate", False),
    "slowdown": ("slowdown_p99", False),
}
NO_ARRIVALS = "ranks by the arrivals' p99 slowdown, and these runs have no arrivals ([[arrivals]] or --arrivals)"
# Retransmission rates this close to zero count as equal (0.01% of segments), so the
# score's retransmission term does not explode between 0 and a handful of segments.
RETRANS_FLOOR = 1e-4


@dataclass(frozen=True)
class Weights:
    """Weights of the score: each term is 1 for the best algorithm at a point and
    smaller for the others (goodput / best goodput, best RTT / RTT, and the same for
    the retransmission rate)."""

    goodput: float = 1.0
    delay: float = 1.0
    retrans: float = 1.0

    @classmethod
    def parse(cls, text: Optional[str], field: str = "--weights") -> "Weights":
        """``goodput=2,delay=1,retrans=0.5``; terms left out keep their default."""
        if not text:
            return cls()
        values: dict[str, float] = {}
        for item in text.split(","):
            if not item.strip():
                continue
            name, _, number = item.partition("=")
            name = name.strip().lower()
            if name not in ("goodput", "delay", "retrans"):
                raise ScenarioError(
                    field, f"unknown term {name!r}; allowed: goodput, delay, retrans (e.g. goodput=2,delay=1)"
                )
            try:
                value = float(number)
            except ValueError:
                raise ScenarioError(field, f"{name} needs a number, e.g. {name}=1") from None
            if not math.isfinite(value) or value < 0:
                raise ScenarioError(field, f"{name} must be a non-negative number")
            values[name] = value
        weights = cls(**values)
        if weights.goodput + weights.delay + weights.retrans == 0:
            raise ScenarioError(field, "at least one weight must be positive")
        return weights

    def __str__(self) -> str:
        return f"goodput={self.goodput:g}, delay={self.delay:g}, retrans={self.retrans:g}"


def point_means(runs: pd.DataFrame, ccas: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """Per point and algorithm (runs of one algorithm only), the means over repetitions
    of goodput, mean RTT and retransmission rate, and the p99 slowdown of runs with
    arrivals."""
    single = runs[runs["cca"] != "mixed"]
    if ccas:
        single = single[single["cca"].isin(ccas)]
    if single.empty:
        return pd.DataFrame()
    keys = [k for k in group_keys(single) if k != "cca_mix"]
    metrics = ["goodput_mbps", "rtt_mean_ms", "retrans_rate", "slowdown_p99"]
    return aggregate(single, keys, [m for m in metrics if m in single])


def winners(
    runs: pd.DataFrame, objective: str = "goodput", weights: Weights = Weights(), ccas: Optional[Sequence[str]] = None
) -> pd.DataFrame:
    """One row per point where at least two algorithms ran: the point's conditions, the
    winning algorithm (``winner``) and the objective's value for each algorithm
    (``value_<cca>``; for delay and retransmissions lower wins)."""
    if objective not in OBJECTIVES:
        raise ScenarioError("--objective", f"unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}")
    means = point_means(runs, ccas)
    if means.empty:
        return pd.DataFrame()
    if objective == "slowdown" and not means.get("slowdown_p99_mean", pd.Series(dtype=float)).notna().any():
        raise ScenarioError("--objective", f"slowdown {NO_ARRIVALS}")
    keys = [k for k in group_keys(runs) if k not in ("cca", "cca_mix") and k in means and means[k].notna().any()]
    rows = []
    for key, group in means.groupby(keys, dropna=False, sort=True):
        if group["cca"].nunique() < 2:
            continue
        names = group["cca"].tolist()
        values = _objective_values(group, objective, weights)
        higher_is_better = objective in ("goodput", "score")
        order = np.argsort(-values if higher_is_better else values, kind="stable")
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row["winner"] = names[int(order[0])]
        row.update({f"value_{n}": float(v) for n, v in zip(names, values)})
        rows.append(row)
    return pd.DataFrame(rows)


def _objective_values(group: pd.DataFrame, objective: str, weights: Weights) -> np.ndarray:
    goodput = group["goodput_mbps_mean"].to_numpy(dtype=float)
    rtt = group["rtt_mean_ms_mean"].to_numpy(dtype=float)
    retrans = np.nan_to_num(group["retrans_rate_mean"].to_numpy(dtype=float), nan=0.0)
    if objective == "goodput":
        return goodput
    if objective == "delay":
        return rtt
    if objective == "retrans":
        return retrans
    if objective == "slowdown":
        return group["slowdown_p99_mean"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = goodput / goodput.max() if goodput.max() > 0 else np.ones_like(goodput)
        d = rtt.min() / rtt
        r = (retrans.min() + RETRANS_FLOOR) / (retrans + RETRANS_FLOOR)
    return weights.goodput * g + weights.delay * np.nan_to_num(d) + weights.retrans * r
