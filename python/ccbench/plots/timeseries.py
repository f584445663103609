"""Time-series figures of a run: one per flow, and one for the bottleneck."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.transforms import ScaledTranslation

from .. import directions, traffic
from ..report import cca_label
from . import style
from .cc_state import StatePanel, panel_for
from .rundir import RunData, fmt_buffer, fmt_loss, fmt_ms, fmt_rate
from .states import BBR2_PHASES, BBR_MODES, CA_STATES, TimelineRow, state_timeline

MBIT = 1e6
# Rate panels show at most these multiples of the bottleneck rate, so that a burst of
# in-order delivery after a loss, or a STARTUP pacing rate, does not flatten the rest.
GOODPUT_CLIP = 1.5
PACING_CLIP = 3.0
# Goodput sampled finer than this is also drawn as a centred mean over this window.
SMOOTH_S = 0.1


def _col(f: pd.DataFrame, name: str) -> Optional[np.ndarray]:
    """A column as floats, or None when absent or all NaN."""
    if name not in f.columns:
        return None
    v = f[name].to_numpy(dtype=float)
    return None if np.isnan(v).all() else v


def _mean(v: np.ndarray, window: int) -> np.ndarray:
    """Centred moving mean over ``window`` samples; NaN where ``v`` is NaN."""
    if window <= 1:
        return v
    mean = pd.Series(v).rolling(window, center=True, min_periods=1).mean().to_numpy(copy=True)
    mean[np.isnan(v)] = np.nan
    return mean


def _legend(ax: Axes, offset_pt: float = 0.0) -> None:
    """The axes' legend outside on the right, ``offset_pt`` points past its edge (room
    for a secondary axis)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        shift = ScaledTranslation(offset_pt / 72, 0, ax.figure.dpi_scale_trans)
        ax.legend(
            handles,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.005, 1.0),
            bbox_transform=ax.transAxes + shift,
            borderaxespad=0.0,
            handlelength=2.2,
        )


def _hline(ax: Axes, y: Optional[float], label: str, kind: dict[str, Any] = style.REFERENCE) -> None:
    if y is not None and math.isfinite(y) and y > 0:
        ax.axhline(y, label=label, **kind)


def _clip_top(ax: Axes, values: list[Optional[np.ndarray]], cap: Optional[float], unit: str = "") -> None:
    """Y from 0 to a little above the data, but no higher than ``cap``; a note in the
    corner gives the maximum of what was cut off."""
    finite = [v[np.isfinite(v)] for v in values if v is not None]
    finite = [v for v in finite if len(v)]
    top = max((float(v.max()) for v in finite), default=1.0)
    if cap is not None and 0 < cap < top:
        ax.text(
            0.995,
            0.97,
            f"off scale: peaks up to {top:.4g}{unit}",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=7,
            color="#555555",
            zorder=5,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5},
        )
        top = cap
    ax.set_ylim(0, top * 1.06 if top > 0 else 1.0)


def _run_line(run: RunData) -> str:
    s, link = run.summary, run.summary["link"]
    cap = s.get("capture")
    if isinstance(cap, dict):
        sides = sorted({str(f.get("capture_side")) for f in s.get("flows", [])})
        return " · ".join(
            [
                f"capture {cap.get('file', '?')} ({cap.get('format', '?')}, {cap.get('linktype', '?')})",
                f"{s.get('duration_s', 0):.3g} s",
                f"taken at the {'/'.join(sides)}",
                f"engine {s.get('engine', '?')}",
            ]
        )
    traced = link.get("trace_mean_bps") is not None
    aqm = link.get("aqm") if isinstance(link.get("aqm"), dict) else None
    parts = [
        f"bottleneck {'trace, mean ' if traced else ''}{fmt_rate(link.get('rate_bps'))}",
        f"RTT {fmt_ms(link.get('rtt_ms'))}",
        f"{aqm['name']} limit {fmt_buffer(link)}" if aqm else f"buffer {fmt_buffer(link)}",
    ]
    loss = fmt_loss(run.scenario)
    if loss:
        parts.append(loss)
    if isinstance(link.get("loss_model"), dict):
        parts.append(f"Gilbert-Elliott loss {100 * float(link['loss_model'].get('mean_loss', 0)):.3g}%")
    up = directions.uplink(s)
    if up is not None:
        up_aqm = up.get("aqm") if isinstance(up.get("aqm"), dict) else None
        up_traced = up.get("trace_mean_bps") is not None
        queue = f"{up_aqm['name']} limit {fmt_buffer(up)}" if up_aqm else f"buffer {fmt_buffer(up)}"
        parts.append(f"uplink {'trace, mean ' if up_traced else ''}{fmt_rate(up.get('rate_bps'))}, {queue}")
    parts.append(f"{s.get('duration_s', 0):g} s")
    parts.append(f"seed {s.get('seed')}")
    parts.append(f"engine {s.get('engine', '?')}")
    return " · ".join(parts)


