"""Tidy tables of runs: one row per run (:func:`runs_frame`) and one per flow
(:func:`flows_frame`).

Each row carries the conditions a user sweeps over and decides on (rate, base RTT,
buffer in BDP and in KB, random loss, flow count, algorithm mix, CPU share when the
scenario has one) next to what the run measured (goodput, RTT, self-inflicted delay,
retransmissions, utilisation, Jain's index). Units are in the column names.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Mapping, Optional

import numpy as np
import pandas as pd

from .. import directions, traffic
from ..units import parse_loss
from .records import RecordLike

# Conditions, in the order they are offered as plot axes and decision-tree features
# (``arrival_load_pct`` only in the rows of runs with arrivals).
CONDITIONS = ("rate_mbps", "rtt_ms", "buffer_bdp", "buffer_kb", "loss_pct", "flows", "cpu_share", "arrival_load_pct")
# What a run measured (per run; the per-flow table has its own subset).
RUN_METRICS = (
    "goodput_mbps",
    "goodput_per_flow_mbps",
    "rtt_mean_ms",
    "rtt_p95_ms",
    "self_inflicted_delay_ms",
    "retransmits",
    "retrans_rate",
    "utilization",
    "jain_index",
    "drops",
    "queue_delay_ms",
    "queue_delay_p95_ms",
    "rto_count",
)
# The uplink's (``link.reverse``), in the rows of runs that have one.
UPLINK_METRICS = ("up_utilization", "up_drops", "up_queue_delay_ms", "up_queue_delay_p95_ms")
# The arrivals' (docs/traffic.md), in the rows of runs that have them: each the highest
# (worst) over the run's groups of arrivals.
ARRIVAL_METRICS = traffic.GROUP_FIGURES
FLOW_METRICS = (
    "goodput_mbps",
    "share",
    "rtt_mean_ms",
    "rtt_p95_ms",
    "self_inflicted_delay_ms",
    "retransmits",
    "retrans_rate",
    "lost",
    "completion_s",
)
# Human names with units, for axes, tables and decision rules.
LABELS = {
    "rate_mbps": "bandwidth (Mbit/s)",
    "rtt_ms": "base RTT (ms)",
    "buffer_bdp": "buffer (BDP)",
    "buffer_kb": "buffer (KB)",
    "loss_pct": "random loss (%)",
    "flows": "flows",
    "cpu_share": "CPU share",
    "goodput_mbps": "goodput (Mbit/s)",
    "goodput_per_flow_mbps": "goodput per flow (Mbit/s)",
    "share": "share of goodput",
    "rtt_mean_ms": "mean RTT (ms)",
    "rtt_p95_ms": "p95 RTT (ms)",
    "self_inflicted_delay_ms": "self-inflicted delay (ms)",
    "retransmits": "retransmitted segments",
    "retrans_rate": "retransmission rate",
    "utilization": "utilisation",
    "jain_index": "Jain index",
    "drops": "drops",
    "queue_delay_ms": "mean queueing delay (ms)",
    "queue_delay_p95_ms": "p95 queueing delay (ms)",
    "up_utilization": "uplink utilisation",
    "up_drops": "uplink drops",
    "up_queue_delay_ms": "uplink mean queueing delay (ms)",
    "up_queue_delay_p95_ms": "uplink p95 queueing delay (ms)",
    "rto_count": "RTOs",
    "arrival_load_pct": "arrivals' load (%)",
    "fct_p50_ms": "median FCT (ms)",
    "fct_p99_ms": "p99 FCT (ms)",
    "slowdown_p50": "median slowdown",
    "slowdown_p99": "p99 slowdown",
    "lost": "lost segments",
    "completion_s": "completion (s)",
}
HEADER_BYTES = 52


def runs_frame(records: Iterable[RecordLike]) -> pd.DataFrame:
    """One row per run: identity, the swept point (its dotted keys as columns), the
    conditions and the run's measurements."""
    rows = [_run_row(r) for r in records]
    return _frame(rows)


