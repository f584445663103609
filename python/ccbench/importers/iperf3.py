"""``ccbench import-iperf3``: an ``iperf3 -J`` report as a run directory.

One flow per TCP stream. The series come from iperf3's intervals: at the sending end
(a normal test) they carry the bytes the application wrote (``throughput_bps``), the
retransmissions, ``snd_cwnd``, ``snd_wnd``, ``rtt``, ``rttvar`` and ``pmtu`` of the
kernel's TCP_INFO; at the receiving end (``--reverse``) only the bytes read
(``goodput_bps``). The summary takes each stream's totals from the report's end: goodput
from the receiver's bytes, throughput and retransmissions from the sender's, RTT from
the interval samples (or the end's min/mean/max when there are none), the algorithm
from ``sender_tcp_congestion`` (one name per stream when it lists as many as there are
streams, as ``ccbench run --format iperf3`` writes a mix). What iperf3 does not report
is None or NaN.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from .. import _core
from ..errors import ScenarioError
from ..result import save_tables

NAN = float("nan")


@dataclass
class ImportedRun:
    summary: dict[str, Any]
    flows: pd.DataFrame
    link: pd.DataFrame

    def save(self, directory: Union[str, "os.PathLike[str]"]) -> list[Path]:
        return save_tables(directory, self.summary, self.flows, self.link)


def _num(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _positive(x: Any) -> Optional[float]:
    v = _num(x)
    return v if v is not None and v > 0 else None


def _stats(values: list[float]) -> Optional[dict[str, float]]:
    if not values:
        return None
    v = sorted(values)

    def q(f: float) -> float:
        return v[min(len(v) - 1, max(0, math.ceil(f * len(v)) - 1))]

    return {"min": v[0], "mean": sum(v) / len(v), "p50": q(0.5), "p95": q(0.95), "p99": q(0.99), "max": v[-1]}


def load_report(path: Union[str, "os.PathLike[str]"]) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError("FILE", f"no such file '{p}'") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError("FILE", f"cannot read '{p}': {e}") from None

    def not_finite(token: str) -> Any:
        raise ValueError(f"{token} is not a number iperf3 writes")

    try:
        doc = json.loads(text, parse_constant=not_finite)
    except ValueError as e:
        raise ScenarioError("FILE", f"'{p}' is not JSON ({e}); expected the output of 'iperf3 -J'") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("start"), dict):
        raise ScenarioError("FILE", f"'{p}' is not an iperf3 JSON report (no 'start')")
    if doc.get("error") and not doc.get("intervals"):
        raise ScenarioError("FILE", f"the iperf3 test failed: {doc['error']}")
    proto = (doc["start"].get("test_start") or {}).get("protocol", "TCP")
    if proto != "TCP":
        raise ScenarioError("FILE", f"only TCP tests can be imported; this one is {proto}")
    return doc


def import_report(doc: dict[str, Any], name: str = "iperf3.json") -> ImportedRun:
    start, end = doc["start"], doc.get("end") or {}
    test = start.get("test_start") or {}
    reverse = bool(test.get("reverse"))
    mss = _positive(start.get("tcp_mss_default")) or _positive(start.get("tcp_mss")) or 1448.0
    connected = start.get("connected") or []
    sockets = [c.get("socket") for c in connected]
    conns = {c.get("socket"): c for c in connected}
    _add_interval_sockets(sockets, doc.get("intervals") or [])
    if not sockets:
        raise ScenarioError("FILE", "the report has no TCP stream")
    series = _Series(sockets, mss, is_sender=not reverse)
    for iv in doc.get("intervals") or []:
        series.interval(iv)
    flows_df = _flows_frame(series.rows)
    end_streams = {(s.get("sender") or s.get("receiver") or {}).get("socket"): s for s in end.get("streams") or []}
    duration = max(
        [_num((end.get("sum_sent") or {}).get("end")) or 0.0, _num((end.get("sum_received") or {}).get("end")) or 0.0]
        + [r["time_s"] for r in series.rows]
    )
    cca = end.get("sender_tcp_congestion") or "unknown"
    # One name per stream, comma-separated, is how 'ccbench run --format iperf3' names a mix.
    per_stream = cca.split(",") if cca.count(",") == len(sockets) - 1 and len(sockets) > 1 else [cca] * len(sockets)
    flows = [
        _flow_summary(i, per_stream[i], end_streams.get(sock, {}), conns.get(sock, {}), series, test)
        for i, sock in enumerate(sockets)
    ]
    summary = _summary(duration, flows, _test_facts(name, start, end, test, mss))
    link_df = pd.DataFrame(
        series.link_rows, columns=["time_s", "queue_bytes", "queue_packets", "utilization", "throughput_bps", "drops"]
    )
    return ImportedRun(summary, flows_df, link_df)


def _add_interval_sockets(sockets: list[Any], intervals: list[Any]) -> None:
    """Streams the intervals name that the start did not list as connected, in order."""
    for iv in intervals:
        for s in iv.get("streams") or []:
            if s.get("socket") not in sockets:
                sockets.append(s.get("socket"))


class _Series:
    """The flows' and the link's rows, one per iperf3 interval (and stream), with what
    carries from one interval to the next: each stream's retransmissions so far (iperf3
    reports them per interval, a run's series counts them up), RTT samples and last cwnd."""

    def __init__(self, sockets: list[Any], mss: float, is_sender: bool) -> None:
        self.index = {sock: i for i, sock in enumerate(sockets)}
        self.streams = len(sockets)
        self.mss = mss
        self.is_sender = is_sender
        self.rows: list[dict[str, Any]] = []
        self.link_rows: list[dict[str, float]] = []
        self.retrans = [0.0] * len(sockets)
        self.rtts: list[list[float]] = [[] for _ in sockets]
        self.last_cwnd: list[Optional[float]] = [None] * len(sockets)

    def interval(self, iv: dict[str, Any]) -> None:
        streams = iv.get("streams") or []
        if any(s.get("omitted") for s in streams):
            return  # iperf3 -O: excluded from its own totals too
        t_end = max((_num(s.get("end")) or 0.0) for s in streams) if streams else 0.0
        by = {self.index[s.get("socket")]: s for s in streams if s.get("socket") in self.index}
        total = 0.0
        for i in range(self.streams):
            total += self.stream_row(t_end, i, by.get(i, {}))
        self.link_rows.append(
            {
                "time_s": t_end,
                "queue_bytes": NAN,
                "queue_packets": NAN,
                "utilization": NAN,
                "throughput_bps": total,
                "drops": NAN,
            }
        )

    def stream_row(self, t_end: float, i: int, s: dict[str, Any]) -> float:
        """Stream ``i``'s row for the interval ending at ``t_end``; its bits per second
        (0 when it reports none)."""
        sending = bool(s.get("sender", self.is_sender))
        bps = _num(s.get("bits_per_second"))
        self.retrans[i] += _num(s.get("retransmits")) or 0.0
        rtt = _positive(s.get("rtt"))
        if rtt is not None:
            self.rtts[i].append(rtt / 1e3)
        cwnd = _positive(s.get("snd_cwnd"))
        if cwnd is not None:
            self.last_cwnd[i] = cwnd
        self.rows.append(
            {
                "time_s": t_end,
                "flow": i,
                "goodput_bps": NAN if sending or bps is None else bps,
                "throughput_bps": bps if sending and bps is not None else NAN,
                "cwnd": NAN if cwnd is None else cwnd / self.mss,
                "cwnd_bytes": NAN if cwnd is None else cwnd,
                "snd_wnd_bytes": _positive(s.get("snd_wnd")) or NAN,
                "srtt_ms": NAN if rtt is None else rtt / 1e3,
                "rttvar_ms": NAN if _positive(s.get("rttvar")) is None else s["rttvar"] / 1e3,
                "pmtu": _positive(s.get("pmtu")) or NAN,
                "retransmits": self.retrans[i] if sending and "retransmits" in s else NAN,
            }
        )
        return bps or 0.0


