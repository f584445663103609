"""Run a packetdrill script against the simulator's TCP sender.

The script plays the remote peer; the simulator is the local stack. The driver walks the
events in time order as packetdrill does (relative times anchored as in its
``adjust_relative_event_times``), feeds the peer's ACKs and the application's writes to
``ccbench._core.ScriptedSender`` and matches what it sends against the script's ``>``
lines: outbound skbs form a queue that each ``>`` line reads from, consecutive skbs
aggregated up to the expected length as packetdrill does without ``--strict_segments``.

What the simulator has no mechanism for (receiving data, FIN, Nagle, a write that
blocks on the send buffer, socket options it has no meaning for, IPv6, sysctls changed
away from the defaults file without a matching knob) makes the script ``unsupported``
with the reason, never a verdict on a stack that was not modelled.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..scenario import Tcp
from .script import (
    CODE_CONSTANTS,
    DEFAULT_TOLERANCE_US,
    Code,
    EvalError,
    Event,
    Packet,
    Script,
    ScriptError,
    Syscall,
    evaluate,
    expr_names,
    parse_file,
)
from .verdict import Mismatch, Verdict

STACK = "simulator"

#: The kernel this machine runs (`CONFIG_HZ`), whose timers the harness rounds to.
KERNEL_HZ = 250
TCP_MAX_QUICKACKS = 16
INVALID_RATELIMIT_US = 500_000  # net.ipv4.tcp_invalid_ratelimit
#: The tun device's MTU (1500) less IPv4 and TCP headers: `advmss`, the cap on the MSS.
TUN_ADVMSS = 1460
#: `TCP_MSS_DEFAULT`: what TCP_MAXSEG reads before a connection when none was set.
TCP_MSS_DEFAULT = 536
#: TCP timestamp option bytes taken from the MSS when timestamps are negotiated.
TS_OPTION_BYTES = 12
#: `net.core.wmem_max`'s default: the most SO_SNDBUF takes (`sk_setsockopt`).
WMEM_MAX = 212_992
#: `SOCK_MIN_SNDBUF` (include/net/sock.h) on a 64-bit kernel: the least `sk_sndbuf`.
SOCK_MIN_SNDBUF = 4_608
#: packetdrill's default `--tolerance_percent`.
TOLERANCE_PERCENT = 12.5
#: packetdrill waits this long past an outbound packet's expected time.
SNIFF_TIMEOUT_US = 2_000_000

#: Values every script starts from (common/defaults.sh); a script that changes one the
#: simulator has no knob for is unsupported.
MODELLED_DEFAULTS = {
    "net.ipv4.tcp_sack": "1",
    "net.ipv4.tcp_recovery": "1",
    "net.ipv4.tcp_reordering": "3",
    "net.ipv4.tcp_mtu_probing": "0",
}
#: The [tcp] settings that are sysctls, which a script may change (the handshake, not
#: the sysctl, decides SACK: ``net.ipv4.tcp_sack`` stays in ``MODELLED_DEFAULTS``).
STACK_SYSCTLS = {k: v for k, v in Tcp.sysctl_fields().items() if k not in MODELLED_DEFAULTS}
#: Settings that do not reach the data sender of these scripts.
IGNORED_SYSCTLS = {
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_syn_retries",
    "net.ipv4.tcp_synack_retries", "net.ipv4.tcp_dsack", "net.ipv4.tcp_fack", "net.ipv4.tcp_ecn_option",
    "net.ipv4.tcp_notsent_lowat", "net.ipv4.tcp_fastopen", "net.ipv4.tcp_fastopen_key",
    "net.ipv4.tcp_syncookies",
}  # fmt: skip
#: Shell lines with no effect on the simulated sender.
#: The one qdisc change after the connection is up that the model has: a qdisc that
#: refuses every packet.
DROP_ALL_QDISC = "tc qdisc replace dev tun0 root pfifo limit 0"
IGNORED_COMMANDS = ("ip tcp_metrics flush", "tc qdisc add dev tun0 root pfifo", "/tmp/sysctl_restore_")
#: TCP_INFO fields the harness has no state for.
NO_STATE = {
    "tcpi_sndbuf_limited": "send-buffer-limited time: the send buffer is not modelled",
}
#: Module parameters of tcp_cubic a script may write, which the simulator's Cubic
#: takes under the same names.
CUBIC_MODULE_PARAMS = {
    "beta", "bic_scale", "fast_convergence", "tcp_friendliness", "initial_ssthresh",
    "hystart", "hystart_detect", "hystart_low_window", "hystart_ack_delta_us",
}  # fmt: skip
_MODULE_PARAM = re.compile(r"echo\s+(?:-n\s+)?(\d+)\s*>\s*/sys/module/(\w+)/parameters/(\w+)$")
#: Socket calls with nothing to do in the model.
NO_OP_CALLS = {"socket", "bind", "listen", "accept", "fcntl"}
#: IP-level socket options that change nothing the model has: path-MTU discovery (no
#: path-MTU model) and the TOS byte (Linux keeps a TCP socket's ECN bits whatever
#: IP_TOS says, `__ip_sock_set_tos`; the route refresh it forces has nothing to refresh).
NO_OP_IP_OPTIONS = {"IP_MTU_DISCOVER", "IP_TOS"}


class Unsupported(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Failed(Exception):
    def __init__(self, m: Mismatch) -> None:
        super().__init__(m)
        self.mismatch = m


@dataclass
class Skb:
    time_us: float
    start: int  # first byte (script numbering, 1 = first data byte)
    length: int
    retrans: bool
    ect: bool
    cwr: bool
    fin: bool = False
    ack: int = 1  # 1 + the peer's data bytes received, + 1 once its FIN is acknowledged
    rst: bool = False

    def text(self) -> str:
        # PSH is left out: it is not compared (see _flags_match).
        flags = ("F" if self.fin else "") + ("R" if self.rst else "") + ("W" if self.cwr else "") + "."
        return f"{flags} {self.start}:{self.start + self.length}({self.length}) ack {self.ack}"


@dataclass
class _Conn:
    """What the handshake established."""

    mss: int = 536
    peer_wscale: int = 0
    wscale_ok: bool = False
    ts_ok: bool = False
    ecn_ok: bool = False
    syn_time_us: int = 0  # our SYN (active) or SYN-ACK (passive) left
    syn_seen: bool = False
    sack_ok: bool = True
    active: bool = False


@dataclass
class _Run:
    script: Script
    tolerance_us: int
    cc_params: dict[str, float]
    cca: str = "cubic"
    paced: bool = False
    ecn_sysctl: int = 0
    strict_segments: bool = False
    cubic_module: dict[str, float] = field(default_factory=dict)
    # [tcp] settings the script's sysctls set (the simulator's TcpConfig fields).
    stack: dict[str, Any] = field(default_factory=dict)
    tlp: bool = True
    h: Any = None
    conn: _Conn = field(default_factory=_Conn)
    now_us: int = 0
    last_event: Optional[Event] = None
    last_event_us: int = 0
    fifo: list[Skb] = field(default_factory=list)
    written: int = 0
    # TCP_NODELAY and TCP_CORK as set before the connection is up (applied as it opens);
    # the tun device's TSO/GSO (`ethtool -K tun0 tso off gso off` turns them off).
    nodelay: bool = False
    cork: bool = False
    gso: bool = True
    # `tc qdisc replace dev tun0 root pfifo limit 0`: from then on nothing leaves.
    qdisc_drops: bool = False
    user_mss: Optional[int] = None
    sndbuf: Optional[int] = None
    namespace: dict[str, Any] = field(default_factory=dict)
    failed_assertion: Optional[Mismatch] = None
    # close() sent our FIN or RST (see _close); the peer's FIN came and was acknowledged.
    closed: bool = False
    peer_fin: bool = False
    # The peer's data (see _inbound_data): bytes received in order and read by the
    # application; when data last arrived (`icsk_ack.lrcvtime`); quick ACKs left.
    received: int = 0
    consumed: int = 0
    lrcvtime_us: int = 0
    quickacks: int = 0
    # When the last challenge ACK left (`tp->last_oow_ack_time`).
    last_oow_ack_us: Optional[int] = None

    @property
    def ack(self) -> int:
        """The ACK field of what we send: the peer's next byte."""
        return 1 + self.received + self.peer_fin