def _mark_lifetime(axes: list[Axes], info: dict[str, Any]) -> None:
    """Dashed lines where a late flow starts and a sized flow completes, named in the
    top panel."""
    start = float(info.get("start_s") or 0.0)
    done = info.get("completion_s")
    marks = []
    if start > 0:
        marks.append((start, f"start {start:g} s", style.GREY))
    if done is not None:
        marks.append((start + float(done), f"completed {start + float(done):.3g} s", style.BLACK))
    for x, text, color in marks:
        for ax in axes:
            ax.axvline(x, color=color, lw=0.8, ls="--", zorder=1)
        axes[0].annotate(
            text,
            (x, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -3),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize=7,
            color=color,
        )


def flow_figure(run: RunData, flow: int) -> tuple[Figure, list[TimelineRow]]:
    """The five-panel figure of one flow (six with its algorithm's own state,
    ``plots.cc_state``), and the timeline rows it drew."""
    run.check_flow(flow)
    info = run.summary["flows"][flow]
    cca = str(info.get("cca", "?"))
    view = _FlowView(run, info, run.flow_frame(flow))
    rows = state_timeline(view.f, cca, view.interval, run.flow_moves(flow))
    state = panel_for(cca, view.f)
    timeline_h = 0.5 + 0.42 * max(len(rows), 1)
    heights = [2.25] * (4 + (state is not None)) + [timeline_h]
    fig = style.new_figure(11.5, 3.0 + sum(heights))
    gs = fig.add_gridspec(len(heights), 1, height_ratios=heights)
    ax_rate = fig.add_subplot(gs[0])
    axes = [ax_rate] + [fig.add_subplot(gs[i], sharex=ax_rate) for i in range(1, len(heights))]
    a, b, c, d, e = axes[0], axes[1], axes[2], axes[3], axes[-1]

    paced = " (paced)" if info.get("paced") else ""
    way = f", {directions.direction(info)}" if directions.is_two_way(run.summary) else ""
    fig.suptitle(
        f"flow {flow}: {cca_label(cca)}{paced}{way}, {fmt_rate(info.get('goodput_bps'))} goodput, "
        f"{info.get('retransmits', 0)} retransmits"
        + (f"  [{view.n_flows} flows]" if view.n_flows > 1 else "")
        + "\n"
        + _run_line(run),
        fontsize=11,
        x=0.01,
        ha="left",
    )
    _rate_panel(a, view)
    _rtt_panel(b, view)
    _window_panel(c, view, cca)
    _pacing_panel(d, view)
    if state is not None:
        _state_panel(axes[4], view, state)

    # (e) state timeline
    t = view.t
    duration = float(run.summary.get("duration_s") or (t[-1] if len(t) else 1.0))
    _draw_timeline(e, rows, cca, duration)
    if state is not None:
        e.set_title(e.get_title().replace("(e)", "(f)", 1))
    e.set_xlabel("time (s)")

    a.set_xlim(0, duration)
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=False)
        _legend(ax)
    _mark_lifetime(axes, info)
    return fig, rows


