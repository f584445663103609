"""Vargas, Gunapati, Gandhi and Balasubramanian, "Are mobiles ready for BBR?", IMC 2022.

A phone uploads over an uncongested 1 Gbit/s Ethernet LAN with 1 to 20 parallel
connections; its CPU (the ``phone-*`` host presets) is the bottleneck. Experiments, each
a sweep into the results store:

* connections: BBR and Cubic, 1/5/10/20 connections, low-, mid- and high-end CPUs (§4.1);
* pacing: BBR with and without pacing (§5.2.1);
* cubic-pacing / cubic-fixed: Cubic paced at the stack's rate and at fixed rates (§5.2.2);
* bbr-fixed: BBR with cwnd fixed at 70, the model frozen, fixed pacing rates (§5.1);
* stride: BBR with pacing strides 1 to 50 (§6.2).

The low-end preset's costs are calibrated on the study's single-connection goodputs
only (Cubic 364, BBR 325 Mbit/s); everything else in ccbench's column emerges.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import matplotlib
import pandas as pd
from matplotlib.figure import Figure
from rich.console import Console

from ..plots import style
from ..report_html import Page, Section, Table, save_figure, write_page
from . import study
from ._runs import conclude, execute_plans, line, mbps, means, pct, runs, value
from .compare import Finding

STUDY = "Vargas et al., IMC 2022"
CPUS = ("phone-lowend", "phone-midend", "phone-highend")
CPU_LABEL = {"phone-lowend": "Low-End", "phone-midend": "Mid-End", "phone-highend": "High-End"}
KERNEL_NOTE = (
    "The phones ran Linux 4.14 (Pixel 4) and 5.10 (Pixel 6), which have no TSO burst bonus on short-RTT paths, "
    "so these runs set tcp.tso_rtt_log = 0; on a current kernel (tso_rtt_log = 9) a 1 ms LAN adds up to 32 KB "
    "to every burst, pacing wakes the CPU far less often and the effect shrinks. The study's 'Default' "
    "configuration (dynamic frequency scaling) is not modelled. The host presets are one serial CPU: the "
    "phones' other cores and interrupt steering are not."
)


@dataclass(frozen=True)
class Grid:
    duration: str
    repetitions: int
    connections: Sequence[int] = (1, 5, 10, 20)
    strides: Sequence[int] = (1, 2, 5, 10, 20, 50)


FULL = Grid(duration="60s", repetitions=3)
QUICK = Grid(duration="10s", repetitions=1)

# The testbed: phone -> 1 Gbit/s Ethernet -> router -> server, about 1 ms RTT.
TESTBED: dict[str, Any] = {
    "link": {"rate": "1Gbit", "rtt": "1ms", "buffer": "1000pkt", "nic_rate": "1Gbit"},
    "tcp": {"tso_rtt_log": 0},
}


def _plan(grid: Grid, name: str, cpu: Any, flow: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(TESTBED)
    doc.update(
        {
            "duration": grid.duration,
            "host": {"cpu": cpu},
            "flows": [flow],
            "sweep": {"name": name, "repetitions": grid.repetitions},
        }
    )
    return doc


def plans(grid: Grid, prefix: str) -> dict[str, dict[str, Any]]:
    n = list(grid.connections)
    return {
        "connections": _plan(grid, f"{prefix}-connections", list(CPUS), {"cca": ["bbr", "cubic"], "count": n}),
        "pacing": _plan(
            grid,
            f"{prefix}-pacing",
            ["phone-lowend", "phone-midend"],
            {"cca": "bbr", "count": [1, 5, 20], "pacing": [True, False]},
        ),
        "cubic-pacing": _plan(
            grid, f"{prefix}-cubic-pacing", "phone-lowend", {"cca": "cubic", "count": 20, "pacing": [False, True]}
        ),
        "cubic-fixed": _plan(
            grid,
            f"{prefix}-cubic-fixed",
            "phone-lowend",
            {"cca": "cubic", "count": 20, "pacing": True, "fixed_pacing_rate": ["20Mbit", "140Mbit"]},
        ),
        "bbr-fixed": _plan(
            grid,
            f"{prefix}-bbr-fixed",
            "phone-lowend",
            {
                "cca": "bbr",
                "count": 20,
                "fixed_cwnd": 70,
                "freeze_cc": True,
                "fixed_pacing_rate": ["20Mbit", "140Mbit"],
            },
        ),
        "stride": _plan(
            grid,
            f"{prefix}-stride",
            ["phone-lowend", "phone-midend"],
            {"cca": "bbr", "count": 20, "pacing_stride": list(grid.strides)},
        ),
    }


@study(
    "vargas2022",
    summary="Vargas et al., Are mobiles ready for BBR? (IMC 2022): BBR vs Cubic on low-end "
    "phones with 1-20 uploads; pacing on/off; pacing strides",
)
def run(
    quick: bool, out: Path, workers: Optional[int], store: Any, console: Console, grid: Optional[Grid] = None
) -> None:
    from ..store import open_store

    grid = grid or (QUICK if quick else FULL)
    mode = "quick" if quick else "full"
    store = store if store is not None else open_store()
    records = execute_plans(plans(grid, f"vargas2022-{mode}"), store, workers, console, STUDY)
    frames = {part: runs(recs) for part, recs in records.items()}
    findings = analyse(frames)
    conclude(
        findings,
        console,
        out,
        f"{STUDY}: the study's figures and ccbench's ({mode} mode)",
        KERNEL_NOTE,
        lambda path: write_report(frames, findings, path, mode),
    )


def analyse(frames: dict[str, pd.DataFrame]) -> list[Finding]:
    figures = _Figures(frames)
    return figures.connections() + figures.pacing() + figures.fixed_rates() + figures.strides()


LOW = "phone-lowend"


def _paced(t: pd.DataFrame, cpu: str, n: int, on: bool) -> float:
    return value(t, **{"host.cpu": cpu, "flows[0].count": n, "flows[0].pacing": on})


def _best_stride(stride: pd.DataFrame, cpu: str) -> tuple[int, float, float]:
    """The stride with the highest goodput on ``cpu``, that goodput, and stride 1's."""
    t = stride[stride["host.cpu"] == cpu]
    top = t.loc[t["mean"].idxmax()]
    return int(top["flows[0].pacing_stride"]), float(top["mean"]), value(t, **{"flows[0].pacing_stride": 1})


