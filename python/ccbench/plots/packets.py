"""Packet-level figures of an analysed capture (``packets.parquet``): the time-sequence
graph and the retransmission figure."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from . import style
from .rundir import PlotError, RunData, fmt_ms, fmt_rate
from .timeseries import _legend

MB = 1e6
KB = 1e3


def _packets(run: RunData, flow: int) -> pd.DataFrame:
    if run.packets is None:
        raise PlotError(
            "RUN_DIR", f"'{run.directory}' has no packets.parquet; sequence figures need 'ccbench analyze --out DIR'"
        )
    run.check_flow(flow)
    return run.packets[run.packets["flow"] == flow].sort_values("time_s", kind="stable")


def _title(run: RunData, flow: int, what: str) -> str:
    info = run.summary["flows"][flow]
    rtt = (info.get("rtt_ms") or {}).get("mean")
    cap = run.summary.get("capture") or {}
    return (
        f"flow {flow}: {info.get('src', '?')} → {info.get('dst', '?')}, {what}\n"
        f"{fmt_rate(info.get('goodput_bps'))} goodput, {info.get('retransmits', 0)} retransmits, "
        f"{info.get('dupacks', 0)} duplicate ACKs, mean RTT {fmt_ms(rtt)} · captured at the "
        f"{info.get('capture_side', '?')} · {cap.get('file', '')}"
    )


def _steps(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(v)
    return t[ok], v[ok]


def seq_figure(run: RunData, flow: int) -> Figure:
    """Time-sequence (Stevens) graph: each data segment as a vertical bar over the bytes
    it carries (retransmissions in red), the cumulative ACK, the receive window's right
    edge (ACK + window) and the first SACK block of each ACK."""
    p = _packets(run, flow)
    data, acks = p[p["kind"] == 0], p[p["kind"] == 1]
    fig = style.new_figure(11.5, 6.5)
    ax = fig.add_subplot(1, 1, 1)
    fig.suptitle(_title(run, flow, "time-sequence graph"), fontsize=11, x=0.01, ha="left")
    _draw_segments(ax, data)
    if len(acks):
        _draw_acks(ax, acks)
    ax.autoscale_view()
    _fit_to_data(ax, data, acks)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("relative sequence number (MB)")
    ax.set_title("data segments, ACKs and the receive window")
    _legend(ax)
    return fig


def _draw_segments(ax: Axes, data: pd.DataFrame) -> None:
    """Each data segment as a bar from its first byte to its end; retransmissions
    thicker, in red, and marked with a cross."""
    for sel, color, label, lw in (
        (~data["retransmission"], style.BLUE, "data segment", 0.8),
        (data["retransmission"], style.VERMILLION, "retransmission", 1.6),
    ):
        d = data[sel]
        if len(d):
            t = d["time_s"].to_numpy(float)
            segs = np.stack(
                [np.stack([t, d["seq"].to_numpy(float) / MB], 1), np.stack([t, d["end"].to_numpy(float) / MB], 1)], 1
            )
            ax.add_collection(LineCollection(segs, colors=color, linewidths=lw, label=label))
            ax.plot(t, d["end"].to_numpy(float) / MB, ls="none", marker="_", ms=3, color=color)
    rd = data[data["retransmission"]]
    if len(rd):
        # On top of the ACK line, which otherwise hides them at this scale.
        ax.plot(
            rd["time_s"].to_numpy(float),
            rd["seq"].to_numpy(float) / MB,
            ls="none",
            marker="x",
            ms=5,
            mew=1.2,
            color=style.VERMILLION,
            zorder=5,
        )


def _draw_acks(ax: Axes, acks: pd.DataFrame) -> None:
    """The cumulative ACK, the receive window's right edge and each ACK's first SACK block."""
    t = acks["time_s"].to_numpy(float)
    ack = acks["ack"].to_numpy(float)
    ax.plot(*_steps(t, ack / MB), drawstyle="steps-post", color=style.GREEN, lw=1.0, label="cumulative ACK")
    win = ack + acks["rwnd_bytes"].to_numpy(float)
    if np.isfinite(win).any():
        ax.plot(
            *_steps(t, win / MB),
            drawstyle="steps-post",
            color=style.GREY,
            lw=0.9,
            ls="--",
            label="receive window (ACK + window)",
        )
    sk = acks[np.isfinite(acks["sack_left"].to_numpy(float))]
    if len(sk):
        ts = sk["time_s"].to_numpy(float)
        segs = np.stack(
            [
                np.stack([ts, sk["sack_left"].to_numpy(float) / MB], 1),
                np.stack([ts, sk["sack_right"].to_numpy(float) / MB], 1),
            ],
            1,
        )
        ax.add_collection(LineCollection(segs, colors=style.PURPLE, linewidths=1.2, label="SACK block"))


def _fit_to_data(ax: Axes, data: pd.DataFrame, acks: pd.DataFrame) -> None:
    """A window far ahead of the data does not limit it: keep the data readable, and
    say how far the window's edge goes."""
    top = float(np.nanmax(data["end"].to_numpy(float))) / MB if len(data) else 1.0
    if len(acks):
        win_top = float(np.nanmax(np.concatenate([[0.0], (acks["ack"] + acks["rwnd_bytes"]).to_numpy(float)]))) / MB
        if win_top > top * 1.3:
            ax.set_ylim(bottom=0, top=top * 1.05)
            ax.text(
                0.995,
                0.02,
                f"receive window's edge above the scale (up to {win_top:.4g} MB)",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize=7,
                color="#555555",
            )


