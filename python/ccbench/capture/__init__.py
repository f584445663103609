"""``ccbench analyze``: the measurements of a run, taken from a packet capture.

>>> from ccbench.capture import analyze_file
>>> run = analyze_file("capture-sender.pcap")          # doctest: +SKIP
>>> run.summary["flows"][0]["goodput_bps"], run.flows.head()  # doctest: +SKIP
>>> run.save("results/analyzed")                       # doctest: +SKIP

The output directory has the files of a run (``summary.json``, ``flows.parquet``,
``link.parquet``) so that ``ccbench plot`` draws it, plus ``packets.parquet``, one row per
data segment and ACK, for the time-sequence and retransmission figures.
"""

from __future__ import annotations

import math
import os
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from .. import _core
from ..errors import ScenarioError
from ..result import save_tables
from .analysis import FlowAnalysis, analyze, flow_summary
from .reader import LINK_NAMES, CaptureFile, TcpPacket, read_capture

__all__ = ["AnalyzedRun", "analyze_file", "connections", "PACKET_COLUMNS"]

PACKET_COLUMNS = (
    "time_s",
    "flow",
    "kind",
    "seq",
    "end",
    "ack",
    "rwnd_bytes",
    "sack_left",
    "sack_right",
    "inflight_bytes",
    "retransmission",
    "dupack",
)
FILES = ("summary.json", "flows.parquet", "link.parquet", "packets.parquet")


@dataclass
class Connection:
    """A TCP connection: its packets in time order and the endpoint sending data."""

    index: int
    sender: tuple[str, int]
    receiver: tuple[str, int]
    packets: list[TcpPacket]
    payload: int


def connections(cap: CaptureFile) -> list[Connection]:
    """The connections that carry data, in order of their first packet."""
    groups: dict[tuple[tuple[str, int], tuple[str, int]], list[TcpPacket]] = {}
    for p in cap.packets:
        a, b = (p.src, p.sport), (p.dst, p.dport)
        groups.setdefault((a, b) if a <= b else (b, a), []).append(p)
    out: list[Connection] = []
    for (a, b), pkts in sorted(groups.items(), key=lambda kv: min(p.t for p in kv[1])):
        pkts.sort(key=lambda p: p.t)
        by = Counter()
        for p in pkts:
            by[(p.src, p.sport)] += p.payload
        if not by or max(by.values()) == 0:
            continue
        snd = a if by[a] >= by[b] else b
        out.append(Connection(len(out), snd, b if snd == a else a, pkts, by[snd]))
    return out


@dataclass
class AnalyzedRun:
    """What ``ccbench analyze`` measured: a run's summary and series, plus packets."""

    summary: dict[str, Any]
    flows: pd.DataFrame
    link: pd.DataFrame
    packets: pd.DataFrame

    def save(self, directory: Union[str, "os.PathLike[str]"]) -> list[Path]:
        paths = save_tables(directory, self.summary, self.flows, self.link)
        paths.append(Path(directory) / FILES[3])
        self.packets.to_parquet(paths[3], index=False)
        return paths


def _samples(end: float, interval: float) -> np.ndarray:
    """Sample instants: every interval, and the end (as a run takes a last sample)."""
    n = int(math.floor(end / interval + 1e-9))
    step_ns = round(interval * 1e9)  # as a run's sample times: whole nanoseconds, divided once
    times = [k * step_ns / 1e9 for k in range(1, n + 1)]
    if not times or end > times[-1] + 1e-9:
        times.append(end)
    return np.asarray(times, dtype=float)


def _series(fa: FlowAnalysis, flow: int, times: np.ndarray) -> dict[str, np.ndarray]:
    """The flow's row at each sample: rates over the interval, state at its end."""
    st = np.asarray(fa.states, dtype=float).reshape(-1, 10)
    idx = np.searchsorted(st[:, 0], times, side="right") - 1 if len(st) else np.full(len(times), -1)

    def at(col: int, fill: float = 0.0) -> np.ndarray:
        v = np.full(len(times), fill)
        ok = idx >= 0
        v[ok] = st[idx[ok], col]
        return v

    dt = np.diff(np.concatenate([[0.0], times]))
    dt[dt <= 0] = np.nan
    rate = lambda v: np.diff(np.concatenate([[0.0], v])) * 8.0 / dt  # noqa: E731
    delivered, sent = at(1), at(2)
    inflight = at(6, math.nan)
    return {
        "time_s": times,
        "flow": np.full(len(times), flow, dtype=np.uint32),
        "goodput_bps": rate(delivered),
        "throughput_bps": rate(sent),
        "inflight": inflight / fa.mss,
        "inflight_bytes": inflight,
        "srtt_ms": at(8, math.nan) * 1e3,
        "min_rtt_ms": at(9, math.nan) * 1e3,
        "retransmits": at(4),
        "rwnd_bytes": at(7, math.nan),
        "dupacks": at(5),
    }


def _packets(fa: FlowAnalysis, flow: int) -> pd.DataFrame:
    cols = list(zip(*fa.trace)) if fa.trace else [[] for _ in range(10)]
    t, kind, seq, end, ack, rwnd, sl, sr, infl, flag = (np.asarray(c) for c in cols)
    kind = kind.astype(np.uint8) if len(kind) else np.zeros(0, np.uint8)
    flag = flag.astype(bool) if len(flag) else np.zeros(0, bool)
    return pd.DataFrame(
        {
            "time_s": t.astype(float),
            "flow": np.full(len(t), flow, dtype=np.uint32),
            "kind": kind,
            "seq": seq.astype(float),
            "end": end.astype(float),
            "ack": ack.astype(float),
            "rwnd_bytes": rwnd.astype(float),
            "sack_left": sl.astype(float),
            "sack_right": sr.astype(float),
            "inflight_bytes": infl.astype(float),
            "retransmission": flag & (kind == 0),
            "dupack": flag & (kind == 1),
        },
        columns=list(PACKET_COLUMNS),
    )