def run_script(path: Path, name: str, tolerance_us: Optional[int] = None,
               cc_params: Optional[dict[str, float]] = None) -> Verdict:  # fmt: skip
    """The simulator's verdict on one script; ``name`` is how the verdict names it.
    ``cc_params`` overrides congestion-control parameters by name (as a scenario may)."""
    try:
        script = parse_file(path)
    except ScriptError as e:
        return Verdict(name, STACK, "unsupported", reason=f"cannot parse line {e.line}: {e.message}")
    tol = tolerance_us if tolerance_us is not None else script.tolerance_us
    run = _Run(script, tol, dict(cc_params or {}))
    try:
        _setup(run)
        for ev in script.events:
            _event(run, ev)
        if run.failed_assertion is not None:
            raise Failed(run.failed_assertion)
    except Unsupported as u:
        return Verdict(name, STACK, "unsupported", reason=u.reason)
    except Failed as f:
        return Verdict(name, STACK, "fail", mismatch=f.mismatch)
    return Verdict(name, STACK, "pass")


# --- set-up ----------------------------------------------------------------------------


def _setup(run: _Run) -> None:
    s = run.script
    for opt, value in s.options.items():
        if opt == "tolerance_usecs":
            continue
        if opt == "strict_segments":
            run.strict_segments = True
        elif opt == "tcp_ts_tick_usecs":
            continue
        elif opt == "ip_version" and value == "ipv4":
            continue
        else:
            raise Unsupported(f"command-line option --{opt}{'=' + value if value else ''}")
    commands = [s.init] if s.init else []
    for c in commands:
        _apply_command(run, c, initial=True)


