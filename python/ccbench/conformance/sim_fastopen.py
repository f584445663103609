"""TCP Fast Open (RFC 7413) in a script's run on the simulator.

The client: ``setsockopt(TCP_FASTOPEN_CONNECT)`` makes connect() look up the server's
cookie (`tcp_fastopen_defer_connect`). Without one the SYN leaves at once with an empty
Fast Open option, a cookie request; with one connect() returns 0 and the first write
sends the SYN with the cookie and the first data (`tcp_send_syn_data`), as
``sendto(..., MSG_FASTOPEN, ...)`` does in one call. The SYN's data is the MSS kept with
the cookie less the full option space, at most a page: the simulator's
``syn_data_bytes``. The SYN-ACK's cookie and MSS are kept for the script's peer (the
destination's TCP metrics, `tcp_fastopen_cache_set`, only if our SYN carried the
option). A SYN-ACK that acknowledges the data leaves the sender's numbering to start
after it (``Run.syn_data``); one that acknowledges the SYN only has the data sent again
at once (`tcp_rcv_fastopen_synack`: marked lost, `tcp_non_congestion_loss_retransmit`;
the model sends it as new data, without the Loss state, which the ACK of it ends).

The server: a listener with ``setsockopt(TCP_FASTOPEN)`` (or the sysctl's
TFO_SERVER_WO_SOCKOPT1) and the sysctl's server bit takes the data of a SYN without a
cookie when the sysctl has TFO_SERVER_COOKIE_NOT_REQD (`tcp_try_fastopen`): the SYN-ACK
acknowledges it, the child is there for accept() before the handshake's third ACK, and
the data waits to be read. Cookies are checked against ``net.ipv4.tcp_fastopen_key``
with SipHash, which the driver does not compute: a SYN with data and a cookie to a
server that requires one is unsupported.

A script may open a second connection once the first has closed (its FIN and the peer's
exchanged), as a client's first connection fetches the cookie the second one uses: the
connection's state starts again, the cookie cache and the script's settings stay.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional

from .script import Event, Packet, Syscall
from .sim_state import TS_OPTION_BYTES, Failed, Run, Unsupported
from .verdict import Mismatch

# net.ipv4.tcp_fastopen's bits (include/net/tcp.h).
TFO_CLIENT_ENABLE = 0x1
TFO_SERVER_ENABLE = 0x2
TFO_CLIENT_NO_COOKIE = 0x4
TFO_SERVER_COOKIE_NOT_REQD = 0x200
TFO_SERVER_WO_SOCKOPT1 = 0x400
#: The route's MSS on the tun device (MTU 1500): `__tcp_mtu_to_mss` before the clamp.
PATH_MSS = 1460


@dataclass
class Cache:
    """What the client keeps of the script's peer (`tcpm_fastopen`)."""

    cookie: str = ""
    mss: int = 0


@dataclass
class Conn:
    """Fast Open on the current connection."""

    connect: bool = False  # TCP_FASTOPEN_CONNECT
    deferred: bool = False  # connect() returned without a SYN (a cookie is cached)
    syn_sent: bool = False
    syn_option: Optional[str] = None  # the FO option our SYN carries: "" (request), a cookie
    syn_data: int = 0  # bytes our SYN carries
    # A blocking write whose rest waits for the handshake: its event, the bytes after
    # the SYN's, and the end of its time range.
    waiting: Optional[tuple[Event, int, Optional[int]]] = None
    listener_qlen: int = 0  # TCP_FASTOPEN on the listener
    syn_taken: int = 0  # passive: the peer's SYN data we took


@dataclass
class State:
    cache: Cache = field(default_factory=Cache)
    conn: Conn = field(default_factory=Conn)


def state(run: Run) -> State:
    if run.fo is None:
        run.fo = State()
    return run.fo


def sysctl(run: Run, value: str) -> None:
    try:
        run.fastopen_sysctl = int(value.strip().strip('"'), 0)
    except ValueError:
        raise Unsupported(f"sysctl net.ipv4.tcp_fastopen={value}") from None
    if run.fastopen_sysctl & TFO_CLIENT_NO_COOKIE:
        raise Unsupported("sysctl net.ipv4.tcp_fastopen with TFO_CLIENT_NO_COOKIE (data without a cookie)")