class _FlowView:
    """What the panels of a flow's figure draw from: its rows of the series, its
    summary entry and the link's."""

    def __init__(self, run: RunData, info: dict[str, Any], f: pd.DataFrame) -> None:
        self.run, self.info, self.f = run, info, f
        # The bottleneck its data crossed: the uplink for a flow going up.
        self.link = link = dict(directions.link_of(run.summary, info))
        self.t = f["time_s"].to_numpy(dtype=float)
        self.rate = link.get("rate_bps")
        self.rate_mbit = self.rate / MBIT if self.rate else None
        self.n_flows = run.flow_count
        way = directions.direction(info)
        # The flows that share its bottleneck, those going its way.
        self.n_sharing = sum(directions.direction(x) == way for x in run.summary["flows"])
        self.seg_wire = run.mss + run.header_bytes
        self.interval = run.interval_s
        self.buf_bytes = _buffer_bytes(link, self.seg_wire)


def _buffer_bytes(link: dict[str, Any], seg_wire: int) -> Optional[float]:
    """The bottleneck buffer in bytes (a buffer given in packets holds full segments)."""
    buf_bytes = link.get("buffer_bytes")
    if buf_bytes is None and link.get("buffer_packets") is not None:
        buf_bytes = link["buffer_packets"] * seg_wire
    return buf_bytes


def _rate_panel(a: Axes, view: _FlowView) -> None:
    """(a) throughput and goodput"""
    f, t, interval, rate, rate_mbit = view.f, view.t, view.interval, view.rate, view.rate_mbit
    thr = _col(f, "throughput_bps")
    good = _col(f, "goodput_bps")
    smooth = int(round(SMOOTH_S / interval)) if interval > 0 else 1
    for v, key, name in ((thr, "throughput", "throughput"), (good, "goodput", "goodput")):
        if v is None:
            continue
        if smooth > 1:
            # Fine samples are noisy: a sample holds a whole number of packets, and
            # in-order delivery is bursty (a hole filled after a loss releases a whole
            # window at once). Draw the samples faintly and their mean over SMOOTH_S.
            a.plot(
                t,
                v / MBIT,
                label=f"{name} per {interval * 1e3:.3g} ms sample",
                color=style.LINE[key]["color"],
                lw=0.6,
                alpha=0.3,
            )
    for v, key, name in ((thr, "throughput", "throughput"), (good, "goodput", "goodput")):
        if v is None:
            continue
        if smooth > 1:
            a.plot(t, _mean(v, smooth) / MBIT, label=f"{name}, {SMOOTH_S * 1e3:.0f} ms mean", **style.LINE[key])
        else:
            a.plot(t, v / MBIT, label=name, **style.LINE[key])
    _hline(a, rate_mbit, f"bottleneck rate ({fmt_rate(rate)}, wire)")
    if view.n_sharing > 1 and rate_mbit:
        _hline(a, rate_mbit / view.n_sharing, f"fair share (1/{view.n_sharing})", style.REFERENCE_2)
    a.set_ylabel("Mbit/s")
    a.set_title("(a) throughput and goodput (payload)")
    _clip_top(
        a,
        [
            None if thr is None else thr / MBIT,
            None if good is None else good / MBIT,
            None if rate_mbit is None else np.array([rate_mbit]),
        ],
        GOODPUT_CLIP * rate_mbit if rate_mbit else None,
        " Mbit/s",
    )