def _apply_command(run: _Run, cmd: Any, initial: bool) -> None:
    effective = [line for line in cmd.other if not any(line.startswith(p) for p in IGNORED_COMMANDS)]
    if not initial and run.h is not None:
        if effective == [DROP_ALL_QDISC] and not cmd.sysctls:
            # A qdisc with no room: every packet is refused (`NET_XMIT_DROP`).
            run.qdisc_drops = True
            run.h.set_qdisc_drops(True)
            return
        if effective or cmd.sysctls:
            raise Unsupported("a shell command after the connection is established")
        return
    for line in cmd.other:
        if any(line.startswith(p) for p in IGNORED_COMMANDS):
            continue
        m = _MODULE_PARAM.match(line)
        if m and m.group(2) == "tcp_cubic" and m.group(3) in CUBIC_MODULE_PARAMS:
            run.cubic_module[m.group(3)] = float(m.group(1))
            continue
        if line.startswith("tc qdisc replace dev tun0 root fq") or line.startswith("tc qdisc add dev tun0 root fq"):
            run.paced = True  # fq paces by the skbs' departure times (EDT)
            continue
        if line.split() == ["ethtool", "-K", "tun0", "tso", "off", "gso", "off"]:
            run.gso = False  # every skb one segment (`sk_can_gso` false: size_goal = MSS)
            continue
        raise Unsupported(f"shell command {line!r}")
    for name, value in cmd.sysctls.items():
        if name == "net.ipv4.tcp_congestion_control":
            run.cca = _cca(value)
        elif name == "net.ipv4.tcp_ecn":
            run.ecn_sysctl = int(value)
        elif name == "net.ipv4.tcp_early_retrans":
            # 0 turns tail loss probes off; 3 and 4 both probe (the RACK code path
            # replaced the early-retransmit variants).
            if value not in ("0", "3", "4"):
                raise Unsupported(f"sysctl net.ipv4.tcp_early_retrans={value}")
            run.tlp = value != "0"
        elif name in MODELLED_DEFAULTS:
            if value != MODELLED_DEFAULTS[name]:
                raise Unsupported(f"sysctl {name}={value} (the simulator models {MODELLED_DEFAULTS[name]})")
        elif name in STACK_SYSCTLS:
            run.stack[STACK_SYSCTLS[name]] = _setting(name, value)
        elif name in IGNORED_SYSCTLS:
            continue
        else:
            raise Unsupported(f"sysctl {name}={value}")


def _setting(name: str, value: str) -> Any:
    """A sysctl's value as its [tcp] setting, or Unsupported outside the setting's range."""
    field_name = STACK_SYSCTLS[name]
    if Tcp.model_fields[field_name].annotation is bool:
        return value != "0"
    key = Tcp.model_fields[field_name].alias or field_name
    try:
        return getattr(Tcp.model_validate({key: int(value)}), field_name)
    except ValueError:  # pydantic's ValidationError is one
        raise Unsupported(f"sysctl {name}={value}") from None


def _cca(name: str) -> str:
    name = name.strip().strip('"')
    if name not in ("cubic", "reno", "bbr"):
        raise Unsupported(f"congestion control {name!r}")
    return name


# --- events ----------------------------------------------------------------------------


def _script_time(run: _Run, ev: Event) -> tuple[int, Optional[int]]:
    """packetdrill's expected time of an event (and the end of a range), µs."""
    t = ev.time
    if t.kind in ("absolute", "absolute_range"):
        return t.start_us, t.end_us
    if t.kind == "any":
        return run.now_us, None
    last = run.last_event
    anchored = (
        last is not None
        and ev.kind == "packet"
        and last.kind == "packet"
        and isinstance(last.body, Packet)
        and last.body.direction == "<"
        and isinstance(ev.body, Packet)
        and ev.body.direction == "<"
    )
    base = run.last_event_us if anchored else run.now_us
    end = base + t.end_us if t.end_us is not None else None
    return base + t.start_us, end


def _event(run: _Run, ev: Event) -> None:
    t_us, t_end = _script_time(run, ev)
    if ev.kind == "command":
        _apply_command(run, ev.body, initial=run.h is None)
    elif ev.kind == "packet":
        p = ev.body
        assert isinstance(p, Packet)
        if p.direction == "<":
            _wait_until(run, t_us)
            _inbound(run, ev, p, t_us)
        else:
            _outbound(run, ev, p, t_us, t_end)
    elif ev.kind == "syscall":
        _wait_until(run, t_us)
        assert isinstance(ev.body, Syscall)
        _syscall(run, ev, ev.body, t_us)
    elif ev.kind == "code":
        _wait_until(run, t_us)
        assert isinstance(ev.body, Code)
        _code(run, ev, ev.body, t_us)
    run.last_event = ev
    run.last_event_us = t_us


def _wait_until(run: _Run, t_us: int) -> None:
    if t_us > run.now_us:
        if run.h is not None:
            _collect(run, run.h.advance(t_us * 1000))
        run.now_us = t_us