def setsockopt(run: Run, ev: Event, sc: Syscall) -> bool:
    """TCP_FASTOPEN_CONNECT on the client, TCP_FASTOPEN (the queue length) on a listener."""
    opt = sc.args[2] if len(sc.args) > 2 else ""
    if opt not in ("TCP_FASTOPEN_CONNECT", "TCP_FASTOPEN"):
        return False
    v = sc.int_arg(3)
    if v is None or sc.result != "0":
        raise Unsupported(f"line {ev.line}: setsockopt {opt} {sc.args[3] if len(sc.args) > 3 else ''}")
    fo = state(run).conn
    if opt == "TCP_FASTOPEN_CONNECT":
        if run.h is not None or run.conn.active:
            raise Unsupported(f"line {ev.line}: TCP_FASTOPEN_CONNECT once connecting")
        fo.connect = v != 0
    else:
        fo.listener_qlen = v
    return True


def connect(run: Run, ev: Event, sc: Syscall, t_us: int) -> bool:
    """connect() after TCP_FASTOPEN_CONNECT: deferred to the first write with a cookie
    (returning 0), else a SYN with a cookie request. False: an ordinary connect()."""
    fo = state(run)
    if not fo.conn.connect:
        return False
    if not run.fastopen_sysctl & TFO_CLIENT_ENABLE:
        raise Unsupported(f"line {ev.line}: TCP_FASTOPEN_CONNECT without net.ipv4.tcp_fastopen's client bit")
    run.conn.active = True
    run.conn_fd = sc.args[0]
    if fo.cache.cookie:
        fo.conn.deferred = True
        if sc.result != "0":
            raise Failed(Mismatch(ev.line, ev.text, "connect() = 0 (deferred to the first write)", t_us))
        return True
    _syn(run, t_us, option="", data=0)
    return False  # the caller records the SYN's time as for any connect()


def _syn(run: Run, t_us: int, option: str, data: int) -> None:
    fo = state(run).conn
    fo.syn_sent, fo.syn_option, fo.syn_data = True, option, data
    run.conn.syn_time_us = t_us


def _syn_data_bytes(run: Run, ev: Event, n: int) -> int:
    """`tcp_send_syn_data`: the MSS clamped by the cached one and the user's, less the
    full option space, at most a page (the simulator's rule)."""
    from ccbench import _core

    cache = state(run).cache
    if not cache.mss:
        raise Unsupported(f"line {ev.line}: Fast Open data without a cached MSS")
    clamp = min(cache.mss, run.user_mss) if run.user_mss else cache.mss
    mss = min(PATH_MSS, clamp)
    return int(_core.ScriptedSender.syn_data_bytes(mss - TS_OPTION_BYTES, n))


def write(run: Run, ev: Event, sc: Syscall, n: int, t_us: int, fastopen_flag: bool = False) -> bool:
    """A write before the connection is up: a deferred connect()'s first write, or
    sendto() with MSG_FASTOPEN. False: not a Fast Open write."""
    fo = state(run)
    if run.h is not None or fo.conn.syn_sent:
        return False
    if fastopen_flag:
        if not run.fastopen_sysctl & TFO_CLIENT_ENABLE:
            raise Unsupported(f"line {ev.line}: MSG_FASTOPEN without net.ipv4.tcp_fastopen's client bit")
        run.conn.active = True
        run.conn_fd = sc.args[0]
    elif not fo.conn.deferred:
        return False
    nonblocking = sc.args[0] in run.nonblocking or "MSG_DONTWAIT" in (sc.args[3] if len(sc.args) > 3 else "")
    if fo.cache.cookie:
        taken = _syn_data_bytes(run, ev, n)
        _syn(run, t_us, option=fo.cache.cookie, data=taken)
    else:
        taken = 0
        _syn(run, t_us, option="", data=0)
    got = ev.body.result + (f" {ev.body.errno}" if ev.body.errno else "")  # type: ignore[union-attr]
    if nonblocking:
        # `tcp_sendmsg_fastopen`: what the SYN took, or EINPROGRESS if nothing.
        want = str(taken) if taken else "-1 EINPROGRESS"
        if got != want:
            raise Failed(Mismatch(ev.line, ev.text, f"{sc.name}() = {want}", t_us))
        return True
    if got != str(n):
        raise Unsupported(f"line {ev.line}: {sc.name}() returning {got} of {n} bytes")
    fo.conn.waiting = (ev, n - taken, run.event_end_us)
    run.blocked = (ev, run.event_end_us)
    return True


