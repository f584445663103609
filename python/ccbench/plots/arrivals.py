"""Open-loop arrivals, as the FCT studies draw them: each group's slowdown against
transfer size (every connection a dot; the median and 99th percentile per size bin as
lines) and the CDF of its flow completion times (docs/traffic.md)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .. import traffic
from . import style
from .rundir import RunData

# Size bins of the percentile lines: this many per decade of size.
BINS_PER_DECADE = 4
# A bin's percentiles are drawn only over this many connections or more.
MIN_PER_BIN = 3


def arrivals_figure(run: RunData) -> Optional[Figure]:
    """None for a run without arrivals (or without its connections table)."""
    groups = traffic.groups(run.summary)
    conns = run.connections
    if not groups or conns is None or not len(conns):
        return None
    fig = style.new_figure(11.5, 4.4)
    slowdown_ax, cdf_ax = fig.subplots(1, 2)
    for k, group in enumerate(groups):
        color = style.FLOW_COLORS[k % len(style.FLOW_COLORS)]
        mine = conns[conns["group"] == int(group.get("id", k))]
        done = mine[mine["fct_ms"].notna() & (mine["ideal_fct_ms"] > 0)]
        label = f"{traffic.group_label(group)}: {len(done)} of {len(mine)} done"
        _slowdowns(slowdown_ax, done, color, label)
        _fct_cdf(cdf_ax, done, color, label)
    _dress(slowdown_ax, cdf_ax)
    fig.suptitle(_title(run), fontsize=11, x=0.01, ha="left")
    return fig


def _slowdowns(ax: Axes, done: pd.DataFrame, color: str, label: str) -> None:
    if done.empty:
        return
    size = done["size_bytes"].to_numpy(dtype=float)
    slowdown = (done["fct_ms"] / done["ideal_fct_ms"]).to_numpy(dtype=float)
    ax.scatter(size, slowdown, s=9, color=color, alpha=0.45, lw=0)
    centers, p50, p99 = binned_percentiles(size, slowdown)
    ax.plot(centers, p50, color=color, lw=1.6, label=f"{label}: median")
    ax.plot(centers, p99, color=color, lw=1.2, ls="--", label=f"{label}: 99th percentile")


def binned_percentiles(size: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(geometric bin centre, median, 99th percentile) of ``value`` in log-spaced size
    bins holding at least MIN_PER_BIN points; nearest-rank percentiles, as the summary's."""
    lo, hi = float(size.min()), float(size.max())
    decades = max(np.log10(hi / lo), 1e-9)
    edges = np.geomspace(lo, hi * (1 + 1e-9), max(2, int(np.ceil(decades * BINS_PER_DECADE)) + 1))
    which = np.clip(np.searchsorted(edges, size, side="right") - 1, 0, len(edges) - 2)
    rows = []
    for b in range(len(edges) - 1):
        inside = value[which == b]
        if len(inside) >= MIN_PER_BIN:
            rows.append(
                (
                    float(np.sqrt(edges[b] * edges[b + 1])),
                    float(np.percentile(inside, 50, method="inverted_cdf")),
                    float(np.percentile(inside, 99, method="inverted_cdf")),
                )
            )
    if not rows:
        return np.array([]), np.array([]), np.array([])
    centers, p50, p99 = (np.array(col) for col in zip(*rows))
    return centers, p50, p99


def _fct_cdf(ax: Axes, done: pd.DataFrame, color: str, label: str) -> None:
    fct = np.sort(done["fct_ms"].to_numpy(dtype=float))
    if len(fct):
        ax.step(fct, np.arange(1, len(fct) + 1) / len(fct), where="post", color=color, lw=1.4, label=label)


def _dress(slowdown_ax: Axes, cdf_ax: Axes) -> None:
    slowdown_ax.set_xscale("log")
    slowdown_ax.set_yscale("log")
    slowdown_ax.axhline(1.0, **style.REFERENCE)
    for bound in traffic.BUCKET_BOUNDS[:-1]:  # the summary's size buckets
        slowdown_ax.axvline(bound, color=style.GREY, lw=0.6, alpha=0.5)
    slowdown_ax.set_xlabel("transfer size (bytes)")
    slowdown_ax.set_ylabel("slowdown (FCT / FCT alone)")
    slowdown_ax.set_title("Slowdown against size")
    cdf_ax.set_xscale("log")
    cdf_ax.set_ylim(0, 1.02)
    cdf_ax.set_xlabel("flow completion time (ms)")
    cdf_ax.set_ylabel("fraction of finished connections")
    cdf_ax.set_title("CDF of FCT")
    for ax in (slowdown_ax, cdf_ax):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper left" if ax is slowdown_ax else "lower right", fontsize=7)


def _title(run: RunData) -> str:
    link = run.summary.get("link") or {}
    rate = link.get("rate_bps")
    loads = ", ".join(f"{100 * float(g.get('offered_load') or 0):.0f}%" for g in traffic.groups(run.summary))
    over = f" over {rate / 1e6:g} Mbit/s" if isinstance(rate, (int, float)) else ""
    return f"arrivals{over}, offered load {loads}"