def _flows_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    flows_df = pd.DataFrame(rows, columns=None if rows else ["time_s", "flow"])
    if len(flows_df):
        flows_df["flow"] = flows_df["flow"].astype(np.uint32)
        flows_df = flows_df.sort_values(["time_s", "flow"], kind="stable").reset_index(drop=True)
        # Columns iperf3 left empty everywhere are dropped, as a run has no such column.
        flows_df = flows_df[[c for c in flows_df.columns if c in ("time_s", "flow") or flows_df[c].notna().any()]]
    return flows_df


def _flow_summary(
    i: int, cca: str, es: dict[str, Any], c: dict[str, Any], series: _Series, test: dict[str, Any]
) -> dict[str, Any]:
    """Stream ``i``'s ``flows[]`` entry, from the end's totals (``es``) and its intervals;
    ``c`` is its entry in the start's ``connected``."""
    snd, rcv = es.get("sender") or {}, es.get("receiver") or {}
    rtt = _stats(series.rtts[i])
    if rtt is None and _positive(snd.get("mean_rtt")):
        rtt = {
            "min": snd["min_rtt"] / 1e3,
            "mean": snd["mean_rtt"] / 1e3,
            "p50": None,
            "p95": None,
            "p99": None,
            "max": snd["max_rtt"] / 1e3,
        }
    local = f"{c.get('local_host', '?')}:{c.get('local_port', '?')}"
    remote = f"{c.get('remote_host', '?')}:{c.get('remote_port', '?')}"
    sized = _positive(test.get("bytes"))
    reverse = not series.is_sender  # a reverse test's report comes from the receiving end
    last_cwnd = series.last_cwnd[i]
    return {
        "id": i,
        "cca": cca,
        "params": {},
        "ecn": None,
        "paced": None,
        "start_s": 0.0,
        "base_rtt_ms": None if rtt is None else rtt["min"],
        "goodput_bps": _num(rcv.get("bits_per_second")),
        "throughput_bps": _num(snd.get("bits_per_second")),
        "delivered_bytes": rcv.get("bytes"),
        "sent_bytes": snd.get("bytes"),
        "retransmits": snd.get("retransmits"),
        "lost": None,
        "dropped": None,
        "rto_count": None,
        "rtt_ms": rtt,
        "self_inflicted_delay_ms": None if rtt is None else rtt["mean"] - rtt["min"],
        "size_bytes": int(sized) if sized else None,
        "completion_s": _num(rcv.get("seconds")) if sized else None,
        "final_cwnd": None if last_cwnd is None else round(last_cwnd / series.mss),
        # iperf3's own keys
        "src": remote if reverse else local,
        "dst": local if reverse else remote,
        "measured_at": "receiver" if reverse else "sender",
    }


