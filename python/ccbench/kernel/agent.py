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
    from .tcpinfo import SO_MAX_PACING_RATE, TCP_CONGESTION, TCP_WINDOW_CLAMP, bbr_info, tcp_info
else:  # run by path
    from tcpinfo import SO_MAX_PACING_RATE, TCP_CONGESTION, TCP_WINDOW_CLAMP, bbr_info, tcp_info  # type: ignore[no-redef,import-not-found]

RECV_BYTES = 1 << 18
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
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
    flows = cfg["flows"]
    n = len(flows)
    interval, duration = cfg["interval_ns"], cfg["duration_ns"]
    sel = selectors.DefaultSelector()
    for i, flow in enumerate(flows):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if not flow["autotune"]:
            # A fixed window: the buffer locked (SOCK_RCVBUF_LOCK, so tcp_rcv_space_adjust
            # never grows it) at twice rwnd, which gives rwnd at the 50% scaling ratio a
            # socket starts with. The accepted connection inherits lock and clamp.
            ls.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, int(flow["rwnd"]))
        ls.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, int(flow["rwnd"]))
        ls.bind((flow["addr"], cfg["base_port"] + i))
        ls.listen(4)
        ls.setblocking(False)
        sel.register(ls, selectors.EVENT_READ, ("listen", i, -1))
    sel.register(sys.stdin, selectors.EVENT_READ, ("control", -1, -1))
    say("ready")

    # A flow that repeats downloads opens one connection per download, in order: the
    # k-th connection accepted on its port carries download k.
    repeats = [int(flow.get("repeat", 1)) for flow in flows]
    accepted = [0] * n
    got: list[list[int]] = [[] for _ in range(n)]
    got_at: list[list[Optional[int]]] = [[] for _ in range(n)]
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if any(r > 1 for r in repeats) else None
    counts = [0] * n
    completed: list[Optional[int]] = [None] * n
    sizes = [flow.get("size") for flow in flows]
    samples: list[list[Any]] = []
    buf = bytearray(RECV_BYTES)
    view = memoryview(buf)
    t0: Optional[int] = None
    next_sample = end = 0
    setup_deadline = now_ns() + int(SETUP_TIMEOUT_S * 1e9)
    all_sized = all(s is not None for s in sizes)

    while True:
        now = now_ns()
        if t0 is None:
            if now > setup_deadline:
                raise SystemExit("receiver: no 'go' before the set-up timeout")
            timeout = 0.5
        else:
            while next_sample < end and now >= next_sample:
                samples.append([next_sample - t0, now - t0, list(counts)])
                next_sample += interval
            if now >= end or (all_sized and all(c is not None for c in completed)):
                break
            timeout = max(0.0, (min(next_sample, end) - now) / 1e9)
        for key, _ in sel.select(timeout):
            kind, i, k = key.data
            if kind == "listen":
                conn, _ = key.fileobj.accept()  # type: ignore[union-attr]
                conn.setblocking(False)
                sel.register(conn, selectors.EVENT_READ, ("data", i, accepted[i]))
                accepted[i] += 1
                got[i].append(0)
                got_at[i].append(None)
            elif kind == "control":
                line = sys.stdin.readline()
                if not line:
                    raise SystemExit("receiver: control channel closed")
                t0 = read_go(line)
                next_sample, end = t0 + interval, t0 + duration
                sel.unregister(sys.stdin)
            else:
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    n_read = sock.recv_into(view)
                except (BlockingIOError, InterruptedError):
                    continue
                except ConnectionError:
                    n_read = 0
                if n_read == 0:
                    sel.unregister(sock)
                    sock.close()
                    continue
                counts[i] += n_read
                got[i][k] += n_read
                hold_window(sock, int(flows[i]["rwnd"]), not flows[i]["autotune"])
                size = sizes[i]
                if size is None or got_at[i][k] is not None or got[i][k] < size or t0 is None:
                    continue
                got_at[i][k] = now_ns() - t0
                if k + 1 == repeats[i]:
                    completed[i] = got_at[i][k]
                elif notify is not None:
                    # The sender opens the next download `pause` after this instant.
                    try:
                        notify.sendto(f"{i} {k} {got_at[i][k]}".encode(), cfg["done_path"])
                    except OSError:  # the sender has ended
                        pass
    assert t0 is not None
    # The last sample closes the run: at its end, or when the last sized flow completed.
    done = [c for c in completed if c is not None]
    closing = duration if not (all_sized and len(done) == n) else max(done)
    samples.append([closing, now_ns() - t0, list(counts)])
    downloads = [[{"bytes": b, "completed_ns": c} for b, c in zip(got[i], got_at[i])] for i in range(n)]
    write_out(
        cfg["out"],
        {
            "samples": samples,
            "bytes": counts,
            "completed_ns": completed,
            "end_ns": now_ns() - t0,
            "downloads": downloads,
        },
    )
    linger(sel, view)


