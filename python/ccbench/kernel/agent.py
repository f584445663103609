"""Traffic agents of the kernel engine, run inside the run's network namespaces.

    python3 agent.py sysctl KEY=VALUE...      set sysctls of the current namespace
    python3 agent.py receive CONFIG.json      listen, count bytes per flow per interval
    python3 agent.py send CONFIG.json         connect, send, sample TCP_INFO per interval

Standard library only, and runnable by path (``ip netns exec NS python3 agent.py ...``)
so that it starts fast without importing the rest of the package. ``receive`` and
``send`` print ``ready`` once listening (or connected), then wait for ``go T0`` on
stdin, where ``T0`` is the run's epoch in ``CLOCK_MONOTONIC`` nanoseconds, a clock
shared by every namespace. All times written are nanoseconds after ``T0``. Each agent
samples at ``T0`` + k x interval before the end and once more when the run ends (the
last sample, as in the simulator), writes its results as JSON to the ``out`` path of
its configuration, and exits.

A flow whose ``netns`` names a network namespace (a file of ``ip netns``) has its end
of this agent's kind there rather than in the agent's own: a flow going up has its
sender in the receiver's namespace and its receiver in the sender's. The agent creates
that flow's sockets inside the namespace (``setns``) and keeps them from then on, so
one sending agent holds every flow's sender and one receiving agent every receiver,
and their results list the flows in the scenario's order.

The configuration's ``udp`` and ``arrivals`` lists (optional) are the UDP flows and the
groups of arrivals: the sending agent holds their sources and sending ends
(``agent_udp``, ``agent_arrivals``), the receiving agent their sinks and receiving
ends, each created in its ``netns`` as a flow's. Their instants are the simulator's;
an agent that has any waits for them to the microsecond (``agent_clock``) rather than
in whole milliseconds, and its results add ``udp``, ``arrivals`` and ``late_us`` (how
late it sent or opened them).
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import struct
import sys
import time
from typing import Any, Optional

if __package__:
    from .agent_arrivals import ArrivalReceivers, ArrivalSenders
    from .agent_clock import Clocks, precise_timers, select_until
    from .agent_sockets import SO_SNDBUFFORCE, hold_window, in_namespace, receiving_socket
    from .agent_udp import UdpSinks, UdpSources
    from .tcpinfo import SO_MAX_PACING_RATE, TCP_CONGESTION, cc_info, congestion_control, tcp_info
else:  # run by path
    from agent_arrivals import ArrivalReceivers, ArrivalSenders  # type: ignore[no-redef,import-not-found]
    from agent_clock import Clocks, precise_timers, select_until  # type: ignore[no-redef,import-not-found]
    from agent_sockets import SO_SNDBUFFORCE, hold_window, in_namespace, receiving_socket  # type: ignore[no-redef,import-not-found]
    from agent_udp import UdpSinks, UdpSources  # type: ignore[no-redef,import-not-found]
    from tcpinfo import SO_MAX_PACING_RATE, TCP_CONGESTION, cc_info, congestion_control, tcp_info  # type: ignore[no-redef,import-not-found]

RECV_BYTES = 1 << 18
TCP_FASTOPEN = getattr(socket, "TCP_FASTOPEN", 23)
TCP_FASTOPEN_CONNECT = getattr(socket, "TCP_FASTOPEN_CONNECT", 30)
# Fast Open requests a listener holds before accept() (its TCP_FASTOPEN queue length).
FASTOPEN_QLEN = 16
# The request a receiver that opens its connection sends for its download (as the
# simulator's `tcp::handshake::REQUEST_BYTES`).
REQUEST = b"G" * 100
SEND_CHUNK = 1 << 20
CONNECT_TIMEOUT_S = 10.0
# The receiver waits this long for `go`, and for its connections, before giving up.
SETUP_TIMEOUT_S = 30.0
# After the run the receiver keeps its connections open (reading and discarding) until
# the sender is done, at most this long, so the sender never meets a reset mid-run.
LINGER_S = 5.0
# A paced flow of an algorithm that does not pace by itself: any cap at all turns on the
# kernel's internal pacing (SK_PACING_NEEDED); this one, 2^32 - 2 bytes/s, never binds.
PACING_ANY_RATE = 0xFFFFFFFE


def now_ns() -> int:
    return time.monotonic_ns()


def say(word: str) -> None:
    sys.stdout.write(word + "\n")
    sys.stdout.flush()


def set_sysctls(pairs: dict[str, str]) -> None:
    for key, value in pairs.items():
        path = "/proc/sys/" + key.replace(".", "/")
        if key.startswith("net.ipv6.") and not os.path.exists("/proc/sys/net/ipv6"):
            continue
        with open(path, "w") as f:
            f.write(str(value))


def read_go(line: str) -> int:
    words = line.split()
    if len(words) != 2 or words[0] != "go":
        raise SystemExit(f"agent: expected 'go T0', got {line!r}")
    return int(words[1])


def write_out(path: str, result: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, path)


# The receiver


def receive(cfg: dict[str, Any]) -> None:
    set_sysctls(cfg.get("sysctls", {}))
    sel = listen(cfg)
    receiver = Receiver(cfg, sel)
    say("ready")
    receiver.run()
    receiver.finish()
    linger(sel, receiver.view)


def opened_by_receiver(flow: dict[str, Any]) -> bool:
    """The flow's receiver opens each download's connection (``connect = "receiver"``)."""
    return flow.get("connect") == "receiver"


def listen(cfg: dict[str, Any]) -> selectors.BaseSelector:
    """A listening socket per flow (on the flow's port: base_port + its index) but for
    flows whose receiver opens the connections, and stdin for ``go``, registered in a
    new selector."""
    sel = selectors.DefaultSelector()
    for i, flow in enumerate(cfg["flows"]):
        if opened_by_receiver(flow):
            continue
        ls = receiving_socket(flow)
        if flow.get("fastopen"):
            ls.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN, FASTOPEN_QLEN)
        ls.bind((flow["addr"], cfg["base_port"] + i))
        ls.listen(4)
        ls.setblocking(False)
        sel.register(ls, selectors.EVENT_READ, ("listen", i, -1))
    sel.register(sys.stdin, selectors.EVENT_READ, ("control", -1, -1))
    return sel


class Receiver:
    """The receiving end of every flow: accepts connections, reads and counts their
    bytes, samples the counts, and tells the sender when a download is complete.

    A flow that repeats downloads opens one connection per download, in order: the k-th
    connection accepted on its port carries download k. A flow whose receiver opens the
    connections connects for each download when it is due, sends its request, and opens
    the next one ``pause`` after the last is complete."""

    def __init__(self, cfg: dict[str, Any], sel: selectors.BaseSelector) -> None:
        self.cfg, self.sel = cfg, sel
        self.flows = flows = cfg["flows"]
        n = len(flows)
        self.interval, self.duration = cfg["interval_ns"], cfg["duration_ns"]
        self.repeats = [int(flow.get("repeat", 1)) for flow in flows]
        self.accepted = [0] * n
        self.got: list[list[int]] = [[] for _ in range(n)]  # bytes per download
        self.got_at: list[list[Optional[int]]] = [[] for _ in range(n)]  # when each was complete
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if any(r > 1 for r in self.repeats) else None
        self.counts = [0] * n
        self.completed: list[Optional[int]] = [None] * n
        self.sizes = [flow.get("size") for flow in flows]
        self.samples: list[list[Any]] = []
        self.view = memoryview(bytearray(RECV_BYTES))
        self.t0: Optional[int] = None
        self.next_sample = self.end = 0
        self.setup_deadline = now_ns() + int(SETUP_TIMEOUT_S * 1e9)
        # Arrivals come until the run's end, as in the simulator.
        self.all_sized = bool(flows) and all(s is not None for s in self.sizes) and not cfg.get("arrivals")
        # Flows whose receiver opens the connections: when each download began, and when
        # the next one is due.
        self.began: list[list[int]] = [[] for _ in range(n)]
        self.next_connect: list[Optional[int]] = [None] * n
        # The UDP flows' sinks and the arrivals' receiving ends, listening from here on.
        self.clocks = Clocks()
        self.udp = UdpSinks(cfg.get("udp") or [], sel)
        self.arrivals = ArrivalReceivers(cfg.get("arrivals") or [], sel, self.clocks)
        if cfg.get("arrivals"):
            precise_timers()

    def run(self) -> None:
        """Until the run ends, or every flow is sized and complete."""
        while True:
            now = now_ns()
            self.connect_due(now)
            if self.t0 is not None:
                self.arrivals.open_due(now - self.t0, self.duration)
            timeout = self.sample(now)
            if timeout is None:
                break
            due = [t for t in self.next_connect if t is not None]
            if due:
                timeout = min(timeout, max(0.0, (min(due) - now) / 1e9))
            for key, _ in self.wait(now, timeout):
                if callable(key.data):  # a UDP sink's or a connection of arrivals'
                    key.data()
                    continue
                kind, i, k = key.data
                if kind == "listen":
                    self.accept(key.fileobj, i)  # type: ignore[arg-type]
                elif kind == "control":
                    self.go()
                elif kind == "request":
                    self.request(key.fileobj, i, k)  # type: ignore[arg-type]
                else:
                    self.read(key.fileobj, i, k)  # type: ignore[arg-type]

    def wait(self, now: int, timeout: float) -> list[tuple[selectors.SelectorKey, int]]:
        """The selector's events within ``timeout`` s, waking to the microsecond when a
        connection of arrivals is due."""
        due = self.arrivals.next_due() if self.t0 is not None else None
        if due is None:
            return self.sel.select(timeout)
        assert self.t0 is not None
        return select_until(self.sel, min(now + int(timeout * 1e9), self.t0 + due))

    def connect_due(self, now: int) -> None:
        """The downloads due by ``now`` of flows whose receiver opens the connections:
        connect (non-blocking), and send the request once connected, or at once with
        Fast Open, whose first write goes in the SYN when a cookie is cached."""
        for i, due in enumerate(self.next_connect):
            if due is None or now < due or self.t0 is None:
                continue
            self.next_connect[i] = None
            flow, k = self.flows[i], len(self.got[i])
            sock = receiving_socket(flow)
            if flow.get("fastopen"):
                sock.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1)
            sock.setblocking(False)
            self.began[i].append(now - self.t0)
            self.got[i].append(0)
            self.got_at[i].append(None)
            sock.connect_ex((flow["peer"], self.cfg["base_port"] + i))
            self.sel.register(sock, selectors.EVENT_WRITE, ("request", i, k))
            if flow.get("fastopen"):
                self.request(sock, i, k)

    def request(self, sock: socket.socket, i: int, k: int) -> None:
        """Send download ``k``'s request on a connection that may take it, then read."""
        try:
            sock.send(REQUEST)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionError:
            self.sel.unregister(sock)
            return
        self.sel.modify(sock, selectors.EVENT_READ, ("data", i, k))

    def sample(self, now: int) -> Optional[float]:
        """Take the samples due by ``now``; how long to wait for the next (in seconds),
        or None when the run is over."""
        if self.t0 is None:
            if now > self.setup_deadline:
                raise SystemExit("receiver: no 'go' before the set-up timeout")
            return 0.5
        while self.next_sample < self.end and now >= self.next_sample:
            self.samples.append([self.next_sample - self.t0, now - self.t0, list(self.counts)])
            self.next_sample += self.interval
        if now >= self.end or (self.all_sized and all(c is not None for c in self.completed)):
            return None
        return max(0.0, (min(self.next_sample, self.end) - now) / 1e9)

    def accept(self, listener: socket.socket, i: int) -> None:
        """Flow ``i``'s next connection: its next download."""
        conn, _ = listener.accept()
        conn.setblocking(False)
        self.sel.register(conn, selectors.EVENT_READ, ("data", i, self.accepted[i]))
        self.accepted[i] += 1
        self.got[i].append(0)
        self.got_at[i].append(None)

    def go(self) -> None:
        """``go T0`` on stdin: the run's epoch; the samples are due from T0 + interval."""
        line = sys.stdin.readline()
        if not line:
            raise SystemExit("receiver: control channel closed")
        self.t0 = t0 = read_go(line)
        self.next_sample, self.end = t0 + self.interval, t0 + self.duration
        self.sel.unregister(sys.stdin)
        self.udp.ends_at(self.clocks.realtime_of(self.end))
        self.arrivals.start(t0)
        for i, flow in enumerate(self.flows):
            if opened_by_receiver(flow):
                self.next_connect[i] = t0 + int(flow.get("start_ns", 0))

    def read(self, sock: socket.socket, i: int, k: int) -> None:
        """What arrived on download ``k`` of flow ``i``."""
        try:
            n_read = sock.recv_into(self.view)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionError:
            n_read = 0
        if n_read == 0:
            self.sel.unregister(sock)
            sock.close()
            return
        self.counts[i] += n_read
        self.got[i][k] += n_read
        hold_window(sock, int(self.flows[i]["rwnd"]), not self.flows[i]["autotune"])
        size = self.sizes[i]
        if size is None or self.got_at[i][k] is not None or self.got[i][k] < size or self.t0 is None:
            return
        self.got_at[i][k] = now_ns() - self.t0
        if k + 1 == self.repeats[i]:
            self.completed[i] = self.got_at[i][k]
        elif opened_by_receiver(self.flows[i]):
            self.next_connect[i] = self.t0 + self.got_at[i][k] + int(self.flows[i].get("pause_ns", 0))
        elif self.notify is not None:
            # The sender opens the next download `pause` after this instant.
            try:
                self.notify.sendto(f"{i} {k} {self.got_at[i][k]}".encode(), self.cfg["done_path"])
            except OSError:  # the sender has ended
                pass

    def finish(self) -> None:
        """The last sample, and the results written to the configuration's ``out``."""
        t0 = self.t0
        assert t0 is not None
        # The last sample closes the run: at its end, or when the last sized flow completed.
        done = [c for c in self.completed if c is not None]
        closing = self.duration if not (self.all_sized and len(done) == len(self.flows)) else max(done)
        self.samples.append([closing, now_ns() - t0, list(self.counts)])
        downloads = [
            [
                {"bytes": b, "completed_ns": c, **({"start_ns": began[k]} if k < len(began) else {})}
                for k, (b, c) in enumerate(zip(got, got_at))
            ]
            for got, got_at, began in zip(self.got, self.got_at, self.began)
        ]
        udp, arrivals = self.udp.result(), self.arrivals.finish()
        self.udp.close()
        write_out(
            self.cfg["out"],
            {
                "samples": self.samples,
                "bytes": self.counts,
                "completed_ns": self.completed,
                "end_ns": now_ns() - t0,
                "downloads": downloads,
                "udp": udp,
                "arrivals": arrivals,
                "late_us": {"arrivals": self.arrivals.opener.late.stats(1e3)},
            },
        )


def linger(sel: selectors.BaseSelector, view: memoryview) -> None:
    """Read and discard until the peer has closed every connection, stdin closes (the
    run says the sender is done), or LINGER_S passes."""
    sel.register(sys.stdin, selectors.EVENT_READ, ("control", -1))
    deadline = now_ns() + int(LINGER_S * 1e9)
    while now_ns() < deadline and any(k.data[0] == "data" for k in sel.get_map().values()):
        for key, _ in sel.select(0.1):
            if key.data[0] == "control":
                if not sys.stdin.readline():
                    return
                continue
            if key.data[0] != "data":
                continue
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            try:
                if sock.recv_into(view) > 0:
                    continue
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionError:
                pass
            sel.unregister(sock)
            sock.close()


# The sender


def sample_flow(sock: socket.socket, flow: dict[str, Any]) -> dict[str, Any]:
    """``TCP_INFO``, and under its kind the ``TCP_CC_INFO`` structure the flow's plan names."""
    info: dict[str, Any] = tcp_info(sock)
    kind = flow.get("cc_info")
    if kind:
        info[kind] = cc_info(sock, kind)
    return info


def new_socket(flow: dict[str, Any]) -> socket.socket:
    """A socket of ``flow``, set up as the scenario says and not yet connected."""
    with in_namespace(flow.get("netns")):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, flow["cca"].encode())
    if flow.get("sndbuf"):
        # SO_SNDBUFFORCE: as root, past net.core.wmem_max, as the simulator takes it.
        s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, int(flow["sndbuf"]))
    if flow.get("force_pacing"):
        s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("@I", PACING_ANY_RATE))
    if flow.get("fastopen"):
        # connect() waits for the first write, whose data goes in the SYN when a cookie
        # for the server is cached; without one, the SYN asks for it.
        s.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1)
    return s