def _test_facts(
    name: str, start: dict[str, Any], end: dict[str, Any], test: dict[str, Any], mss: float
) -> dict[str, Any]:
    """The summary's ``iperf3`` object: the report's file and what it says of the test."""
    return {
        "file": name,
        "version": start.get("version"),
        "system_info": start.get("system_info"),
        "timestamp": (start.get("timestamp") or {}).get("time"),
        "reverse": bool(test.get("reverse")),
        "num_streams": test.get("num_streams"),
        "duration": test.get("duration"),
        "mss": mss,
        "sender_tcp_congestion": end.get("sender_tcp_congestion"),
        "receiver_tcp_congestion": end.get("receiver_tcp_congestion"),
        "cpu_utilization_percent": end.get("cpu_utilization_percent"),
    }


def _summary(duration: float, flows: list[dict[str, Any]], iperf3: dict[str, Any]) -> dict[str, Any]:
    """The run's summary.json: the summary schema with what iperf3 does not report None,
    plus the ``iperf3`` object."""
    goodputs = [f["goodput_bps"] or 0.0 for f in flows]
    s1, s2 = sum(goodputs), sum(x * x for x in goodputs)
    return {
        "engine": "iperf3",
        "version": _core.version(),
        "seed": None,
        "scenario_hash": None,
        "duration_s": duration,
        "header_bytes": None,
        "jain_index": 1.0 if s2 == 0 else s1 * s1 / (len(goodputs) * s2),
        "events": None,
        "iperf3": iperf3,
        "flows": flows,
        "link": {
            "rate_bps": None,
            "rtt_ms": None,
            "buffer_bytes": None,
            "buffer_packets": None,
            "bdp_bytes": None,
            "utilization": None,
            "drops": None,
            "drops_overflow": None,
            "drops_random": None,
            "ecn_marks": None,
            "queue_delay_ms": None,
            "queue_bytes": None,
            "queue_packets": None,
            "packets_forwarded": None,
        },
    }


def import_file(path: Union[str, "os.PathLike[str]"]) -> ImportedRun:
    """Read an ``iperf3 -J`` report and turn it into a run."""
    doc = load_report(path)
    try:
        return import_report(doc, Path(path).name)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError) as e:
        # A report whose values have the wrong shape (a number where a table belongs...).
        raise ScenarioError("FILE", f"'{path}' is not a well-formed iperf3 report ({type(e).__name__}: {e})") from None
