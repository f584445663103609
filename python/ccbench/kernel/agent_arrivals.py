"""Groups of arrivals in the agents: each connection opens at its instant (the
simulator's) and carries its size (the simulator's); the receiver takes the moment it
had every byte and resets the connection, the sender its retransmissions.
Standard library only (the agents run by path).

Where the sender opens the connections (``connect = "sender"``) it connects when one is
due and writes its size, whose first 4 bytes are the connection's number among its
group's; the receiver listens on the group's port and reads the number from them. Where
the receiver opens them, it connects when one is due and sends a 100-byte request whose
first 4 bytes are the number; the sender listens on the group's port, reads the request
and writes the size. Either way the receiver resets the connection once it has every
byte (no TIME_WAIT, whose ports a later connection could meet), and the sender, told so
by the reset, reads its ``TCP_INFO`` and closes its end: a finished connection leaves
two numbers, the moment it was complete and its retransmissions.

A group's configuration: ``addr`` (where its receivers listen, or its senders where the
receiver opens the connections: ``listen_addr``), ``port``, ``cca``, ``connect``,
``schedule`` (``[ns after the epoch, size]`` per connection), ``rwnd`` and ``autotune``
(its receivers' window) and ``netns`` where its end of this agent's kind is in the other
namespace.
"""

from __future__ import annotations

import functools
import selectors
import socket
import struct
import time
from typing import Any, Callable, Optional

if __package__:
    from .agent_clock import Clocks
    from .agent_histogram import Histogram
    from .agent_sockets import hold_window, in_namespace, receiving_socket, reset
    from .tcpinfo import TCP_CONGESTION, tcp_info
else:  # run by path
    from agent_clock import Clocks  # type: ignore[no-redef,import-not-found]
    from agent_histogram import Histogram  # type: ignore[no-redef,import-not-found]
    from agent_sockets import hold_window, in_namespace, receiving_socket, reset  # type: ignore[no-redef,import-not-found]
    from tcpinfo import TCP_CONGESTION, tcp_info  # type: ignore[no-redef,import-not-found]

# The connection's number, first in its data (or its request).
TAG = struct.Struct("<I")
REQUEST_BYTES = 100
SEND_CHUNK = 1 << 20
# Connections of arrivals an agent holds open at once, beyond which an arrival is not
# opened (and counted as unfinished): a bound on sockets and descriptors.
MAX_OPEN = 2000
BACKLOG = 1024
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TIMESPEC = struct.Struct("@qq")


def last_segment_arrival(ancillary: list[tuple[int, int, bytes]], clocks: Clocks) -> int:
    """The kernel's receive time stamp of the last segment a read returned, on the run's
    clock; now if the kernel gave none.

    It is when the transfer completed only if every segment came in order. Once a
    retransmission fills a hole, the read returns the segments queued out of order
    behind it, and the stamp is the last one's: it may have come a round trip before
    the retransmission (``tcp_recv_timestamp`` reports the last skb read, and
    ``tcp_try_coalesce`` gives a merged skb the stamp of what it took in, so even the
    filling segment's own stamp is lost). The caller then takes its own clock instead.
    """
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = TIMESPEC.unpack_from(data)
            return clocks.monotonic_of(sec * 1_000_000_000 + nsec)
    return time.monotonic_ns()


def opened_by_receiver(group: dict[str, Any]) -> bool:
    return group.get("connect") == "receiver"


class Opener:
    """The groups this agent opens the connections of, each at its instant."""

    def __init__(self, groups: list[dict[str, Any]], mine: Callable[[dict[str, Any]], bool]) -> None:
        self.groups = groups
        self.mine = [mine(g) for g in groups]
        self.next = [0] * len(groups)
        self.skipped = [0] * len(groups)
        self.late = Histogram()
        self.open = 0

    def next_due(self) -> Optional[int]:
        """The next instant (ns after the epoch) of a connection this agent opens."""
        due = [
            g["schedule"][k][0] for g, k, m in zip(self.groups, self.next, self.mine) if m and k < len(g["schedule"])
        ]
        return min(due) if due else None

    def due(self, now: int, end: int) -> list[tuple[int, int]]:
        """The connections (group, number) due by ``now`` and before ``end``, each taken
        once; those beyond MAX_OPEN are skipped."""
        out = []
        for g, group in enumerate(self.groups):
            schedule = group["schedule"]
            while self.mine[g] and self.next[g] < len(schedule) and schedule[self.next[g]][0] <= now:
                k, self.next[g] = self.next[g], self.next[g] + 1
                if schedule[k][0] >= end:
                    self.next[g] = len(schedule)
                elif self.open >= MAX_OPEN:
                    self.skipped[g] += 1
                else:
                    self.late.record(now - schedule[k][0])
                    out.append((g, k))
        return out