def _collect(run: _Run, sent: list[tuple[int, int, int, int, int, bool, bool, bool, bool]]) -> None:
    for time_ns, _seg, offset, segs, nbytes, retrans, ect, cwr, _psh in sent:
        if segs == 0:  # a zero-window probe: empty, one byte below snd_una
            run.fifo.append(Skb(time_ns / 1000, offset, 0, False, False, False, ack=run.ack))
            continue
        run.fifo.append(Skb(time_ns / 1000, offset + 1, nbytes, retrans, ect, cwr, ack=run.ack))


def _emit(run: _Run, skb: Skb) -> None:
    """A segment the driver sends for the stack (an ACK, FIN or RST). A local qdisc that
    refuses everything drops it, and the refusal starts a CWR reduction as for any
    segment (`__tcp_transmit_skb` -> `tcp_enter_cwr`)."""
    if run.qdisc_drops:
        run.h.refused_packet(int(skb.time_us * 1000))
        return
    run.fifo.append(skb)


# --- the handshake ---------------------------------------------------------------------


def _inbound(run: _Run, ev: Event, p: Packet, t_us: int) -> None:
    c = run.conn
    if p.is_syn:
        if "." in p.flags:  # SYN-ACK to our connect()
            if not c.active:
                raise Unsupported(f"line {ev.line}: SYN-ACK without a connect()")
            _peer_syn_options(run, p)
            _establish(run, p, t_us, rtt_us=t_us - c.syn_time_us, ack_time_us=t_us)
        else:  # the peer's SYN to our listener; the SYN-ACK leaves at once
            _peer_syn_options(run, p)
            c.syn_time_us = t_us
            c.syn_seen = True
        return
    if run.h is None:
        if c.syn_seen and "." in p.flags and p.length == 0 and not c.active:
            _establish(run, p, t_us, rtt_us=t_us - c.syn_time_us, ack_time_us=t_us)
            return
        raise Unsupported(f"line {ev.line}: a packet before the connection is established")
    if not run.closed and p.ack is not None and p.ack > _snd_nxt_byte(run):
        _challenge_ack(run, t_us)
        return
    if p.length > 0 and not run.closed:
        _inbound_data(run, ev, p, t_us)
    if run.closed:
        _inbound_after_close(run, ev, p, t_us)
        return
    if "R" in p.flags or "F" in p.flags:
        raise Unsupported(f"line {ev.line}: inbound {'RST' if 'R' in p.flags else 'FIN'}")
    if p.ack is None:
        raise Unsupported(f"line {ev.line}: inbound packet without ACK")
    if p.ecn not in (None, "noecn", "ect0", "ect1"):
        raise Unsupported(f"line {ev.line}: inbound CE mark (the sender's receive path is not modelled)")
    ack = _to_seg(run, ev, p.ack, "ack")
    sacks = [blk for blk in (_sack_to_segs(run, ev, a, b) for a, b in p.sack_blocks()) if blk[0] < blk[1]]
    rwnd = (p.win or 0) << (c.peer_wscale if c.wscale_ok else 0)
    ece = "E" in p.flags
    run.h.receive(t_us * 1000, ack, rwnd, sacks, ece, p.length if not run.closed else 0)
    _collect(run, run.h.sent())


def _inbound_data(run: _Run, ev: Event, p: Packet, t_us: int) -> None:
    """The peer's data, in order, while the connection is in quick-ACK mode: each segment
    is acknowledged at once (`__tcp_ack_snd_check` in `tcp_in_quickack_mode`), stamps
    `icsk_ack.lrcvtime` (`tcp_event_data_recv`) and waits for a read(). The ACK it
    carries then goes to the sender as any other (below). Data after our own is
    modelled while none came before it: a reply sent within the ACK timeout of the
    peer's data turns delayed ACKs on (pingpong mode, `tcp_event_data_sent`), which
    cannot happen while no data has come (`icsk_ack.ato` is still 0). The ACK field of
    a segment with data is never a duplicate ACK (`FLAG_DATA`)."""
    if p.start != 1 + run.received:
        raise Unsupported(f"line {ev.line}: inbound data out of order (the receive queue is not modelled)")
    if run.written and run.received:
        raise Unsupported(f"line {ev.line}: inbound data after an exchange (delayed ACKs in pingpong mode are not "
                          "modelled)")
    if run.quickacks == 0:
        raise Unsupported(f"line {ev.line}: inbound data after the quick ACKs (delayed ACKs are not modelled)")
    run.received += p.length
    run.lrcvtime_us = t_us
    run.quickacks -= 1  # `tcp_dec_quickack_mode` as the ACK leaves
    _emit(run, Skb(t_us, _snd_nxt_byte(run), 0, False, False, False, ack=run.ack))


def _snd_nxt_byte(run: _Run) -> int:
    return 1 + run.written - run.h.tcp_info()["tcpi_notsent_bytes"]


def _challenge_ack(run: _Run, t_us: int) -> None:
    """A segment that acknowledges data never sent is dropped, its timestamp not taken,
    and answered with a challenge ACK (`tcp_ack` -> `tcp_send_challenge_ack`, RFC 5961
    and RFC 9293 3.10.7.4), at most one per `tcp_invalid_ratelimit` (500 ms) per socket
    (`__tcp_oow_rate_limited`; the host-wide limit is off by default)."""
    if run.last_oow_ack_us is not None and t_us - run.last_oow_ack_us < INVALID_RATELIMIT_US:
        return
    run.last_oow_ack_us = t_us
    _emit(run, Skb(t_us, _snd_nxt_byte(run), 0, False, False, False, ack=run.ack))