def open_connection(flow: dict[str, Any], port: int, wait: bool) -> socket.socket:
    """A connection of ``flow`` to the receiver's ``port``: connected before returning
    when ``wait``, else left connecting (it becomes writable once connected)."""
    s = new_socket(flow)
    if wait:
        s.settimeout(CONNECT_TIMEOUT_S)
        s.connect((flow["addr"], port))
        s.setblocking(False)
    else:
        s.setblocking(False)
        s.connect_ex((flow["addr"], port))
    return s


def connects_when_due(flow: dict[str, Any]) -> bool:
    """The flow's sender calls connect() when each download is due (``connect = "sender"``)."""
    return flow.get("connect") == "sender"


def connection_port(sock: socket.socket, flow: dict[str, Any]) -> int:
    """The port that tells a flow's connections apart, as the emulator keys them: the
    sender's, or where the receiver opens them, the receiver's."""
    try:
        return sock.getpeername()[1] if opened_by_receiver(flow) else sock.getsockname()[1]
    except OSError:
        return 0


def send(cfg: dict[str, Any]) -> None:
    set_sysctls(cfg.get("sysctls", {}))
    sender = Sender(cfg)
    say("ready")
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("sender: control channel closed")
    sender.start(read_go(line))
    sender.run()
    sender.finish()


