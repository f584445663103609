"""A run as an ``iperf3 -J`` report of the sending end, for tools that read iperf3's JSON.

The shape is iperf3's own (3.x, ``iperf_json_*`` in iperf3's ``iperf_api.c``):
``start`` (the connections, the test's settings), ``intervals`` (per interval, one
entry per stream and their ``sum``) and ``end`` (per stream, the sender's and the
receiver's totals, and their sums). Each flow is one stream. What a sending iperf3 reads
from TCP_INFO comes from the run's series: ``bits_per_second`` is the flow's throughput
(``throughput_bps``), ``retransmits`` the retransmissions in the interval, ``snd_cwnd``
the congestion window in bytes (cwnd x MSS), ``snd_wnd`` the receive window the flow
may fill, ``rtt`` the smoothed RTT in microseconds, ``pmtu`` the MSS plus headers. The
end's receiver totals are the flow's goodput and delivered bytes.

iperf3 reports one congestion-control algorithm for the test; a run of several
algorithms names each flow's, comma-separated in flow order (``cubic,cubic,bbr``). A
simulated run has no wall-clock time: the report is dated at the Unix epoch (a kernel
run's too). ``ccbench import-iperf3`` reads the file back
(``python/ccbench/importers/iperf3.py``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from . import engine_words, real_kernel

if TYPE_CHECKING:
    import pandas as pd

    from ..result import Result

FILE = "iperf3.json"
FIRST_SOCKET = 5  # iperf3's first data socket after stdin/out/err, the log and the control connection


def _int(x: Any) -> Optional[int]:
    v = float(x)
    return round(v) if math.isfinite(v) else None


def _float(x: Any) -> Optional[float]:
    v = float(x)
    return v if math.isfinite(v) else None


def _without_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def iperf3_report(result: "Result") -> dict[str, Any]:
    """The run as the JSON document ``iperf3 -c ... -J -P N`` prints."""
    summary, mss = result.summary, result.scenario.tcp.mss
    flows = summary["flows"]
    sockets = [FIRST_SOCKET + i for i in range(len(flows))]
    duration = float(summary["duration_s"])
    ccas = [f["cca"] for f in flows]
    congestion = ccas[0] if len(set(ccas)) == 1 else ",".join(ccas)
    # iperf3 -n: the test's size, when all flows have the same one.
    sizes = {f["size_bytes"] for f in flows}
    sized = sizes.pop() if len(sizes) == 1 else None
    end_streams = _end_streams(flows, result.flows, sockets, mss, duration, sized)
    return {
        "start": _start(summary, sockets, mss, duration, sized),
        "intervals": _intervals(result.flows, sockets, mss, summary["header_bytes"]),
        "end": _end(end_streams, duration, congestion),
    }


def _start(summary: dict[str, Any], sockets: list[int], mss: int, duration: float, sized: Any) -> dict[str, Any]:
    """iperf3's ``start``: the connections and the test's settings."""
    kernel = real_kernel(summary)
    return {
        "connected": [
            {
                "socket": s,
                "local_host": "10.0.0.1",
                "local_port": 50000 + i,
                "remote_host": "10.0.1.1",
                "remote_port": 5201,
            }
            for i, s in enumerate(sockets)
        ],
        "version": f"ccbench {summary['version']} "
        + (f"({summary.get('engine')} engine)" if kernel else "(simulator)"),
        "system_info": f"{engine_words(summary)}, seed {summary['seed']}, scenario {summary['scenario_hash']}",
        "timestamp": {"time": "Thu, 01 Jan 1970 00:00:00 GMT", "timesecs": 0},
        "connecting_to": {"host": "10.0.1.1", "port": 5201},
        "tcp_mss_default": mss,
        "sock_bufsize": 0,
        "test_start": {
            "protocol": "TCP",
            "num_streams": len(sockets),
            "blksize": 131072,
            "omit": 0,
            "duration": duration,
            "bytes": sized or 0,
            "blocks": 0,
            "reverse": 0,
            "tos": 0,
        },
    }


def _intervals(table: "pd.DataFrame", sockets: list[int], mss: int, headers: int) -> list[dict[str, Any]]:
    """iperf3's ``intervals``: one per sample time of the run's series, with an entry per
    stream and their ``sum``."""
    columns = [
        c
        for c in ("time_s", "flow", "throughput_bps", "retransmits", "cwnd", "rwnd_bytes", "srtt_ms")
        if c in table.columns
    ]
    by_time: dict[float, dict[int, dict[str, Any]]] = {}
    for row in table[columns].itertuples(index=False):
        r = row._asdict()
        by_time.setdefault(float(r["time_s"]), {})[int(r["flow"])] = r
    intervals = []
    previous_time = 0.0
    previous_retrans = [0] * len(sockets)
    for t in sorted(by_time):
        streams = []
        for i, r in sorted(by_time[t].items()):
            # iperf3 reports an interval's retransmissions; the run's series counts them up.
            total = _int(r["retransmits"]) if "retransmits" in r else None
            retrans = None
            if total is not None:
                retrans, previous_retrans[i] = total - previous_retrans[i], total
            streams.append(_interval_stream(r, sockets[i], previous_time, t, retrans, mss, headers))
        intervals.append({"streams": streams, "sum": _interval_sum(streams, previous_time, t)})
        previous_time = t
    return intervals


def _interval_stream(
    r: dict[str, Any], socket: int, start: float, end: float, retrans: Optional[int], mss: int, headers: int
) -> dict[str, Any]:
    """One stream's entry in an interval, from its row of the run's series at ``end``
    (what a sending iperf3 reads from TCP_INFO)."""
    seconds = end - start
    bps = _float(r["throughput_bps"]) if "throughput_bps" in r else None
    cwnd = _float(r["cwnd"]) if "cwnd" in r else None
    srtt_ms = _float(r["srtt_ms"]) if "srtt_ms" in r else None
    return _without_none(
        {
            "socket": socket,
            "start": start,
            "end": end,
            "seconds": seconds,
            "bytes": None if bps is None else round(bps * seconds / 8),
            "bits_per_second": bps,
            "retransmits": retrans,
            "snd_cwnd": None if cwnd is None else round(cwnd * mss),
            "snd_wnd": _int(r["rwnd_bytes"]) if "rwnd_bytes" in r else None,
            "rtt": None if srtt_ms is None else round(srtt_ms * 1e3),
            "pmtu": mss + headers,
            "omitted": False,
            "sender": True,
        }
    )


def _interval_sum(streams: list[dict[str, Any]], start: float, end: float) -> dict[str, Any]:
    return {
        "start": start,
        "end": end,
        "seconds": end - start,
        "bytes": sum(s.get("bytes", 0) for s in streams),
        "bits_per_second": math.fsum(s.get("bits_per_second", 0.0) for s in streams),
        "retransmits": sum(s.get("retransmits", 0) for s in streams),
        "omitted": False,
        "sender": True,
    }


def _end_streams(
    flows: list[dict[str, Any]], table: "pd.DataFrame", sockets: list[int], mss: int, duration: float, sized: Any
) -> list[dict[str, Any]]:
    """The end's ``streams``: each flow's sender and receiver totals."""
    end_streams = []
    for i, f in enumerate(flows):
        rtt = f["rtt_ms"] or {}
        rows = table[table["flow"] == i]
        sender = _without_none(
            {
                "socket": sockets[i],
                "start": 0,
                "end": duration,
                "seconds": duration,
                "bytes": f["sent_bytes"],
                "bits_per_second": f["throughput_bps"],
                "retransmits": f["retransmits"],
                "max_snd_cwnd": _int(rows["cwnd"].max() * mss) if "cwnd" in rows and len(rows) else None,
                "max_snd_wnd": _int(rows["rwnd_bytes"].max()) if "rwnd_bytes" in rows and len(rows) else None,
                "max_rtt": None if rtt.get("max") is None else round(rtt["max"] * 1e3),
                "min_rtt": None if rtt.get("min") is None else round(rtt["min"] * 1e3),
                "mean_rtt": None if rtt.get("mean") is None else round(rtt["mean"] * 1e3),
                "sender": True,
            }
        )
        # A sized transfer ends when its last byte arrives (iperf3 -n).
        done = f["completion_s"] if sized is not None and f["completion_s"] is not None else duration
        receiver = {
            "socket": sockets[i],
            "start": 0,
            "end": done,
            "seconds": done,
            "bytes": f["delivered_bytes"],
            "bits_per_second": f["goodput_bps"],
            "sender": True,
        }
        end_streams.append({"sender": sender, "receiver": receiver})
    return end_streams


def _end(end_streams: list[dict[str, Any]], duration: float, congestion: str) -> dict[str, Any]:
    """iperf3's ``end``: the streams' totals, their sums, and the algorithm."""

    def total(side: str, key: str) -> Any:
        values = [s[side][key] for s in end_streams if s[side].get(key) is not None]
        return math.fsum(values) if key == "bits_per_second" else sum(values)

    return {
        "streams": end_streams,
        "sum_sent": {
            "start": 0,
            "end": duration,
            "seconds": duration,
            "bytes": total("sender", "bytes"),
            "bits_per_second": total("sender", "bits_per_second"),
            "retransmits": total("sender", "retransmits"),
            "sender": True,
        },
        "sum_received": {
            "start": 0,
            "end": duration,
            "seconds": duration,
            "bytes": total("receiver", "bytes"),
            "bits_per_second": total("receiver", "bits_per_second"),
            "sender": True,
        },
        "sender_tcp_congestion": congestion,
        "receiver_tcp_congestion": congestion,
    }


def write_iperf3(result: "Result", directory: Union[str, "os.PathLike[str]"]) -> Path:
    """Write ``DIR/iperf3.json`` (indented as iperf3 indents it). Returns its path."""
    path = Path(directory) / FILE
    path.write_text(json.dumps(iperf3_report(result), indent="\t", allow_nan=False) + "\n", encoding="utf-8")
    return path