def _rtt_panel(b: Axes, view: _FlowView) -> None:
    """(b) RTT, with the base RTT and the RTT with the bottleneck's buffer full"""
    f, t, rate, buf_bytes = view.f, view.t, view.rate, view.buf_bytes
    srtt = _col(f, "srtt_ms")
    min_rtt = _col(f, "min_rtt_ms")
    if srtt is not None:
        b.plot(t, srtt, label="smoothed RTT (srtt)", **style.LINE["srtt"])
    if min_rtt is not None:
        b.plot(t, min_rtt, label="min RTT (tcp_min_rtt)", **style.LINE["min_rtt"])
    base = view.info.get("base_rtt_ms")
    _hline(b, base, f"base RTT ({fmt_ms(base)})")
    full_q = base + buf_bytes * 8 / rate * 1e3 if (base and rate and buf_bytes) else None
    _hline(b, full_q, f"base RTT + full buffer ({fmt_ms(full_q)})", style.REFERENCE_2)
    b.set_ylabel("ms")
    b.set_title("(b) round-trip time")
    _clip_top(b, [srtt, min_rtt, None if full_q is None else np.array([full_q])], None)


def _window_panel(c: Axes, view: _FlowView, cca: str) -> None:
    """(c) cwnd and inflight, in segments, with the BDP and the BDP plus the buffer"""
    f, t, seg_wire, buf_bytes = view.f, view.t, view.seg_wire, view.buf_bytes
    cwnd = _col(f, "cwnd")
    inflight = _col(f, "inflight")
    series_c = [cwnd, inflight]
    if cwnd is not None:
        c.plot(t, cwnd, label="cwnd", drawstyle="steps-post", **style.LINE["cwnd"])
    if inflight is not None:
        c.plot(t, inflight, label="in flight (tcp_packets_in_flight)", **style.LINE["inflight"])
    for name, label in (("cc_inflight_hi", "inflight_hi"), ("cc_inflight_lo", "inflight_lo")):
        v = _col(f, name)
        if v is not None:
            c.plot(t, v, label=label, drawstyle="steps-post", **style.LINE[label])
            series_c.append(v)
    rwnd = _col(f, "rwnd_bytes")
    rwnd_seg = None if rwnd is None else rwnd / view.run.mss
    if (
        rwnd_seg is not None
        and inflight is not None
        and np.nanmax(inflight, initial=0) > 0.5 * np.nanmin(rwnd_seg, initial=np.inf)
    ):
        # Only when the receive window comes near what is in flight; otherwise its scale
        # would flatten everything else.
        c.plot(t, rwnd_seg, label="receive window", drawstyle="steps-post", **style.LINE["rwnd"])
        series_c.append(rwnd_seg)
    if not cca.startswith("bbr"):
        ss = _col(f, "ssthresh")
        if ss is not None:
            c.plot(t, ss, label="ssthresh", drawstyle="steps-post", **style.LINE["ssthresh"])
        w_max = _col(f, "cc_w_max")
        if w_max is not None:
            w_max = np.where(w_max > 0, w_max, np.nan)
            c.plot(t, w_max, label=f"W_max ({cca})", drawstyle="steps-post", **style.LINE["w_max"])
    bdp = view.link.get("bdp_bytes")
    bdp_seg = bdp / seg_wire if bdp else None
    _hline(c, bdp_seg, f"BDP ({bdp_seg:.0f} pkt)" if bdp_seg else "BDP")
    if bdp_seg and buf_bytes:
        total = bdp_seg + buf_bytes / seg_wire
        _hline(c, total, f"BDP + buffer ({total:.0f} pkt)", style.REFERENCE_2)
        series_c.append(np.array([total]))
    c.set_ylabel("segments")
    c.set_title("(c) congestion window and data in flight")
    _clip_top(c, series_c, None)