class _Figures:
    """ccbench's figures for the study's findings, one method per experiment (the
    connections, pacing, fixed rates and strides), each giving its findings."""

    def __init__(self, frames: dict[str, pd.DataFrame]) -> None:
        conn = means(frames["connections"], ["host.cpu", "flows[0].cca", "flows[0].count"])

        def low_end(cca: str, n: int) -> float:
            return value(conn, **{"host.cpu": LOW, "flows[0].cca": cca, "flows[0].count": n})

        self.c1, self.c20, self.b1, self.b20 = (
            low_end("cubic", 1),
            low_end("cubic", 20),
            low_end("bbr", 1),
            low_end("bbr", 20),
        )
        self.high = conn[conn["host.cpu"] == "phone-highend"]["mean"]
        self.paced = pacing = means(frames["pacing"], ["host.cpu", "flows[0].count", "flows[0].pacing"])
        self.paced_rtt = means(frames["pacing"], ["host.cpu", "flows[0].count", "flows[0].pacing"], "rtt_ms")
        self.lift = {n: 100 * (_paced(pacing, LOW, n, False) / _paced(pacing, LOW, n, True) - 1) for n in (1, 5, 20)}
        self.mid_lift = 100 * (_paced(pacing, "phone-midend", 20, False) / _paced(pacing, "phone-midend", 20, True) - 1)
        self.cubic = means(frames["cubic-pacing"], ["flows[0].pacing"])
        self.fixed = means(frames["cubic-fixed"], ["flows[0].fixed_pacing_rate"])
        self.bbr_fixed = means(frames["bbr-fixed"], ["flows[0].fixed_pacing_rate"])
        stride = means(frames["stride"], ["host.cpu", "flows[0].pacing_stride"])
        self.stride_sndbuf = float(frames["stride"]["sndbuf_limited"].max())
        self.s_lo, self.s_lo_best, self.s_lo_1 = _best_stride(stride, LOW)
        self.s_mid, self.s_mid_best, self.s_mid_1 = _best_stride(stride, "phone-midend")
        self.largest = max(stride["flows[0].pacing_stride"])
        self.s_lo_largest = value(stride, **{"host.cpu": LOW, "flows[0].pacing_stride": self.largest})

    def connections(self) -> list[Finding]:
        """§4.1: goodput against the number of connections."""
        c1, c20, b1, b20 = self.c1, self.c20, self.b1, self.b20
        return [
            Finding(
                "Low-End, 1 connection: Cubic / BBR",
                "364 / 325 Mbit/s",
                f"{mbps(c1)} / {mbps(b1)}",
                "the calibration point of the phone-lowend preset",
            ),
            Finding(
                "Low-End, 20 connections: Cubic / BBR",
                "310 / 138 Mbit/s (BBR 55% below Cubic)",
                f"{mbps(c20)} / {mbps(b20)} (BBR {100 * (1 - b20 / c20):.0f}% below Cubic)",
                "emerges",
            ),
            Finding(
                "Low-End, 1 -> 20 connections",
                "Cubic -15%, BBR -58%",
                f"Cubic {pct(100 * (c20 / c1 - 1))}, BBR {pct(100 * (b20 / b1 - 1))}",
                "emerges",
            ),
            Finding(
                "High-End, any connection count",
                "both at least 915 Mbit/s (line rate 1 Gbit/s)",
                f"{mbps(self.high.min())} to {mbps(self.high.max())}",
                "the 1 Gbit/s link is the bottleneck",
            ),
        ]

    def pacing(self) -> list[Finding]:
        """§5.2.1: BBR with and without pacing."""
        paced, rtt, lift = self.paced, self.paced_rtt, self.lift
        return [
            Finding(
                "BBR without pacing, Low-End, 20 connections",
                "goodput x2.7; RTT more than doubles",
                f"goodput x{_paced(paced, LOW, 20, False) / _paced(paced, LOW, 20, True):.1f}; RTT "
                f"{_paced(rtt, LOW, 20, True):.1f} -> {_paced(rtt, LOW, 20, False):.1f} ms",
                "",
            ),
            Finding(
                "BBR without pacing, Low-End, 1 and 5 connections",
                "+14% and +19%",
                f"{pct(lift[1])} and {pct(lift[5])}",
                "ccbench's BBR falls further already at 5 connections, so pacing costs more there",
            ),
            Finding(
                "BBR without pacing, Mid-End, 20 connections",
                "+67%",
                pct(self.mid_lift),
                "Mid-End costs are Low-End's scaled by clock (576 MHz -> 1.2 GHz)",
            ),
        ]

    def fixed_rates(self) -> list[Finding]:
        """§5.2.2 and §5.1: Cubic paced at the stack's rate and at fixed rates; BBR with
        its model frozen at fixed rates."""
        cubic, fixed, bbr_fixed = self.cubic, self.fixed, self.bbr_fixed
        return [
            Finding(
                "Cubic, Low-End, 20 connections: unpaced / paced at the stack's rate",
                "pacing drops Cubic's goodput considerably",
                f"{mbps(value(cubic, **{'flows[0].pacing': False}))} / {mbps(value(cubic, **{'flows[0].pacing': True}))}",
                "Cubic paced at 120% of cwnd/SRTT (tcp_update_pacing_rate)",
            ),
            Finding(
                "Cubic paced at a fixed 20 / 140 Mbit/s per connection",
                "147 Mbit/s / about unpaced Cubic",
                f"{mbps(value(fixed, **{'flows[0].fixed_pacing_rate': '20Mbit'}))} / "
                f"{mbps(value(fixed, **{'flows[0].fixed_pacing_rate': '140Mbit'}))}",
                "",
            ),
            Finding(
                "BBR, cwnd 70, model frozen, pacing fixed at 20 / 140 Mbit/s",
                "only 140 Mbit/s reaches Cubic's goodput",
                f"{mbps(value(bbr_fixed, **{'flows[0].fixed_pacing_rate': '20Mbit'}))} / "
                f"{mbps(value(bbr_fixed, **{'flows[0].fixed_pacing_rate': '140Mbit'}))} (Cubic {mbps(self.c20)})",
                "",
            ),
        ]

    def strides(self) -> list[Finding]:
        """§6.2: BBR with pacing strides."""
        return [
            Finding(
                "Pacing stride, Low-End, 20 connections",
                "best at 10x: below 140 -> 240 Mbit/s; larger strides limited by the socket buffer",
                f"best at {self.s_lo}x: {mbps(self.s_lo_1)} -> {mbps(self.s_lo_best)}; "
                f"{self.largest}x: {mbps(self.s_lo_largest)}",
                "ccbench's stride bursts grow until the 64 KB GSO limit (44 segments); the study's stopped near "
                "15 KB, which it attributes to the socket buffer. ccbench's send buffer autotunes as Linux's "
                "does (BBR: 3 x cwnd x 2304 bytes, up to tcp_wmem's 4 MB), and held these runs back at most "
                f"{100 * self.stride_sndbuf:.1f}% of the time, so its best stride comes later; the phones' buffer "
                "must have been smaller than Linux's defaults give, which the study does not state",
            ),
            Finding(
                "Pacing stride, Mid-End, 20 connections",
                "best at 5x",
                f"best at {self.s_mid}x: {mbps(self.s_mid_1)} -> {mbps(self.s_mid_best)}",
                "",
            ),
        ]


