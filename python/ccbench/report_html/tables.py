"""Tables for the HTML page: per-point means with 95% intervals, and a run's summary."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

from .. import directions, traffic
from .figures import fmt, label
from .page import Table

MAX_ROWS = 400

# (metric, heading, scale, digits)
MEAN_COLUMNS = (
    ("goodput_mbps", "goodput Mbit/s", 1.0, 2),
    ("rtt_mean_ms", "mean RTT ms", 1.0, 1),
    ("rtt_p95_ms", "p95 RTT ms", 1.0, 1),
    ("self_inflicted_delay_ms", "self-inflicted delay ms", 1.0, 1),
    ("retrans_rate", "retrans %", 100.0, 3),
    ("utilization", "utilisation %", 100.0, 1),
    ("up_utilization", "uplink utilisation %", 100.0, 1),
    ("up_queue_delay_ms", "uplink queue delay ms", 1.0, 1),
    ("jain_index", "Jain index", 1.0, 3),
    ("slowdown_p50", "arrivals' median slowdown", 1.0, 2),
    ("slowdown_p99", "arrivals' p99 slowdown", 1.0, 2),
    ("fct_p99_ms", "arrivals' p99 FCT ms", 1.0, 1),
)


def plus_minus(mean: float, half: float, scale: float = 1.0, digits: int = 2) -> str:
    """``12.34 ± 0.56``; just the mean when there is no interval (one repetition)."""
    if mean is None or not math.isfinite(mean):
        return "–"
    text = f"{mean * scale:,.{digits}f}"
    if half is not None and math.isfinite(half):
        text += f" ± {half * scale:,.{digits}f}"
    return text


def means_table(
    table: pd.DataFrame,
    dims: Sequence[str],
    hue: str = "cca_mix",
    title: str = "Means with 95% confidence intervals (Student t over repetitions)",
) -> Table:
    """One row per point and algorithm mix."""
    # Only the metrics the runs have (no goodput for arrivals alone, no slowdown without).
    metrics = [m for m in MEAN_COLUMNS if f"{m[0]}_mean" in table and table[f"{m[0]}_mean"].notna().any()]
    columns = [hue if hue != "cca_mix" else "algorithms", *(label(d) for d in dims), "runs", *(m[1] for m in metrics)]
    ordered = table.sort_values([*dims, hue], kind="stable")
    rows: list[list[str]] = []
    for _, r in ordered.head(MAX_ROWS).iterrows():
        rows.append(
            [
                str(r[hue]),
                *(fmt(r[d]) for d in dims),
                str(int(r["n"])),
                *(plus_minus(r[f"{m}_mean"], r[f"{m}_ci"], scale, digits) for m, _h, scale, digits in metrics),
            ]
        )
    note = ""
    if len(ordered) > MAX_ROWS:
        note = f"First {MAX_ROWS} of {len(ordered)} rows; means.csv beside this page has them all."
    return Table(title=title, columns=columns, rows=rows, note=note)


def frame_table(frame: pd.DataFrame, title: str, note: str = "") -> Table:
    """A small DataFrame as it is, values formatted."""
    return Table(
        title=title,
        columns=[str(c) for c in frame.columns],
        rows=[[fmt(v) for v in row] for row in frame.itertuples(index=False)],
        note=note,
    )


def run_flows_table(summary: Mapping[str, Any]) -> Table:
    two_way = directions.is_two_way(summary)
    rows = []
    for f in summary.get("flows") or []:
        rtt = f.get("rtt_ms") or {}
        rows.append(
            [
                str(f.get("id")),
                str(f.get("cca")),
                *([directions.direction(f)] if two_way else []),
                _n(f.get("goodput_bps"), 1e-6),
                _n(f.get("throughput_bps"), 1e-6),
                _n(f.get("retransmits"), digits=0),
                _n(f.get("lost"), digits=0),
                *(_n(rtt.get(k), digits=1) for k in ("min", "mean", "p95", "p99")),
                _n(f.get("self_inflicted_delay_ms"), digits=1),
            ]
        )
    return Table(
        "Flows",
        [
            "flow",
            "cca",
            *(["direction"] if two_way else []),
            "goodput Mbit/s",
            "throughput Mbit/s",
            "retrans",
            "lost",
            "RTT min ms",
            "RTT mean ms",
            "RTT p95 ms",
            "RTT p99 ms",
            "self-inflicted delay ms",
        ],
        rows,
    )


def run_link_table(summary: Mapping[str, Any]) -> Table:
    """The bottleneck's figures; with an uplink, one row per direction, each with the
    Jain index of the flows going that way."""
    ways = directions.links(summary)
    two_way = len(ways) > 1
    rows = []
    for way, link in ways:
        qd = link.get("queue_delay_ms") or {}
        jain = directions.jain_of(summary, way) if two_way else summary.get("jain_index")
        if not summary.get("flows"):
            jain = None  # no TCP flows to be fair between
        rows.append(
            [
                *([way] if two_way else []),
                _n(link.get("rate_bps"), 1e-6),
                _n(link.get("rtt_ms"), digits=1),
                _n(link.get("bdp_bytes"), 1e-3, 1),
                _buffer(link),
                _n(link.get("utilization"), 100, 1),
                _n(link.get("drops"), digits=0),
                _n(qd.get("mean")),
                _n(qd.get("p95")),
                _n(jain, digits=4),
            ]
        )
    return Table(
        "Bottleneck",
        [
            *(["direction"] if two_way else []),
            "rate Mbit/s",
            "base RTT ms",
            "BDP KB",
            "buffer KB",
            "utilisation %",
            "drops",
            "queue delay mean ms",
            "queue delay p95 ms",
            "Jain index",
        ],
        rows,
    )


def run_udp_table(summary: Mapping[str, Any]) -> Table:
    """The run's UDP flows: offered and delivered rates, loss and one-way delay."""
    two_way = directions.is_two_way(summary)
    rows = []
    for u in traffic.udp_flows(summary):
        delay = u.get("one_way_delay_ms") or {}
        rows.append(
            [
                str(u.get("id")),
                *([directions.direction(u)] if two_way else []),
                _n(u.get("offered_bps"), 1e-6),
                _n(u.get("delivered_bps"), 1e-6),
                _n(u.get("loss"), 100, 2),
                *(_n(delay.get(k), digits=1) for k in ("min", "p50", "p99", "max")),
            ]
        )
    return Table(
        "UDP flows",
        [
            "udp",
            *(["direction"] if two_way else []),
            "offered Mbit/s",
            "delivered Mbit/s",
            "loss %",
            "one-way delay min ms",
            "p50 ms",
            "p99 ms",
            "max ms",
        ],
        rows,
    )


