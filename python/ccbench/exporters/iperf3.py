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
    summary, sc = result.summary, result.scenario
    kernel = real_kernel(summary)
    mss, headers = sc.tcp.mss, summary["header_bytes"]
    flows = summary["flows"]
    sockets = [FIRST_SOCKET + i for i in range(len(flows))]
    duration = float(summary["duration_s"])
    ccas = [f["cca"] for f in flows]
    congestion = ccas[0] if len(set(ccas)) == 1 else ",".join(ccas)
    table = result.flows
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
    previous_retrans = [0] * len(flows)
    for t in sorted(by_time):
        streams = []
        for i, r in sorted(by_time[t].items()):
            seconds = t - previous_time
            bps = _float(r["throughput_bps"]) if "throughput_bps" in r else None
            total = _int(r["retransmits"]) if "retransmits" in r else None
            retrans = None
            if total is not None:
                retrans, previous_retrans[i] = total - previous_retrans[i], total
            cwnd = _float(r["cwnd"]) if "cwnd" in r else None
            srtt_ms = _float(r["srtt_ms"]) if "srtt_ms" in r else None
            streams.append(
                _without_none(
                    {
                        "socket": sockets[i],
                        "start": previous_time,
                        "end": t,
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
            )
        intervals.append(
            {
                "streams": streams,
                "sum": {
                    "start": previous_time,
                    "end": t,
                    "seconds": t - previous_time,
                    "bytes": sum(s.get("bytes", 0) for s in streams),
                    "bits_per_second": math.fsum(s.get("bits_per_second", 0.0) for s in streams),
                    "retransmits": sum(s.get("retransmits", 0) for s in streams),
                    "omitted": False,
                    "sender": True,
                },
            }
        )
        previous_time = t
    sizes = {f["size_bytes"] for f in flows}
    sized = sizes.pop() if len(sizes) == 1 else None
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

    def total(side: str, key: str) -> Any:
        values = [s[side][key] for s in end_streams if s[side].get(key) is not None]
        return math.fsum(values) if key == "bits_per_second" else sum(values)

    return {
        "start": {
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
                "num_streams": len(flows),
                "blksize": 131072,
                "omit": 0,
                "duration": duration,
                "bytes": sized or 0,
                "blocks": 0,
                "reverse": 0,
                "tos": 0,
            },
        },
        "intervals": intervals,
        "end": {
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
        },
    }


def write_iperf3(result: "Result", directory: Union[str, "os.PathLike[str]"]) -> Path:
    """Write ``DIR/iperf3.json`` (indented as iperf3 indents it). Returns its path."""
    path = Path(directory) / FILE
    path.write_text(json.dumps(iperf3_report(result), indent="\t", allow_nan=False) + "\n", encoding="utf-8")
    return path
