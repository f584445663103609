"""Selecting stored runs and flattening them into tables: one row per run for listing,
one row per flow for CSV export."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import pandas as pd

from .. import directions, traffic
from ..errors import ScenarioError
from ..units import parse_buffer, parse_duration, parse_loss, parse_rate, parse_size
from .records import RunRecord

# How to compare a scenario value with a --where value, by the value's name.
_PARSERS: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(("rate", "nic_rate"), parse_rate),
    **dict.fromkeys(
        ("duration", "interval", "rtt", "start", "access_delay", "rto_min", "rto_init", "delack_min"), parse_duration
    ),
    **dict.fromkeys(("size", "rwnd", "tsq_limit"), parse_size),
    **dict.fromkeys(("buffer", "ecn_threshold"), parse_buffer),
    "loss": parse_loss,
}

# Scenario values every exported row carries, whether swept or not.
SCENARIO_COLUMNS = ("link.rate", "link.rtt", "link.buffer", "link.loss", "duration")
FLOW_METRICS = (
    "goodput_bps",
    "throughput_bps",
    "retransmits",
    "lost",
    "dropped",
    "rto_count",
    "self_inflicted_delay_ms",
    "completion_s",
    "final_cwnd",
    "rwnd_limited_ms",
    "sndbuf_limited_ms",
)
LINK_METRICS = ("utilization", "drops", "ecn_marks")
UDP_METRICS = ("offered_bps", "delivered_bps", "sent_packets", "delivered_packets", "loss")
ARRIVAL_COUNTS = ("arrived", "completed", "unfinished", "offered_load")


@dataclass(frozen=True)
class Where:
    """``KEY=VALUE``: the run's effective scenario has this value at this dotted key."""

    key: str
    value: str

    @classmethod
    def parse(cls, text: str) -> "Where":
        key, sep, value = text.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ScenarioError("--where", f"expected KEY=VALUE such as link.rate=50Mbit, got {text!r}")
        return cls(key.strip(), value.strip())

    def matches(self, record: RunRecord) -> bool:
        found, actual = lookup(record.scenario, self.key)
        return found and _equal(self.key, actual, self.value)


def lookup(doc: Any, key: str) -> tuple[bool, Any]:
    """The value at a dotted key (``link.rate``, ``flows[0].cca``) of a scenario dict."""
    from ..keypaths import parse

    node = doc
    for part in parse("--where", key):
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False, None
    return True, node


def _equal(key: str, actual: Any, wanted: str) -> bool:
    parser = _PARSERS.get(key.rsplit(".", 1)[-1])
    if parser is not None and actual is not None:
        try:
            return bool(parser(actual) == parser(wanted))
        except ValueError as e:
            raise ScenarioError("--where", f"{key}: {e}") from None
    if isinstance(actual, bool):
        return wanted.lower() == str(actual).lower()
    if isinstance(actual, (int, float)):
        try:
            return float(wanted) == float(actual)
        except ValueError:
            return False
    return str(actual).lower() == wanted.lower()


def select(
    records: Sequence[RunRecord],
    *,
    where: Sequence[Where] = (),
    cca: Optional[str] = None,
    engine: Optional[str] = None,
) -> list[RunRecord]:
    """The records that meet every condition; ``cca``: some flow or group of arrivals
    runs that algorithm."""
    if records:
        for w in where:
            if not any(lookup(r.scenario, w.key)[0] for r in records):
                raise ScenarioError(
                    "--where",
                    f"no run has a value {w.key!r}; use dotted keys of the scenario such "
                    "as link.rate, link.buffer, flows[0].cca, seed",
                )
    out = []
    for r in records:
        if engine is not None and r.engine != engine:
            continue
        ran = [*r.scenario.get("flows", []), *r.scenario.get("arrivals", [])]
        if cca is not None and not any(f.get("cca") == cca.lower() for f in ran):
            continue
        if all(w.matches(r) for w in where):
            out.append(r)
    return out


