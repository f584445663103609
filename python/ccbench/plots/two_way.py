"""The link figure of a run with a reverse bottleneck (the link table's ``up_*``
columns): the forward bottleneck (down) and the reverse one (up: ``[link.reverse]``,
or an ACK trace) side by side, in throughput, queue, utilisation and drops.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .. import directions, traffic
from ..report import cca_label
from . import style
from .rundir import RunData, fmt_buffer, fmt_rate
from .timeseries import MBIT, SMOOTH_S, _buffer_bytes, _clip_top, _col, _hline, _legend, _mean, _run_line

# Column prefixes of each direction in the link table.
PREFIX = {directions.DOWN: "", directions.UP: "up_"}


def two_way_link_figure(run: RunData, lf: pd.DataFrame, t: np.ndarray) -> Figure:
    """Throughput of both directions and each flow, then each direction's queue, the
    utilisation of both and their drops."""
    fig = style.new_figure(11.5, 12.4)
    gs = fig.add_gridspec(5, 1, height_ratios=[2.4, 2.0, 2.0, 1.6, 1.6])
    a = fig.add_subplot(gs[0])
    axes = [a] + [fig.add_subplot(gs[i], sharex=a) for i in range(1, 5)]
    ccas = [cca_label(fl.get("cca", "?")) for fl in run.summary["flows"]]
    ends = _ends(run.summary)
    fig.suptitle(_title(run, ccas, ends), fontsize=11, x=0.01, ha="left")
    smooth = int(round(SMOOTH_S / run.interval_s)) if run.interval_s > 0 else 1
    _throughput_panel(a, run, lf, t, ccas, ends, smooth)
    down_title = "(b) down: the bottleneck's queue"
    up_title = (
        "(c) up: the ACK trace's queue (the flows' ACKs)"
        if directions.uplink(run.summary) is None
        else "(c) up: the reverse bottleneck's queue (up flows' data, down flows' ACKs)"
    )
    _queue_panel(axes[1], run, lf, t, directions.DOWN, ends[directions.DOWN], down_title)
    _queue_panel(axes[2], run, lf, t, directions.UP, ends[directions.UP], up_title)
    _utilisation_panel(axes[3], lf, t, smooth)
    _drops_panel(axes[4], lf, t)

    duration = float(run.summary.get("duration_s") or (t[-1] if len(t) else 1.0))
    a.set_xlim(0, duration)
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=False)
    # Room beside the queues' legends for their axes of queueing delay.
    rates = [None, ends[directions.DOWN].get("rate_bps"), ends[directions.UP].get("rate_bps"), None, None]
    for ax, rate in zip(axes, rates):
        _legend(ax, offset_pt=48 if rate else 0)
    return fig


def _ends(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each direction's bottleneck summary; an ACK trace's (``ack_link``) with its mean
    as its rate and no limit known."""
    link = summary.get("link") or {}
    up = directions.uplink(summary)
    if up is None:
        ack = link.get("ack_link") or {}
        up = {**ack, "rate_bps": ack.get("trace_mean_bps")}
    return {directions.DOWN: dict(link), directions.UP: dict(up)}


def _title(run: RunData, ccas: list[str], ends: dict[str, dict[str, Any]]) -> str:
    """The flows by algorithm and direction, each direction's utilisation and drops,
    then the run's line."""
    counts: dict[str, int] = {}
    for cca, flow in zip(ccas, run.summary["flows"]):
        key = f"{cca} {directions.direction(flow)}"
        counts[key] = counts.get(key, 0) + 1
    mix = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in counts.items())
    n = run.flow_count
    figures = []
    for way, end in ends.items():
        util, drops = end.get("utilization"), end.get("drops")
        parts = [
            None if util is None else f"utilisation {100 * float(util):.1f} %",
            None if drops is None else f"{drops} drops",
        ]
        if any(parts):
            figures.append(f"{way}: " + ", ".join(x for x in parts if x))
    head = traffic.with_flows(f"link: {n} flow{'s' if n != 1 else ''} ({mix})", n, run.summary)
    return head + ("; " + "; ".join(figures) if figures else "") + "\n" + _run_line(run)


