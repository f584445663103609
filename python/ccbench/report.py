"""Terminal rendering of a run summary (rich tables)."""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Optional

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from . import directions, traffic

DASH = "–"


def _num(value: Any, scale: float = 1.0, digits: int = 2) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return DASH
    return f"{value * scale:,.{digits}f}"


def _int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else DASH


def _get(d: Mapping[str, Any], *path: str) -> Any:
    cur: Any = d
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _table(title: str) -> Table:
    return Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        header_style="bold",
        pad_edge=False,
        padding=(0, 0),
        show_edge=False,
    )


def cca_label(cca: Any) -> str:
    """An algorithm as a table shows it: a BPF object by its file's name, not its path."""
    text = str(cca)
    if text.startswith("bpf:"):
        return "bpf:" + os.path.basename(text[len("bpf:") :])
    return text


def flows_table(summary: Mapping[str, Any]) -> Table:
    t = _table("Flows")
    two_way = directions.is_two_way(summary)
    t.add_column("\n\nflow", justify="right", no_wrap=True)
    t.add_column("\n\ncca", no_wrap=True)
    if two_way:
        t.add_column("\n\ndir", no_wrap=True)
    t.add_column("\ngoodput\nMbit/s", justify="right", no_wrap=True)
    t.add_column("\nthroughput\nMbit/s", justify="right", no_wrap=True)
    t.add_column("\nretrans", justify="right", no_wrap=True)
    t.add_column("\nlost", justify="right", no_wrap=True)
    t.add_column("RTT\nmin\nms", justify="right", no_wrap=True)
    for stat in ("mean", "p95", "p99"):
        t.add_column(f"RTT\n{stat}\nms", justify="right", no_wrap=True)
    t.add_column("\ncompletion\ns", justify="right", no_wrap=True)
    for i, f in enumerate(summary.get("flows") or []):
        t.add_row(
            str(f.get("id", i)),
            cca_label(f.get("cca", DASH)),
            *([directions.direction(f)] if two_way else []),
            _num(f.get("goodput_bps"), 1e-6),
            _num(f.get("throughput_bps"), 1e-6),
            _int(f.get("retransmits")),
            _int(f.get("lost")),
            *(_num(_get(f, "rtt_ms", stat), digits=1) for stat in ("min", "mean", "p95", "p99")),
            _num(f.get("completion_s"), digits=3) if f.get("size_bytes") is not None else "bulk",
        )
    return t


def link_table(summary: Mapping[str, Any]) -> Table:
    """The bottleneck's figures; with an uplink, one row per direction, each with the
    Jain index of the flows going that way."""
    t = _table("Bottleneck")
    ways = directions.links(summary)
    two_way = len(ways) > 1
    # Traces and AQMs add columns; a constant-rate drop-tail run keeps the plain table.
    traced = any(link.get("trace_mean_bps") is not None for _, link in ways)
    aqm = next((link["aqm"] for _, link in ways if isinstance(link.get("aqm"), Mapping)), None)
    if two_way:
        t.add_column("direction")
    if traced or two_way:
        t.add_column(f"{'capacity' if traced else 'rate'}\nMbit/s", justify="right")
    t.add_column("utilisation", justify="right")
    t.add_column("drops", justify="right")
    if aqm is not None:
        t.add_column(f"{'AQM' if two_way else aqm.get('name', 'AQM')}\ndrops", justify="right")
    t.add_column("queue delay\nmean ms", justify="right")
    t.add_column("queue delay\np95 ms", justify="right")
    t.add_column("Jain index", justify="right")
    for way, link in ways:
        row = [way] if two_way else []
        row += [_num(link.get("rate_bps"), 1e-6)] if traced or two_way else []
        row += [
            _num(link.get("utilization"), 100.0, 1) + " %" if link.get("utilization") is not None else DASH,
            _int(link.get("drops")),
        ]
        if aqm is not None:
            row.append(_int(link.get("drops_aqm")))
        jain = directions.jain_of(summary, way) if two_way else summary.get("jain_index")
        if not summary.get("flows"):
            jain = None  # no TCP flows to be fair between
        row += [
            _num(_get(link, "queue_delay_ms", "mean")),
            _num(_get(link, "queue_delay_ms", "p95")),
            _num(jain, digits=4),
        ]
        t.add_row(*row)
    return t