def outbound_syn(run: Run, ev: Event, p: Packet, t_us: int) -> None:
    """Our SYN (its data and Fast Open option) or SYN-ACK (what it acknowledges)."""
    fo = state(run).conn
    if run.conn.active:
        if fo.deferred and not fo.syn_sent:
            raise Failed(Mismatch(ev.line, ev.text, "nothing: connect() waits for the first write", t_us))
        have = f"S 0:{fo.syn_data}({fo.syn_data})"
        if p.length != fo.syn_data or p.start != 0:
            raise Failed(Mismatch(ev.line, ev.text, have, t_us))
        if isinstance(p.options, tuple):
            opt = p.option("FO")
            want = fo.syn_option
            if (opt is None) != (want is None) or (opt is not None and opt.cookie != want):
                shown = "no FO option" if want is None else f"FO {want}".strip()
                raise Failed(Mismatch(ev.line, ev.text, f"{have} with {shown}", t_us))
        return
    if p.ack is not None and p.ack != 1 + fo.syn_taken:
        raise Failed(Mismatch(ev.line, ev.text, f"S. 0:0(0) ack {1 + fo.syn_taken}", t_us))


def synack(run: Run, ev: Event, p: Packet) -> int:
    """The SYN-ACK to our SYN: the cookie and MSS kept (`tcp_rcv_fastopen_synack`) and
    what it acknowledges of the SYN's data. Returns the bytes to send again once the
    connection is up (the SYN's data if not acknowledged)."""
    fo = state(run)
    c = fo.conn
    if c.deferred and not c.syn_sent:
        raise Unsupported(f"line {ev.line}: a SYN-ACK before the deferred SYN")
    opt = p.option("FO")
    if p.option("FOEXP") is not None:
        raise Unsupported(f"line {ev.line}: the experimental Fast Open option")
    if c.syn_option is not None:
        mss = p.option("mss")
        if mss is not None and mss.value:
            fo.cache.mss = mss.value
        if opt is not None and opt.cookie:
            fo.cache.cookie = opt.cookie
    ack = p.ack if p.ack is not None else 0
    if ack == 1 + c.syn_data:
        run.syn_data = c.syn_data
        return 0
    if ack == 1:
        return c.syn_data
    raise Unsupported(f"line {ev.line}: a SYN-ACK acknowledging part of the SYN's data")


def established(run: Run, resend: int, t_us: int) -> None:
    """After the SYN-ACK: the SYN's data not acknowledged goes again, then the rest of a
    blocking write that waited for the handshake, which then returns."""
    from .sim_calls import write_returned
    from .sim_state import collect

    c = state(run).conn
    rest = c.waiting[1] if c.waiting is not None else 0
    if resend:
        run.h.resend_syn_data(t_us * 1000, resend)
    if rest:
        run.h.write(t_us * 1000, rest, False, False)
    collect(run, run.h.sent())
    if c.waiting is not None:
        c.waiting = None
        write_returned(run, t_us)


def passive_syn(run: Run, ev: Event, p: Packet) -> None:
    """The peer's SYN to our listener: its data taken if the listener runs Fast Open
    without cookies (`tcp_try_fastopen`)."""
    fo = state(run)
    c = fo.conn
    opt = p.option("FO") or p.option("FOEXP")
    sysctl_bits = run.fastopen_sysctl
    listener = c.listener_qlen > 0 or bool(sysctl_bits & TFO_SERVER_WO_SOCKOPT1)
    enabled = bool(sysctl_bits & TFO_SERVER_ENABLE) and listener
    if not enabled or (p.length == 0 and opt is None):
        return
    if p.option("FOEXP") is not None:
        raise Unsupported(f"line {ev.line}: the experimental Fast Open option")
    if sysctl_bits & TFO_SERVER_COOKIE_NOT_REQD:
        c.syn_taken = p.length
        run.received += p.length
        run.lrcvtime_us = run.now_us
        return
    if p.length > 0 and opt is not None and opt.cookie:
        raise Unsupported(f"line {ev.line}: a Fast Open cookie to check (net.ipv4.tcp_fastopen_key's SipHash)")
    # A cookie request or data without a cookie: the data is not taken.


def new_connection(run: Run, ev: Event) -> None:
    """socket() after the script's first connection: a second one, once the first has
    closed, starts from the script's settings with the cookie cache kept."""
    if run.h is None and not (run.conn.active or run.conn.syn_seen or run.closed_fd or run.gone):
        return  # no connection yet
    if run.h is None or not run.closed_fd or not run.peer_fin or run.fifo:
        raise Unsupported(f"line {ev.line}: a second socket while the first connection is open")
    keep = {
        "script", "tolerance_us", "cc_params", "cca", "paced", "ecn_sysctl", "strict_segments",
        "cubic_module", "stack", "tlp", "now_us", "last_event", "last_event_us", "gso",
        "qdisc_drops", "namespace", "failed_assertion", "late_return", "fastopen_sysctl",
    }  # fmt: skip
    cache = state(run).cache
    fresh = Run(run.script, run.tolerance_us, run.cc_params)
    for f in fields(Run):
        if f.name not in keep:
            setattr(run, f.name, getattr(fresh, f.name))
    run.fo = State(cache=cache)