def flows_frame(records: Iterable[RecordLike]) -> pd.DataFrame:
    """One row per flow of every run, with the run's conditions, the flow's algorithm
    and its share of the run's goodput."""
    rows: list[dict[str, Any]] = []
    for r in records:
        run = _run_row(r)
        keep = {k: v for k, v in run.items() if k not in (*RUN_METRICS, *UPLINK_METRICS, *ARRIVAL_METRICS)}
        flows = list(r.summary.get("flows") or [])
        total = sum(_num(f.get("goodput_bps")) for f in flows if math.isfinite(_num(f.get("goodput_bps"))))
        mss = _mss(r.scenario)
        two_way = directions.is_two_way(r.summary)
        for f in flows:
            goodput = _num(f.get("goodput_bps"))
            rows.append(
                {
                    **keep,
                    "flow": int(f.get("id", len(rows))),
                    "flow_cca": str(f.get("cca", "")),
                    **({"direction": directions.direction(f)} if two_way else {}),
                    "base_rtt_ms": _num(f.get("base_rtt_ms")),
                    "goodput_mbps": goodput / 1e6,
                    "share": goodput / total if total > 0 else math.nan,
                    "rtt_mean_ms": _stat(f.get("rtt_ms"), "mean"),
                    "rtt_p95_ms": _stat(f.get("rtt_ms"), "p95"),
                    "self_inflicted_delay_ms": _num(f.get("self_inflicted_delay_ms")),
                    "retransmits": _num(f.get("retransmits")),
                    "retrans_rate": _retrans_rate(_num(f.get("retransmits")), _num(f.get("sent_bytes")), mss),
                    "lost": _num(f.get("lost")),
                    "completion_s": _num(f.get("completion_s")),
                }
            )
    return _frame(rows)


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values(
        ["sweep", "run_id", *(["flow"] if "flow" in frame else [])], na_position="first", kind="stable"
    ).reset_index(drop=True)


def _run_row(r: RecordLike) -> dict[str, Any]:
    summary, scenario = r.summary, r.scenario
    link = summary.get("link") or {}
    flows = list(summary.get("flows") or [])
    # The algorithms that ran: the flows', then the arrivals'.
    ccas = [str(f.get("cca", "")) for f in [*flows, *traffic.groups(summary)]]
    mss = _mss(scenario)
    goodputs = [_num(f.get("goodput_bps")) for f in flows]
    retrans = [_num(f.get("retransmits")) for f in flows]
    sent = [_num(f.get("sent_bytes")) for f in flows]
    rate_bps = _num(link.get("rate_bps"))
    bdp = _num(link.get("bdp_bytes"))
    buffer_bytes = _buffer_bytes(link, mss)
    row: dict[str, Any] = {
        "run_id": r.run_id,
        "sweep": r.sweep,
        "repetition": int(r.repetition),
        "seed": int(r.seed),
        "engine": r.engine,
    }
    row.update({str(k): _point_value(v) for k, v in sorted(r.point.items())})
    row.update(
        {
            "rate_mbps": rate_bps / 1e6,
            "rtt_ms": _num(link.get("rtt_ms")),
            "buffer_bdp": buffer_bytes / bdp if bdp > 0 else math.nan,
            "buffer_kb": buffer_bytes / 1000,
            "loss_pct": 100 * _loss(scenario),
            "flows": len(flows),
            "cpu_share": cpu_share(scenario),
            "cca": ccas[0] if len(set(ccas)) == 1 else "mixed",
            "cca_mix": cca_mix(ccas),
            "duration_s": _num(summary.get("duration_s")),
            "goodput_mbps": _sum(goodputs) / 1e6,
            "goodput_per_flow_mbps": _mean(goodputs) / 1e6,
            "rtt_mean_ms": _mean(_stat(f.get("rtt_ms"), "mean") for f in flows),
            "rtt_p95_ms": _mean(_stat(f.get("rtt_ms"), "p95") for f in flows),
            "self_inflicted_delay_ms": _mean(_num(f.get("self_inflicted_delay_ms")) for f in flows),
            "retransmits": _sum(retrans),
            "retrans_rate": _retrans_rate(_sum(retrans), _sum(sent), mss),
            "utilization": _num(link.get("utilization")),
            "jain_index": _num(summary.get("jain_index")) if flows else math.nan,  # none to be fair between
            "drops": _num(link.get("drops")),
            "queue_delay_ms": _stat(link.get("queue_delay_ms"), "mean"),
            "queue_delay_p95_ms": _stat(link.get("queue_delay_ms"), "p95"),
            "rto_count": _sum(_num(f.get("rto_count")) for f in flows),
        }
    )
    if traffic.groups(summary):
        row["arrival_load_pct"] = _arrival_load_pct(scenario)
        row.update({m: traffic.worst(summary, m) for m in ARRIVAL_METRICS})
    up = directions.uplink(summary)
    if up is not None:
        row.update(
            {
                "up_utilization": _num(up.get("utilization")),
                "up_drops": _num(up.get("drops")),
                "up_queue_delay_ms": _stat(up.get("queue_delay_ms"), "mean"),
                "up_queue_delay_p95_ms": _stat(up.get("queue_delay_ms"), "p95"),
            }
        )
    return row