def _snd_una_byte(run: _Run) -> int:
    return run.h.tcp_info()["tcpi_bytes_acked"] + 1


def _sack_to_segs(run: _Run, ev: Event, start: int, end: int) -> tuple[int, int]:
    """A SACK block in whole segments. Linux tags only whole MSS-sized segments (and a
    write's short end) of a partly covered skb (`tcp_match_skb_to_sack`): an edge inside
    a segment rounds inward, so a block that covers no whole segment tags nothing and
    leaves an empty range here."""
    lo, hi = start - 1, end - 1
    if lo < 0:
        raise Unsupported(f"line {ev.line}: SACK block {start} before the first data byte")
    seg, seg_start = run.h.seg_floor(lo)
    first = seg if seg_start == lo else seg + 1
    last = run.h.seg_floor(hi)[0]
    return first, max(first, last)


def _to_seg(run: _Run, ev: Event, byte: int, what: str) -> int:
    off = byte - 1
    if off < 0:
        raise Unsupported(f"line {ev.line}: {what} {byte} before the first data byte")
    seg, seg_start = run.h.seg_floor(off)
    if seg_start == off:
        return seg
    raise Unsupported(f"line {ev.line}: {what} {byte} is not on a segment boundary (MSS {run.conn.mss})")


def _peer_syn_options(run: _Run, p: Packet) -> None:
    c = run.conn
    mss_opt = p.option("mss")
    peer_mss = mss_opt.value if mss_opt and mss_opt.value else 536
    c.wscale_ok = p.option("wscale") is not None
    ws = p.option("wscale")
    c.peer_wscale = min(ws.value or 0, 14) if ws else 0
    ts_sysctl = run.script.sysctls().get("net.ipv4.tcp_timestamps", "1") != "0"
    c.ts_ok = p.option("TS") is not None and ts_sysctl
    if p.options == "...":
        raise Unsupported("a SYN with unspecified options")
    c.sack_ok = p.option("sackOK") is not None
    if p.ecn not in (None, "noecn"):
        raise Unsupported("ECN marks on the SYN")
    # `tcp_sync_mss`: the peer's MSS capped by our advmss and the user's TCP_MAXSEG
    # (`tcp_mss_clamp`), less the timestamp option.
    c.mss = min(peer_mss, _advmss(run)) - (TS_OPTION_BYTES if c.ts_ok else 0)
    # RFC 3168 negotiation: the SYN carries ECE and CWR.
    syn_ecn = "E" in p.flags and ("W" in p.flags or "." in p.flags)
    c.ecn_ok = syn_ecn and run.ecn_sysctl in (1, 2)


def _advmss(run: _Run) -> int:
    """`tp->advmss`: the route's, lowered by the user's TCP_MAXSEG."""
    return min(TUN_ADVMSS, run.user_mss) if run.user_mss else TUN_ADVMSS


def _establish(run: _Run, p: Packet, t_us: int, rtt_us: int, ack_time_us: int) -> None:
    c = run.conn
    rwnd = (p.win or 0) << (c.peer_wscale if c.wscale_ok and not p.is_syn else 0)
    run.h = _new_harness(run, rtt_us, rwnd)
    # `tcp_finish_connect` (active) and `tcp_create_openreq_child` (passive) stamp the
    # connection's last receipt; `tcp_event_data_recv` starts the quick-ACK count at the
    # first data (`tcp_incr_quickack`: the receive window over two receive MSS, at most
    # TCP_MAX_QUICKACKS = 16, which a window of 64 KB reaches).
    run.lrcvtime_us = t_us
    run.quickacks = TCP_MAX_QUICKACKS
    # The harness's clock is the script's: catch it up to now.
    run.h.advance(ack_time_us * 1000)
    run.now_us = max(run.now_us, ack_time_us)
    for option, on in (("nodelay", run.nodelay), ("cork", run.cork)):
        if on:
            run.h.setsockopt(ack_time_us * 1000, option, True)


def _new_harness(run: _Run, rtt_us: int, rwnd: int) -> Any:
    from ccbench import _core

    tcp = {**run.stack, "mss": run.conn.mss, "hz": KERNEL_HZ, "tlp": run.tlp, "sack": run.conn.sack_ok}
    return _core.ScriptedSender(
        cca=run.cca,
        cc_params={**(run.cubic_module if run.cca == "cubic" else {}), **run.cc_params},
        handshake_rtt_ns=max(rtt_us, 1) * 1000,
        snd_wnd=rwnd,
        ecn="classic" if run.conn.ecn_ok else "off",
        paced=run.paced or run.cca == "bbr",
        gso=run.gso,
        tcp=json.dumps(tcp),
    )


# --- outbound packets ------------------------------------------------------------------