class Conn:
    """A connection of a group's, as one agent holds it."""

    __slots__ = ("group", "number", "sock", "left", "got", "head", "phase")

    def __init__(self, group: int, number: Optional[int], sock: socket.socket, phase: str) -> None:
        self.group, self.number, self.sock, self.phase = group, number, sock, phase
        self.left = self.got = 0  # bytes the sender has still to write, the receiver has read
        self.head = b""  # the first bytes, those that hold the number


class Ends:
    """One side's ends of every group's connections: those it opens when due, those it
    holds open, and its listeners for those the other side opens."""

    def __init__(
        self, groups: list[dict[str, Any]], sel: selectors.BaseSelector, opens: Callable[[dict[str, Any]], bool]
    ) -> None:
        self.groups, self.sel = groups, sel
        self.opener = Opener(groups, opens)
        self.conns: set[Conn] = set()
        self.listeners: list[socket.socket] = []

    def event(self, conn: Conn) -> None:
        raise NotImplementedError

    def accepted(self, sock: socket.socket, g: int) -> Conn:
        """A connection of group ``g`` that the other side opened, as this side holds it."""
        raise NotImplementedError

    def accept(self, listener: socket.socket, g: int) -> None:
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        sock.setblocking(False)
        self.hold(self.accepted(sock, g), selectors.EVENT_READ)

    def listen(self, ls: socket.socket, g: int) -> None:
        """Accept group ``g``'s connections on the bound ``ls``."""
        ls.listen(BACKLOG)
        ls.setblocking(False)
        self.sel.register(ls, selectors.EVENT_READ, functools.partial(self.accept, ls, g))
        self.listeners.append(ls)

    def next_due(self) -> Optional[int]:
        return self.opener.next_due()

    def hold(self, conn: Conn, events: int) -> None:
        self.conns.add(conn)
        self.opener.open += 1
        self.sel.register(conn.sock, events, functools.partial(self.event, conn))

    def drop(self, conn: Conn) -> None:
        self.sel.unregister(conn.sock)
        reset(conn.sock)
        self.conns.discard(conn)
        self.opener.open -= 1

    def close_all(self) -> None:
        """Every connection still open reset, every listener closed."""
        for conn in list(self.conns):
            self.drop(conn)
        for ls in self.listeners:
            self.sel.unregister(ls)
            ls.close()


class ArrivalSenders(Ends):
    """The sending ends of every group's connections."""

    def __init__(self, groups: list[dict[str, Any]], sel: selectors.BaseSelector) -> None:
        super().__init__(groups, sel, lambda g: not opened_by_receiver(g))
        self.retransmits: list[list[Optional[int]]] = [[None] * len(g["schedule"]) for g in groups]
        self.zeros = memoryview(bytes(SEND_CHUNK))
        for g, group in enumerate(groups):
            if opened_by_receiver(group):
                ls = self.socket(group)
                ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                ls.bind((group["listen_addr"], int(group["port"])))
                self.listen(ls, g)

    @staticmethod
    def socket(group: dict[str, Any]) -> socket.socket:
        with in_namespace(group.get("netns")):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, group["cca"].encode())
        return s

    def open_due(self, now: int, end: int) -> None:
        """Connect those due by ``now`` (ns after the epoch)."""
        for g, k in self.opener.due(now, end):
            group = self.groups[g]
            sock = self.socket(group)
            sock.setblocking(False)
            sock.connect_ex((group["addr"], int(group["port"])))
            conn = Conn(g, k, sock, "connecting")
            conn.left = int(group["schedule"][k][1])
            self.hold(conn, selectors.EVENT_WRITE)

    def accepted(self, sock: socket.socket, g: int) -> Conn:
        """A receiver opened it: its request comes first."""
        return Conn(g, None, sock, "request")

    def event(self, conn: Conn) -> None:
        if conn.phase == "request":
            self.read_request(conn)
        elif conn.phase == "closing":
            self.closed(conn)
        else:
            self.write(conn)

    def read_request(self, conn: Conn) -> None:
        """The request's bytes; once all are in, its number names the size to write."""
        try:
            got = conn.sock.recv(REQUEST_BYTES - len(conn.head))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            got = b""
        if not got:
            self.drop(conn)
            return
        conn.head += got
        if len(conn.head) < REQUEST_BYTES:
            return
        conn.number = TAG.unpack_from(conn.head)[0]
        conn.left = int(self.groups[conn.group]["schedule"][conn.number][1])
        conn.head, conn.phase = b"", "writing"
        self.sel.modify(conn.sock, selectors.EVENT_WRITE, functools.partial(self.event, conn))
        self.write(conn)

    def write(self, conn: Conn) -> None:
        """As much of the size as the socket takes; the first bytes carry the number
        where the sender opened the connection."""
        if conn.phase == "connecting":
            if conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self.drop(conn)
                return
            # Sizes are at least the number's 4 bytes (the plan refuses smaller ones).
            conn.head, conn.phase = TAG.pack(conn.number), "writing"
        chunk = self.zeros[: min(conn.left, SEND_CHUNK) - len(conn.head)]
        try:
            # One write, so that the number does not leave in a segment of its own.
            sent = conn.sock.sendmsg([conn.head, chunk]) if conn.head else conn.sock.send(chunk)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.drop(conn)
            return
        conn.head = conn.head[sent:]
        conn.left -= sent
        if conn.left == 0:
            # The receiver resets the connection once it has every byte.
            conn.phase = "closing"
            self.sel.modify(conn.sock, selectors.EVENT_READ, functools.partial(self.event, conn))

    def closed(self, conn: Conn) -> None:
        """The receiver's reset (or anything else it sends): the connection is done."""
        try:
            conn.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            pass
        self.drop(conn)

    def drop(self, conn: Conn) -> None:
        """Close ``conn``, keeping its retransmissions."""
        if conn.number is not None:
            try:
                self.retransmits[conn.group][conn.number] = tcp_info(conn.sock)["total_retrans"]
            except OSError:
                pass
        super().drop(conn)

    def finish(self) -> list[dict[str, Any]]:
        """Every connection still open closed; each group's figures."""
        self.close_all()
        return [{"retransmits": r, "skipped": s} for r, s in zip(self.retransmits, self.opener.skipped)]


