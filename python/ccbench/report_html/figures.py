"""Figures of a sweep: heatmaps over two swept parameters (faceted by a third), CDFs,
goodput against delay with 95% intervals, retransmissions on a log scale, and a
metric against one parameter per algorithm.

Every function takes tidy frames from :mod:`ccbench.analysis` and returns a matplotlib
Figure on the Agg canvas (see :mod:`ccbench.plots.style`); none writes files.
"""

from __future__ import annotations

import math
import textwrap
from typing import Optional, Sequence

import numpy as np
import pandas as pd
from matplotlib import colors
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..analysis import LABELS
from ..plots import style

MAX_FACETS = 12
CCA_COLORS = {
    "bbr": style.VERMILLION,
    "bbr2": style.PURPLE,
    "bbr3": style.ORANGE,
    "cubic": style.BLUE,
    "reno": style.GREEN,
}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def fmt(value: object) -> str:
    """A tick or cell label: whole numbers without decimals, others to 3 digits."""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "–"
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.3g}"
    return str(value)


def label(column: str) -> str:
    return LABELS.get(column, column)


def cca_color(name: str, index: int) -> str:
    return CCA_COLORS.get(name, style.FLOW_COLORS[index % len(style.FLOW_COLORS)])


def _facet_values(frame: pd.DataFrame, facet: Optional[str]) -> list[object]:
    if facet is None or facet not in frame:
        return [None]
    return sorted(frame[facet].dropna().unique().tolist())[:MAX_FACETS]


def _facet_grid(n: int, width: float = 4.2, height: float = 3.4) -> tuple[Figure, list[Axes]]:
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = style.new_figure(width * cols, height * rows + 0.4)
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _suptitle(fig: Figure, title: str) -> None:
    """The figure's title in bold, wrapped to the figure's width: one facet (4.2 in) is
    narrower than a long title, which would otherwise be cut at both sides."""
    chars = max(20, int((fig.get_figwidth() - 0.3) / 0.085))  # 10 pt bold: about 0.078 in a character
    fig.suptitle(textwrap.fill(title, chars), fontsize=10, fontweight="bold")


def _pivot(frame: pd.DataFrame, x: str, y: str, value: str) -> pd.DataFrame:
    """``value`` on a y-by-x grid, averaged over whatever else varies."""
    return frame.pivot_table(index=y, columns=x, values=value, aggfunc="mean").sort_index().sort_index(axis=1)


