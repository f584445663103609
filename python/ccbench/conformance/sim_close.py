"""The end of a connection on the simulator: close() and shutdown(SHUT_WR), the peer's
FIN and RST, what writes and reads find afterwards, and the RSTs a host sends for a
socket that is gone.

The socket states and our FIN are the sender's (``ScriptedSender.close``, ``state``;
the FIN takes a sequence number after the data and rides the write queue like it, see
``crates/ccbench-sim/src/tcp/close.rs``); this module maps the script's segments and
calls onto them and sends the segments that are not data: our ACK of the peer's FIN and
our RSTs. What is not modelled says why in one line.
"""

from __future__ import annotations

import re
from typing import Optional

from .script import Event, Packet, Syscall
from .sim_state import Failed, Run, Skb, Unsupported, emit, snd_nxt_byte
from .verdict import Mismatch

# --- system calls ----------------------------------------------------------------------


def close(run: Run, ev: Event, sc: Syscall, t_us: int) -> None:
    """close(fd). The listener's close with no connection waiting on it sends nothing; one
    established and not accepted is reset. The connection's: before it is established
    (an active open: `tcp_close` on SYN_SENT) nothing goes out and whatever the peer
    sends next is answered as for no socket; with data received and never read, or
    SO_LINGER on with a zero time, a RST aborts it (`tcp_send_active_reset`); else the
    FIN is queued behind the data (`tcp_close_state`, `tcp_send_fin`)."""
    fd = sc.args[0] if sc.args else ""
    if fd != run.conn_fd:
        waiting = run.conn.syn_seen and run.conn_fd is None and not run.closed_fd
        if fd == run.listen_fd and not waiting:
            return  # a listener with nothing in its queue
        if fd == run.listen_fd and run.h is not None:
            # `inet_csk_listen_stop`: a connection established but not accepted is
            # disconnected with a RST (`tcp_disconnect` -> `tcp_send_active_reset`).
            run.h.close(t_us * 1000, True)
            run.closed_fd = True
            emit(run, Skb(t_us, snd_nxt_byte(run), 0, False, False, False, ack=run.ack, rst=True))
            return
        if fd == run.listen_fd:
            raise Unsupported(f"line {ev.line}: close() of the listener during a handshake")
        raise Unsupported(f"line {ev.line}: close({fd}) of a socket the model does not have")
    if run.h is None:
        run.gone = True  # an active open (conn_fd is connect's)
        return
    if run.blocked is not None or run.read_waiting is not None:
        raise Unsupported(f"line {ev.line}: close() while a call waits")
    unread = run.received > run.consumed
    if run.linger_zero and not unread:
        # `tcp_close` -> `tcp_disconnect`: a RST in the states that need one
        # (`tcp_need_reset`), the write queue dropped.
        if run.h.state() not in ("ESTABLISHED", "CLOSE_WAIT", "FIN_WAIT1", "FIN_WAIT2"):
            raise Unsupported(f"line {ev.line}: close() with a zero linger time in {run.h.state()}")
        unread = True
    action = run.h.close(t_us * 1000, unread)
    run.conn_fd = None
    run.closed_fd = True
    if action == "reset":
        # `tcp_send_active_reset`: RST|ACK at `tcp_acceptable_seq` (snd_nxt).
        emit(run, Skb(t_us, snd_nxt_byte(run), 0, False, False, False, ack=run.ack, rst=True))
    _collect(run)


def set_linger(run: Run, ev: Event, value: str) -> None:
    """SO_LINGER: on with a zero time, close() aborts the connection with a RST; off, it
    closes as usual. A linger time makes close() wait for the FIN's ACK, which is not
    modelled."""
    m = re.fullmatch(r"\{\s*onoff\s*=\s*(\d+)\s*,\s*linger\s*=\s*(\d+)\s*\}", value.strip())
    if m is None:
        raise Unsupported(f"line {ev.line}: SO_LINGER {value}")
    on, secs = int(m.group(1)) != 0, int(m.group(2))
    if on and secs:
        raise Unsupported(f"line {ev.line}: SO_LINGER of {secs} s (a close() that waits is not modelled)")
    run.linger_zero = on


