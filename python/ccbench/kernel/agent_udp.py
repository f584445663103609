"""UDP flows in the agents: each source (in the sending agent) sends a datagram at each
of its instants, the simulator's; each sink (in the receiving agent) counts what
arrives before the run's end and each datagram's one-way delay, from the send time
stamped in its payload to the kernel's receive time stamp. Standard library only (the
agents run by path).

A source's configuration: ``addr`` and ``port`` (its sink's), ``payload`` (bytes),
``runs`` (``[first, gap, count]``: instants in ns after the epoch) and ``netns`` where
it sends from another namespace. A sink's: ``addr``, ``port`` and ``netns``.
"""

from __future__ import annotations

import functools
import selectors
import socket
import struct
import time
from typing import Any, Optional

if __package__:
    from .agent_histogram import Histogram
    from .agent_sockets import SO_RCVBUFFORCE, SO_SNDBUFFORCE, in_namespace
else:  # run by path
    from agent_histogram import Histogram  # type: ignore[no-redef,import-not-found]
    from agent_sockets import SO_RCVBUFFORCE, SO_SNDBUFFORCE, in_namespace  # type: ignore[no-redef,import-not-found]

# IPv4 and UDP headers.
UDP_OVERHEAD = 28
# The first bytes of each payload: its number and its send time (CLOCK_REALTIME ns).
STAMP = struct.Struct("<QQ")
# Room for bursts while the agent is busy elsewhere: 4 MiB each way.
SOCKET_BUFFER = 4 << 20
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
# Ancillary data with the count of datagrams the socket dropped for want of room.
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40)
TIMESPEC = struct.Struct("@qq")
ANCILLARY_BYTES = 64
MS = 1e6


class UdpSource:
    """One UDP flow's source: a connected socket, and where it is in its instants."""

    def __init__(self, flow: dict[str, Any]) -> None:
        with in_namespace(flow.get("netns")):
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, SOCKET_BUFFER)
        self.sock.connect((flow["addr"], int(flow["port"])))
        self.sock.setblocking(False)
        self.payload = bytearray(int(flow["payload"]))
        self.runs: list[list[int]] = flow["runs"]
        self.run = self.k = 0
        self.sent = self.send_errors = 0

    def next_ns(self) -> Optional[int]:
        """Its next instant (ns after the epoch), if any."""
        if self.run >= len(self.runs):
            return None
        first, gap, _ = self.runs[self.run]
        return first + gap * self.k

    def advance(self) -> None:
        self.k += 1
        if self.k >= self.runs[self.run][2]:
            self.run, self.k = self.run + 1, 0

    def send(self) -> None:
        """A datagram now, stamped with its number and the time."""
        STAMP.pack_into(self.payload, 0, self.sent, time.clock_gettime_ns(time.CLOCK_REALTIME))
        self.sent += 1
        try:
            self.sock.send(self.payload)
        except OSError:  # a full socket or device queue: lost before the path
            self.send_errors += 1

    def result(self) -> dict[str, Any]:
        return {
            "sent_packets": self.sent,
            "sent_bytes": self.sent * (len(self.payload) + UDP_OVERHEAD),
            "send_errors": self.send_errors,
        }


class UdpSources:
    """Every UDP flow's source, sending what is due, late by at most the agent's delay."""

    def __init__(self, flows: list[dict[str, Any]]) -> None:
        self.sources = [UdpSource(f) for f in flows]
        self.late = Histogram()

    def next_due(self) -> Optional[int]:
        """The next instant of any source (ns after the epoch)."""
        due = [t for t in (s.next_ns() for s in self.sources) if t is not None]
        return min(due) if due else None

    def send_due(self, now: int, end: int) -> None:
        """Every datagram due by ``now`` (ns after the epoch), until ``end``: one due
        before the end but not sent by then is not sent (the emulator no longer counts)."""
        if now >= end:
            return
        for s in self.sources:
            while (t := s.next_ns()) is not None and t <= now:
                s.advance()
                if t >= end:
                    s.run = len(s.runs)
                    break
                self.late.record(now - t)
                s.send()

    def result(self) -> list[dict[str, Any]]:
        return [s.result() for s in self.sources]

    def close(self) -> None:
        for s in self.sources:
            s.sock.close()


class UdpSink:
    """One UDP flow's sink: what arrived before the end, and how long each took."""

    def __init__(self, flow: dict[str, Any]) -> None:
        with in_namespace(flow.get("netns")):
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, SOCKET_BUFFER)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
        self.sock.bind((flow["addr"], int(flow["port"])))
        self.sock.setblocking(False)
        self.packets = self.bytes = self.overflow = 0
        self.delay = Histogram()
        # Datagrams that arrive from here on (CLOCK_REALTIME ns) are not counted.
        self.end_realtime: Optional[int] = None

    def read(self, buf: memoryview) -> None:
        """Every datagram waiting."""
        while True:
            try:
                n, ancillary, _, _ = self.sock.recvmsg_into([buf], ANCILLARY_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            arrived = None
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = TIMESPEC.unpack_from(data)
                    arrived = sec * 1_000_000_000 + nsec
                elif level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL:
                    self.overflow = struct.unpack_from("@I", data)[0]
            if arrived is None:
                arrived = time.clock_gettime_ns(time.CLOCK_REALTIME)
            if n < STAMP.size or (self.end_realtime is not None and arrived >= self.end_realtime):
                continue
            _, sent = STAMP.unpack_from(buf)
            self.packets += 1
            self.bytes += n + UDP_OVERHEAD
            self.delay.record(arrived - sent)

    def result(self) -> dict[str, Any]:
        return {
            "delivered_packets": self.packets,
            "delivered_bytes": self.bytes,
            "one_way_delay_ms": self.delay.stats(MS),
            # Dropped at the sink for want of room in its socket's buffer.
            "overflow": self.overflow,
        }


class UdpSinks:
    """Every UDP flow's sink, read as its datagrams come (registered in a selector)."""

    def __init__(self, flows: list[dict[str, Any]], sel: selectors.BaseSelector) -> None:
        self.sinks = [UdpSink(f) for f in flows]
        self.sel = sel
        self.buf = memoryview(bytearray(1 << 16))
        for s in self.sinks:
            sel.register(s.sock, selectors.EVENT_READ, functools.partial(s.read, self.buf))

    def ends_at(self, end_realtime: int) -> None:
        for s in self.sinks:
            s.end_realtime = end_realtime

    def result(self) -> list[dict[str, Any]]:
        return [s.result() for s in self.sinks]

    def close(self) -> None:
        for s in self.sinks:
            self.sel.unregister(s.sock)
            s.sock.close()