def write_report(frames: dict[str, pd.DataFrame], findings: Sequence[Finding], out: Path, mode: str) -> Path:
    with matplotlib.rc_context(style.RC):
        images = [
            save_figure(
                connections_figure(frames["connections"]),
                out,
                "connections",
                "Goodput against the number of connections, per CPU configuration (the study's Fig. 2)",
                "Aggregate goodput of all uploads, mean ± 95% CI.",
            ),
            save_figure(
                pacing_figure(frames["pacing"]),
                out,
                "pacing",
                "BBR with and without pacing (the study's Figs. 4, 5 and 7)",
                "Low-End and Mid-End.",
            ),
            save_figure(
                stride_figure(frames["stride"]),
                out,
                "stride",
                "Goodput against the pacing stride, 20 connections (the study's Fig. 8)",
                "",
            ),
        ]
    comparison = Table(
        "Findings",
        ["point / finding", "study", "ccbench", "note"],
        [[f.point, f.study, f.ccbench, f.note] for f in findings],
    )
    page = Page(
        title=f"ccbench replication: {STUDY}, Are mobiles ready for BBR?",
        subtitle=f"{mode} mode",
        sections=[
            Section("The study's figures and ccbench's", paragraphs=[KERNEL_NOTE], tables=[comparison]),
            Section("Figures", images=images),
        ],
    )
    return write_page(page, out)


