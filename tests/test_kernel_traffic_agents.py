"""The agents' UDP sources and sinks and their connections of arrivals, over loopback in
this process: what they send, count and time, without namespaces or the emulator.
Their sockets force their buffers (``SO_*BUFFORCE``), which needs root; they run on the
clock, as the host's tests do."""

from __future__ import annotations

import os
import selectors
import socket
import time

import pytest

from ccbench.kernel.agent_arrivals import ArrivalReceivers, ArrivalSenders
from ccbench.kernel.agent_clock import Clocks, select_until
from ccbench.kernel.agent_histogram import Histogram, bucket_of, value_of
from ccbench.kernel.agent_udp import UdpSinks, UdpSources

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="forcing socket buffers needs root")
MS = 1_000_000
LOOPBACK = "127.0.0.1"


def free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def test_the_histogram_is_the_simulators() -> None:
    # Exact below 128, then 128 buckets per power of two, each read at its midpoint.
    assert [bucket_of(v) for v in (0, 127, 128, 255, 256, 258)] == [0, 127, 128, 255, 256, 257]
    assert (value_of(256), value_of(257)) == (257, 259)
    h = Histogram()
    for v in range(1, 100_001):
        h.record(v * 1000)
    s = h.stats(1e6)
    assert (s["min"], s["max"]) == (0.001, 100.0) and s["mean"] == pytest.approx(50.0005)
    for q, key in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        assert abs(s[key] / (q * 100) - 1) < 1 / 128, (key, s[key])
    assert Histogram().stats(1e6)["p99"] == 0.0


def drive(sel: selectors.BaseSelector, until_ns: int, due: list) -> None:
    """Dispatch the selector's handlers and each (``next_due``, ``act``) pair's due work
    until ``until_ns`` (CLOCK_MONOTONIC)."""
    t0 = time.monotonic_ns()
    while (now := time.monotonic_ns()) < until_ns:
        for next_due, act in due:
            act(now - t0)
        wake = [t0 + t for t in (n() for n, _ in due) if t is not None] + [until_ns]
        for key, _ in select_until(sel, min(wake)):
            key.data()


@pytest.mark.host
@needs_root
def test_a_source_sends_at_its_instants_and_a_sink_counts_and_times_them() -> None:
    port = free_port(socket.SOCK_DGRAM)
    sel = selectors.DefaultSelector()
    sinks = UdpSinks([{"addr": LOOPBACK, "port": port}], sel)
    sinks.ends_at(Clocks().realtime_of(time.monotonic_ns() + 10 * 1000 * MS))
    # 100 datagrams 2 ms apart, then 50 more 1 ms apart from 300 ms.
    runs = [[0, 2 * MS, 100], [300 * MS, MS, 50]]
    sources = UdpSources([{"addr": LOOPBACK, "port": port, "payload": 200, "runs": runs}])
    end = 1000 * MS
    drive(sel, time.monotonic_ns() + 400 * MS, [(sources.next_due, lambda now: sources.send_due(now, end))])
    time.sleep(0.02)
    for key, _ in sel.select(0):
        key.data()
    sent, got = sources.result()[0], sinks.result()[0]
    assert (sent["sent_packets"], sent["sent_bytes"], sent["send_errors"]) == (150, 150 * 228, 0)
    assert (got["delivered_packets"], got["delivered_bytes"], got["overflow"]) == (150, 150 * 228, 0)
    # Loopback takes microseconds; the stamps are the kernel's receive times.
    assert 0 <= got["one_way_delay_ms"]["min"] <= got["one_way_delay_ms"]["p50"] < 1.0, got
    assert sources.late.n == 150 and sources.late.quantile(0.5) < 2 * MS
    assert sources.next_due() is None
    sources.close()
    sinks.close()


@pytest.mark.host
@needs_root
@pytest.mark.parametrize("connect", ["sender", "receiver"])
def test_connections_of_arrivals_finish_with_their_last_bytes_time(connect: str) -> None:
    port = free_port(socket.SOCK_STREAM)
    # 12 connections 10 ms apart, from 4 bytes (the number alone) to 300 KB.
    sizes = [4, 5, 100, 1448, 1449, 10_000, 65_536, 100_000, 200_000, 300_000, 7, 50_000]
    schedule = [[20 * MS + 10 * MS * k, size] for k, size in enumerate(sizes)]
    group = {"port": port, "connect": connect, "schedule": schedule, "cca": "cubic"}
    sel = selectors.DefaultSelector()
    clocks = Clocks()
    receivers = ArrivalReceivers(
        [{**group, "addr": LOOPBACK, "peer": LOOPBACK, "rwnd": 6 << 20, "autotune": False}], sel, clocks
    )
    senders = ArrivalSenders([{**group, "addr": LOOPBACK, "listen_addr": LOOPBACK}], sel)
    t0 = time.monotonic_ns()
    receivers.start(t0)
    end = 1000 * MS
    drive(
        sel,
        t0 + 500 * MS,
        [
            (senders.next_due, lambda now: senders.open_due(now, end)),
            (receivers.next_due, lambda now: receivers.open_due(now, end)),
        ],
    )
    got, sent = receivers.finish()[0], senders.finish()[0]
    done = got["done_ns"]
    assert all(d is not None for d in done), done
    # After its instant, and within the run (loopback: well under 100 ms each).
    fct = [d - at for d, (at, _) in zip(done, schedule)]
    assert all(0 < f < 100 * MS for f in fct), fct
    assert sent["retransmits"] == [0] * len(sizes) and got["skipped"] == sent["skipped"] == 0
    assert not receivers.conns and not senders.conns and receivers.opener.open == senders.opener.open == 0
    assert not sel.get_map()