def run_arrivals_table(summary: Mapping[str, Any]) -> Table:
    """Each group of arrivals over all its connections and per size bucket: how many
    finished, and the median and 99th percentile of FCT and slowdown."""
    rows = []
    for g in traffic.groups(summary):
        for bucket in [g.get("all") or {}, *(g.get("buckets") or [])]:
            whole = bucket.get("bucket") == "all"
            rows.append(
                [
                    str(g.get("id")),
                    str(g.get("cca")) + (" (up)" if directions.direction(g) == directions.UP else ""),
                    str(bucket.get("bucket")),
                    f"{_n(g.get('completed'), digits=0)} / {_n(g.get('arrived'), digits=0)}"
                    if whole
                    else _n(bucket.get("completed"), digits=0),
                    _n(g.get("offered_load"), 100, 1) if whole else "",
                    _n(bucket.get("fct_p50_ms"), digits=1),
                    _n(bucket.get("fct_p99_ms"), digits=1),
                    _n(bucket.get("slowdown_p50")),
                    _n(bucket.get("slowdown_p99")),
                ]
            )
    return Table(
        "Arrivals",
        [
            "group",
            "cca",
            "sizes",
            "finished",
            "offered load %",
            "FCT p50 ms",
            "FCT p99 ms",
            "slowdown p50",
            "slowdown p99",
        ],
        rows,
        note="Slowdown: a connection's FCT over the same transfer's alone on the empty path (docs/traffic.md).",
    )


def _buffer(link: Mapping[str, Any]) -> str:
    """The queue's limit in KB, or in packets (an AQM's limit)."""
    if link.get("buffer_bytes") is not None:
        return _n(link.get("buffer_bytes"), 1e-3, 1)
    return f"{link.get('buffer_packets')} pkt"


def _n(value: Any, scale: float = 1.0, digits: int = 2) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "–"
    return f"{value * scale:,.{digits}f}"
