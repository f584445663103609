"""The two reports: one run directory (its time series), or a sweep of many runs."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

import matplotlib
import pandas as pd

from .. import directions, traffic
from ..analysis import (
    ARRIVAL_METRICS,
    LABELS,
    RUN_METRICS,
    aggregate,
    algorithm_table,
    arrivals_frame,
    dimensions,
    flows_frame,
    goodput_ratio,
    runs_frame,
)
from ..errors import ScenarioError
from ..plots import load_run, parse_formats, plot_run, style
from . import figures
from .page import Image, Page, Section, Table, save_figure, write_page
from .tables import (
    means_table,
    plus_minus,
    run_arrivals_table,
    run_flows_table,
    run_link_table,
    run_udp_table,
)

PathLike = Union[str, "os.PathLike[str]"]
# Axes the heatmaps prefer, in order: the study-style buffer on x, RTT on y, rate as facet.
X_PREFERENCE = ("buffer_bdp", "buffer_kb", "loss_pct", "rate_mbps", "rtt_ms", "flows", "cpu_share")
Y_PREFERENCE = ("rtt_ms", "rate_mbps", "loss_pct", "flows", "cpu_share", "buffer_bdp", "buffer_kb")


# The run report's figures that are neither a flow's nor the link's: (title, caption).
RUN_FIGURES = {
    "downloads": (
        "Downloads",
        "Completion time, throughput and self-inflicted delay across each flow's downloads.",
    ),
    "arrivals": (
        "Slowdown against size, CDF of FCT",
        "Each connection's slowdown (its FCT over the same transfer's alone on the empty path) against its "
        "size, with the median and 99th percentile per size bin; and the CDF of flow completion times, per "
        "group of arrivals.",
    ),
}


class ReportError(ScenarioError):
    """A report that cannot be made: printed as ``error: <field>: <message>``, exit 2."""


def choose_axes(
    dims: Sequence[str], x: Optional[str] = None, y: Optional[str] = None, facet: Optional[str] = None
) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """x, y and facet among the varying ``dims``, honouring what the user asked for."""
    for name, value in (("--x", x), ("--y", y), ("--facet", facet)):
        if value is not None and value not in dims:
            raise ReportError(
                name, f"{value!r} does not vary in this sweep; choose from: {', '.join(dims) or '(none)'}"
            )
    rest = [d for d in dims if d not in (x, y, facet)]

    def take(preference: Sequence[str]) -> Optional[str]:
        for p in (*preference, *rest):
            if p in rest:
                rest.remove(p)
                return p
        return None

    x = x or take(X_PREFERENCE)
    y = y or take(Y_PREFERENCE)
    facet = facet or (rest.pop(0) if rest else None)
    return x, y, facet


def sweep_report(
    records: Iterable[Any],
    out: PathLike,
    *,
    name: str,
    metric: str = "goodput_mbps",
    x: Optional[str] = None,
    y: Optional[str] = None,
    facet: Optional[str] = None,
    formats: Union[str, Sequence[str]] = style.FORMATS,
) -> Path:
    """Write ``out/index.html`` with the sweep's figures (also as files), ``runs.csv``,
    ``flows.csv`` and ``means.csv`` (and ``arrivals.csv`` when runs have arrivals).
    Returns the page's path."""
    allowed = (*RUN_METRICS, *ARRIVAL_METRICS)
    if metric not in allowed:
        raise ReportError("--metric", f"unknown metric {metric!r}; allowed: {', '.join(allowed)}")
    fmts = parse_formats(formats)
    records = list(records)
    runs = runs_frame(records)
    if runs.empty:
        raise ReportError("--sweep", f"sweep {name!r} has no runs")
    dims = dimensions(runs)
    x, y, facet = choose_axes(dims, x, y, facet)
    target = _target(out)  # only once the request is known to be good: bad input writes nothing
    table = algorithm_table(runs)
    single = runs[runs["cca"] != "mixed"]
    algorithms = sorted(runs["cca_mix"].unique())
    overview = Section(
        "Overview",
        paragraphs=[
            f"{len(runs)} runs of {table.shape[0]} point/algorithm combinations; algorithms: {', '.join(algorithms)}.",
            "Varied: "
            + (
                ", ".join(
                    f"{LABELS.get(d, d)} ∈ {{{', '.join(figures.fmt(v) for v in sorted(runs[d].dropna().unique()))}}}"
                    for d in dims
                )
                or "nothing (one point)"
            )
            + ".",
            f"Repetitions per point: {_reps(table)}. Intervals are 95% Student-t intervals over repetitions.",
        ],
    )
    sections = [overview]
    with matplotlib.rc_context(style.RC):
        sections += _comparison_sections(runs, single, table, x, y, facet, metric, target, fmts)
        sections.append(_sharing_section(records, dims, target, fmts))
    sections.append(Section("Means per point", tables=[means_table(table, dims)]))
    arrivals = arrivals_frame(records)
    if not arrivals.empty:
        sections.append(_arrivals_section(arrivals, dims))
        arrivals.to_csv(target / "arrivals.csv", index=False)
    runs.to_csv(target / "runs.csv", index=False)
    flows_frame(records).to_csv(target / "flows.csv", index=False)
    table.to_csv(target / "means.csv", index=False)
    page = Page(
        title=f"ccbench sweep report: {name}",
        subtitle=f"engine {', '.join(sorted(runs['engine'].unique()))}; runs.csv, flows.csv and means.csv "
        "beside this page hold the tidy data",
        sections=[s for s in sections if s.images or s.tables or s.paragraphs],
    )
    return write_page(page, target)