def shutdown(run: Run, ev: Event, sc: Syscall, t_us: int) -> None:
    """shutdown(fd, SHUT_WR): the FIN is queued behind the data; the socket still reads."""
    how = sc.args[1] if len(sc.args) > 1 else ""
    if run.h is None or sc.args[0] != run.conn_fd:
        raise Unsupported(f"line {ev.line}: shutdown() of a socket that is not an established connection")
    if how != "SHUT_WR":
        raise Unsupported(f"line {ev.line}: shutdown({how}) (only SHUT_WR is modelled)")
    if sc.result != "0":
        raise Failed(Mismatch(ev.line, ev.text, "shutdown() = 0", t_us))
    run.h.shutdown(t_us * 1000)
    _collect(run)


def write_refused(run: Run, ev: Event, sc: Syscall, t_us: int) -> bool:
    """A write on a socket shut for writing or reset fails (`tcp_sendmsg_locked` ->
    `sk_stream_error`): ECONNRESET once after the peer's RST, EPIPE after that and after
    shutdown(). Returns whether it failed."""
    if run.h is None:
        return False
    err = run.h.write_error()
    if err is None:
        return False
    got = f"-1 {err}"
    if f"{sc.result} {sc.errno}" != got:
        raise Failed(Mismatch(ev.line, ev.text, f"{sc.name}() = {got}", t_us))
    return True


def read_at_end(run: Run, ev: Event, sc: Syscall, t_us: int) -> bool:
    """A read with nothing queued on a socket whose peer sent its FIN (or that was reset)
    returns 0, or the reset's error once (`tcp_recvmsg_locked`). Returns whether the
    read is over."""
    if run.h is None:
        return False
    end = run.h.read_error()
    if end is None:
        return False
    got = "0" if end == "EOF" else f"-1 {end}"
    expected = sc.result + (f" {sc.errno}" if sc.errno else "")
    if expected != got:
        raise Failed(Mismatch(ev.line, ev.text, f"read() = {got}", t_us))
    return True


# --- the peer's segments -----------------------------------------------------------------


def inbound(run: Run, ev: Event, p: Packet, t_us: int) -> bool:
    """A segment the close paths decide on: for a socket that is gone, in TIME_WAIT, a
    RST, or data after close(). Returns whether it was taken here."""
    if run.gone or (run.h is not None and run.h.state() == "CLOSED"):
        _no_socket(run, p, t_us)
        return True
    if run.h is None:
        return False
    state = run.h.state()
    if state == "TIME_WAIT":
        _time_wait(run, ev, p, t_us)
        return True
    if "R" in p.flags:
        _reset(run, ev, p, t_us)
        return True
    if p.length > 0 and run.peer_fin:
        raise Unsupported(f"line {ev.line}: data after the peer's FIN")
    if p.length > 0 and run.closed_fd and state in ("FIN_WAIT1", "FIN_WAIT2"):
        # `tcp_rcv_state_process`: new data after close() resets the connection
        # (RFC 1122 4.2.2.13, `LINUX_MIB_TCPABORTONDATA`).
        if p.start + p.length <= run.ack:
            raise Unsupported(f"line {ev.line}: old data after close()")
        run.h.peer_reset(t_us * 1000)
        emit(run, _rst_for(p, t_us))
        return True
    return False


