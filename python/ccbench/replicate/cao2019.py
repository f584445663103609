"""Cao, Jain, Sharma, Balasubramanian and Gandhi, "When to use and when not to use BBR:
An empirical analysis and evaluation study", IMC 2019.

Three experiments, each a sweep run through ``ccbench.sweep.execute`` into the store:

* grid: one BBR or one Cubic flow alone over bandwidth x base RTT x buffer size (the
  study's 640 combinations in ``--full``);
* loss: one flow of each over a range of random loss rates (the "cliff point");
* sharing: one BBR and one Cubic flow together over buffer sizes.

ccbench's column of the comparison is computed from those runs only. The study's column
quotes the paper's own statements (abstract and introduction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import matplotlib
import pandas as pd
from rich.console import Console

from ..advise import fit_tree, winners
from ..analysis import aggregate, algorithm_table, flows_frame, goodput_ratio, runs_frame
from ..plots import style
from ..report_html import Page, Section, Table, save_figure, sweep_report, write_page
from ..report_html import figures
from . import study
from .compare import Finding, print_comparison, save_comparison

STUDY = "Cao et al., IMC 2019"
# Buffers at most this many BDPs count as "much smaller than the BDP"; at least DEEP as deep.
SHALLOW = 0.25
DEEP = 4.0
KERNEL_NOTE = (
    "ccbench simulates the current Linux BBRv1 (tcp_bbr.c of recent kernels); the study ran Linux 4.15. "
    "Kernels after 4.15 added an ACK-aggregation allowance to BBR's cwnd (extra_acked) and moved pacing to "
    "earliest-departure-time timestamps, and the study's Mininet links were shaped by tc-tbf and netem with "
    "their own bursts, where ccbench's bottleneck is an exact-rate drop-tail FIFO. Figures can differ for "
    "those reasons."
)


@dataclass(frozen=True)
class Grid:
    """One mode's experiments."""

    rates: Sequence[str]
    rtts: Sequence[str]
    buffers: Sequence[str]
    losses: Sequence[str]
    sharing_buffers: Sequence[str]
    duration: str
    repetitions: int
    loss_point: tuple[str, str, str] = ("100Mbit", "25ms", "1bdp")  # rate, RTT, buffer of the loss sweep
    sharing_point: tuple[str, str] = ("100Mbit", "25ms")


# The study's 640 bandwidth x RTT x buffer combinations (8 x 8 x 10), spanning the ranges
# its Mininet experiments cover; buffers are absolute sizes, as a router's are. 30 s runs,
# two repetitions: 2,560 runs of the grid.
FULL = Grid(
    rates=("10Mbit", "20Mbit", "50Mbit", "100Mbit", "250Mbit", "500Mbit", "750Mbit", "1Gbit"),
    rtts=("5ms", "10ms", "25ms", "50ms", "75ms", "100ms", "150ms", "200ms"),
    buffers=("10KB", "20KB", "50KB", "100KB", "200KB", "500KB", "1MB", "5MB", "20MB", "100MB"),
    losses=(
        "0%",
        "0.1%",
        "0.5%",
        "1%",
        "2%",
        "5%",
        "10%",
        "15%",
        "18%",
        "20%",
        "22%",
        "25%",
        "30%",
        "35%",
        "40%",
        "50%",
    ),
    sharing_buffers=("0.05bdp", "0.1bdp", "0.25bdp", "0.5bdp", "1bdp", "2bdp", "4bdp", "8bdp", "16bdp"),
    duration="30s",
    repetitions=2,
)
# A minute or two on two cores: the same shape, fewer values, shorter runs.
QUICK = Grid(
    rates=("10Mbit", "50Mbit", "100Mbit", "250Mbit"),
    rtts=("10ms", "25ms", "50ms", "100ms"),
    buffers=("10KB", "50KB", "200KB", "1MB", "5MB", "20MB"),
    losses=("0%", "1%", "5%", "10%", "15%", "20%", "25%", "30%", "40%"),
    sharing_buffers=("0.1bdp", "0.5bdp", "1bdp", "2bdp", "8bdp"),
    duration="20s",
    repetitions=2,
)