def heatmap(
    frame: pd.DataFrame,
    x: str,
    y: str,
    value: str,
    facet: Optional[str] = None,
    *,
    title: str,
    ratio: bool = False,
    value_label: Optional[str] = None,
) -> Figure:
    """``value`` over ``x`` and ``y``, one panel per ``facet`` value. With ``ratio`` the
    colours are diverging around 1 on a log scale and cells read ``1.8x``."""
    facets = _facet_values(frame, facet)
    fig, axes = _facet_grid(len(facets))
    finite = frame[value].replace([np.inf, -np.inf], np.nan).dropna()
    if ratio:
        positive = finite[finite > 0]
        span = float(np.abs(np.log2(positive)).max()) if len(positive) else 1.0
        span = max(span, 0.1)
        norm: colors.Normalize = colors.LogNorm(vmin=2**-span, vmax=2**span)
        cmap = "PuOr_r"
    else:
        lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
        norm = colors.Normalize(vmin=lo, vmax=hi if hi > lo else lo + 1)
        cmap = "viridis"
    image = None
    for ax, fv in zip(axes, facets):
        sub = frame if fv is None else frame[frame[facet] == fv]
        grid = _pivot(sub, x, y, value)
        data = grid.to_numpy(dtype=float)
        shown = np.where(data > 0, data, np.nan) if ratio else data
        image = ax.imshow(shown, origin="lower", aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
        ax.set_xticks(range(len(grid.columns)), [fmt(v) for v in grid.columns], rotation=45, ha="right")
        ax.set_yticks(range(len(grid.index)), [fmt(v) for v in grid.index])
        ax.set_xlabel(label(x))
        ax.set_ylabel(label(y))
        ax.grid(False)
        if fv is not None:
            ax.set_title(f"{label(str(facet))} = {fmt(fv)}", fontsize=9)
        if data.size <= 120:
            for (i, j), v in np.ndenumerate(data):
                if math.isfinite(v):
                    ax.text(
                        j,
                        i,
                        f"{v:.2g}x" if ratio else fmt(v),
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if _dark_cell(v, norm, ratio) else "black",
                    )
    if image is not None:
        bar = fig.colorbar(image, ax=axes, shrink=0.9)
        bar.set_label(value_label or label(value))
    _suptitle(fig, title)
    return fig


def _dark_cell(v: float, norm: colors.Normalize, ratio: bool) -> bool:
    """Whether a cell's colour is dark enough for white text (PuOr's ends, viridis' low end)."""
    if ratio:
        return v > 0 and abs(math.log2(v)) > 0.6 * math.log2(float(norm.vmax or 2.0))
    return float(norm(v)) < 0.4


def cdfs(runs: pd.DataFrame, hue: str = "cca_mix") -> Figure:
    """CDFs over runs of goodput (as a fraction of the bottleneck rate), self-inflicted
    delay and retransmission rate, one line per algorithm mix."""
    fig = style.new_figure(12.6, 3.6)
    axes = fig.subplots(1, 3)
    panels = [
        (runs["goodput_mbps"] / runs["rate_mbps"], "goodput / bottleneck rate", False),
        (runs["self_inflicted_delay_ms"], "self-inflicted delay (ms)", False),
        (100 * runs["retrans_rate"], "retransmission rate (%)", True),
    ]
    for ax, (values, xlabel, logx) in zip(axes, panels):
        for k, name in enumerate(sorted(runs[hue].dropna().unique())):
            x = np.sort(values[runs[hue] == name].dropna().to_numpy(dtype=float))
            if logx:
                x = x[x > 0]
            if len(x) == 0:
                continue
            y = np.arange(1, len(x) + 1) / len(x)
            ax.step(
                np.concatenate([[x[0]], x]),
                np.concatenate([[0.0], y]),
                where="post",
                color=cca_color(name, k),
                lw=1.3,
                label=f"{name} ({len(x)})",
            )
        if logx:
            ax.set_xscale("log")
            xlabel += ", runs without any left out"
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of runs")
        ax.set_ylim(0, 1.02)
    axes[0].legend(loc="upper left")
    fig.suptitle("Distributions over runs", fontsize=10, fontweight="bold")
    return fig


def goodput_delay(table: pd.DataFrame, hue: str = "cca_mix") -> Figure:
    """One marker per point and algorithm mix: mean goodput (fraction of the bottleneck
    rate) against mean self-inflicted delay, with 95% intervals both ways."""
    fig = style.new_figure(7.0, 4.8)
    ax = fig.subplots()
    rate = table["rate_mbps"].to_numpy(dtype=float)
    for k, name in enumerate(sorted(table[hue].dropna().unique())):
        sel = (table[hue] == name).to_numpy()
        ax.errorbar(
            table.loc[sel, "self_inflicted_delay_ms_mean"],
            table.loc[sel, "goodput_mbps_mean"] / rate[sel],
            xerr=_err(table.loc[sel, "self_inflicted_delay_ms_ci"]),
            yerr=_err(table.loc[sel, "goodput_mbps_ci"] / rate[sel]),
            fmt=MARKERS[k % len(MARKERS)],
            ms=4,
            lw=0.8,
            capsize=2,
            color=cca_color(name, k),
            label=name,
            alpha=0.85,
        )
    ax.set_ylim(bottom=0)
    ax.set_xlabel("self-inflicted delay (ms), mean ± 95% CI")
    ax.set_ylabel("goodput / bottleneck rate, mean ± 95% CI")
    if (table["self_inflicted_delay_ms_mean"] > 0).all() and _spread(table["self_inflicted_delay_ms_mean"]) > 30:
        ax.set_xscale("log")
    ax.legend(loc="lower right")
    ax.set_title("Goodput against delay, per point")
    return fig


def retransmissions(table: pd.DataFrame, x: str, hue: str = "cca_mix") -> Figure:
    """Retransmission rate (%) per point against ``x``, log scale; points with none
    sit on the bottom line, marked open."""
    fig = style.new_figure(7.0, 4.6)
    ax = fig.subplots()
    rate = 100 * table["retrans_rate_mean"]
    positive = rate[rate > 0]
    floor = float(positive.min()) / 3 if len(positive) else 1e-3
    names = sorted(table[hue].dropna().unique())
    offsets = _dodge(len(names))
    for k, name in enumerate(names):
        sel = table[hue] == name
        xs = table.loc[sel, x].to_numpy(dtype=float) * offsets[k]
        ys = rate[sel].to_numpy(dtype=float)
        ci = 100 * table.loc[sel, "retrans_rate_ci"].to_numpy(dtype=float)
        some = ys > 0
        color = cca_color(name, k)
        ax.errorbar(
            xs[some],
            ys[some],
            yerr=_log_err(ys[some], ci[some]),
            fmt=MARKERS[k % len(MARKERS)],
            ms=4,
            lw=0.8,
            capsize=2,
            color=color,
            label=name,
            alpha=0.85,
        )
        if (~some).any():
            ax.plot(
                xs[~some],
                np.full((~some).sum(), floor),
                MARKERS[k % len(MARKERS)],
                mfc="none",
                color=color,
                ms=4,
                alpha=0.85,
            )
    ax.set_yscale("log")
    if _spread(table[x]) > 20 and (table[x] > 0).all():
        ax.set_xscale("log")
    ax.axhline(floor, **style.REFERENCE)
    ax.set_xlabel(label(x))
    ax.set_ylabel("retransmission rate (%), mean ± 95% CI")
    ax.set_title("Retransmissions (log scale; open markers on the dotted line: none)")
    ax.legend(loc="best")
    return fig


def metric_lines(
    table: pd.DataFrame,
    x: str,
    metric: str,
    hue: str = "cca_mix",
    *,
    title: str,
    logy: bool = False,
    facet: Optional[str] = None,
) -> Figure:
    """``metric`` against ``x`` with 95% intervals, one line per algorithm mix,
    averaged over other varying conditions unless ``facet`` splits them."""
    facets = _facet_values(table, facet)
    fig, axes = _facet_grid(len(facets), 4.8, 3.6)
    for ax, fv in zip(axes, facets):
        sub = table if fv is None else table[table[facet] == fv]
        for k, name in enumerate(sorted(sub[hue].dropna().unique())):
            g = sub[sub[hue] == name].groupby(x, sort=True)
            mean = g[f"{metric}_mean"].mean()
            ci = g[f"{metric}_ci"].mean()
            ax.errorbar(
                mean.index.to_numpy(dtype=float),
                mean.to_numpy(),
                yerr=_err(ci),
                capsize=2,
                lw=1.2,
                marker=MARKERS[k % len(MARKERS)],
                ms=3.5,
                color=cca_color(name, k),
                label=name,
            )
        if logy:
            ax.set_yscale("log")
        elif (sub[f"{metric}_mean"].dropna() >= 0).all():
            ax.set_ylim(bottom=0)  # intervals of two repetitions are wide; keep the axis physical
        if _spread(sub[x]) > 20 and (sub[x] > 0).all():
            ax.set_xscale("log")
        ax.set_xlabel(label(x))
        ax.set_ylabel(label(metric))
        if fv is not None:
            ax.set_title(f"{label(str(facet))} = {fmt(fv)}", fontsize=9)
        ax.legend(loc="best")
    _suptitle(fig, title)
    return fig


def _err(ci: pd.Series) -> Optional[np.ndarray]:
    values = np.asarray(ci, dtype=float)
    if not np.isfinite(values).any():
        return None
    return np.nan_to_num(values, nan=0.0)


def _log_err(ys: np.ndarray, ci: np.ndarray) -> Optional[np.ndarray]:
    """Error bars that stay above zero on a log axis."""
    if not np.isfinite(ci).any():
        return None
    ci = np.nan_to_num(ci, nan=0.0)
    lower = np.minimum(ci, ys * 0.999)
    return np.vstack([lower, ci])


def _dodge(n: int) -> Sequence[float]:
    """Multiplicative offsets so markers of several algorithms at one x do not hide each other."""
    if n <= 1:
        return [1.0]
    return [1.0 + 0.04 * (k - (n - 1) / 2) for k in range(n)]


def _spread(values: pd.Series) -> float:
    x = pd.Series(values).dropna().to_numpy(dtype=float)
    x = x[x > 0]
    return float(x.max() / x.min()) if len(x) else 1.0