class Sender:
    """The sending end of every flow: connects, writes as fast as each socket takes
    (up to a sized flow's size), samples TCP_INFO, and opens each flow's downloads in
    turn when the receiver says the previous one is complete."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.flows = flows = cfg["flows"]
        self.interval, self.duration = cfg["interval_ns"], cfg["duration_ns"]
        self.repeats = [int(f.get("repeat", 1)) for f in flows]
        self.ports = [cfg["base_port"] + i for i in range(len(flows))]
        # Each flow's connections in order: one per download. A flow that repeats
        # downloads keeps the next one connected ahead (a spare), so that, as in the
        # simulator, each download starts with its handshake done.
        # A flow that connects when its download is due has a socket not yet connected,
        # as has one whose receiver opens the connections until it accepts the first.
        self.conns = [
            [
                new_socket(f)
                if connects_when_due(f) or opened_by_receiver(f)
                else open_connection(f, self.ports[i], True)
            ]
            for i, f in enumerate(flows)
        ]
        for i, f in enumerate(flows):
            if self.repeats[i] > 1 and not (connects_when_due(f) or opened_by_receiver(f)):
                self.conns[i].append(open_connection(f, self.ports[i], True))
        self.sel = selectors.DefaultSelector()
        # Where a receiver opens the connections, the sender listens on the flow's port.
        self.requested = [0] * len(flows)  # request bytes read on the live connection
        for i, f in enumerate(flows):
            if opened_by_receiver(f):
                ls = new_socket(f)
                if f.get("fastopen"):
                    ls.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN, FASTOPEN_QLEN)
                ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                ls.bind((f["listen_addr"], self.ports[i]))
                ls.listen(4)
                ls.setblocking(False)
                self.sel.register(ls, selectors.EVENT_READ, ("accept", i))
        self.notify: Optional[socket.socket] = None
        if any(r > 1 for r in self.repeats):
            self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.notify.bind(cfg["done_path"])
            self.sel.register(self.notify, selectors.EVENT_READ, -1)
        # The UDP flows' sources and the arrivals' sending ends, sending on the clock.
        self.udp = UdpSources(cfg.get("udp") or [])
        self.arrivals = ArrivalSenders(cfg.get("arrivals") or [], self.sel)
        self.timed = bool(cfg.get("udp") or cfg.get("arrivals"))
        if self.timed:
            precise_timers()

    def start(self, t0: int) -> None:
        """``go T0``: each flow's first download is due at T0 + its start."""
        flows, n = self.flows, len(self.flows)
        self.t0 = t0
        self.current = [0] * n  # the download under way
        # When each download began (ns after t0); the next one's start, once announced.
        self.began: list[list[int]] = [[] for _ in range(n)]
        # A flow whose receiver opens the connections starts when one arrives.
        self.next_start: list[Optional[int]] = [
            None if opened_by_receiver(f) else t0 + int(f["start_ns"]) for f in flows
        ]
        self.remaining: list[Optional[int]] = [f.get("size") for f in flows]
        self.done: list[Optional[int]] = [None] * n
        self.draining = [False] * n
        # Arrivals come until the run's end, as in the simulator.
        self.all_sized = bool(flows) and all(r is not None for r in self.remaining) and not self.cfg.get("arrivals")
        self.payload = memoryview(bytes(SEND_CHUNK))
        self.samples: list[list[Any]] = []
        self.next_sample, self.end = t0 + self.interval, t0 + self.duration

    def live(self, i: int) -> socket.socket:
        return self.conns[i][self.current[i]]

    def run(self) -> None:
        """Until the run ends, or every flow is sized and its last download acknowledged."""
        while True:
            now = now_ns()
            self.start_downloads(now)
            self.udp.send_due(now - self.t0, self.duration)
            self.arrivals.open_due(now - self.t0, self.duration)
            while self.next_sample < self.end and now >= self.next_sample:
                self.samples.append([self.next_sample - self.t0, now - self.t0, self.sample_flows()])
                self.next_sample += self.interval
            self.check_drained(now)
            if now >= self.end or (self.all_sized and all(d is not None for d in self.done)):
                break
            for key, _ in self.wait(now):
                if callable(key.data):  # a connection of arrivals'
                    key.data()
                elif isinstance(key.data, tuple):
                    kind, i = key.data
                    self.accept(key.fileobj, i) if kind == "accept" else self.read_request(i)  # type: ignore[arg-type]
                elif key.data < 0:
                    self.next_announced()
                else:
                    self.write(key.data)

    def accept(self, listener: socket.socket, i: int) -> None:
        """A receiver opens download k of flow ``i``: the k-th connection accepted (with
        Fast Open, before the handshake's last ACK, its request already in)."""
        conn, _ = listener.accept()
        conn.setblocking(False)
        if self.began[i]:
            self.conns[i].append(conn)
            self.current[i] += 1
        else:
            self.conns[i][0].close()  # the placeholder sampled until now
            self.conns[i][0] = conn
        self.began[i].append(now_ns() - self.t0)
        self.remaining[i] = self.flows[i].get("size")
        self.draining[i] = False
        self.requested[i] = 0
        self.sel.register(conn, selectors.EVENT_READ, ("request", i))
        self.read_request(i)

    def read_request(self, i: int) -> None:
        """Read flow ``i``'s request; once it is all in, write the response."""
        sock = self.live(i)
        try:
            got = sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionError:
            got = b""
        if not got:
            self.sel.unregister(sock)
            return
        self.requested[i] += len(got)
        if self.requested[i] >= len(REQUEST):
            self.sel.modify(sock, selectors.EVENT_WRITE, i)
            self.write(i)

    def sample_flows(self) -> list[dict[str, Any]]:
        return [sample_flow(self.live(i), f) for i, f in enumerate(self.flows)]

    def start_downloads(self, now: int) -> None:
        """The downloads due by ``now`` begin: on their spare connection after the first."""
        for i in range(len(self.flows)):
            start = self.next_start[i]
            if start is None or now < start:
                continue
            self.next_start[i] = None
            flow = self.flows[i]
            if self.began[i]:  # a download after the first: the spare takes over
                self.current[i] += 1
                self.remaining[i] = flow.get("size")
                self.draining[i] = False  # the last one's ACKs no longer matter
                if connects_when_due(flow):
                    self.conns[i].append(new_socket(flow))
                elif self.current[i] + 1 < self.repeats[i]:
                    self.conns[i].append(open_connection(flow, self.ports[i], False))
            self.began[i].append(now - self.t0)
            sock = self.live(i)
            if connects_when_due(flow):
                sock.setblocking(False)
                sock.connect_ex((flow["addr"], self.ports[i]))
            self.sel.register(sock, selectors.EVENT_WRITE, i)
            if flow.get("fastopen"):
                # A deferred connect() is not writable yet: the first write opens it.
                self.write(i)

    def check_drained(self, now: int) -> None:
        """A sized download is done when all of it is acknowledged; the flow is done at
        its last download's."""
        for i in range(len(self.flows)):
            if self.draining[i]:
                info = tcp_info(self.live(i))
                if info["unacked"] == 0 and info.get("notsent_bytes", 0) == 0:
                    self.draining[i] = False
                    if self.current[i] + 1 == self.repeats[i]:
                        self.done[i] = now - self.t0

    def wait(self, now: int) -> list[tuple[selectors.SelectorKey, int]]:
        """The selector's events until the next thing due; to the microsecond when a UDP
        datagram or a connection of arrivals is due."""
        if not self.timed:
            return self.sel.select(self.timeout(now))
        due = [t for t in (self.udp.next_due(), self.arrivals.next_due()) if t is not None]
        wake = now + int(self.timeout(now) * 1e9)
        return select_until(self.sel, min([wake] + [self.t0 + t for t in due]))

    def timeout(self, now: int) -> float:
        """How long to wait: until the next sample, download or the end; while a flow
        drains, 1 ms (no event says its data was acknowledged)."""
        wake = min([self.next_sample, self.end] + [s for s in self.next_start if s is not None])
        timeout = max(0.0, (wake - now) / 1e9)
        if any(self.draining):
            timeout = min(timeout, 0.001)
        return timeout

    def next_announced(self) -> None:
        """The receiver has all of download k of flow j, at time t: the next one is due
        the flow's pause after."""
        assert self.notify is not None
        j, k, t = (int(x) for x in self.notify.recv(64).split())
        if k == self.current[j]:
            self.next_start[j] = self.t0 + t + int(self.flows[j].get("pause_ns", 0))

    def write(self, i: int) -> None:
        """As much as flow ``i``'s socket takes, up to what remains of a sized download."""
        sock = self.live(i)
        rest = self.remaining[i]
        chunk = self.payload if rest is None else self.payload[: min(rest, SEND_CHUNK)]
        try:
            sent = sock.send(chunk)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionError:  # the receiver gave up on the flow
            self.sel.unregister(sock)
            return
        if rest is not None:
            self.remaining[i] = rest - sent
            if self.remaining[i] == 0:
                self.sel.unregister(sock)
                self.draining[i] = True

    def finish(self) -> None:
        """The last sample, every connection reset, and the results written to the
        configuration's ``out``."""
        final = self.sample_flows()
        # The algorithm each flow's socket ran, as the kernel names it.
        algorithms = [congestion_control(self.live(i)) for i in range(len(self.flows))]
        end_ns = now_ns() - self.t0
        finished = [d for d in self.done if d is not None]
        closing = self.duration if not (self.all_sized and len(finished) == len(self.flows)) else max(finished)
        self.samples.append([closing, end_ns, final])
        # Every download's connection as it ended (a flow that repeats them only).
        downloads = [
            [{"port": connection_port(c, f), "start_ns": b, "final": tcp_info(c)} for c, b in zip(conns, began)]
            if repeats > 1
            else []
            for conns, began, repeats, f in zip(self.conns, self.began, self.repeats, self.flows)
        ]
        for c in (c for cs in self.conns for c in cs):
            # Reset rather than close gracefully: nothing lingers after the run.
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
        arrivals = self.arrivals.finish()
        self.udp.close()
        late = {"udp": self.udp.late.stats(1e3), "arrivals": self.arrivals.opener.late.stats(1e3)}
        write_out(
            self.cfg["out"],
            {
                "samples": self.samples,
                "final": final,
                "done_ns": self.done,
                "end_ns": end_ns,
                "downloads": downloads,
                "tcp_ext": tcp_ext_of({f["netns"] for f in self.flows if f.get("netns")}),
                "cca": algorithms,
                "udp": self.udp.result(),
                "arrivals": arrivals,
                "late_us": late,
            },
        )