def _comparison_sections(
    runs: pd.DataFrame,
    single: pd.DataFrame,
    table: pd.DataFrame,
    x: Optional[str],
    y: Optional[str],
    facet: Optional[str],
    metric: str,
    out: Path,
    fmts: Sequence[str],
) -> list[Section]:
    """BBR against Cubic, the metric per algorithm, then the distributions, goodput
    against delay and retransmissions."""

    def save(fig: Any, name: str, title: str, caption: str) -> Image:
        return save_figure(fig, out, name, title, caption, fmts)

    averaged = _averaged(runs, x, y, facet)
    metric_section = _metric_section(single, table, x, y, facet, metric, averaged, _averaged(runs, x, None, None), save)
    if runs["goodput_mbps"].isna().all():  # arrivals alone: no bulk flow's goodput, delay or retransmissions
        return [s for s in (metric_section,) if s is not None]
    sections = [
        _ratio_section(single, x, y, facet, averaged, save),
        metric_section,
        Section(
            "Distributions",
            images=[
                save(
                    figures.cdfs(runs),
                    "cdfs",
                    "CDFs over runs",
                    "Each step is one run; the legend gives the number of runs.",
                )
            ],
        ),
        Section(
            "Goodput against delay",
            images=[
                save(
                    figures.goodput_delay(table),
                    "goodput_delay",
                    "Goodput against self-inflicted delay",
                    "One marker per point and algorithm mix, mean ± 95% CI over repetitions.",
                )
            ],
        ),
        _retransmissions_section(table, x or "buffer_bdp", save),
    ]
    return [s for s in sections if s is not None]


def _ratio_section(
    single: pd.DataFrame, x: Optional[str], y: Optional[str], facet: Optional[str], averaged: str, save: Any
) -> Optional[Section]:
    """The BBR / Cubic goodput ratio over the two swept axes."""
    ratio = goodput_ratio(single)
    if ratio.empty or x is None or y is None:
        return None
    fig = figures.heatmap(
        ratio,
        x,
        y,
        "ratio",
        facet,
        ratio=True,
        title="BBR / Cubic goodput ratio",
        value_label="goodput ratio BBR / Cubic",
    )
    caption = (
        "Above 1 (orange) BBR's goodput is higher, below 1 (purple) Cubic's; each cell is the ratio of the "
        "mean goodputs over repetitions" + averaged + "."
    )
    return Section("BBR against Cubic", images=[save(fig, "ratio_bbr_cubic", "Goodput ratio BBR / Cubic", caption)])


def _metric_section(
    single: pd.DataFrame,
    table: pd.DataFrame,
    x: Optional[str],
    y: Optional[str],
    facet: Optional[str],
    metric: str,
    averaged: str,
    averaged_along_x: str,
    save: Any,
) -> Optional[Section]:
    """The metric per algorithm: a heat map each over two axes, lines over one."""
    images: list[Image] = []
    if x is not None and y is not None:
        for cca in sorted(single["cca"].unique()):
            sub = table[table["cca"] == cca].rename(columns={f"{metric}_mean": metric})
            fig = figures.heatmap(sub, x, y, metric, facet, title=f"{LABELS[metric]}: {cca}")
            images.append(
                save(
                    fig, f"heatmap_{metric}_{cca}", f"{LABELS[metric]}, {cca}", "Mean over repetitions" + averaged + "."
                )
            )
    elif x is not None:
        fig = figures.metric_lines(table, x, metric, title=LABELS[metric])
        images.append(
            save(
                fig,
                f"lines_{metric}",
                f"{LABELS[metric]} against {LABELS.get(x, x)}",
                "Mean ± 95% CI per algorithm" + averaged_along_x + ".",
            )
        )
    return Section(f"{LABELS[metric]} per algorithm", images=images) if images else None