def downloads_table(summary: Mapping[str, Any]) -> Table:
    """Flows that repeat a download: how their downloads went, as medians over them."""
    t = _table("Downloads")
    for heading in (
        "flow",
        "cca",
        "done",
        "completion\np50 s",
        "completion\np90 s",
        "throughput\np50 Mbit/s",
        "self-inflicted\ndelay p50 ms",
        "retrans",
        "dup\nACKs",
    ):
        t.add_column(heading, justify="left" if heading == "cca" else "right", no_wrap=True)
    for f in summary.get("flows") or []:
        d = f.get("downloads")
        if not d:
            continue
        done = [x["completion_s"] for x in d if x.get("completion_s") is not None]
        t.add_row(
            str(f.get("id")),
            cca_label(f.get("cca")),
            f"{len(done)}/{len(d)}",
            _num(_quantile(done, 0.5), digits=3),
            _num(_quantile(done, 0.9), digits=3),
            _num(_quantile([x["throughput_bps"] for x in d], 0.5), 1e-6),
            _num(_quantile([x["self_inflicted_delay_ms"] for x in d], 0.5), digits=1),
            _int(_total(x["retransmits"] for x in d)),
            _int(_total(x["dupacks"] for x in d)),
        )
    return t


def _total(values: Iterable[Optional[int]]) -> Optional[int]:
    """The sum, or None when a figure is missing (the real kernel reports no dupACK count)."""
    values = list(values)
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def _quantile(values: list[float], q: float) -> Optional[float]:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def udp_table(summary: Mapping[str, Any]) -> Table:
    """UDP flows: what they offered, what arrived, and the one-way delay it took."""
    t = _table("UDP flows")
    two_way = directions.is_two_way(summary)  # an up UDP flow needs an uplink
    t.add_column("\n\nudp", justify="right", no_wrap=True)
    if two_way:
        t.add_column("\n\ndir", no_wrap=True)
    t.add_column("\noffered\nMbit/s", justify="right", no_wrap=True)
    t.add_column("\ndelivered\nMbit/s", justify="right", no_wrap=True)
    t.add_column("\n\nloss", justify="right", no_wrap=True)
    t.add_column("one-way\ndelay\np50 ms", justify="right", no_wrap=True)
    t.add_column("one-way\ndelay\np99 ms", justify="right", no_wrap=True)
    for u in traffic.udp_flows(summary):
        t.add_row(
            str(u.get("id", DASH)),
            *([directions.direction(u)] if two_way else []),
            _num(u.get("offered_bps"), 1e-6),
            _num(u.get("delivered_bps"), 1e-6),
            _num(u.get("loss"), 100.0) + " %" if u.get("loss") is not None else DASH,
            _num(_get(u, "one_way_delay_ms", "p50"), digits=1),
            _num(_get(u, "one_way_delay_ms", "p99"), digits=1),
        )
    return t