def _outbound(run: _Run, ev: Event, p: Packet, t_us: int, t_end: Optional[int]) -> None:
    c = run.conn
    if run.h is None:
        # Our SYN or SYN-ACK: checked loosely (flags), no time or options.
        if p.is_syn:
            if c.active and "." in p.flags:
                raise Failed(Mismatch(ev.line, ev.text, "S 0:0(0) (an active open sends a SYN)", t_us))
            return
        raise Unsupported(f"line {ev.line}: an outbound packet before the handshake completes")
    if p.is_syn:
        raise Unsupported(f"line {ev.line}: an outbound SYN on an established connection")
    handshake_ack = c.active and p.start == 1 and p.ack == 1 and "F" not in p.flags
    if p.length == 0 and not run.closed and not run.written and handshake_ack:
        return  # the handshake's third packet, which the harness does not send
    deadline = (t_end if t_end is not None else t_us) + SNIFF_TIMEOUT_US
    skbs: list[Skb] = []
    total = 0
    while total < p.length:
        skb = _next_skb(run, deadline if ev.time.kind != "any" else None)
        if skb is None:
            got = " + ".join(s.text() for s in skbs) if skbs else "nothing"
            raise Failed(Mismatch(ev.line, ev.text, f"{got} sent by {deadline / 1e6:.6f} s", t_us))
        skbs.append(skb)
        total += skb.length
        if run.strict_segments:
            break
    if p.length == 0:  # a zero-window probe; after close(), our FIN or our ACK of the peer's FIN
        skb = _next_skb(run, deadline if ev.time.kind != "any" else None)
        if skb is None:
            raise Failed(Mismatch(ev.line, ev.text, f"nothing sent by {deadline / 1e6:.6f} s", t_us))
        skbs.append(skb)
    first, last = skbs[0], skbs[-1]
    agg = Skb(last.time_us, first.start, total, first.retrans, first.ect, first.cwr, last.fin, last.ack, last.rst)
    actual = f"{agg.text()} at {agg.time_us / 1e6:.6f} s"
    if len(skbs) > 1:
        actual += f" ({len(skbs)} skbs)"
    if agg.start != p.start or agg.length != p.length or not _flags_match(p.flags, agg) or _ecn_mismatch(p, agg):
        raise Failed(Mismatch(ev.line, ev.text, actual, t_us))
    if p.ack is not None and p.ack != agg.ack:
        raise Failed(Mismatch(ev.line, ev.text, actual, t_us))
    run.now_us = max(run.now_us, math.ceil(agg.time_us))
    if ev.time.kind == "any":
        return
    tol = _tolerance(run, t_us)
    hi = (t_end if t_end is not None else t_us) + tol
    if not (t_us - tol <= agg.time_us <= hi):
        raise Failed(Mismatch(ev.line, ev.text, actual, t_us, timing_only=True))


def _tolerance(run: _Run, t_us: int) -> int:
    tol = run.tolerance_us
    if run.last_event is not None:
        dynamic = int(TOLERANCE_PERCENT / 100.0 * (t_us - run.last_event_us))
        tol = max(tol, dynamic)
    return tol


def _flags_match(expected: str, skb: Skb) -> bool:
    """Flags other than PSH. The sender sets PSH as Linux does on new data (every skb of
    more than one segment, `__tcp_transmit_skb`, and the end of each write,
    `tcp_push`), but Linux retransmits whole skbs of its retransmission queue, whose
    boundaries the model does not keep (it resends runs of lost segments), and marks
    pushes inside a long write (`forced_push`) that it does not keep either: compared,
    PSH would part from the kernel on retransmissions (`sack-route-refresh-ip-tos`, line
    34) and inside long writes (`cubic-rto-ss-ca-cwnd-bump`, line 88)."""
    want = set(expected.replace("-", "")) - {"P"}
    have = {"."} | ({"W"} if skb.cwr else set()) | ({"F"} if skb.fin else set()) | ({"R"} if skb.rst else set())
    return want == have


def _ecn_mismatch(p: Packet, skb: Skb) -> bool:
    if p.ecn is None:
        return False
    if p.ecn == "noecn":
        return skb.ect
    if p.ecn in ("ect0", "ect01"):
        return not skb.ect
    return True  # ect1 / ce are never sent by this stack