def plans(grid: Grid, prefix: str) -> dict[str, dict[str, Any]]:
    """The three sweep plans, as TOML-shaped documents for ``plan_from_dict``."""
    loss_rate, loss_rtt, loss_buffer = grid.loss_point
    share_rate, share_rtt = grid.sharing_point
    return {
        "grid": {
            "duration": grid.duration,
            "link": {"rate": list(grid.rates), "rtt": list(grid.rtts), "buffer": list(grid.buffers)},
            "flows": [{"cca": ["bbr", "cubic"]}],
            "sweep": {"name": f"{prefix}-grid", "repetitions": grid.repetitions},
        },
        "loss": {
            "duration": grid.duration,
            "link": {"rate": loss_rate, "rtt": loss_rtt, "buffer": loss_buffer, "loss": list(grid.losses)},
            "flows": [{"cca": ["bbr", "cubic"]}],
            "sweep": {"name": f"{prefix}-loss", "repetitions": grid.repetitions},
        },
        "sharing": {
            "duration": grid.duration,
            "link": {"rate": share_rate, "rtt": share_rtt, "buffer": list(grid.sharing_buffers)},
            "flows": [{"cca": "bbr"}, {"cca": "cubic"}],
            "sweep": {"name": f"{prefix}-sharing", "repetitions": grid.repetitions},
        },
    }


@study(
    "cao2019",
    summary="Cao et al., When to use and when not to use BBR (IMC 2019): BBR vs Cubic over "
    "bandwidth, RTT, buffer and loss; sharing; decision tree",
)
def run(
    quick: bool, out: Path, workers: Optional[int], store: Any, console: Console, grid: Optional[Grid] = None
) -> None:
    from ..store import open_store
    from ..sweep import execute, plan_from_dict

    grid = grid or (QUICK if quick else FULL)
    mode = "quick" if quick else "full"
    prefix = f"cao2019-{mode}"
    store = store if store is not None else open_store()
    records: dict[str, list[Any]] = {}
    for part, doc in plans(grid, prefix).items():
        plan = plan_from_dict(doc, default_name=doc["sweep"]["name"])
        console.print(
            f"{STUDY}, {part}: {plan.point_count} points x {plan.repetitions} repetitions of {grid.duration} ({mode})",
            markup=False,
        )
        records[part] = execute(plan, store, workers=workers, progress=console.is_terminal, keep_series=False)
    findings, extras = analyse(records)
    print_comparison(findings, console, f"{STUDY}: the study's findings and ccbench's ({mode} mode)")
    console.print(KERNEL_NOTE, markup=False)
    out.mkdir(parents=True, exist_ok=True)
    written = save_comparison(findings, out)
    written.append(write_report(records, findings, extras, out, mode))
    console.print(f"wrote {', '.join(str(p) for p in written)} (figures beside the report)", markup=False)


def analyse(records: dict[str, list[Any]]) -> tuple[list[Finding], dict[str, Any]]:
    """The comparison rows, from the runs; and what the figures need."""
    grid = runs_frame(records["grid"])
    loss = runs_frame(records["loss"])
    share_flows = flows_frame(records["sharing"])
    ratio = goodput_ratio(grid)
    means = aggregate(
        grid,
        ["rate_mbps", "rtt_ms", "buffer_kb", "buffer_bdp", "cca"],
        ["goodput_mbps", "retrans_rate", "self_inflicted_delay_ms"],
    )
    tree = fit_tree(winners(grid, "goodput"), "goodput", features=["buffer_bdp", "rtt_ms", "rate_mbps"])
    rows = [
        _shallow(ratio),
        _deep(ratio),
        _retransmissions(means),
        *_cliff(loss),
        _queue(means),
        _sharing(share_flows),
        _tree(tree),
    ]
    return rows, {"ratio": ratio, "tree": tree, "grid": grid, "loss": loss, "sharing": share_flows}