def arrivals_frame(records: Iterable[RecordLike]) -> pd.DataFrame:
    """One row per group of arrivals and size bucket (``all`` first) of every run, with
    the run's conditions: the group's algorithm, how many connections finished in the
    bucket, and its FCT and slowdown percentiles."""
    rows: list[dict[str, Any]] = []
    for r in records:
        run = _run_row(r)
        keep = {k: v for k, v in run.items() if k not in (*RUN_METRICS, *UPLINK_METRICS, *ARRIVAL_METRICS)}
        for g in traffic.groups(r.summary):
            for bucket in [g.get("all") or {}, *(g.get("buckets") or [])]:
                rows.append(
                    {
                        **keep,
                        "group": int(g.get("id", 0)),
                        "group_cca": str(g.get("cca", "")),
                        "arrived": _num(g.get("arrived")),
                        "offered_load": _num(g.get("offered_load")),
                        "bucket": str(bucket.get("bucket", "")),
                        "completed": _num(bucket.get("completed")),
                        **{m: _num(bucket.get(m)) for m in ARRIVAL_METRICS},
                    }
                )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values(["sweep", "run_id", "group"], na_position="first", kind="stable").reset_index(drop=True)


def _arrival_load_pct(scenario: Mapping[str, Any]) -> float:
    """The load the scenario's arrivals were set to offer, in percent of the link (their
    sum over groups); NaN where a group arrives at a rate or at given times."""
    total = 0.0
    for group in scenario.get("arrivals") or []:
        load = group.get("load") if isinstance(group, Mapping) else None
        if load is None:
            return math.nan
        fraction = _fraction(load)
        if fraction is None:
            return math.nan
        total += fraction
    return 100 * total


def cca_mix(ccas: Iterable[str]) -> str:
    """The algorithms of a run's flows: ``bbr+cubic``, ``cubic×4``, ``bbr×2+cubic``."""
    counts = Counter(ccas)
    return "+".join(name if n == 1 else f"{name}×{n}" for name, n in sorted(counts.items()))


def cpu_share(scenario: Mapping[str, Any]) -> float:
    """The sender's CPU share (0..1) if the scenario has a host/CPU table, else NaN.

    Looks for ``share`` or ``cpu_share`` under ``host``, ``cpu`` or ``host.cpu``, as a
    fraction or a percentage string."""
    tables = (scenario.get("host"), scenario.get("cpu"), _get(scenario, "host", "cpu"))
    for table in tables:
        if isinstance(table, Mapping):
            for key in ("cpu_share", "share"):
                value = _fraction(table.get(key))
                if value is not None:
                    return value
    value = _fraction(scenario.get("cpu"))  # a bare `cpu = "50%"`
    return math.nan if value is None else value


def _fraction(value: Any) -> Optional[float]:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            return None
    return None


def _get(d: Mapping[str, Any], *path: str) -> Any:
    cur: Any = d
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _point_value(value: Any) -> Any:
    """Swept values as scalars a DataFrame column can hold."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _mss(scenario: Mapping[str, Any]) -> int:
    mss = _get(scenario, "tcp", "mss")
    return int(mss) if isinstance(mss, int) and mss > 0 else 1448


def _loss(scenario: Mapping[str, Any]) -> float:
    value = _get(scenario, "link", "loss")
    if value is None:
        return 0.0
    try:
        return float(parse_loss(value))
    except (ValueError, TypeError):
        return math.nan


def _buffer_bytes(link: Mapping[str, Any], mss: int) -> float:
    if isinstance(link.get("buffer_bytes"), (int, float)):
        return float(link["buffer_bytes"])
    if isinstance(link.get("buffer_packets"), (int, float)):
        # A packet limit holds full-sized packets on the wire.
        return float(link["buffer_packets"]) * (mss + HEADER_BYTES)
    return math.nan


def _retrans_rate(retransmits: float, sent_bytes: float, mss: int) -> float:
    """Retransmitted segments per segment sent."""
    segments = sent_bytes / mss
    return retransmits / segments if segments > 0 else math.nan


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def _stat(stats: Any, key: str) -> float:
    return _num(stats.get(key)) if isinstance(stats, Mapping) else math.nan


def _finite(values: Iterable[float]) -> np.ndarray:
    x = np.asarray(list(values), dtype=float)
    return x[np.isfinite(x)]


def _sum(values: Iterable[float]) -> float:
    x = _finite(values)
    return float(x.sum()) if len(x) else math.nan


def _mean(values: Iterable[float]) -> float:
    x = _finite(values)
    return float(x.mean()) if len(x) else math.nan