def _next_skb(run: _Run, deadline_us: Optional[int]) -> Optional[Skb]:
    """The next outbound skb, running the sender's timers until one leaves or the
    deadline passes."""
    while not run.fifo:
        nxt = run.h.next_event_ns()
        if nxt is None:
            return None
        if deadline_us is not None and nxt > deadline_us * 1000:
            _collect(run, run.h.advance(deadline_us * 1000))
            run.now_us = max(run.now_us, deadline_us)
            if not run.fifo:
                return None
            break
        _collect(run, run.h.advance(nxt))
        run.now_us = max(run.now_us, nxt // 1000)
    return run.fifo.pop(0)


# --- system calls ----------------------------------------------------------------------


def _syscall(run: _Run, ev: Event, sc: Syscall, t_us: int) -> None:
    name = sc.name
    if name in NO_OP_CALLS:
        return
    if name == "connect":
        run.conn.active = True
        run.conn.syn_time_us = t_us
        return
    if name == "setsockopt":
        _setsockopt(run, ev, sc, t_us)
        return
    if name == "getsockopt":
        opt = sc.args[2] if len(sc.args) > 2 else ""
        if opt == "SO_ERROR":
            return
        if opt == "SO_SNDBUF":
            if run.sndbuf is None:
                raise Unsupported(f"line {ev.line}: getsockopt SO_SNDBUF without a SO_SNDBUF set (the send "
                                  "buffer's autotuning is not modelled)")
            if sc.int_arg(3) != run.sndbuf:
                raise Failed(Mismatch(ev.line, ev.text, f"SO_SNDBUF = {run.sndbuf}", t_us))
            return
        if opt == "TCP_MAXSEG":
            # `do_tcp_getsockopt`: `tp->mss_cache`, or before the connection the user's
            # MSS (TCP_MSS_DEFAULT, 536, if none was set).
            have = run.conn.mss if run.h is not None else (run.user_mss or TCP_MSS_DEFAULT)
            if sc.int_arg(3) != have:
                raise Failed(Mismatch(ev.line, ev.text, f"TCP_MAXSEG = {have}", t_us))
            return
        raise Unsupported(f"line {ev.line}: getsockopt {opt}")
    if name in ("write", "send", "sendmsg"):
        n, more = _write_args(ev, sc)
        if sc.result != str(n) or sc.errno:
            raise Unsupported(f"line {ev.line}: {name}() returning {sc.result} of {n} bytes (a short or failed "
                              "write is not modelled)")
        _write(run, ev, n, more, t_us)
        return
    if name == "read":
        _read(run, ev, sc, t_us)
        return
    if name == "close":
        _close(run, ev, t_us)
        return
    raise Unsupported(f"line {ev.line}: system call {name}()")


# --- teardown --------------------------------------------------------------------------
# The simulator's connections end with the run; like the handshake, the FIN exchange of
# an idle connection is played here. close() with everything written acknowledged sends
# the FIN at once (`tcp_send_fin`: nothing queued ahead of it, and `tcp_cwnd_test` lets a
# lone FIN past cwnd); the peer's FIN is acknowledged at once (`tcp_fin` in FIN_WAIT2
# calls `tcp_send_ack`). A FIN behind unsent or unacknowledged data would share the
# sender's queue and retransmission timer, which is not modelled: such scripts are
# unsupported.


def _close(run: _Run, ev: Event, t_us: int) -> None:
    if run.h is None:
        raise Unsupported(f"line {ev.line}: close() before the connection is established")
    if run.closed:
        raise Unsupported(f"line {ev.line}: close() twice")
    if run.h.tcp_info()["tcpi_bytes_acked"] != run.written:
        raise Unsupported(f"line {ev.line}: close() with data not yet acknowledged (a FIN queued behind data "
                          "is not modelled)")
    run.closed = True
    if run.received > run.consumed:
        # `tcp_close`: data the application never read aborts the connection with a RST
        # (`tcp_send_active_reset`) instead of a FIN.
        _emit(run, Skb(t_us, run.written + 1, 0, False, False, False, ack=run.ack, rst=True))
        return
    _emit(run, Skb(t_us, run.written + 1, 0, False, False, False, fin=True, ack=run.ack))


def _inbound_after_close(run: _Run, ev: Event, p: Packet, t_us: int) -> None:
    """The peer's ACK of our FIN and its own FIN, which we acknowledge."""
    fin_acked = run.written + 2
    if run.received or "R" in p.flags or p.length > 0 or p.ack is None or p.ack not in (run.written + 1, fin_acked):
        raise Unsupported(f"line {ev.line}: after close(), only the peer's ACK of our FIN and its FIN are modelled")
    if "F" in p.flags:
        if p.ack != fin_acked or run.peer_fin:
            raise Unsupported(f"line {ev.line}: a FIN from the peer that does not acknowledge ours")
        run.peer_fin = True
        _emit(run, Skb(t_us, fin_acked, 0, False, False, False, ack=run.ack))


def _write_args(ev: Event, sc: Syscall) -> tuple[int, bool]:
    """Bytes and MSG_MORE of a write(), send() or sendmsg() (its iovecs' lengths)."""
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
    if n is None:
        raise Unsupported(f"line {ev.line}: {sc.name} of unknown length")
    known = {"0", "MSG_MORE"}
    if not set(f.strip() for f in flags.split("|")) <= known:
        raise Unsupported(f"line {ev.line}: {sc.name} flags {flags}")
    return n, "MSG_MORE" in flags


def _read(run: _Run, ev: Event, sc: Syscall, t_us: int) -> None:
    """The application reads what the peer sent, up to the length asked for. Reading
    leaves the receive window as it was (the model keeps no receive buffer, and a
    window that grows by less than it can be advertised sends no update,
    `tcp_cleanup_rbuf`)."""
    n = sc.int_arg(2)
    if n is None:
        raise Unsupported(f"line {ev.line}: read of unknown length")
    got = min(n, run.received - run.consumed)
    if got == 0:
        raise Unsupported(f"line {ev.line}: a read with no data waiting (EAGAIN) is not modelled")
    if sc.result != str(got):
        raise Failed(Mismatch(ev.line, ev.text, f"read() = {got}", t_us))
    run.consumed += got


def _setsockopt(run: _Run, ev: Event, sc: Syscall, t_us: int) -> None:
    opt = sc.args[2] if len(sc.args) > 2 else ""
    val = sc.args[3] if len(sc.args) > 3 else ""
    if opt == "SO_REUSEADDR":
        return
    if opt in ("TCP_NODELAY", "TCP_CORK"):
        on = sc.int_arg(3) not in (None, 0)
        option = "nodelay" if opt == "TCP_NODELAY" else "cork"
        if run.h is None:
            setattr(run, option, on)
        else:
            run.h.setsockopt(t_us * 1000, option, on)
            _collect(run, run.h.sent())
        return
    if opt == "SO_SNDBUF":
        v = sc.int_arg(3)
        if v is None:
            raise Unsupported(f"line {ev.line}: SO_SNDBUF {val}")
        # `sk_setsockopt`: the value as a u32, at most wmem_max, doubled for overhead.
        run.sndbuf = max(min(v % 2**32, WMEM_MAX) * 2, SOCK_MIN_SNDBUF)
        return
    if opt in NO_OP_IP_OPTIONS and sc.args[1] == "SOL_IP":
        return
    if opt == "TCP_MAXSEG":
        if run.h is not None or run.conn.syn_seen:
            raise Unsupported(f"line {ev.line}: TCP_MAXSEG once the connection is open")
        v = sc.int_arg(3)
        if v is None or not 88 <= v <= 65535 - 40:
            raise Unsupported(f"line {ev.line}: TCP_MAXSEG {sc.args[3]}")
        run.user_mss = v  # `tp->rx_opt.user_mss`
        return
    if opt == "TCP_CONGESTION":
        if run.h is not None:
            raise Unsupported(f"line {ev.line}: TCP_CONGESTION on an established connection")
        run.cca = _cca(val)
        return
    raise Unsupported(f"line {ev.line}: setsockopt {opt}")


def _write(run: _Run, ev: Event, n: int, more: bool, t_us: int) -> None:
    if run.h is None:
        raise Unsupported(f"line {ev.line}: a write before the connection is established")
    queued = run.written - run.h.tcp_info()["tcpi_bytes_acked"]
    if run.sndbuf is not None and queued + n > run.sndbuf:
        raise Unsupported(f"line {ev.line}: {queued + n} bytes queued beyond SO_SNDBUF {run.sndbuf} (a write that "
                          "blocks on the send buffer is not modelled)")
    try:
        run.h.write(t_us * 1000, n, more)
    except OverflowError as e:
        raise Unsupported(f"line {ev.line}: write of {n} bytes: {e}") from None
    run.written += n
    _collect(run, run.h.sent())


# --- %{ }% blocks ----------------------------------------------------------------------


def _code(run: _Run, ev: Event, code: Code, t_us: int) -> None:
    if run.h is None:
        info: dict[str, Any] = {}
    else:
        info = dict(run.h.tcp_info())
        info["tcpi_advmss"] = _advmss(run)
        # `tcp_get_info`: jiffies since the last receipt, in ms.
        jiffies = lambda us: us * KERNEL_HZ // 1_000_000  # noqa: E731
        info["tcpi_last_data_recv"] = (jiffies(t_us) - jiffies(run.lrcvtime_us)) * 1000 // KERNEL_HZ
    for kind, stmt in code.statements:
        if kind == "print":
            continue
        src = stmt.expr if kind == "assert" else stmt[1]
        names = {**CODE_CONSTANTS, **run.namespace, **info}
        for n in sorted(expr_names(src)):
            if n in names:
                continue
            if n in NO_STATE:
                raise Unsupported(f"line {stmt.line if kind == 'assert' else ev.line}: {n}: {NO_STATE[n]}")
            raise Unsupported(f"line {ev.line}: {n} has no value in the simulator")
        try:
            value = evaluate(src, names)
        except (EvalError, TypeError) as e:
            # The script's own Python fails: packetdrill fails the script there.
            if run.failed_assertion is None:
                run.failed_assertion = Mismatch(stmt.line if kind == "assert" else ev.line, src, f"error: {e}", t_us)
            continue
        if kind == "assign":
            run.namespace[stmt[0]] = value
            continue
        if not value and run.failed_assertion is None:
            # packetdrill runs the blocks' Python after the last event, so a packet or
            # system-call mismatch anywhere wins over a failed assertion (named by the
            # assertion's own line, as the kernel's recorded verdicts name it).
            shown = ", ".join(f"{n} = {names[n]}" for n in sorted(expr_names(stmt.expr)) if n.startswith("tcpi_"))
            run.failed_assertion = Mismatch(stmt.line, stmt.expr, shown or "false", t_us)


__all__ = ["run_script", "STACK", "DEFAULT_TOLERANCE_US"]