def _fmt_ratio(x: float) -> str:
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


def _shallow(ratio: pd.DataFrame) -> Finding:
    point = "BBR's goodput advantage with shallow buffers (buffer much smaller than the BDP)"
    study_text = "BBR up to 200% higher goodput than Cubic (about 3x)"
    sel = ratio[ratio["buffer_bdp"] <= SHALLOW]
    if sel.empty:
        return Finding(point, study_text, f"no grid point with buffer ≤ {SHALLOW} BDP")
    r = sel["ratio"]
    top = sel.iloc[int(r.to_numpy().argmax())]
    return Finding(
        point,
        study_text,
        f"BBR/Cubic goodput up to {_fmt_ratio(r.max())} (at {top['rate_mbps']:g} Mbit/s, "
        f"{top['rtt_ms']:g} ms, {top['buffer_kb']:g} KB = {top['buffer_bdp']:.2g} BDP), median "
        f"{_fmt_ratio(r.median())} over {len(sel)} points with buffer ≤ {SHALLOW} BDP; BBR ahead by over "
        f"5% at {int((r > 1.05).sum())} of them",
        "ratio of the mean goodputs per point",
    )


def _deep(ratio: pd.DataFrame) -> Finding:
    point = "Cubic's goodput advantage with deep buffers"
    study_text = "Cubic up to 30% higher goodput than BBR"
    sel = ratio[ratio["buffer_bdp"] >= DEEP]
    if sel.empty:
        return Finding(point, study_text, f"no grid point with buffer ≥ {DEEP:g} BDP")
    inverse = sel["cubic"] / sel["bbr"]
    return Finding(
        point,
        study_text,
        f"Cubic/BBR goodput up to {_fmt_ratio(inverse.max())}, median {_fmt_ratio(inverse.median())} "
        f"over {len(sel)} points with buffer ≥ {DEEP:g} BDP; Cubic ahead by over 5% at "
        f"{int((inverse > 1.05).sum())}",
        "ratio of the mean goodputs per point; see gpr_heatmap.png",
    )


def _retransmissions(means: pd.DataFrame) -> Finding:
    point = "Retransmissions with shallow buffers"
    study_text = "BBR's losses several orders of magnitude above Cubic's"
    sel = means[means["buffer_bdp"] <= SHALLOW]
    if sel.empty:
        return Finding(point, study_text, f"no grid point with buffer ≤ {SHALLOW} BDP")
    bbr = 100 * sel[sel["cca"] == "bbr"]["retrans_rate_mean"].median()
    cubic = 100 * sel[sel["cca"] == "cubic"]["retrans_rate_mean"].median()
    orders = math.log10(bbr / cubic) if bbr > 0 and cubic > 0 else math.inf
    ratio_text = (
        f"{bbr / cubic:.0f}x, {orders:.1f} orders of magnitude"
        if math.isfinite(orders)
        else "Cubic retransmits nothing"
    )
    return Finding(
        point,
        study_text,
        f"median retransmission rate BBR {bbr:.2g}% vs Cubic {cubic:.2g}% of segments ({ratio_text}), "
        f"buffer ≤ {SHALLOW} BDP",
        "retransmitted segments per segment sent; the study counted packet losses",
    )


