"""The application's side of a script on the simulator: system calls (writes with their
flags, reads, socket options); close() and shutdown() are in ``sim_close``."""

from __future__ import annotations

import re
from typing import Optional

from ..scenario import Tcp
from . import sim_close, sim_fastopen
from .script import Event, Syscall
from .sim_state import (
    MAX_RW_COUNT,
    NO_OP_CALLS,
    NO_OP_IP_OPTIONS,
    SOCK_MIN_SNDBUF,
    TCP_MSS_DEFAULT,
    WMEM_MAX,
    Failed,
    Run,
    Unsupported,
    cca_name,
    collect,
)
from .verdict import Mismatch


def syscall(run: Run, ev: Event, sc: Syscall, t_us: int) -> None:
    name = sc.name
    check_returned(run)
    if run.blocked is not None:
        raise Unsupported(f"line {ev.line}: {name}() while a write() waits for the send buffer")
    if run.read_waiting is not None:
        raise Unsupported(f"line {ev.line}: {name}() while a read() waits for data")
    if name == "fcntl":
        _fcntl(run, sc)
        return
    if name == "listen":
        run.listen_fd = sc.args[0]
    if name == "accept":
        run.conn_fd = sc.result
    if name == "socket":
        sim_fastopen.new_connection(run, ev)
    if name in NO_OP_CALLS:
        return
    if name == "connect":
        if sim_fastopen.connect(run, ev, sc, t_us):
            return
        run.conn.active = True
        run.conn.syn_time_us = t_us
        run.conn_fd = sc.args[0]
        return
    if name == "setsockopt":
        _setsockopt(run, ev, sc, t_us)
        return
    if name == "getsockopt":
        opt = sc.args[2] if len(sc.args) > 2 else ""
        if opt == "SO_ERROR":
            return
        if opt == "SO_SNDBUF":
            # `sk_sndbuf`: as set, else tcp_wmem[1] until the connection autotunes it.
            have = run.h.sndbuf() if run.h is not None else run.sndbuf or _wmem(run)[1]
            if sc.int_arg(3) != have:
                raise Failed(Mismatch(ev.line, ev.text, f"SO_SNDBUF = {have}", t_us))
            return
        if opt == "TCP_MAXSEG":
            # `do_tcp_getsockopt`: `tp->mss_cache`, or before the connection the user's
            # MSS (TCP_MSS_DEFAULT, 536, if none was set).
            have = run.h.tcp_info()["tcpi_snd_mss"] if run.h is not None else (run.user_mss or TCP_MSS_DEFAULT)
            if sc.int_arg(3) != have:
                raise Failed(Mismatch(ev.line, ev.text, f"TCP_MAXSEG = {have}", t_us))
            return
        raise Unsupported(f"line {ev.line}: getsockopt {opt}")
    if name in ("write", "send", "sendmsg"):
        n, more, eor = _write_args(ev, sc)
        if sim_close.write_refused(run, ev, sc, t_us):
            return
        if run.h is None and sim_fastopen.write(run, ev, sc, n, t_us):
            return
        if (sc.result != str(n) or sc.errno) and sc.args[0] not in run.nonblocking:
            raise Unsupported(
                f"line {ev.line}: {name}() returning {sc.result} of {n} bytes (a short or failed write is not modelled)"
            )
        _write(run, ev, n, more, eor, t_us)
        return
    if name == "sendto":
        flags = sc.args[3] if len(sc.args) > 3 else "0"
        n = sc.int_arg(2)
        if "MSG_FASTOPEN" not in flags or n is None or not set(flags.split("|")) <= {"MSG_FASTOPEN", "MSG_DONTWAIT"}:
            raise Unsupported(f"line {ev.line}: sendto() with flags {flags}")
        if not sim_fastopen.write(run, ev, sc, n, t_us, fastopen_flag=True):
            raise Unsupported(f"line {ev.line}: sendto() with MSG_FASTOPEN on a connecting or connected socket")
        return
    if name == "read":
        _read(run, ev, sc, t_us)
        return
    if name == "close":
        sim_close.close(run, ev, sc, t_us)
        return
    if name == "shutdown":
        sim_close.shutdown(run, ev, sc, t_us)
        return
    raise Unsupported(f"line {ev.line}: system call {name}()")


