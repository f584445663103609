"""A run as a flent data file (``.flent.gz``), for flent's plots and comparisons.

flent keeps a test as gzipped JSON (``flent/resultset.py``, format version 4): its
settings (``metadata``), the sample times (``x_values``), one list of values per
series (``results``, ``None`` where a series has no value) and the samples as measured
(``raw_values``: per series, dicts with an absolute time ``t`` and the value ``val``).
A run is written as flent's ``tcp_nup`` test (N TCP uploads with a ping, flent's
``tests/tcp_nup.conf``), so every plot of that test draws it (``totals``, ``upload``,
``ping_cdf``, ``tcp_delivery_with_rtt``, ...):

* ``TCP upload::N`` (flow N-1): goodput in Mbit/s per interval; its raw values also
  carry what flent reads from ``ss``: ``tcp_rtt`` (smoothed RTT, ms), ``tcp_cwnd``
  (segments), ``tcp_delivery_rate`` and ``tcp_pacing_rate`` (Mbit/s).
* ``TCP upload sum``, ``avg`` and ``fairness``: computed per interval as flent's
  sum, average and fairness runners compute them (``flent/runners.py``).
* ``Ping (ms) ICMP``: what a ping across the bottleneck would measure at each sample:
  the link's base RTT plus the queue's delay then (queued bytes at the bottleneck's
  capacity).

A simulated run has no wall-clock time: the test is dated at the Unix epoch, and its
time stamps are simulated seconds from it, so the same run always gives the same file
(a kernel run's are its seconds from the flows' start, dated the same way).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from ..units import format_rate
from . import engine_words

if TYPE_CHECKING:
    from ..result import Result

FILE = "run.flent.gz"
FORMAT_VERSION = 4  # flent/resultset.py FILEFORMAT_VERSION
EPOCH = "1970-01-01T00:00:00.000000Z"  # flent's UTC time format (flent/util.py format_date)
TEST = "tcp_nup"


def _value(x: Any) -> Optional[float]:
    v = float(x)
    return v if math.isfinite(v) else None


def _mbps(x: Any) -> Optional[float]:
    v = _value(x)
    return None if v is None else v / 1e6


def _fairness(values: list[float]) -> Optional[float]:
    # flent/runners.py FairnessRunner.compute: Jain's index.
    squares = math.fsum(x * x for x in values)
    return math.fsum(values) ** 2 / (len(values) * squares) if values and squares else None


def flent_data(result: "Result") -> dict[str, Any]:
    """The run as flent's JSON document."""
    summary, sc = result.summary, result.scenario
    flows, link = result.flows, result.link
    n = len(summary["flows"])
    names = [f"TCP upload::{i + 1}" for i in range(n)]
    times = sorted({float(t) for t in flows["time_s"]} | {float(t) for t in link["time_s"]})
    at = {t: k for k, t in enumerate(times)}
    results: dict[str, list[Optional[float]]] = {name: [None] * len(times) for name in names}
    raw: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    columns = [
        c
        for c in ("time_s", "flow", "goodput_bps", "srtt_ms", "cwnd", "delivery_rate_bps", "pacing_rate_bps")
        if c in flows.columns
    ]
    for row in flows[columns].itertuples(index=False):
        r = row._asdict()
        name, k = names[int(r["flow"])], at[float(r["time_s"])]
        results[name][k] = _mbps(r["goodput_bps"])
        sample: dict[str, Any] = {"t": float(r["time_s"]), "val": results[name][k]}
        for key, column, scale in (
            ("tcp_rtt", "srtt_ms", 1.0),
            ("tcp_cwnd", "cwnd", 1.0),
            ("tcp_delivery_rate", "delivery_rate_bps", 1e-6),
            ("tcp_pacing_rate", "pacing_rate_bps", 1e-6),
        ):
            v = _value(r[column]) if column in r else None
            if v is not None:
                sample[key] = v * scale
        raw[name].append(sample)
    per_time = [[results[name][k] for name in names if results[name][k] is not None] for k in range(len(times))]
    results["TCP upload sum"] = [math.fsum(v) if v else None for v in per_time]
    results["TCP upload avg"] = [math.fsum(v) / len(v) if v else None for v in per_time]
    results["TCP upload fairness"] = [_fairness(v) for v in per_time]
    base_rtt_ms = float(summary["link"]["rtt_ms"])
    ping: list[Optional[float]] = [None] * len(times)
    for t, queued, capacity in zip(
        link["time_s"],
        link["queue_bytes"],
        link["capacity_bps"] if "capacity_bps" in link.columns else link["time_s"] * math.nan,
    ):
        q, c = _value(queued), _value(capacity)
        ping[at[float(t)]] = base_rtt_ms + q * 8 / c * 1e3 if q is not None and c else None
    results["Ping (ms) ICMP"] = ping
    raw["Ping (ms) ICMP"] = [{"t": t, "val": v} for t, v in zip(times, ping) if v is not None]
    duration = float(summary["duration_s"])
    ccas = ",".join(f["cca"] for f in summary["flows"])
    capacity = "trace" if sc.link.rate_bps is None else format_rate(sc.link.rate_bps)
    metadata: dict[str, Any] = {
        "NAME": TEST,
        "TITLE": f"ccbench {ccas}, {capacity}, {base_rtt_ms:g} ms",
        "NOTE": f"{engine_words(summary)}, seed {summary['seed']}, scenario {summary['scenario_hash']}",
        "TIME": EPOCH,
        "T0": EPOCH,
        "HOST": "receiver",
        "HOSTS": ["receiver"],
        "LOCAL_HOST": "sender",
        "LENGTH": duration,
        "TOTAL_LENGTH": duration,
        "STEP_SIZE": sc.interval_ns / 1e9,
        "DELAY": 0,
        "IP_VERSION": 4,
        "TEST_PARAMETERS": {"upload_streams": n},
        "DATA_FILENAME": FILE,
        "SERIES_META": {name: {"CONGESTION_CONTROL": f["cca"]} for name, f in zip(names, summary["flows"])},
        "CCBENCH": {"version": summary["version"], "seed": summary["seed"], "scenario_hash": summary["scenario_hash"]},
    }
    return {"metadata": metadata, "version": FORMAT_VERSION, "x_values": times, "results": results, "raw_values": raw}


def write_flent(result: "Result", directory: Union[str, "os.PathLike[str]"]) -> Path:
    """Write ``DIR/run.flent.gz``: flent's JSON, gzipped without a time stamp (so the
    bytes depend on the run alone). Returns its path."""
    text = json.dumps(flent_data(result), indent=2, sort_keys=True, allow_nan=False) + "\n"
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    path = Path(directory) / FILE
    path.write_bytes(buf.getvalue())
    return path
