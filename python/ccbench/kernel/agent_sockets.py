"""Sockets of the agents: created in a network namespace of the run's, and a
receiver's window held as the scenario says. Standard library only (the agents run by
path)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import struct
from typing import Any, Iterator, Optional

if __package__:
    from .tcpinfo import TCP_CONGESTION, TCP_WINDOW_CLAMP
else:  # run by path
    from tcpinfo import TCP_CONGESTION, TCP_WINDOW_CLAMP  # type: ignore[no-redef,import-not-found]

SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
# setns(2)'s type of a network namespace (CLONE_NEWNET, <sched.h>).
CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    """Move this thread into the network namespace open at ``fd``."""
    if hasattr(os, "setns"):  # Python 3.12+
        os.setns(fd, CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def in_namespace(path: Optional[str]) -> Iterator[None]:
    """Inside, sockets are created in the network namespace at ``path`` (none: the
    agent's own). A socket belongs to the namespace it was created in (``sock_net``)
    for good: its routes, sysctls and addresses are that namespace's."""
    if not path:
        yield
        return
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        there = os.open(path, os.O_RDONLY)
        try:
            _setns(there)
        finally:
            os.close(there)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)


def receiving_socket(flow: dict[str, Any]) -> socket.socket:
    """A socket that receives ``flow``'s data (a listener, or a receiver's own
    connection), its window and algorithm set as the scenario says."""
    with in_namespace(flow.get("netns")):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if not flow["autotune"]:
        # A fixed window: the buffer locked (SOCK_RCVBUF_LOCK, so tcp_rcv_space_adjust
        # never grows it) at twice rwnd, which gives rwnd at the 50% scaling ratio a
        # socket starts with. The accepted connection inherits lock and clamp.
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, int(flow["rwnd"]))
    s.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, int(flow["rwnd"]))
    if flow.get("cca"):
        # An algorithm that needs ECN on both ends (DCTCP): the accepted connection
        # inherits it, and so answers an ECN-capable SYN and echoes as DCTCP does.
        # A kernel without it keeps its default; the sender then runs without ECN,
        # which the run's notes say (results.py, _fallback_notes).
        try:
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, flow["cca"].encode())
        except OSError:
            pass
    return s


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


def reset(sock: socket.socket) -> None:
    """Close ``sock`` with a reset (``SO_LINGER`` 0): nothing lingers after it, no
    TIME_WAIT on either end whose port a later connection might meet."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