def _write_args(ev: Event, sc: Syscall) -> tuple[int, bool, bool]:
    """Bytes, MSG_MORE and MSG_EOR of a write(), send() or sendmsg() (its iovecs' lengths)."""
    if sc.name == "sendmsg":
        msg = sc.args[1] if len(sc.args) > 1 else ""
        lengths = re.findall(r"\{\.\.\.,\s*(\d+)\}", msg)
        if not lengths:
            raise Unsupported(f"line {ev.line}: sendmsg() without iovec lengths")
        n: Optional[int] = sum(int(x) for x in lengths)
        flags = sc.args[2] if len(sc.args) > 2 else "0"
    else:
        n = sc.int_arg(2)
        flags = sc.args[3] if sc.name == "send" and len(sc.args) > 3 else "0"
    if n is None or n < 0:
        raise Unsupported(f"line {ev.line}: {sc.name} of unknown length")
    if n > MAX_RW_COUNT:
        raise Unsupported(
            f"line {ev.line}: {sc.name} of {n} bytes: Linux copies at most MAX_RW_COUNT ({MAX_RW_COUNT}) bytes a call"
        )
    known = {"0", "MSG_MORE", "MSG_EOR"}
    if not set(f.strip() for f in flags.split("|")) <= known:
        raise Unsupported(f"line {ev.line}: {sc.name} flags {flags}")
    return n, "MSG_MORE" in flags, "MSG_EOR" in flags


def _read(run: Run, ev: Event, sc: Syscall, t_us: int) -> None:
    """The application reads what the peer sent, up to the length asked for. Reading
    leaves the receive window as it was (the model keeps no receive buffer, and a
    window that grows by less than it can be advertised sends no update,
    `tcp_cleanup_rbuf`). With nothing waiting, a read after the peer's FIN returns 0
    (see sim_close), a non-blocking read fails with EAGAIN and a blocking one waits for
    the peer's next data (`tcp_recvmsg_locked`, `sk_wait_data`)."""
    n = sc.int_arg(2)
    if n is None or n <= 0:
        raise Unsupported(f"line {ev.line}: read of length {sc.args[2] if len(sc.args) > 2 else '?'}")
    if run.received == run.consumed:
        if sim_close.read_at_end(run, ev, sc, t_us):
            return
        if sc.args[0] in run.nonblocking:
            if sc.result != "-1" or sc.errno != "EAGAIN":
                raise Failed(Mismatch(ev.line, ev.text, "read() = -1 EAGAIN", t_us))
            return
        run.read_waiting = (ev, n, run.event_end_us)
        return
    _take(run, ev, sc.result, n, t_us)


def _take(run: Run, ev: Event, expected: str, n: int, t_us: int) -> None:
    got = min(n, run.received - run.consumed)
    if expected != str(got):
        raise Failed(Mismatch(ev.line, ev.text, f"read() = {got}", t_us))
    run.consumed += got


def read_returned(run: Run, t_us: int) -> None:
    """A read that waited returns with the peer's data that came at ``t_us``; packetdrill
    checks that time against the end of the call's time range."""
    if run.read_waiting is None or run.received == run.consumed:
        return
    ev, n, end_us = run.read_waiting
    run.read_waiting = None
    assert isinstance(ev.body, Syscall)
    _take(run, ev, ev.body.result, n, t_us)
    if end_us is not None and abs(t_us - end_us) > run.tolerance_us:
        raise Failed(Mismatch(ev.line, ev.text, f"read() returned at {t_us / 1e6:.6f} s", t_us))


def _fcntl(run: Run, sc: Syscall) -> None:
    """O_NONBLOCK on or off (F_SETFL); F_GETFL reads nothing the model keeps."""
    if len(sc.args) > 2 and sc.args[1] == "F_SETFL":
        if "O_NONBLOCK" in sc.args[2]:
            run.nonblocking.add(sc.args[0])
        else:
            run.nonblocking.discard(sc.args[0])


