"""Run a packetdrill script against the simulator's TCP sender.

The script plays the remote peer; the simulator is the local stack. The driver walks the
events in time order as packetdrill does (relative times anchored as in its
``adjust_relative_event_times``), feeds the peer's ACKs and the application's writes to
``ccbench._core.ScriptedSender`` and matches what it sends against the script's ``>``
lines: outbound skbs form a queue that each ``>`` line reads from, consecutive skbs
aggregated up to the expected length as packetdrill does without ``--strict_segments``.

What the simulator has no mechanism for (the peer's data out of order or in an
exchange, a FIN with data or after data, a write that blocks on the send buffer,
socket options it has no meaning for, IPv6, sysctls changed away from the defaults file
without a matching knob) makes the script ``unsupported`` with the reason, never a
verdict on a stack that was not modelled. The run's state is in ``sim_state``, the
application's system calls in ``sim_calls``, Fast Open in ``sim_fastopen``.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path
from typing import Any, Optional

from .. import facts
from ..scenario import Tcp
from .script import (
    CODE_CONSTANTS,
    DEFAULT_TOLERANCE_US,
    Code,
    Command,
    EvalError,
    Event,
    IcmpPacket,
    Packet,
    ScriptError,
    Syscall,
    evaluate,
    expr_names,
    parse_file,
)
from . import sim_close, sim_fastopen, sim_path
from .sim_calls import check_returned, read_returned, syscall, write_returned
from .sim_state import (
    _MODULE_PARAM,
    CUBIC_MODULE_PARAMS,
    DROP_ALL_QDISC,
    ENVIRONMENT_OPTIONS,
    IGNORED_COMMANDS,
    IGNORED_SYSCTLS,
    INVALID_RATELIMIT_US,
    IPV4_TCP_HEADERS,
    KERNEL_HZ,
    MODELLED_DEFAULTS,
    NO_STATE,
    SNIFF_TIMEOUT_US,
    STACK,
    STACK_SYSCTLS,
    TCP_MAX_QUICKACKS,
    TS_OPTION_BYTES,
    Failed,
    Run,
    Skb,
    Unsupported,
    advmss,
    cca_name,
    collect,
    emit,
    snd_nxt_byte,
)
from .verdict import Mismatch, Verdict


def run_script(path: Path, name: str, tolerance_us: Optional[int] = None,
               cc_params: Optional[dict[str, float]] = None) -> Verdict:  # fmt: skip
    """The simulator's verdict on one script; ``name`` is how the verdict names it.
    ``cc_params`` overrides congestion-control parameters by name (as a scenario may)."""
    try:
        script = parse_file(path)
    except ScriptError as e:
        return Verdict(name, STACK, "unsupported", reason=f"cannot parse line {e.line}: {e.message}")
    tol = tolerance_us if tolerance_us is not None else script.tolerance_us
    run = Run(script, tol, dict(cc_params or {}))
    try:
        _setup(run)
        for ev in script.events:
            _event(run, ev)
        if run.failed_assertion is not None:
            raise Failed(run.failed_assertion)
        check_returned(run)
        if run.blocked is not None:
            ev = run.blocked[0]
            raise Failed(Mismatch(ev.line, ev.text, "write() still waiting for the send buffer at the end", run.now_us))
        if run.read_waiting is not None:
            ev = run.read_waiting[0]
            raise Failed(Mismatch(ev.line, ev.text, "read() still waiting for data at the end", run.now_us))
    except Unsupported as u:
        return Verdict(name, STACK, "unsupported", reason=u.reason)
    except Failed as f:
        return Verdict(name, STACK, "fail", mismatch=f.mismatch)
    return Verdict(name, STACK, "pass")


# --- set-up ----------------------------------------------------------------------------


def _setup(run: Run) -> None:
    s = run.script
    for opt, value in s.options.items():
        if opt in ("tolerance_usecs", "tcp_ts_tick_usecs") or opt in ENVIRONMENT_OPTIONS:
            continue
        if opt == "strict_segments":
            run.strict_segments = True
        elif opt == "ip_version" and value == "ipv4":
            continue
        elif opt == "mtu" and _positive(value) >= 68 + IPV4_TCP_HEADERS:
            run.tun_mtu = int(value)
        elif opt == "mss" and _positive(value):
            run.gro_mss = int(value)
        elif opt == "tolerance_percent" and _number(value) >= 0:
            run.tolerance_percent = float(value)
        else:
            raise Unsupported(f"command-line option --{opt}{'=' + value if value else ''}")
    commands = [s.init] if s.init else []
    for c in commands:
        _apply_command(run, c, initial=True)


def _positive(value: str) -> int:
    return int(value) if value.isdigit() else 0


def _number(value: str) -> float:
    """A finite number, or -1 for anything else (refused as negative)."""
    try:
        x = float(value)
    except ValueError:
        return -1.0
    return x if math.isfinite(x) else -1.0


def _apply_command(run: Run, cmd: Any, initial: bool) -> None:
    effective = [line for line in cmd.other if not any(line.startswith(p) for p in IGNORED_COMMANDS)]
    remote_ip = run.script.options.get("remote_ip") or sim_path.DEFAULT_REMOTE_IP
    if not initial and run.h is not None:
        routes = [sim_path.parse_route(line, remote_ip) for line in effective]
        if effective and all(routes) and not cmd.sysctls:
            for route in routes:
                sim_path.route_command(run, route, run.now_us)
            return
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
        route = sim_path.parse_route(line, remote_ip)
        if route is not None:
            sim_path.route_command(run, route, run.now_us)
            continue
        m = _MODULE_PARAM.match(line)
        if m and m.group(2) == "tcp_cubic" and m.group(3) in CUBIC_MODULE_PARAMS:
            run.cubic_module[m.group(3)] = float(m.group(1))
            continue
        if line.startswith("tc qdisc replace dev tun0 root fq") or line.startswith("tc qdisc add dev tun0 root fq"):
            run.paced = True  # fq paces by the skbs' departure times (EDT)
            continue
        words = line.split()
        pairs = set(zip(words[3::2], words[4::2]))
        if words[:3] == ["ethtool", "-K", "tun0"] and len(words) == 7 and pairs == {("tso", "off"), ("gso", "off")}:
            run.gso = False  # every skb one segment (`sk_can_gso` false: size_goal = MSS)
            continue
        raise Unsupported(f"shell command {line!r}")
    for name, value in cmd.sysctls.items():
        if name == "net.ipv4.tcp_congestion_control":
            run.cca = cca_name(value)
        elif name == "net.ipv4.tcp_fastopen":
            sim_fastopen.sysctl(run, value)
        elif name == "net.ipv4.tcp_ecn":
            run.ecn_sysctl = int(value)
        elif name == "net.ipv4.tcp_early_retrans":
            # 0 turns tail loss probes off; 3 and 4 both probe (the RACK code path
            # replaced the early-retransmit variants).
            if value not in ("0", "3", "4"):
                raise Unsupported(f"sysctl net.ipv4.tcp_early_retrans={value}")
            run.tlp = value != "0"
        elif name in sim_path.MTU_SYSCTLS:
            sim_path.mtu_sysctl(run, name, value)
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
        numbers: list[Any] = [int(v) for v in _shell_arithmetic(value).split()]
        # A duration's sysctl is in its own unit (tcp_probe_interval: seconds).
        extra = Tcp.model_fields[field_name].json_schema_extra
        if isinstance(extra, dict) and "sysctl_unit_ns" in extra:
            numbers = [f"{n * int(extra['sysctl_unit_ns'])}ns" for n in numbers]  # type: ignore[call-overload]
        return getattr(Tcp.model_validate({key: numbers if len(numbers) > 1 else numbers[0]}), field_name)
    except ValueError:  # pydantic's ValidationError is one
        raise Unsupported(f"sysctl {name}={value}") from None


_ARITHMETIC = re.compile(r"\$\(\(([0-9+\-*/ ()]+)\)\)")


def _shell_arithmetic(value: str) -> str:
    """A sysctl value with bash's integer arithmetic (``$((256*1024))``) worked out."""

    def evaluate(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return evaluate(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            a, b = evaluate(node.left), evaluate(node.right)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
            return ops[type(node.op)] if type(node.op) in ops else int(a / b)
        raise ValueError("not integer arithmetic")

    return _ARITHMETIC.sub(lambda m: str(evaluate(ast.parse(m.group(1).replace("/", "//"), mode="eval"))), value)


# --- events ----------------------------------------------------------------------------


def _script_time(run: Run, ev: Event) -> tuple[int, Optional[int]]:
    """packetdrill's expected time of an event (and the end of a range), µs."""
    t = ev.time
    if t.kind in ("absolute", "absolute_range"):
        return t.start_us, t.end_us
    if t.kind == "any":
        return run.now_us, None
    last = run.last_event
    # packetdrill's `is_event_start_time_anchored`: an inbound packet, TCP or ICMP.
    anchored = (
        last is not None
        and ev.kind == "packet"
        and last.kind == "packet"
        and isinstance(last.body, (Packet, IcmpPacket))
        and last.body.direction == "<"
        and isinstance(ev.body, (Packet, IcmpPacket))
        and ev.body.direction == "<"
    )
    base = run.last_event_us if anchored else run.now_us
    end = base + t.end_us if t.end_us is not None else None
    return base + t.start_us, end


def _event(run: Run, ev: Event) -> None:
    t_us, t_end = _script_time(run, ev)
    if ev.kind == "command":
        assert isinstance(ev.body, Command)
        if any(line.startswith("ip route") for line in ev.body.other):
            _wait_until(run, t_us)  # the sender sees the new route from then on
        _apply_command(run, ev.body, initial=run.h is None)
    elif ev.kind == "packet" and isinstance(ev.body, IcmpPacket):
        if ev.body.direction == ">":
            raise Unsupported(f"line {ev.line}: an outbound ICMP packet (the stack under test sends none)")
        _wait_until(run, t_us)
        sim_path.inbound_icmp(run, ev, ev.body, t_us)
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
        # A blocking call's "...end": when it returns, from its start if relative.
        end = ev.body.end_us
        run.event_end_us = None if end is None else end + (t_us if ev.time.kind == "relative" else 0)
        syscall(run, ev, ev.body, t_us)
    elif ev.kind == "code":
        _wait_until(run, t_us)
        assert isinstance(ev.body, Code)
        _code(run, ev, ev.body, t_us)
    run.last_event = ev
    run.last_event_us = t_us


def _wait_until(run: Run, t_us: int) -> None:
    if t_us > run.now_us:
        if run.h is not None:
            collect(run, run.h.advance(t_us * 1000))
        run.now_us = t_us


# --- the handshake ---------------------------------------------------------------------


def _inbound(run: Run, ev: Event, p: Packet, t_us: int) -> None:
    c = run.conn
    if sim_close.inbound(run, ev, p, t_us):
        return
    if p.is_syn:
        if "." in p.flags:  # SYN-ACK to our connect()
            if not c.active:
                raise Unsupported(f"line {ev.line}: SYN-ACK without a connect()")
            _peer_syn_options(run, p)
            resend = sim_fastopen.synack(run, ev, p)
            _establish(run, p, t_us, rtt_us=t_us - c.syn_time_us, ack_time_us=t_us)
            sim_fastopen.established(run, resend, t_us)
        else:  # the peer's SYN to our listener; the SYN-ACK leaves at once
            _peer_syn_options(run, p)
            sim_fastopen.passive_syn(run, ev, p)
            c.syn_time_us = t_us
            c.syn_seen = True
        return
    if run.h is None:
        if c.syn_seen and "." in p.flags and p.length == 0 and not c.active:
            _establish(run, p, t_us, rtt_us=t_us - c.syn_time_us, ack_time_us=t_us)
            return
        raise Unsupported(f"line {ev.line}: a packet before the connection is established")
    if p.ack is not None and p.ack > snd_nxt_byte(run):
        _challenge_ack(run, t_us)
        return
    if p.length > 0:
        _inbound_data(run, ev, p, t_us)
    if p.ack is None:
        raise Unsupported(f"line {ev.line}: inbound packet without ACK")
    if p.ecn not in (None, "noecn", "ect0", "ect1"):
        raise Unsupported(f"line {ev.line}: inbound CE mark (the sender's receive path is not modelled)")
    ack = sim_close.ack_to_seg(run, ev, p.ack)
    if ack is None:
        ack = _to_seg(run, ev, p.ack, "ack")
    sacks = [blk for blk in (_sack_to_segs(run, ev, a, b) for a, b in p.sack_blocks()) if blk[0] < blk[1]]
    rwnd = (p.win or 0) << (c.peer_wscale if c.wscale_ok else 0)
    ece = "E" in p.flags
    run.h.receive(t_us * 1000, ack, rwnd, sacks, ece, p.length)
    collect(run, run.h.sent())
    write_returned(run, t_us)
    if "F" in p.flags:
        sim_close.inbound_fin(run, ev, p, t_us)


def _inbound_data(run: Run, ev: Event, p: Packet, t_us: int) -> None:
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
        raise Unsupported(
            f"line {ev.line}: inbound data after an exchange (delayed ACKs in pingpong mode are not modelled)"
        )
    if run.quickacks == 0:
        raise Unsupported(f"line {ev.line}: inbound data after the quick ACKs (delayed ACKs are not modelled)")
    if run.gro_mss is not None and p.length > run.gro_mss:
        raise Unsupported(f"line {ev.line}: inbound data as one GRO packet of several segments (--mss)")
    run.received += p.length
    run.lrcvtime_us = t_us
    run.quickacks -= 1  # `tcp_dec_quickack_mode` as the ACK leaves
    emit(run, Skb(t_us, snd_nxt_byte(run), 0, False, False, False, ack=run.ack))
    read_returned(run, t_us)


def _challenge_ack(run: Run, t_us: int) -> None:
    """A segment that acknowledges data never sent is dropped, its timestamp not taken,
    and answered with a challenge ACK (`tcp_ack` -> `tcp_send_challenge_ack`, RFC 5961
    and RFC 9293 3.10.7.4), at most one per `tcp_invalid_ratelimit` (500 ms) per socket
    (`__tcp_oow_rate_limited`; the host-wide limit is off by default)."""
    if run.last_oow_ack_us is not None and t_us - run.last_oow_ack_us < INVALID_RATELIMIT_US:
        return
    run.last_oow_ack_us = t_us
    emit(run, Skb(t_us, snd_nxt_byte(run), 0, False, False, False, ack=run.ack))


def _sack_to_segs(run: Run, ev: Event, start: int, end: int) -> tuple[int, int]:
    """A SACK block in whole segments. Linux tags only whole MSS-sized segments (and a
    write's short end) of a partly covered skb (`tcp_match_skb_to_sack`): an edge inside
    a segment rounds inward, so a block that covers no whole segment tags nothing and
    leaves an empty range here."""
    lo, hi = start - 1 - run.syn_data, end - 1 - run.syn_data
    if lo < 0:
        raise Unsupported(f"line {ev.line}: SACK block {start} before the first data byte")
    seg, seg_start = run.h.seg_floor(lo)
    first = seg if seg_start == lo else seg + 1
    last = run.h.seg_floor(hi)[0]
    return first, max(first, last)


def _to_seg(run: Run, ev: Event, byte: int, what: str) -> int:
    off = byte - 1 - run.syn_data
    if off < 0:
        raise Unsupported(f"line {ev.line}: {what} {byte} before the first data byte")
    seg, seg_start = run.h.seg_floor(off)
    if seg_start == off:
        return seg
    raise Unsupported(f"line {ev.line}: {what} {byte} is not on a segment boundary (MSS {run.conn.mss})")


def _peer_syn_options(run: Run, p: Packet) -> None:
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
    # (`tcp_mss_clamp`), less the timestamp option. A route with an `mtu` metric caps it
    # by that MTU less headers (`tcp_mtu_to_mss`); its `advmss` is only what is offered.
    cap = sim_path.handshake_mss_cap(run)
    if cap is None:
        cap = advmss(run)
    elif run.user_mss:
        cap = min(cap, run.user_mss)
    c.mss = min(peer_mss, cap) - (TS_OPTION_BYTES if c.ts_ok else 0)
    # `rx_opt.mss_clamp`: the peer's MSS within the user's TCP_MAXSEG (the route's MTU
    # and advmss do not bound it; `tcp_mtu_to_mss` does, each time it syncs).
    c.mss_clamp = min(peer_mss, run.user_mss) if run.user_mss else peer_mss
    lo, hi, allowed = facts.int_range("tcp.mss")
    if not lo <= c.mss <= hi:
        raise Unsupported(f"an MSS of {c.mss} bytes (the simulator takes tcp.mss {allowed})")
    # RFC 3168 negotiation: the SYN carries ECE and CWR.
    syn_ecn = "E" in p.flags and ("W" in p.flags or "." in p.flags)
    c.ecn_ok = syn_ecn and run.ecn_sysctl in (1, 2)


def _establish(run: Run, p: Packet, t_us: int, rtt_us: int, ack_time_us: int) -> None:
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
    sim_path.established(run, ack_time_us)


def _new_harness(run: Run, rtt_us: int, rwnd: int) -> Any:
    from ccbench import _core

    tcp = {
        **run.stack,
        **sim_path.init_cwnd(run),
        "mss": run.conn.mss,
        "hz": KERNEL_HZ,
        "tlp": run.tlp,
        "sack": run.conn.sack_ok,
    }
    h = _core.ScriptedSender(
        cca=run.cca,
        cc_params={**(run.cubic_module if run.cca == "cubic" else {}), **run.cc_params},
        handshake_rtt_ns=max(rtt_us, 1) * 1000,
        snd_wnd=rwnd,
        ecn="classic" if run.conn.ecn_ok else "off",
        paced=run.paced or run.cca == "bbr",
        gso=run.gso,
        tcp=json.dumps(tcp),
        tcp_options=TS_OPTION_BYTES if run.conn.ts_ok else 0,
        mss_clamp=run.conn.mss_clamp,
    )
    if run.sndbuf is not None:
        h.set_sndbuf(run.sndbuf)
    return h


# --- outbound packets ------------------------------------------------------------------


def _outbound(run: Run, ev: Event, p: Packet, t_us: int, t_end: Optional[int]) -> None:
    c = run.conn
    if run.h is None and not run.gone:
        # Our SYN or SYN-ACK: its flags, the MSS it offers and its Fast Open part; no
        # time, and no other options.
        if p.is_syn:
            if c.active and "." in p.flags:
                raise Failed(Mismatch(ev.line, ev.text, "S 0:0(0) (an active open sends a SYN)", t_us))
            _syn_mss_option(run, ev, p, t_us)
            sim_fastopen.outbound_syn(run, ev, p, t_us)
            return
        raise Unsupported(f"line {ev.line}: an outbound packet before the handshake completes")
    if p.is_syn:
        raise Unsupported(f"line {ev.line}: an outbound SYN on an established connection")
    handshake_ack = c.active and p.start == 1 + run.syn_data and p.ack == 1 and not set(p.flags) & set("FR")
    if p.length == 0 and not run.closed_fd and not run.written and handshake_ack:
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
    agg = Skb(
        last.time_us,
        first.start,
        total,
        first.retrans,
        first.ect,
        first.cwr,
        last.fin,
        last.ack,
        last.rst,
        last.ack_flag,
    )
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


def _syn_mss_option(run: Run, ev: Event, p: Packet, t_us: int) -> None:
    """The MSS our SYN or SYN-ACK offers: the route's advmss (the tun device's MTU less
    headers), lowered by TCP_MAXSEG (`tcp_advertise_mss`, `tcp_synack_options`)."""
    opt = p.option("mss")
    if opt is not None and opt.value != advmss(run):
        raise Failed(Mismatch(ev.line, ev.text, f"{p.flags} with <mss {advmss(run)}>", t_us))


def _tolerance(run: Run, t_us: int) -> int:
    tol = run.tolerance_us
    if run.last_event is not None:
        dynamic = int(run.tolerance_percent / 100.0 * (t_us - run.last_event_us))
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
    have = (
        ({"."} if skb.ack_flag else set())
        | ({"W"} if skb.cwr else set())
        | ({"F"} if skb.fin else set())
        | ({"R"} if skb.rst else set())
    )
    return want == have


def _ecn_mismatch(p: Packet, skb: Skb) -> bool:
    if p.ecn is None:
        return False
    if p.ecn == "noecn":
        return skb.ect
    if p.ecn in ("ect0", "ect01"):
        return not skb.ect
    return True  # ect1 / ce are never sent by this stack


def _next_skb(run: Run, deadline_us: Optional[int]) -> Optional[Skb]:
    """The next outbound skb, running the sender's timers until one leaves or the
    deadline passes."""
    while not run.fifo:
        if run.h is None:
            return None
        nxt = run.h.next_event_ns()
        if nxt is None:
            return None
        if deadline_us is not None and nxt > deadline_us * 1000:
            collect(run, run.h.advance(deadline_us * 1000))
            run.now_us = max(run.now_us, deadline_us)
            if not run.fifo:
                return None
            break
        collect(run, run.h.advance(nxt))
        run.now_us = max(run.now_us, nxt // 1000)
    return run.fifo.pop(0)


# --- %{ }% blocks ----------------------------------------------------------------------


def _code(run: Run, ev: Event, code: Code, t_us: int) -> None:
    if run.h is None:
        info: dict[str, Any] = {}
    else:
        info = dict(run.h.tcp_info())
        info["tcpi_advmss"] = advmss(run)
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