# The time-series floor of a run (``Scenario.interval``), and a bound on the rows a
# capture's span can ask for (a stray timestamp decades away would otherwise ask for
# billions).
MIN_INTERVAL_S = 1e-3
MAX_SERIES_ROWS = 10_000_000


def analyze_file(
    path: Union[str, "os.PathLike[str]"],
    flow: Optional[int] = None,
    port: Optional[int] = None,
    side: Optional[str] = None,
    interval: float = 0.1,
) -> AnalyzedRun:
    """Analyze the TCP connections of a capture file (all that carry data, or the
    ``flow``-th one, or those with ``port`` at either end). Raises ScenarioError for a
    file that cannot be read or a selection that matches nothing."""
    _check_options(side, interval)
    cap = read_capture(path)
    all_conns = connections(cap)
    conns = _select(cap, all_conns, flow, port)
    # One origin for all: the time series of the connections share their time axis.
    origin = min(p.t for c in conns for p in c.packets)
    analyses = [analyze(c.packets, c.sender, origin, side) for c in conns]
    last = max(p.t for c in conns for p in c.packets) - origin
    duration = max(max(fa.end for fa in analyses), last)
    if duration / interval * len(conns) > MAX_SERIES_ROWS:
        raise ScenarioError(
            "--interval",
            f"the capture spans {duration:.6g} s: at {interval * 1e3:g}ms that is "
            f"more than {MAX_SERIES_ROWS:.0e} time-series rows; give a longer interval",
        )
    times = _samples(duration, interval)
    flows_df = pd.concat([pd.DataFrame(_series(fa, i, times)) for i, fa in enumerate(analyses)], ignore_index=True)
    flows_df = flows_df.sort_values(["time_s", "flow"], kind="stable").reset_index(drop=True)
    packets_df = pd.concat([_packets(fa, i) for i, fa in enumerate(analyses)], ignore_index=True)
    summary = _summary(cap, len(all_conns), analyses, duration, interval)
    return AnalyzedRun(summary, flows_df, _link(analyses, times), packets_df)


def _check_options(side: Optional[str], interval: float) -> None:
    if side not in (None, "sender", "receiver"):
        raise ScenarioError("--side", f"unknown side {side!r}; allowed: sender, receiver")
    if not interval >= MIN_INTERVAL_S:
        raise ScenarioError("--interval", f"must be at least {MIN_INTERVAL_S * 1e3:g}ms, as a run's, e.g. '100ms'")


def _select(cap: CaptureFile, conns: list[Connection], flow: Optional[int], port: Optional[int]) -> list[Connection]:
    """The connections to analyse: all, the ``flow``-th, or those with ``port``."""
    if not conns:
        raise ScenarioError(
            "CAPTURE",
            f"'{cap.path}' has no TCP connection carrying data "
            f"({len(cap.packets)} TCP packets in {cap.records} records)",
        )
    if flow is not None:
        if not 0 <= flow < len(conns):
            valid = "0" if len(conns) == 1 else f"0..{len(conns) - 1}"
            raise ScenarioError(
                "--flow",
                f"flow {flow} out of range; the capture has {len(conns)} "
                f"connection{'s' if len(conns) != 1 else ''} carrying data: {valid}",
            )
        conns = [conns[flow]]
    if port is not None:
        conns = [c for c in conns if port in (c.sender[1], c.receiver[1])]
        if not conns:
            raise ScenarioError("--port", f"no connection carrying data has port {port}")
    return conns


def _link(analyses: list[FlowAnalysis], times: np.ndarray) -> pd.DataFrame:
    """The link: what the analysed connections' data segments put on the wire here
    (a capture cannot see the queue, the drops or the link's rate)."""
    wire = np.zeros(len(times))
    for fa in analyses:
        st = np.asarray(fa.states, dtype=float).reshape(-1, 10)
        if len(st):
            k = np.searchsorted(st[:, 0], times, side="right") - 1
            wire += np.where(k >= 0, st[np.maximum(k, 0), 3], 0.0)
    dt = np.diff(np.concatenate([[0.0], times]))
    return pd.DataFrame(
        {
            "time_s": times,
            "queue_bytes": np.nan,
            "queue_packets": np.nan,
            "utilization": np.nan,
            "throughput_bps": np.diff(np.concatenate([[0.0], wire])) * 8.0 / np.where(dt > 0, dt, np.nan),
            "drops": np.nan,
        }
    )


def _summary(
    cap: CaptureFile, connections_with_data: int, analyses: list[FlowAnalysis], duration: float, interval: float
) -> dict[str, Any]:
    """The run's summary.json: the summary schema with what a capture cannot tell None,
    plus a ``capture`` object describing the file."""
    flows = [flow_summary(fa, i) for i, fa in enumerate(analyses)]
    goodputs = [f["goodput_bps"] for f in flows]
    s, s2 = sum(goodputs), sum(x * x for x in goodputs)
    headers = [h for fa in analyses for h in fa.header_bytes]
    return {
        "engine": "capture",
        "version": _core.version(),
        "seed": None,
        "scenario_hash": None,
        "duration_s": duration,
        "header_bytes": statistics.mode(headers) if headers else None,
        "jain_index": 1.0 if s2 == 0 else s * s / (len(goodputs) * s2),
        "events": None,
        "capture": {
            "file": cap.path.name,
            "format": cap.format,
            "linktype": LINK_NAMES.get(cap.linktype, str(cap.linktype)),
            "records": cap.records,
            "tcp_packets": len(cap.packets),
            "connections": connections_with_data,
            "interval_s": interval,
        },
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