def retrans_figure(run: RunData, flow: int) -> Figure:
    """Retransmissions and duplicate ACKs per interval (cumulative retransmissions on the
    right), and bytes in flight against the receive window."""
    p = _packets(run, flow)
    info: dict[str, Any] = run.summary["flows"][flow]
    interval = run.interval_s
    duration = float(run.summary.get("duration_s") or (p["time_s"].max() if len(p) else 1.0))
    fig = style.new_figure(11.5, 7.5)
    gs = fig.add_gridspec(2, 1, height_ratios=[1, 1.2])
    a = fig.add_subplot(gs[0])
    b = fig.add_subplot(gs[1], sharex=a)
    fig.suptitle(_title(run, flow, "retransmissions"), fontsize=11, x=0.01, ha="left")
    _retrans_panel(a, p, interval, duration)
    _inflight_panel(b, p, str(info.get("capture_side", "?")))
    a.set_xlim(0, duration)
    a.tick_params(labelbottom=False)
    _legend(b)
    return fig


def _retrans_panel(a: Axes, p: pd.DataFrame, interval: float, duration: float) -> None:
    """(a) retransmitted packets and duplicate ACKs per interval; the cumulative
    retransmissions on a second axis."""
    edges = np.arange(0.0, duration + interval, interval) if interval > 0 else np.array([0.0, duration])
    data = p[p["kind"] == 0]
    re = data[data["retransmission"]]["time_s"].to_numpy(float)
    dup = p[(p["kind"] == 1) & p["dupack"]]["time_s"].to_numpy(float)
    n_re, _ = np.histogram(re, edges)
    n_dup, _ = np.histogram(dup, edges)
    w = (edges[1] - edges[0]) if len(edges) > 1 else 1.0
    a.bar(
        edges[:-1],
        n_re,
        width=w,
        align="edge",
        color=style.VERMILLION,
        alpha=0.8,
        label=f"retransmitted packets per {interval * 1e3:.3g} ms",
    )
    a.step(edges[:-1], n_dup, where="post", color=style.GREY, lw=0.9, label="duplicate ACKs per interval")
    a.set_ylabel("packets")
    a.set_title("(a) retransmissions and duplicate ACKs")
    c = a.twinx()
    c.grid(False)
    if len(re):
        c.plot(
            np.sort(re),
            np.arange(1, len(re) + 1),
            drawstyle="steps-post",
            color=style.BLACK,
            lw=1.0,
            label="retransmitted packets (cumulative)",
        )
    c.set_ylabel("cumulative")
    c.set_ylim(bottom=0)
    handles, labels = a.get_legend_handles_labels()
    h2, l2 = c.get_legend_handles_labels()
    a.legend(handles + h2, labels + l2, loc="upper left", bbox_to_anchor=(1.06, 1.0), borderaxespad=0.0)


def _inflight_panel(b: Axes, p: pd.DataFrame, side: str) -> None:
    """(b) bytes in flight (a capture at the sender sees them) and the receive window."""
    t = p["time_s"].to_numpy(float)
    infl = p["inflight_bytes"].to_numpy(float)
    if np.isfinite(infl).any():
        b.plot(
            *_steps(t, infl / KB),
            drawstyle="steps-post",
            color=style.ORANGE,
            lw=0.9,
            label="bytes in flight (unacked − SACKed)",
        )
    else:
        b.text(
            0.5,
            0.5,
            f"bytes in flight are not visible from a capture at the {side}",
            transform=b.transAxes,
            ha="center",
            va="center",
            color=style.GREY,
        )
    acks = p[p["kind"] == 1]
    rw = acks["rwnd_bytes"].to_numpy(float)
    if np.isfinite(rw).any():
        b.plot(
            *_steps(acks["time_s"].to_numpy(float), rw / KB),
            drawstyle="steps-post",
            color=style.BLUE,
            lw=1.0,
            label="receive window",
        )
    top = np.nanmax(np.concatenate([infl[np.isfinite(infl)], [1.0]])) / KB
    b.set_ylim(0, top * 1.15 if math.isfinite(top) and top > 0 else 1)
    b.set_ylabel("KB")
    b.set_xlabel("time (s)")
    b.set_title(
        "(b) bytes in flight and the receive window"
        + (
            " (window above the scale: it does not limit)"
            if np.isfinite(rw).any() and np.nanmin(rw) / KB > top * 1.15
            else ""
        )
    )
