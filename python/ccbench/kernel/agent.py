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
        # The advertised window never exceeds the flow's rwnd (inherited by the accepted
        # connection from the listener).
        ls.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, int(flow["rwnd"]))
        ls.bind((flow["addr"], cfg["base_port"] + i))
        ls.listen(4)
        ls.setblocking(False)
        sel.register(ls, selectors.EVENT_READ, ("listen", i))
    sel.register(sys.stdin, selectors.EVENT_READ, ("control", -1))
    say("ready")

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
            kind, i = key.data
            if kind == "listen":
                conn, _ = key.fileobj.accept()  # type: ignore[union-attr]
                conn.setblocking(False)
                sel.register(conn, selectors.EVENT_READ, ("data", i))
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
                    got = sock.recv_into(view)
                except (BlockingIOError, InterruptedError):
                    continue
                except ConnectionError:
                    got = 0
                if got == 0:
                    sel.unregister(sock)
                    sock.close()
                    continue
                counts[i] += got
                size = sizes[i]
                if size is not None and completed[i] is None and counts[i] >= size and t0 is not None:
                    completed[i] = now_ns() - t0
    assert t0 is not None
    # The last sample closes the run: at its end, or when the last sized flow completed.
    done = [c for c in completed if c is not None]
    closing = duration if not (all_sized and len(done) == n) else max(done)
    samples.append([closing, now_ns() - t0, list(counts)])
    write_out(cfg["out"], {"samples": samples, "bytes": counts, "completed_ns": completed, "end_ns": now_ns() - t0})
    linger(sel, view)


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


def send(cfg: dict[str, Any]) -> None:
    set_sysctls(cfg.get("sysctls", {}))
    flows = cfg["flows"]
    n = len(flows)
    interval, duration = cfg["interval_ns"], cfg["duration_ns"]
    socks: list[socket.socket] = []
    for i, flow in enumerate(flows):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, flow["cca"].encode())
        if flow.get("force_pacing"):
            s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("@I", PACING_ANY_RATE))
        s.settimeout(CONNECT_TIMEOUT_S)
        s.connect((flow["addr"], cfg["base_port"] + i))
        s.setblocking(False)
        socks.append(s)
    say("ready")
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("sender: control channel closed")
    t0 = read_go(line)

    starts = [t0 + int(f["start_ns"]) for f in flows]
    remaining: list[Optional[int]] = [f.get("size") for f in flows]
    started = [False] * n
    done: list[Optional[int]] = [None] * n
    draining = [False] * n
    all_sized = all(r is not None for r in remaining)
    payload = memoryview(bytes(SEND_CHUNK))
    samples: list[list[Any]] = []
    sel = selectors.DefaultSelector()
    next_sample, end = t0 + interval, t0 + duration

    while True:
        now = now_ns()
        for i in range(n):
            if not started[i] and now >= starts[i]:
                started[i] = True
                sel.register(socks[i], selectors.EVENT_WRITE, i)
        while next_sample < end and now >= next_sample:
            samples.append([next_sample - t0, now - t0, [sample_flow(s, f["cca"]) for s, f in zip(socks, flows)]])
            next_sample += interval
        for i in range(n):
            if draining[i]:
                info = tcp_info(socks[i])
                if info["unacked"] == 0 and info.get("notsent_bytes", 0) == 0:
                    draining[i] = False
                    done[i] = now - t0
        if now >= end or (all_sized and all(d is not None for d in done)):
            break
        wake = min([next_sample, end] + [starts[i] for i in range(n) if not started[i]])
        timeout = max(0.0, (wake - now) / 1e9)
        if any(draining):
            timeout = min(timeout, 0.001)
        for key, _ in sel.select(timeout):
            i = key.data
            sock = socks[i]
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
    final = [sample_flow(s, f["cca"]) for s, f in zip(socks, flows)]
    end_ns = now_ns() - t0
    finished = [d for d in done if d is not None]
    closing = duration if not (all_sized and len(finished) == n) else max(finished)
    samples.append([closing, end_ns, final])
    for s in socks:
        # Reset rather than close gracefully: nothing lingers after the run.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    write_out(cfg["out"], {"samples": samples, "final": final, "done_ns": done, "end_ns": end_ns,
                           "tcp_ext": tcp_ext()})


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