def inbound_fin(run: Run, ev: Event, p: Packet, t_us: int) -> None:
    """The peer's FIN, once the ACK it carries was taken (`tcp_fin`): in ESTABLISHED the
    socket moves to CLOSE_WAIT and the ACK is scheduled (with no data received yet,
    `icsk_ack.ato` is 0: it leaves at the next tick, taken as now); in FIN_WAIT1 to
    CLOSING, in FIN_WAIT2 to TIME_WAIT, each acknowledged at once. A FIN again is
    acknowledged again."""
    fin_seq = p.start + p.length
    if run.peer_fin:
        if fin_seq != run.ack - 1:
            raise Unsupported(f"line {ev.line}: a second FIN from the peer at another sequence number")
    else:
        if p.length > 0:
            raise Unsupported(f"line {ev.line}: a FIN with data (its ACK's timing is not modelled)")
        if fin_seq != run.ack:
            raise Unsupported(f"line {ev.line}: a FIN out of order (the receive queue is not modelled)")
        if run.h.state() == "ESTABLISHED" and run.received:
            raise Unsupported(
                f"line {ev.line}: a FIN after the peer's data (its ACK waits for the delayed-ACK timer"
                " in pingpong mode, which is not modelled)"
            )
    run.h.peer_fin(t_us * 1000)
    run.peer_fin = True
    emit(run, Skb(t_us, snd_nxt_byte(run), 0, False, False, False, ack=run.ack))
    _collect(run)
    if run.read_waiting is not None:
        # A blocked read returns 0: the end of the stream.
        rev, _n, _end = run.read_waiting
        run.read_waiting = None
        assert isinstance(rev.body, Syscall)
        if rev.body.result != "0":
            raise Failed(Mismatch(rev.line, rev.text, "read() = 0", t_us))
        run.h.read_error()


def ack_to_seg(run: Run, ev: Event, byte: int) -> Optional[int]:
    """The peer's ACK in segments where our FIN decides it: the FIN's sequence number
    plus one acknowledges the FIN's segment; the FIN's own sequence number, the data
    before a FIN of its own. None: not about the FIN."""
    fin = run.h.fin()
    if fin is None or not fin[2]:
        return None
    seg, alone, _sent, _acked = fin
    fin_byte = 1 + run.syn_data + run.written
    if byte == fin_byte + 1:
        return seg + 1
    if byte == fin_byte:
        if not alone:
            raise Unsupported(f"line {ev.line}: an ACK of the data but not of the FIN that rides on it")
        return seg
    return None


# --- helpers -----------------------------------------------------------------------------


def _reset(run: Run, ev: Event, p: Packet, t_us: int) -> None:
    """The peer's RST (`tcp_validate_incoming`, `tcp_reset`): taken at exactly the next
    sequence number expected (RFC 5961 3.2); the connection is gone and the next call
    fails."""
    if p.start != run.ack:
        raise Unsupported(f"line {ev.line}: a RST not at rcv_nxt (its challenge ACK is not modelled)")
    if run.blocked is not None or run.read_waiting is not None:
        raise Unsupported(f"line {ev.line}: a RST while a call waits")
    run.h.peer_reset(t_us * 1000)


def _time_wait(run: Run, ev: Event, p: Packet, t_us: int) -> None:
    """TIME_WAIT (`tcp_timewait_state_process`): the peer's FIN again is acknowledged
    again; a bare ACK changes nothing; a RST ends it."""
    if "R" in p.flags:
        run.h.peer_reset(t_us * 1000)
        return
    if "F" in p.flags and p.length == 0 and p.start + 1 == run.ack:
        run.h.peer_fin(t_us * 1000)
        emit(run, Skb(t_us, snd_nxt_byte(run), 0, False, False, False, ack=run.ack))
        return
    if p.length == 0 and "F" not in p.flags and "S" not in p.flags:
        return
    raise Unsupported(f"line {ev.line}: this segment in TIME_WAIT")


def _no_socket(run: Run, p: Packet, t_us: int) -> None:
    """No socket for the segment: a RST answers it, none answers a RST
    (`tcp_v4_send_reset`)."""
    if "R" in p.flags:
        return
    emit(run, _rst_for(p, t_us))


def _rst_for(p: Packet, t_us: int) -> Skb:
    """`tcp_v4_send_reset`'s RST for `p`: at its ACK number if it has one, else at 0
    acknowledging all it occupies."""
    if p.ack is not None and "." in p.flags:
        return Skb(t_us, p.ack, 0, False, False, False, rst=True, ack=0, ack_flag=False)
    end = p.start + p.length + ("S" in p.flags) + ("F" in p.flags)
    return Skb(t_us, 0, 0, False, False, False, rst=True, ack=end)


def _collect(run: Run) -> None:
    from .sim_state import collect

    collect(run, run.h.sent())