def _pacing_panel(d: Axes, view: _FlowView) -> None:
    """(d) pacing rate and bandwidth estimate"""
    f, t, rate_mbit = view.f, view.t, view.rate_mbit
    pacing = _col(f, "pacing_rate_bps")
    delivery = _col(f, "delivery_rate_bps")
    series_d: list[Optional[np.ndarray]] = [None if rate_mbit is None else np.array([rate_mbit])]
    if delivery is not None:
        d.plot(t, delivery / MBIT, label="delivery rate sample", **style.LINE["delivery"])
        series_d.append(delivery / MBIT)
    if pacing is not None:
        label = "pacing rate" if view.info.get("paced") else "pacing rate (unpaced: sizes TSO bursts only)"
        d.plot(t, pacing / MBIT, label=label, **style.LINE["pacing"])
        series_d.append(pacing / MBIT)
    for name, key, label in (
        ("cc_bw_bps", "bw", "bw estimate (cc_bw)"),
        ("cc_max_bw_bps", "max_bw", "max bw (cc_max_bw)"),
        ("cc_bw_lo_bps", "bw_lo", "bw_lo (cc_bw_lo)"),
    ):
        v = _col(f, name)
        if v is not None:
            d.plot(t, v / MBIT, label=label, drawstyle="steps-post", **style.LINE[key])
            series_d.append(v / MBIT)
    _hline(d, rate_mbit, "bottleneck rate (wire)")
    d.set_ylabel("Mbit/s")
    d.set_title("(d) pacing rate and bandwidth estimate")
    _clip_top(d, series_d, PACING_CLIP * rate_mbit if rate_mbit else None, " Mbit/s")


def _state_panel(ax: Axes, view: _FlowView, panel: StatePanel) -> None:
    """The algorithm's own state (``plots.cc_state``) and the thresholds it acts on."""
    colors = (style.BLUE, style.ORANGE)
    drawn: list[Optional[np.ndarray]] = []
    for (col, label), color in zip(panel.series, colors):
        v = _col(view.f, col)
        if v is not None:
            ax.plot(view.t, v, label=label, drawstyle="steps-post", color=color, lw=1.0)
            drawn.append(v)
    params = view.info.get("params") or {}
    for (label, value), kind in zip(panel.thresholds, (style.REFERENCE, style.REFERENCE_2)):
        _hline(ax, value(params), label, kind)
    ax.set_ylabel(panel.unit)
    ax.set_title(f"(e) {panel.title}")
    _clip_top(ax, drawn, None)


def _row_order(row: TimelineRow) -> list[str]:
    canon = {"mode": BBR_MODES, "phase": BBR2_PHASES, "ca_state": CA_STATES}.get(row.name)
    present = row.labels
    if canon is not None:
        return [label for label in canon if label in present] + sorted(present - set(canon))
    if row.name == "gain":
        return sorted(
            present, key=lambda label: -float(label.split()[-1]) if label.split()[-1].replace(".", "").isdigit() else 0
        )
    return sorted(present)


def _label_color(row: TimelineRow, label: str) -> str:
    if row.name == "gain":
        try:
            return style.gain_color(float(label.split()[-1]))
        except ValueError:
            return style.GREY
    return style.STATE_COLORS.get(label, style.GREY)


ROW_TITLES = {
    "mode": "BBR mode",
    "phase": "PROBE_BW phase",
    "gain": "pacing gain",
    "ca_state": "ca_state",
    "lt_bw": "long-term bw",
}


# Width of the plotting area of a flow figure, in inches, a little below what the
# layout leaves (figure width less the y labels and the legends): used to decide which
# bands are wide enough to carry their name.
TIMELINE_AXES_IN = 8.0
BAND_FONT_PT = 7


def _fits(label: str, width_s: float, span_s: float) -> bool:
    text_in = len(label) * BAND_FONT_PT * 0.62 / 72 + 0.12
    return width_s / span_s * TIMELINE_AXES_IN >= text_in