def _cliff(loss: pd.DataFrame) -> list[Finding]:
    table = aggregate(loss, ["loss_pct", "cca"], ["goodput_mbps", "retransmits"])
    rows = []
    point = 'Loss "cliff point" of BBR\'s goodput'
    bbr = table[table["cca"] == "bbr"].sort_values("loss_pct")
    cubic = table[table["cca"] == "cubic"].sort_values("loss_pct")
    cliff, base = _first_below_half(bbr)
    cubic_cliff, _ = _first_below_half(cubic)
    at = {round(p, 6): g for p, g in zip(bbr["loss_pct"], bbr["goodput_mbps_mean"])}
    text = (
        f"BBR's goodput first falls below half of its {base:.1f} Mbit/s at {cliff:g}% loss"
        if cliff is not None
        else f"BBR keeps over half of its {base:.1f} Mbit/s up to {bbr['loss_pct'].max():g}% loss"
    )
    near = [p for p in (15.0, 20.0, 25.0) if p in at]
    if near:
        text += " (" + ", ".join(f"{at[p]:.1f} Mbit/s at {p:g}%" for p in near) + ")"
    text += f"; Cubic falls below half at {cubic_cliff:g}%" if cubic_cliff is not None else ""
    rows.append(
        Finding(
            point,
            "about 20% random loss (set by the 1.25 probing pacing gain)",
            text,
            "loss applied to data packets at the bottleneck; the study used netem",
        )
    )
    peak = bbr.iloc[int(bbr["retransmits_mean"].to_numpy().argmax())] if len(bbr) else None
    rows.append(
        Finding(
            "Retransmissions at the cliff point",
            "BBR's retransmissions are highest at the cliff point",
            "no loss sweep"
            if peak is None
            else f"BBR's retransmissions peak at {peak['loss_pct']:g}% loss "
            f"({peak['retransmits_mean']:.0f} segments per run)",
            "counts per run of equal length",
        )
    )
    return rows


def _first_below_half(table: pd.DataFrame) -> tuple[Optional[float], float]:
    if table.empty:
        return None, math.nan
    base = float(table["goodput_mbps_mean"].iloc[0])
    below = table[table["goodput_mbps_mean"] < base / 2]
    return (float(below["loss_pct"].iloc[0]) if len(below) else None), base


def _queue(means: pd.DataFrame) -> Finding:
    point = "BBR's queue in deep buffers"
    study_text = "contrary to its design goal, BBR often keeps large queues"
    sel = means[(means["buffer_bdp"] >= DEEP) & (means["cca"] == "bbr")]
    if sel.empty:
        return Finding(point, study_text, f"no grid point with buffer ≥ {DEEP:g} BDP")
    relative = sel["self_inflicted_delay_ms_mean"] / sel["rtt_ms"]
    return Finding(
        point,
        study_text,
        f"BBR's self-inflicted delay: median {relative.median():.2f}, up to {relative.max():.2f} base "
        f"RTTs over {len(sel)} points with buffer ≥ {DEEP:g} BDP",
        "mean RTT minus base RTT, in base RTTs (1 = a full BDP queued)",
    )


def _sharing(flows: pd.DataFrame) -> Finding:
    point = "One BBR and one Cubic flow sharing the bottleneck"
    study_text = "BBR's share depends on the buffer: larger with shallow buffers, Cubic does better with deep ones"
    bbr = flows[flows["flow_cca"] == "bbr"]
    if bbr.empty:
        return Finding(point, study_text, "no sharing runs")
    table = aggregate(bbr, ["buffer_bdp"], ["share"]).sort_values("buffer_bdp")
    first, last = table.iloc[0], table.iloc[-1]
    under = table[table["share_mean"] < 0.5]
    cross = (
        f"; Cubic gets more from {under['buffer_bdp'].iloc[0]:g} BDP on"
        if len(under)
        else "; BBR gets more at every buffer"
    )
    return Finding(
        point,
        study_text,
        f"BBR's share {100 * first['share_mean']:.0f}% at {first['buffer_bdp']:g} BDP, "
        f"{100 * last['share_mean']:.0f}% at {last['buffer_bdp']:g} BDP{cross}",
        "share of the two flows' total goodput",
    )


def _tree(tree: Any) -> Finding:
    rules = tree.rules()
    words = "; ".join(f"{' and '.join(r.conditions) or 'everywhere'}: {r.winner}" for r in rules[:3])
    more = f" (+{len(rules) - 3} more rules)" if len(rules) > 3 else ""
    accuracy = "n/a" if math.isnan(tree.accuracy) else f"{100 * tree.accuracy:.0f}%"
    return Finding(
        "Decision tree: BBR or Cubic for goodput",
        "buffer size against the BDP decides: BBR when the buffer is much smaller than the BDP, Cubic when it is deep",
        f"{words}{more}; cross-validated accuracy {accuracy} over {tree.points} points "
        f"(majority answer {100 * tree.baseline:.0f}%)",
        "tree of depth 3 on buffer (BDP), RTT and bandwidth; see tree_goodput.png",
    )