def arrivals_table(summary: Mapping[str, Any]) -> Table:
    """Each group of arrivals: how many came and finished, the load they offered, and
    the median and 99th percentile of FCT and slowdown, over all and per size bucket."""
    t = _table("Arrivals")
    for heading in (
        "group",
        "cca",
        "size",
        "done",
        "load",
        "FCT\np50 ms",
        "FCT\np99 ms",
        "slowdown\np50",
        "slowdown\np99",
    ):
        t.add_column(heading, justify="left" if heading in ("cca", "size") else "right", no_wrap=True)
    for g in traffic.groups(summary):
        for row, bucket in enumerate([g.get("all") or {}, *(g.get("buckets") or [])]):
            first = row == 0
            done = f"{_int(g.get('completed'))}/{_int(g.get('arrived'))}" if first else _int(bucket.get("completed"))
            t.add_row(
                str(g.get("id", DASH)) if first else "",
                _group_cca(g) if first else "",
                str(bucket.get("bucket", DASH)),
                done,
                _num(g.get("offered_load"), 100.0, 1) + " %" if first and g.get("offered_load") is not None else "",
                _num(bucket.get("fct_p50_ms"), digits=1),
                _num(bucket.get("fct_p99_ms"), digits=1),
                _num(bucket.get("slowdown_p50")),
                _num(bucket.get("slowdown_p99")),
            )
    return t


def _group_cca(group: Mapping[str, Any]) -> str:
    """A group's algorithm, and its direction when it goes up."""
    up = directions.direction(group) == directions.UP
    return cca_label(group.get("cca", DASH)) + (" (up)" if up else "")


def host_table(summary: Mapping[str, Any]) -> Table:
    """The sender host's CPU: how much of it there was and where it went."""
    t = _table("Sender CPU")
    for heading in (
        "share",
        "busy",
        "tasks",
        "ACKs",
        "timers",
        "wake-ups",
        "bursts",
        "ACKs\ndropped",
        "wait\nmean ms",
        "wait\np99 ms",
    ):
        t.add_column(heading, justify="right")
    h = summary.get("host") or {}
    work = h.get("work") or {}
    t.add_row(
        _num(h.get("cpu_share"), 100.0, 0) + " %",
        _num(h.get("busy_fraction"), 100.0, 1) + " %",
        _int(h.get("tasks")),
        _int(work.get("acks")),
        _int(work.get("timers")),
        _int(work.get("wakeups")),
        _int(work.get("bursts")),
        _int(h.get("rx_dropped")),
        _num(_get(h, "wait_ms", "mean")),
        _num(_get(h, "wait_ms", "p99")),
    )
    return t


def headline(summary: Mapping[str, Any]) -> Text:
    parts = [
        f"ccbench {summary.get('version', '?')}",
        f"engine {summary.get('engine', '?')}",
        f"seed {summary.get('seed', '?')}",
    ]
    if isinstance(summary.get("duration_s"), (int, float)):
        parts.append(f"{summary['duration_s']:g} s")
    if summary.get("scenario_hash"):
        parts.append(f"scenario {str(summary['scenario_hash'])[:12]}")
    return Text(" · ".join(parts), style="bold")


def render(summary: Mapping[str, Any], console: Optional[Console] = None) -> None:
    console = console or Console()
    parts: list[Any] = [headline(summary), Text("")]
    if summary.get("flows") or not traffic.has_traffic(summary):
        parts += [flows_table(summary), Text("")]
    if traffic.udp_flows(summary):
        parts += [udp_table(summary), Text("")]
    if traffic.groups(summary):
        parts += [arrivals_table(summary), Text("")]
    parts.append(link_table(summary))
    if any(f.get("downloads") for f in summary.get("flows") or []):
        parts += [Text(""), downloads_table(summary)]
    if summary.get("host"):
        parts += [Text(""), host_table(summary)]
        if summary["host"].get("preset"):
            parts.append(Text(host_costs_line(summary["host"])))
    if summary.get("notes"):
        parts += [Text(""), *(Text(f"note: {n}") for n in summary["notes"])]
    console.print(Group(*parts))


def host_costs_line(host: Mapping[str, Any]) -> str:
    """Which preset's costs the sender CPU had, and which the scenario set itself."""
    overrides = host.get("cost_overrides") or []
    line = f"CPU costs: those of the {host['preset']} preset"
    return line + (f", except [host.cost] {', '.join(overrides)} (set by the scenario)" if overrides else "")