def hold_window(sock: socket.socket, rwnd: int, fixed: bool) -> None:
    """Keep the advertised window at rwnd (fixed) or at most rwnd (autotuned).

    Linux 6.x recomputes ``window_clamp`` from the buffer whenever it grows the buffer
    (``tcp_rcv_space_adjust``) and whenever the measured payload/truesize ratio changes
    (``tcp_measure_rcv_mss``), so a clamp set once on the listener does not hold: set it
    again after every read. Where the ratio just measured leaves a fixed window's locked
    buffer too small for rwnd, the buffer grows first; it never shrinks (the slack keeps
    a slow reader from overrunning it). Lowering the clamp never moves the right edge
    already advertised back (``__tcp_select_window``)."""
    clamp = sock.getsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP)
    if clamp == rwnd or (clamp < rwnd and not fixed):
        return
    if fixed and 0 < clamp < rwnd:
        rcvbuf = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        # SO_RCVBUF takes half the buffer (the kernel doubles it).
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, -(-rwnd * rcvbuf // (2 * clamp)))
    sock.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, rwnd)


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


def sample_flow(sock: socket.socket, cca: str) -> dict[str, Any]:
    info: dict[str, Any] = tcp_info(sock)
    if cca.startswith("bbr"):
        info["bbr"] = bbr_info(sock)
    return info