def write_report(
    records: dict[str, list[Any]], findings: Sequence[Finding], extras: dict[str, Any], out: Path, mode: str
) -> Path:
    """Figures in the style of the study's, the comparison, and the grid's full sweep report."""
    with matplotlib.rc_context(style.RC):
        images = _figures(extras, out)
    sweep_report(records["grid"], out / "grid", name=f"cao2019-{mode}-grid")
    comparison = Table(
        "Findings",
        ["point / finding", "study", "ccbench", "note"],
        [[f.point, f.study, f.ccbench, f.note] for f in findings],
    )
    page = Page(
        title="ccbench replication: Cao et al., When to use and when not to use BBR (IMC 2019)",
        subtitle=f"{mode} mode; the full sweep report of the grid is in grid/index.html",
        sections=[
            Section("The study's findings and ccbench's", paragraphs=[KERNEL_NOTE], tables=[comparison]),
            Section("Figures", images=images),
        ],
    )
    return write_page(page, out)


def _figures(extras: dict[str, Any], out: Path) -> list[Any]:
    grid, loss, ratio, tree = extras["grid"], extras["loss"], extras["ratio"], extras["tree"]
    images = []
    if not ratio.empty:
        images.append(
            save_figure(
                figures.heatmap(
                    ratio,
                    "buffer_kb",
                    "rtt_ms",
                    "ratio",
                    "rate_mbps",
                    ratio=True,
                    title="Goodput ratio BBR / Cubic, by buffer size and RTT, per bandwidth",
                    value_label="goodput ratio BBR / Cubic",
                ),
                out,
                "gpr_heatmap",
                "Goodput ratio BBR / Cubic (as the study's heatmaps)",
                "Above 1 (orange) BBR's goodput is higher; below 1 (purple) Cubic's.",
            )
        )
    table = algorithm_table(grid)
    images.append(
        save_figure(
            figures.retransmissions(table, "buffer_bdp"),
            out,
            "retransmissions",
            "Retransmission rate against buffer (in BDP)",
            "One marker per grid point.",
        )
    )
    loss_table = algorithm_table(loss)
    images.append(
        save_figure(
            figures.metric_lines(
                loss_table, "loss_pct", "goodput_mbps", title="Goodput against random loss (the cliff point)"
            ),
            out,
            "loss_goodput",
            "Goodput against random loss",
            "Mean ± 95% CI.",
        )
    )
    images.append(
        save_figure(
            figures.metric_lines(
                loss_table, "loss_pct", "retransmits", logy=True, title="Retransmissions against random loss"
            ),
            out,
            "loss_retransmissions",
            "Retransmissions against random loss",
            "Retransmitted segments per run, mean ± 95% CI, log scale.",
        )
    )
    sharing = extras["sharing"]
    if not sharing.empty:
        per = aggregate(sharing, ["buffer_bdp", "cca_mix", "flow_cca"], ["share", "goodput_mbps"])
        images.append(
            save_figure(
                figures.metric_lines(
                    per, "buffer_bdp", "share", hue="flow_cca", title="BBR and Cubic sharing the bottleneck"
                ),
                out,
                "sharing",
                "Share of goodput, one BBR and one Cubic flow",
                "Mean ± 95% CI over repetitions.",
            )
        )
    images.append(
        save_figure(
            tree.figure(),
            out,
            "tree_goodput",
            "Decision tree: which algorithm has the higher goodput",
            "Learned from the grid's runs.",
        )
    )
    return images


__all__ = ["FULL", "QUICK", "Grid", "analyse", "plans", "run", "write_report"]