# The namespace's TcpExt counters (/proc/net/netstat) that TCP_INFO has no per-socket
# equivalent of: the undo of spurious reductions.
UNDO_COUNTERS = ("TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo", "TCPLossUndo", "TCPSpuriousRTOs")


def tcp_ext_of(others: set[str]) -> dict[str, int]:
    """The TcpExt counters named in UNDO_COUNTERS, summed over the agent's namespace and
    ``others`` (where flows going the other way have their senders)."""
    totals = tcp_ext()
    for path in sorted(others):
        with in_namespace(path):
            for key, value in tcp_ext().items():
                totals[key] = totals.get(key, 0) + value
    return totals


def tcp_ext() -> dict[str, int]:
    """The current namespace's TcpExt counters named in UNDO_COUNTERS (the namespace is
    the run's own, so they count only its flows)."""
    try:
        lines = open("/proc/net/netstat").read().splitlines()
    except OSError:
        return {}
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:]))
            return {k: int(table[k]) for k in UNDO_COUNTERS if k in table}
    return {}


def main(argv: list[str]) -> None:
    if len(argv) < 1:
        raise SystemExit(__doc__)
    cmd, args = argv[0], argv[1:]
    if cmd == "sysctl":
        set_sysctls(dict(a.split("=", 1) for a in args))
        return
    if cmd in ("receive", "send") and len(args) == 1:
        with open(args[0]) as f:
            cfg = json.load(f)
        (receive if cmd == "receive" else send)(cfg)
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