def _setsockopt(run: Run, ev: Event, sc: Syscall, t_us: int) -> None:
    opt = sc.args[2] if len(sc.args) > 2 else ""
    val = sc.args[3] if len(sc.args) > 3 else ""
    if opt == "SO_REUSEADDR":
        return
    if opt == "SO_LINGER":
        sim_close.set_linger(run, ev, val)
        return
    if opt in ("TCP_NODELAY", "TCP_CORK"):
        on = sc.int_arg(3) not in (None, 0)
        option = "nodelay" if opt == "TCP_NODELAY" else "cork"
        if run.h is None:
            setattr(run, option, on)
        else:
            run.h.setsockopt(t_us * 1000, option, on)
            collect(run, run.h.sent())
        return
    if opt == "SO_SNDBUF":
        v = sc.int_arg(3)
        if v is None:
            raise Unsupported(f"line {ev.line}: SO_SNDBUF {val}")
        # `sk_setsockopt`: the value as a u32, at most wmem_max, doubled for overhead.
        run.sndbuf = max(min(v % 2**32, WMEM_MAX) * 2, SOCK_MIN_SNDBUF)
        if run.h is not None:
            run.h.set_sndbuf(run.sndbuf)
        return
    if opt in NO_OP_IP_OPTIONS and sc.args[1] == "SOL_IP":
        return
    if opt == "TCP_MAXSEG":
        if run.h is None and run.conn.syn_seen:
            raise Unsupported(f"line {ev.line}: TCP_MAXSEG while the connection opens")
        v = sc.int_arg(3)
        if v is None or not 88 <= v <= 65535 - 40:
            raise Unsupported(f"line {ev.line}: TCP_MAXSEG {sc.args[3]}")
        if run.h is not None:
            # `tcp_sock_set_maxseg` sets only `rx_opt.user_mss`, which an open connection
            # never reads: the MSS stays `mss_cache`, later `tcp_sync_mss` calls cap it by
            # `rx_opt.mss_clamp` (fixed at the handshake), and `tp->advmss` stays.
            return
        run.user_mss = v  # `tp->rx_opt.user_mss`
        return
    if sim_fastopen.setsockopt(run, ev, sc):
        return
    if opt == "TCP_CONGESTION":
        if run.h is not None:
            raise Unsupported(f"line {ev.line}: TCP_CONGESTION on an established connection")
        run.cca = cca_name(val)
        return
    raise Unsupported(f"line {ev.line}: setsockopt {opt}")


def _write(run: Run, ev: Event, n: int, more: bool, eor: bool, t_us: int) -> None:
    """A write: what the send buffer takes goes at once; the rest waits for the ACKs
    that make room (a blocking write, `sk_stream_wait_memory`), and the write returns
    when the last byte is in (see ``write_returned``)."""
    if run.h is None:
        raise Unsupported(f"line {ev.line}: a write before the connection is established")
    try:
        run.h.write(t_us * 1000, n, more, eor)
    except OverflowError as e:
        raise Unsupported(f"line {ev.line}: write of {n} bytes: {e}") from None
    collect(run, run.h.sent())
    pending = run.h.write_pending()
    assert isinstance(ev.body, Syscall)
    if ev.body.args[0] in run.nonblocking:
        # A non-blocking write returns what the buffer took, or EAGAIN if nothing.
        run.h.return_short()
        got = f"{n - pending}" if pending < n else "-1 EAGAIN"
        expected = ev.body.result + (f" {ev.body.errno}" if ev.body.errno else "")
        if got != expected:
            raise Failed(Mismatch(ev.line, ev.text, f"write() = {got}", t_us))
    elif pending > 0:
        run.blocked = (ev, run.event_end_us)
    elif run.event_end_us is not None and run.event_end_us - t_us > run.tolerance_us:
        raise Failed(Mismatch(ev.line, ev.text, f"write() returned at {t_us / 1e6:.6f} s", t_us))


def write_returned(run: Run, t_us: int) -> None:
    """A blocked write whose last byte the buffer took at ``t_us`` returns then.
    packetdrill checks that time against the end of the call's time range when it next
    waits for the call's thread: at the next system call or the script's end
    (``check_returned``), after the events between."""
    if run.blocked is None or run.h.write_pending() > 0:
        return
    ev, end_us = run.blocked
    run.blocked = None
    if end_us is not None and abs(t_us - end_us) > run.tolerance_us:
        run.late_return = Mismatch(ev.line, ev.text, f"write() returned at {t_us / 1e6:.6f} s", t_us)


def check_returned(run: Run) -> None:
    """A blocking call's return time that missed its range fails the script now, unless
    an assertion failed first."""
    if run.late_return is not None:
        raise Failed(run.failed_assertion or run.late_return)


def _wmem(run: Run) -> tuple[int, int, int]:
    """net.ipv4.tcp_wmem as the script left it."""
    return tuple(run.stack.get("wmem", Tcp().wmem))  # type: ignore[return-value]