def point_keys(records: Sequence[RunRecord]) -> list[str]:
    """Swept keys of these records, in first-seen order."""
    keys: dict[str, None] = {}
    for r in records:
        keys.update(dict.fromkeys(r.point))
    return list(keys)


def flow_rows(records: Sequence[RunRecord]) -> pd.DataFrame:
    """One row per flow of every run: the run's key, the point's swept values, the main
    scenario values, and the flow's and the link's main metrics. When a run has flows
    going up or an uplink, also each flow's ``direction`` and the uplink's metrics
    (``link_up_*``). When a run has UDP flows or arrivals, also a row for each UDP flow
    and each group of arrivals, and a ``kind`` column (tcp, udp, arrivals) that tells
    the rows apart."""
    swept = point_keys(records)
    fixed = [k for k in SCENARIO_COLUMNS if k not in swept]
    two_way = any(directions.is_two_way(r.summary) for r in records)
    kinds = any(traffic.has_traffic(r.summary) for r in records)
    rows = []
    for r in records:
        base: dict[str, Any] = {
            "run_id": r.run_id,
            "sweep": r.sweep,
            "repetition": r.repetition,
            "seed": r.seed,
            "engine": r.engine,
            "code_version": r.code_version,
        }
        base.update({k: r.point.get(k) for k in swept})
        base.update({k: lookup(r.scenario, k)[1] for k in fixed})
        link = r.summary.get("link", {})
        for flow in r.summary.get("flows", []):
            row = dict(base)
            if kinds:
                row["kind"] = "tcp"
            row.update(flow=flow.get("id"), cca=flow.get("cca"))
            if two_way:
                row["direction"] = directions.direction(flow)
            row.update({m: flow.get(m) for m in FLOW_METRICS})
            rtt = flow.get("rtt_ms") or {}
            row.update(rtt_mean_ms=rtt.get("mean"), rtt_p95_ms=rtt.get("p95"))
            row.update(_link_columns("link", link))
            if two_way:
                row.update(_link_columns("link_up", directions.uplink(r.summary) or {}))
            row.update(
                jain_index=r.summary.get("jain_index"),
                duration_s=r.summary.get("duration_s"),
                series_dir=r.series_dir,
            )
            rows.append(row)
        rows += _traffic_rows(base, r, two_way)
    return pd.DataFrame(rows)


def _traffic_rows(base: dict[str, Any], r: RunRecord, two_way: bool) -> list[dict[str, Any]]:
    """A row for each UDP flow of the run (its rates, loss and one-way delay) and each
    group of arrivals (its counts, load, and FCT and slowdown over all its connections)."""
    rows = []
    for u in traffic.udp_flows(r.summary):
        delay = u.get("one_way_delay_ms") or {}
        row = {**base, "kind": "udp", "flow": u.get("id")}
        if two_way:
            row["direction"] = directions.direction(u)
        row.update({m: u.get(m) for m in UDP_METRICS})
        row.update(one_way_delay_p50_ms=delay.get("p50"), one_way_delay_p99_ms=delay.get("p99"))
        rows.append(row)
    for g in traffic.groups(r.summary):
        row = {**base, "kind": "arrivals", "flow": g.get("id"), "cca": g.get("cca")}
        if two_way:
            row["direction"] = directions.direction(g)
        row.update({m: g.get(m) for m in ARRIVAL_COUNTS})
        row.update({m: (g.get("all") or {}).get(m) for m in traffic.GROUP_FIGURES})
        rows.append(row)
    for row in rows:
        row.update(duration_s=r.summary.get("duration_s"), series_dir=r.series_dir)
    return rows


def _link_columns(prefix: str, link: Any) -> dict[str, Any]:
    """A bottleneck's main metrics, as ``<prefix>_<metric>`` columns."""
    queue = link.get("queue_delay_ms") or {}
    return {
        **{f"{prefix}_{m}": link.get(m) for m in LINK_METRICS},
        f"{prefix}_queue_delay_mean_ms": queue.get("mean"),
        f"{prefix}_queue_delay_p95_ms": queue.get("p95"),
    }