def _draw_timeline(ax: Axes, rows: list[TimelineRow], cca: str, span_s: float) -> None:
    ax.grid(False)
    n = len(rows)
    legend_rows: list[list[tuple[Patch, str]]] = []
    span_s = span_s if span_s > 0 else 1.0
    for i, row in enumerate(rows):
        y = n - 1 - i
        entries = [(Patch(facecolor="none", edgecolor="none"), f"{ROW_TITLES.get(row.name, row.name)}:")]
        for label in _row_order(row):
            spans = [(s.start, s.end - s.start) for s in row.segments if s.label == label]
            color = _label_color(row, label)
            ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=color, edgecolors="none")
            entries.append((Patch(facecolor=color), "in use" if row.name == "lt_bw" else label))
        legend_rows.append(entries)
        # Name the wider bands in place.
        for s in row.segments:
            if row.name != "lt_bw" and _fits(s.label, s.end - s.start, span_s):
                color = _label_color(row, s.label)
                ax.text(
                    (s.start + s.end) / 2,
                    y,
                    s.label,
                    ha="center",
                    va="center",
                    fontsize=BAND_FONT_PT,
                    color="white" if color in style.DARK else "black",
                    clip_on=True,
                )
    ax.set_ylim(-0.6, max(n, 1) - 0.4)
    ax.set_yticks(range(n))
    ax.set_yticklabels([ROW_TITLES.get(r.name, r.name) for r in reversed(rows)])
    ax.tick_params(axis="y", length=0)
    if n == 0:
        ax.text(0.5, 0.5, f"no state recorded for {cca}", transform=ax.transAxes, ha="center", va="center")
    ax.set_title("(e) state timeline (each sample colours the interval ending at it)")
    if legend_rows:
        # One legend line per timeline row: matplotlib fills legends column by column,
        # so lay the entries out as a grid and read it down the columns.
        width = max(len(r) for r in legend_rows)
        blank = (Patch(facecolor="none", edgecolor="none"), "")
        grid = [r + [blank] * (width - len(r)) for r in legend_rows]
        flat = [grid[r][c] for c in range(width) for r in range(len(grid))]
        shift = ScaledTranslation(0, -30 / 72, ax.figure.dpi_scale_trans)
        ax.legend(
            [h for h, _ in flat],
            [label for _, label in flat],
            ncol=width,
            loc="upper left",
            bbox_to_anchor=(0.0, 0.0),
            bbox_transform=ax.transAxes + shift,
            borderaxespad=0.0,
            handlelength=1.2,
            columnspacing=1.2,
            frameon=False,
        )


def link_figure(run: RunData) -> Figure:
    """The bottleneck: throughput (total and per flow), queue, drops; with a reverse
    bottleneck (``up_*`` columns), both directions (``plots.two_way``)."""
    lf = run.link.sort_values("time_s")
    t = lf["time_s"].to_numpy(dtype=float)
    if "up_queue_bytes" in lf.columns:
        from .two_way import two_way_link_figure

        return two_way_link_figure(run, lf, t)
    fig = style.new_figure(11.5, 8.6)
    gs = fig.add_gridspec(3, 1, height_ratios=[2.4, 2.4, 1.6])
    a = fig.add_subplot(gs[0])
    b = fig.add_subplot(gs[1], sharex=a)
    c = fig.add_subplot(gs[2], sharex=a)
    ccas = [cca_label(fl.get("cca", "?")) for fl in run.summary["flows"]]
    fig.suptitle(_link_title(run, ccas), fontsize=11, x=0.01, ha="left")
    _link_rate_panel(a, run, lf, t, ccas)
    _queue_panel(b, run, lf, t)
    _drops_panel(c, lf, t)

    duration = float(run.summary.get("duration_s") or (t[-1] if len(t) else 1.0))
    a.set_xlim(0, duration)
    for ax in (a, b):
        ax.tick_params(labelbottom=False)
    for ax in (a, c):
        _legend(ax)
    _legend(b, offset_pt=48 if run.summary["link"].get("rate_bps") else 0)
    return fig


def _link_title(run: RunData, ccas: list[str]) -> str:
    """The flows by algorithm, the link's utilisation and drops, then the run's line."""
    link, n = run.summary["link"], run.flow_count
    counts: dict[str, int] = {}
    for x in ccas:
        counts[x] = counts.get(x, 0) + 1
    mix = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in counts.items())
    util = link.get("utilization")
    drops = link.get("drops")
    figures = ", ".join(
        x
        for x in (
            None if util is None else f"utilisation {100 * float(util):.1f} %",
            None if drops is None else f"{drops} drops",
        )
        if x
    )
    head = traffic.with_flows(f"link: {n} flow{'s' if n != 1 else ''} ({mix})", n, run.summary)
    return head + (f", {figures}" if figures else "") + "\n" + _run_line(run)