def _throughput_panel(
    a: Axes,
    run: RunData,
    lf: pd.DataFrame,
    t: np.ndarray,
    ccas: list[str],
    ends: dict[str, dict[str, Any]],
    smooth: int,
) -> None:
    """(a) each direction's output, each flow's (when few enough to tell apart), and
    each direction's capacity"""
    drawn: list[Optional[np.ndarray]] = []
    for way, kind in ((directions.DOWN, "-"), (directions.UP, "--")):
        total = _col(lf, f"{PREFIX[way]}throughput_bps")
        if total is not None:
            v = _mean(total, smooth) / MBIT
            a.plot(t, v, label=f"{way}: bottleneck output (wire)", color=style.BLACK, lw=1.0, ls=kind)
            drawn.append(v)
    n = run.flow_count
    if n <= len(style.FLOW_COLORS) and "throughput_bps" in run.flows.columns:
        for i, flow in enumerate(run.summary["flows"]):
            ff = run.flow_frame(i)
            v = _mean(ff["throughput_bps"].to_numpy(dtype=float), smooth) / MBIT
            label = f"flow {i} ({ccas[i]}, {directions.direction(flow)}, payload)"
            a.plot(ff["time_s"].to_numpy(dtype=float), v, lw=0.9, color=style.FLOW_COLORS[i], label=label)
            drawn.append(v)
    for way, reference in ((directions.DOWN, style.REFERENCE), (directions.UP, style.REFERENCE_2)):
        drawn.append(_capacity(a, lf, t, way, ends[way].get("rate_bps"), reference, smooth))
    a.set_ylabel("Mbit/s")
    a.set_title(
        "(a) throughput"
        + ("" if n <= len(style.FLOW_COLORS) else " (totals; too many flows to draw each)")
        + (f", {SMOOTH_S * 1e3:.0f} ms means" if smooth > 1 else "")
    )
    _clip_top(a, drawn, None)


def _capacity(
    a: Axes, lf: pd.DataFrame, t: np.ndarray, way: str, rate: Any, kind: dict[str, Any], smooth: int
) -> Optional[np.ndarray]:
    """A direction's capacity: its rate, or what a trace or rate steps offered in each
    interval; what was drawn."""
    capacity = _col(lf, f"{PREFIX[way]}capacity_bps")
    if capacity is not None and np.nanmax(capacity) - np.nanmin(capacity) > 1.0:
        cap = _mean(capacity, smooth) / MBIT
        a.plot(t, cap, label=f"{way}: capacity offered", **kind)
        return cap
    if not rate:
        return None
    _hline(a, rate / MBIT, f"{way}: rate ({fmt_rate(rate)})", kind)
    return np.array([rate / MBIT])


def _queue_panel(
    b: Axes, run: RunData, lf: pd.DataFrame, t: np.ndarray, way: str, end: dict[str, Any], title: str
) -> None:
    """A direction's queue in KB and (on the right) in ms of queueing delay at its rate"""
    q = _col(lf, f"{PREFIX[way]}queue_bytes")
    buf_bytes = _buffer_bytes(end, run.mss + run.header_bytes)
    if q is not None:
        b.plot(t, q / 1e3, label=f"{way}: queue (at each sample)", **style.DIRECTION[way])
    if buf_bytes:
        _hline(b, buf_bytes / 1e3, f"buffer limit ({fmt_buffer(end)})")
    b.set_ylabel("queue (KB)")
    b.set_title(title)
    _clip_top(b, [None if q is None else q / 1e3, None if not buf_bytes else np.array([buf_bytes / 1e3])], None)
    rate = end.get("rate_bps")
    if rate:
        k = 8e6 / rate
        sec = b.secondary_yaxis("right", functions=(lambda x: x * k, lambda y: y / k))
        sec.set_ylabel("queueing delay (ms)")


def _utilisation_panel(d: Axes, lf: pd.DataFrame, t: np.ndarray, smooth: int) -> None:
    """(d) the share of each direction's capacity used"""
    for way in (directions.DOWN, directions.UP):
        u = _col(lf, f"{PREFIX[way]}utilization")
        if u is not None:
            d.plot(t, 100 * _mean(u, smooth), label=f"{way}: utilisation", **style.DIRECTION[way])
    d.set_ylabel("%")
    d.set_ylim(0, 105)
    d.set_title(
        "(d) utilisation of each direction's capacity" + (f", {SMOOTH_S * 1e3:.0f} ms means" if smooth > 1 else "")
    )


def _drops_panel(c: Axes, lf: pd.DataFrame, t: np.ndarray) -> None:
    """(e) drops at each bottleneck"""
    drawn = []
    for way in (directions.DOWN, directions.UP):
        drops = _col(lf, f"{PREFIX[way]}drops")
        if drops is not None:
            c.plot(t, drops, label=f"{way}: drops (cumulative)", drawstyle="steps-post", **style.DIRECTION[way])
            drawn.append(drops)
    c.set_ylabel("packets")
    c.set_xlabel("time (s)")
    c.set_title("(e) packets dropped at each bottleneck")
    _clip_top(c, drawn, None)