class ArrivalReceivers(Ends):
    """The receiving ends of every group's connections."""

    def __init__(self, groups: list[dict[str, Any]], sel: selectors.BaseSelector, clocks: Clocks) -> None:
        super().__init__(groups, sel, opened_by_receiver)
        self.clocks = clocks
        self.done: list[list[Optional[int]]] = [[None] * len(g["schedule"]) for g in groups]
        self.view = memoryview(bytearray(1 << 18))
        self.t0 = 0
        for g, group in enumerate(groups):
            if not opened_by_receiver(group):
                ls = receiving_socket(group)
                ls.bind((group["addr"], int(group["port"])))
                self.listen(ls, g)

    def start(self, t0: int) -> None:
        self.t0 = t0

    def open_due(self, now: int, end: int) -> None:
        """Connect those due by ``now`` (ns after the epoch), to send their requests."""
        for g, k in self.opener.due(now, end):
            group = self.groups[g]
            sock = receiving_socket(group)
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            sock.setblocking(False)
            sock.connect_ex((group["peer"], int(group["port"])))
            self.hold(Conn(g, k, sock, "connecting"), selectors.EVENT_WRITE)

    def accepted(self, sock: socket.socket, g: int) -> Conn:
        """A sender opened it: its data comes first, time-stamped."""
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        return Conn(g, None, sock, "reading")

    def event(self, conn: Conn) -> None:
        if conn.phase == "connecting":
            self.request(conn)
        else:
            self.read(conn)

    def request(self, conn: Conn) -> None:
        """Connected: send the request naming the connection, then read."""
        assert conn.number is not None
        try:
            if conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                raise ConnectionError
            conn.sock.send(TAG.pack(conn.number) + b"G" * (REQUEST_BYTES - TAG.size))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.drop(conn)
            return
        conn.phase = "reading"
        self.sel.modify(conn.sock, selectors.EVENT_READ, functools.partial(self.event, conn))

    def read(self, conn: Conn) -> None:
        """What arrived; the connection is done when it has every byte."""
        try:
            n, ancillary, _, _ = conn.sock.recvmsg_into([self.view], 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            n, ancillary = 0, []
        if n == 0:
            self.drop(conn)
            return
        group = self.groups[conn.group]
        conn.got += n
        if conn.number is None:
            conn.head += bytes(self.view[: min(n, TAG.size - len(conn.head))])
            if len(conn.head) < TAG.size:
                return
            conn.number = TAG.unpack(conn.head)[0]
        hold_window(conn.sock, int(group["rwnd"]), not group["autotune"])
        if conn.got >= int(group["schedule"][conn.number][1]):
            self.done[conn.group][conn.number] = self.completed(conn.sock, ancillary) - self.t0
            self.drop(conn)

    def completed(self, sock: socket.socket, ancillary: list[tuple[int, int, bytes]]) -> int:
        """When the receiver had every byte, on the run's clock: the last segment's stamp
        where none came out of order, else now (also on kernels before 5.4, whose
        ``TCP_INFO`` lacks the count)."""
        now = time.monotonic_ns()
        try:
            in_order = tcp_info(sock).get("rcv_ooopack") == 0
        except OSError:
            in_order = False
        return last_segment_arrival(ancillary, self.clocks) if in_order else now

    def finish(self) -> list[dict[str, Any]]:
        """Every connection still open reset; each group's figures."""
        self.close_all()
        return [{"done_ns": d, "skipped": s} for d, s in zip(self.done, self.opener.skipped)]