def _link_rate_panel(a: Axes, run: RunData, lf: pd.DataFrame, t: np.ndarray, ccas: list[str]) -> None:
    """(a) throughput: the link's, each flow's (when there are few enough to tell
    apart), and the capacity offered"""
    rate = run.summary["link"].get("rate_bps")
    rate_mbit = rate / MBIT if rate else None
    n = run.flow_count
    interval = run.interval_s
    smooth = int(round(SMOOTH_S / interval)) if interval > 0 else 1
    series_a: list[Optional[np.ndarray]] = []
    total = _col(lf, "throughput_bps")
    if total is not None:
        total = _mean(total, smooth)
        a.plot(t, total / MBIT, label="bottleneck output (wire)", **style.LINE["link"])
        series_a.append(total / MBIT)
    if n <= len(style.FLOW_COLORS) and "throughput_bps" in run.flows.columns:
        for i in range(n):
            ff = run.flow_frame(i)
            v = _mean(ff["throughput_bps"].to_numpy(dtype=float), smooth) / MBIT
            a.plot(
                ff["time_s"].to_numpy(dtype=float),
                v,
                lw=0.9,
                color=style.FLOW_COLORS[i],
                label=f"flow {i} ({ccas[i]}, payload)",
            )
            series_a.append(v)
    capacity = _col(lf, "capacity_bps")
    if capacity is not None and np.nanmax(capacity) - np.nanmin(capacity) > 1.0:
        # A trace or rate steps: the capacity offered in each interval.
        cap = _mean(capacity, smooth) / MBIT
        a.fill_between(t, np.nan_to_num(cap), color="#D9D9D9", lw=0, zorder=0, label="capacity offered")
        series_a.append(cap)
    else:
        _hline(a, rate_mbit, f"bottleneck rate ({fmt_rate(rate)})")
        if rate_mbit:
            series_a.append(np.array([rate_mbit]))
    a.set_ylabel("Mbit/s")
    a.set_title(
        "(a) throughput"
        + ("" if n <= len(style.FLOW_COLORS) else " (total; too many flows to draw each)")
        + (f", {SMOOTH_S * 1e3:.0f} ms means" if smooth > 1 else "")
    )
    _clip_top(a, series_a, None)


def _queue_panel(b: Axes, run: RunData, lf: pd.DataFrame, t: np.ndarray) -> None:
    """(b) queue, in KB and (on the right) in ms of queueing delay"""
    link = run.summary["link"]
    rate = link.get("rate_bps")
    q = _col(lf, "queue_bytes")
    buf_bytes = _buffer_bytes(link, run.mss + run.header_bytes)
    if q is not None:
        b.plot(t, q / 1e3, label="queue (at each sample)", **style.LINE["queue"])
    _hline(b, buf_bytes / 1e3 if buf_bytes else None, f"buffer limit ({fmt_buffer(link)})")
    b.set_ylabel("queue (KB)")
    b.set_title("(b) bottleneck queue")
    _clip_top(b, [None if q is None else q / 1e3, None if not buf_bytes else np.array([buf_bytes / 1e3])], None)
    if rate:
        # KB -> ms of queueing delay at the bottleneck rate
        k = 8e6 / rate
        sec = b.secondary_yaxis("right", functions=(lambda x: x * k, lambda y: y / k))
        sec.set_ylabel("queueing delay (ms)")


def _drops_panel(c: Axes, lf: pd.DataFrame, t: np.ndarray) -> None:
    """(c) drops"""
    drops = _col(lf, "drops")
    if drops is not None:
        c.plot(t, drops, label="drops (cumulative)", drawstyle="steps-post", **style.LINE["drops"])
    c.set_ylabel("packets")
    c.set_xlabel("time (s)")
    c.set_title("(c) packets dropped at the bottleneck")
    _clip_top(c, [drops], None)