def _retransmissions_section(table: pd.DataFrame, rx: str, save: Any) -> Section:
    fig = figures.retransmissions(table, rx)
    caption = f"Retransmitted segments per segment sent, per point, against {LABELS.get(rx, rx)}."
    return Section("Retransmissions", images=[save(fig, "retransmissions", "Retransmission rate", caption)])


def _sharing_section(records: list[Any], dims: Sequence[str], out: Path, fmts: Sequence[str]) -> Section:
    """How mixed runs split the bottleneck between algorithms."""
    flows = flows_frame(records)
    mixed = flows[flows["cca"] == "mixed"] if "cca" in flows else flows.iloc[0:0]
    if mixed.empty:
        return Section("Sharing")
    keys = [d for d in dims if d in mixed and d != "flows"]
    per_run = mixed.groupby(["run_id", "flow_cca", "cca_mix", *keys], dropna=False, as_index=False)[
        ["share", "goodput_mbps"]
    ].sum()
    table = aggregate(per_run, [*keys, "cca_mix", "flow_cca"], ["share", "goodput_mbps"])
    section = Section(
        "Sharing",
        paragraphs=["Runs whose flows use different algorithms: each algorithm's share of the run's total goodput."],
    )
    if keys:
        x = next((k for k in X_PREFERENCE if k in keys), keys[0])
        facet = "cca_mix" if table["cca_mix"].nunique() > 1 else None
        fig = figures.metric_lines(table, x, "share", hue="flow_cca", facet=facet, title="Share of goodput")
        section.images.append(
            save_figure(fig, out, "sharing", "Share of goodput per algorithm", "Mean ± 95% CI over repetitions.", fmts)
        )
    section.tables.append(_share_table(table, keys))
    return section


def _share_table(table: pd.DataFrame, keys: Sequence[str]) -> Table:
    rows = [
        [
            str(r["cca_mix"]),
            str(r["flow_cca"]),
            *(figures.fmt(r[k]) for k in keys),
            str(int(r["n"])),
            plus_minus(r["share_mean"], r["share_ci"], 100, 1),
            plus_minus(r["goodput_mbps_mean"], r["goodput_mbps_ci"]),
        ]
        for _, r in table.sort_values([*keys, "cca_mix", "flow_cca"]).iterrows()
    ]
    return Table(
        "Share of goodput per algorithm",
        ["algorithms", "algorithm", *(LABELS.get(k, k) for k in keys), "runs", "share %", "goodput Mbit/s"],
        rows,
    )


def _arrivals_section(arrivals: pd.DataFrame, dims: Sequence[str]) -> Section:
    """Per point, algorithm and size bucket, the arrivals' p99 slowdown and FCT, means
    over repetitions."""
    keys = [d for d in dims if d in arrivals]
    table = aggregate(arrivals, [*keys, "group_cca", "bucket"], ["slowdown_p50", "slowdown_p99", "fct_p99_ms"])
    rank = {name: i for i, name in enumerate(("all", *traffic.BUCKETS))}
    table = table.assign(rank=table["bucket"].map(rank)).sort_values([*keys, "group_cca", "rank"], kind="stable")
    rows = [
        [
            *(figures.fmt(r[k]) for k in keys),
            str(r["group_cca"]),
            str(r["bucket"]),
            str(int(r["n"])),
            plus_minus(r["slowdown_p50_mean"], r["slowdown_p50_ci"]),
            plus_minus(r["slowdown_p99_mean"], r["slowdown_p99_ci"]),
            plus_minus(r["fct_p99_ms_mean"], r["fct_p99_ms_ci"], digits=1),
        ]
        for _, r in table.iterrows()
    ]
    columns = [
        *(LABELS.get(k, k) for k in keys),
        "algorithm",
        "sizes",
        "groups",
        "slowdown p50",
        "slowdown p99",
        "FCT p99 ms",
    ]
    return Section(
        "Arrivals",
        paragraphs=[
            "Open-loop arrivals per algorithm and size bucket: slowdown is a connection's FCT over the same "
            "transfer's alone on the empty path; means ± 95% CI over repetitions. arrivals.csv beside this page "
            "has every group of every run."
        ],
        tables=[Table("Slowdown and FCT per size bucket", columns, rows)],
    )