def open_connection(flow: dict[str, Any], port: int, wait: bool) -> socket.socket:
    """A connection of ``flow`` to the receiver's ``port``: connected before returning
    when ``wait``, else left connecting (it becomes writable once connected)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, flow["cca"].encode())
    if flow.get("force_pacing"):
        s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("@I", PACING_ANY_RATE))
    if wait:
        s.settimeout(CONNECT_TIMEOUT_S)
        s.connect((flow["addr"], port))
        s.setblocking(False)
    else:
        s.setblocking(False)
        s.connect_ex((flow["addr"], port))
    return s


def send(cfg: dict[str, Any]) -> None:
    set_sysctls(cfg.get("sysctls", {}))
    flows = cfg["flows"]
    n = len(flows)
    interval, duration = cfg["interval_ns"], cfg["duration_ns"]
    repeats = [int(f.get("repeat", 1)) for f in flows]
    ports = [cfg["base_port"] + i for i in range(n)]
    # Each flow's connections in order: one per download. A flow that repeats downloads
    # keeps the next one connected ahead (a spare), so that, as in the simulator, each
    # download starts with its handshake done.
    conns: list[list[socket.socket]] = [[open_connection(f, ports[i], True)] for i, f in enumerate(flows)]
    for i, f in enumerate(flows):
        if repeats[i] > 1:
            conns[i].append(open_connection(f, ports[i], True))
    sel = selectors.DefaultSelector()
    notify: Optional[socket.socket] = None
    if any(r > 1 for r in repeats):
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(cfg["done_path"])
        sel.register(notify, selectors.EVENT_READ, -1)
    say("ready")
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("sender: control channel closed")
    t0 = read_go(line)

    current = [0] * n  # the download under way
    # When each download began (ns after t0); the next one's start, once announced.
    began: list[list[int]] = [[] for _ in range(n)]
    next_start: list[Optional[int]] = [t0 + int(f["start_ns"]) for f in flows]
    remaining: list[Optional[int]] = [f.get("size") for f in flows]
    done: list[Optional[int]] = [None] * n
    draining = [False] * n
    all_sized = all(r is not None for r in remaining)
    payload = memoryview(bytes(SEND_CHUNK))
    samples: list[list[Any]] = []
    next_sample, end = t0 + interval, t0 + duration

    def live(i: int) -> socket.socket:
        return conns[i][current[i]]

    while True:
        now = now_ns()
        for i in range(n):
            start = next_start[i]
            if start is None or now < start:
                continue
            next_start[i] = None
            if began[i]:  # a download after the first: the spare takes over
                current[i] += 1
                remaining[i] = flows[i].get("size")
                draining[i] = False  # the last one's ACKs no longer matter
                if current[i] + 1 < repeats[i]:
                    conns[i].append(open_connection(flows[i], ports[i], False))
            began[i].append(now - t0)
            sel.register(live(i), selectors.EVENT_WRITE, i)
        while next_sample < end and now >= next_sample:
            samples.append([next_sample - t0, now - t0, [sample_flow(live(i), f["cca"]) for i, f in enumerate(flows)]])
            next_sample += interval
        for i in range(n):
            if draining[i]:
                info = tcp_info(live(i))
                if info["unacked"] == 0 and info.get("notsent_bytes", 0) == 0:
                    draining[i] = False
                    if current[i] + 1 == repeats[i]:
                        done[i] = now - t0
        if now >= end or (all_sized and all(d is not None for d in done)):
            break
        wake = min([next_sample, end] + [s for s in next_start if s is not None])
        timeout = max(0.0, (wake - now) / 1e9)
        if any(draining):
            timeout = min(timeout, 0.001)
        for key, _ in sel.select(timeout):
            i = key.data
            if i < 0:  # the receiver has all of download k of flow j, at time t
                assert notify is not None
                j, k, t = (int(x) for x in notify.recv(64).split())
                if k == current[j]:
                    next_start[j] = t0 + t + int(flows[j].get("pause_ns", 0))
                continue
            sock = live(i)
            rest = remaining[i]
            chunk = payload if rest is None else payload[: min(rest, SEND_CHUNK)]
            try:
                sent = sock.send(chunk)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionError:  # the receiver gave up on the flow
                sel.unregister(sock)
                continue
            if rest is not None:
                remaining[i] = rest - sent
                if remaining[i] == 0:
                    sel.unregister(sock)
                    draining[i] = True
    final = [sample_flow(live(i), f["cca"]) for i, f in enumerate(flows)]
    end_ns = now_ns() - t0
    finished = [d for d in done if d is not None]
    closing = duration if not (all_sized and len(finished) == n) else max(finished)
    samples.append([closing, end_ns, final])
    # Every download's connection as it ended (a flow that repeats them only).
    downloads = [
        [{"port": c.getsockname()[1], "start_ns": b, "final": tcp_info(c)} for c, b in zip(conns[i], began[i])]
        if repeats[i] > 1
        else []
        for i in range(n)
    ]
    for c in (c for cs in conns for c in cs):
        # Reset rather than close gracefully: nothing lingers after the run.
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
    write_out(
        cfg["out"],
        {
            "samples": samples,
            "final": final,
            "done_ns": done,
            "end_ns": end_ns,
            "downloads": downloads,
            "tcp_ext": tcp_ext(),
        },
    )


# The namespace's TcpExt counters (/proc/net/netstat) that TCP_INFO has no per-socket
# equivalent of: the undo of spurious reductions.
UNDO_COUNTERS = ("TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo", "TCPLossUndo", "TCPSpuriousRTOs")


def tcp_ext() -> dict[str, int]:
    """The sender namespace's TcpExt counters named in UNDO_COUNTERS (the namespace is
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