COLORS = {"bbr": style.BLUE, "cubic": style.ORANGE}


def connections_figure(frame: pd.DataFrame) -> Figure:
    table = means(frame, ["host.cpu", "flows[0].cca", "flows[0].count"])
    cpus = [c for c in CPUS if c in set(table["host.cpu"])]
    fig = Figure(figsize=(3.6 * len(cpus), 3.2))
    axes = fig.subplots(1, len(cpus), sharey=True, squeeze=False)[0]
    for ax, cpu in zip(axes, cpus):
        for cca in ("bbr", "cubic"):
            t = table[(table["host.cpu"] == cpu) & (table["flows[0].cca"] == cca)]
            line(ax, t, "flows[0].count", cca.upper() if cca == "bbr" else "Cubic", COLORS[cca])
        ax.set_title(CPU_LABEL[cpu])
        ax.set_xlabel("connections")
        ax.set_xticks(sorted(set(table["flows[0].count"])))
    axes[0].set_ylim(0, 1.08 * float((table["mean"] + table["ci"].fillna(0)).max()))
    axes[0].set_ylabel("goodput (Mbit/s)")
    axes[0].legend()
    fig.tight_layout()
    return fig


def pacing_figure(frame: pd.DataFrame) -> Figure:
    fig = Figure(figsize=(8, 3.2))
    ax_g, ax_r = fig.subplots(1, 2)
    keys = ["host.cpu", "flows[0].count", "flows[0].pacing"]
    for ax, metric, ylabel in ((ax_g, "goodput_mbps", "goodput (Mbit/s)"), (ax_r, "rtt_ms", "mean RTT (ms)")):
        table = means(frame, keys, metric)
        groups = [
            (cpu, n)
            for cpu in ("phone-lowend", "phone-midend")
            for n in sorted(set(table["flows[0].count"]))
            if ((table["host.cpu"] == cpu) & (table["flows[0].count"] == n)).any()
        ]
        for j, (on, color, label) in enumerate(
            ((True, style.BLUE, "pacing on"), (False, style.VERMILLION, "pacing off"))
        ):
            ys = [value(table, **{"host.cpu": cpu, "flows[0].count": n, "flows[0].pacing": on}) for cpu, n in groups]
            ax.bar([i + (j - 0.5) * 0.38 for i in range(len(groups))], ys, width=0.38, color=color, label=label)
        ax.set_xticks(range(len(groups)), [f"{CPU_LABEL[c]}\n{n} conn." for c, n in groups], fontsize=7)
        ax.set_ylabel(ylabel)
    ax_g.set_title("BBR goodput")
    ax_r.set_title("BBR RTT")
    ax_g.legend()
    fig.tight_layout()
    return fig


def stride_figure(frame: pd.DataFrame) -> Figure:
    table = means(frame, ["host.cpu", "flows[0].pacing_stride"])
    fig = Figure(figsize=(4.8, 3.2))
    ax = fig.subplots()
    for cpu, color in (("phone-lowend", style.BLUE), ("phone-midend", style.GREEN)):
        line(ax, table[table["host.cpu"] == cpu], "flows[0].pacing_stride", CPU_LABEL[cpu], color)
    ax.set_xscale("log")
    strides = sorted(set(table["flows[0].pacing_stride"]))
    ax.set_xticks(strides, [f"{s}x" for s in strides])
    ax.set_xlabel("pacing stride")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.set_title("BBR, 20 connections")
    ax.legend()
    fig.tight_layout()
    return fig


__all__ = ["FULL", "QUICK", "Grid", "analyse", "plans", "run", "write_report"]