def run_report(
    run_dir: PathLike, out: Optional[PathLike] = None, formats: Union[str, Sequence[str]] = style.FORMATS
) -> Path:
    """Write ``out/index.html`` (default ``RUN_DIR/report``) with the time series of every
    flow and the link, and the run's summary tables."""
    run = load_run(run_dir)
    target = _target(out if out is not None else run.directory / "report")
    paths = plot_run(run, flows=None, out=target, formats=formats)
    by_stem: dict[str, list[Path]] = defaultdict(list)
    for p in paths:
        by_stem[p.stem].append(p)
    flows = run.summary.get("flows") or []
    images = []
    for stem, files in by_stem.items():
        if stem.startswith("flow"):
            i = int(stem[4:])
            way = f", {directions.direction(flows[i])}" if directions.is_two_way(run.summary) else ""
            title = f"Flow {i} ({flows[i].get('cca', '?')}{way})"
            caption = (
                "Throughput and goodput, RTT, cwnd and inflight, pacing rate and bandwidth estimates, "
                "and the state timeline."
            )
        elif stem in RUN_FIGURES:
            title, caption = RUN_FIGURES[stem]
        elif "up_queue_bytes" in run.link.columns:
            title = "Bottleneck, both directions"
            caption = "Output rate of each direction and each flow; each direction's queue, utilisation and drops."
        else:
            title, caption = "Bottleneck", "Output rate per flow, queue and drops."
        images.append(Image(title, caption, files))
    summary = run.summary
    link = summary.get("link") or {}
    up = directions.uplink(summary)
    uplink = "" if up is None else f" down, {(up.get('rate_bps') or 0) / 1e6:g} Mbit/s up,"
    subtitle = (
        f"{run.directory}: engine {summary.get('engine', '?')}, seed {summary.get('seed', '?')}, "
        f"{summary.get('duration_s', '?')} s, {len(flows)} flow(s)"
        + (f" ({traffic.headline(summary)})" if traffic.has_traffic(summary) else "")
        + f" over {(link.get('rate_bps') or 0) / 1e6:g} Mbit/s{uplink} and {link.get('rtt_ms', '?')} ms"
    )
    flows_tables = [run_flows_table(summary)] if flows or not traffic.has_traffic(summary) else []
    page = Page(
        title="ccbench run report",
        subtitle=subtitle,
        sections=[
            s
            for s in (
                Section("Summary", tables=[*flows_tables, run_link_table(summary)]),
                _traffic_section(summary, [i for i in images if i.title == RUN_FIGURES["arrivals"][0]]),
                Section("Time series", images=[i for i in images if i.title != RUN_FIGURES["arrivals"][0]]),
            )
            if s.images or s.tables
        ],
    )
    return write_page(page, target)


def _traffic_section(summary: Any, images: list[Image]) -> Section:
    """The run's UDP flows and arrivals; empty (left out of the page) without them."""
    tables = [run_udp_table(summary)] if traffic.udp_flows(summary) else []
    tables += [run_arrivals_table(summary)] if traffic.groups(summary) else []
    title = " and ".join([t.title for t in tables[:1]] + [t.title.lower() for t in tables[1:]])
    return Section(title, tables=tables, images=images)


def _target(out: PathLike) -> Path:
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise ReportError("--out", f"'{target}' exists and is not a directory")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError("--out", f"cannot create '{target}': {e.strerror or e}") from None
    return target


def _averaged(runs: pd.DataFrame, x: Optional[str], y: Optional[str], facet: Optional[str]) -> str:
    others = [d for d in dimensions(runs) if d not in (x, y, facet)]
    return f", averaged over {', '.join(LABELS.get(d, d) for d in others)}" if others else ""


def _reps(table: pd.DataFrame) -> str:
    lo, hi = int(table["n"].min()), int(table["n"].max())
    return str(lo) if lo == hi else f"{lo} to {hi}"
