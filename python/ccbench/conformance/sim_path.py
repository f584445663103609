"""The path's MTU in a script run on the simulator: the route to the peer as ``ip route
change`` sets it (its ``mtu``, locked or not, ``advmss`` and ``initcwnd``), the peer's
ICMP "fragmentation needed" messages, and the ``tcp_mtu_probing`` sysctls.

The sender's part (``tcp_v4_mtu_reduced``, ``tcp_sync_mss``, ``tcp_simple_retransmit``,
``tcp_mtu_probe``, black-hole detection in ``tcp_write_timeout``) is the simulator's,
reached through ``ScriptedSender.icmp_frag_needed`` and ``ScriptedSender.route_changed``;
a binding without them makes a script that needs them ``unsupported``. Route commands
are read strictly: a word this module does not know makes the script unsupported,
naming it, never ignored.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Optional

from .. import facts
from .script import Event, IcmpPacket
from .sim_state import IPV4_TCP_HEADERS, Run, Unsupported, collect

#: A route's MTU: from IPv4's least (`IPV4_MIN_MTU`) to an IPv4 packet's length.
ROUTE_MTU_RANGE = (68, 65_535)
#: `ip_rt_min_advmss`'s least and an IPv4 packet less headers.
ROUTE_ADVMSS_RANGE = (1, 65_495)
#: packetdrill's default ``--remote_ip`` over IPv4.
DEFAULT_REMOTE_IP = "192.0.2.1"
#: The sysctls of MTU probing and the simulator's TcpConfig field of each, with the key
#: of its range in the simulator's facts and the factor from the sysctl's unit.
MTU_SYSCTLS = {
    "net.ipv4.tcp_mtu_probing": ("mtu_probing", "tcp.mtu_probing", 1),
    "net.ipv4.tcp_base_mss": ("base_mss", "tcp.base_mss", 1),
    "net.ipv4.tcp_probe_threshold": ("probe_threshold", "tcp.probe_threshold", 1),
    # Seconds (`proc_douintvec_minmax` of seconds, kept in seconds).
    "net.ipv4.tcp_probe_interval": ("probe_interval_ns", "tcp.probe_interval_ns", 1_000_000_000),
    "net.ipv4.tcp_mtu_probe_floor": ("mtu_probe_floor", "tcp.mtu_probe_floor", 1),
}
#: What ``route_changed`` and ``icmp_frag_needed`` stand for, for the reasons given
#: when the binding lacks them.
NO_PATH_MTU_MODEL = "the simulator's sender has no path-MTU model (ScriptedSender.{})"


@dataclass(frozen=True)
class Route:
    """A route as ``ip route change`` leaves it: the metrics it names, each None when
    not given (``ip route change`` replaces the route, so a metric left out is unset
    again: the device's MTU, the default advmss and initial cwnd)."""

    mtu: Optional[int] = None
    mtu_locked: bool = False
    advmss: Optional[int] = None
    initcwnd: Optional[int] = None


def parse_route(line: str, remote_ip: str = DEFAULT_REMOTE_IP) -> Optional[Route]:
    """The route an ``ip route change|replace`` line sets for the script's peer, or None
    when the line is not a route change. Raises :class:`Unsupported` for a route to
    elsewhere, a device other than the tun device, or any word it does not know."""
    words = line.split()
    if words[:2] != ["ip", "route"]:
        return None
    if len(words) < 3 or words[2] not in ("change", "replace"):
        raise Unsupported(f"shell command {line!r}: only 'ip route change' and 'ip route replace' are modelled")
    if len(words) < 4:
        raise Unsupported(f"shell command {line!r}: no destination")
    dst = words[3]
    if dst != remote_ip and dst != f"{remote_ip}/32":
        raise Unsupported(f"shell command {line!r}: a route to {dst}, not to the peer {remote_ip}")
    mtu: Optional[int] = None
    locked = False
    advmss: Optional[int] = None
    initcwnd: Optional[int] = None
    rest = words[4:]
    i = 0

    def value(what: str) -> str:
        if i + 1 >= len(rest):
            raise Unsupported(f"shell command {line!r}: '{what}' without a value")
        return rest[i + 1]

    while i < len(rest):
        w = rest[i]
        if w == "via":
            try:
                ipaddress.IPv4Address(value(w))
            except ValueError:
                raise Unsupported(f"shell command {line!r}: gateway {value(w)!r} is not an IPv4 address") from None
            i += 2
        elif w == "dev":
            if value(w) != "tun0":
                raise Unsupported(f"shell command {line!r}: device {value(w)!r}, not the tun device tun0")
            i += 2
        elif w == "mtu":
            if value(w) == "lock":
                locked = True
                i += 1
            mtu = _number(line, "mtu", value("mtu"), ROUTE_MTU_RANGE)
            i += 2
        elif w == "advmss":
            advmss = _number(line, "advmss", value(w), ROUTE_ADVMSS_RANGE)
            i += 2
        elif w == "initcwnd":
            lo, hi, _ = facts.int_range("tcp.init_cwnd")
            initcwnd = _number(line, "initcwnd", value(w), (lo, hi))
            i += 2
        else:
            raise Unsupported(f"shell command {line!r}: route attribute {w!r} is not modelled")
    return Route(mtu, locked, advmss, initcwnd)


def _number(line: str, what: str, text: str, bounds: tuple[int, int]) -> int:
    if not text.isdigit() or not bounds[0] <= int(text) <= bounds[1]:
        raise Unsupported(f"shell command {line!r}: {what} {text!r} outside {bounds[0]} to {bounds[1]}")
    return int(text)


def mtu_sysctl(run: Run, name: str, value: str) -> None:
    """A ``tcp_mtu_probing`` sysctl into the sender's settings, within the range the
    simulator takes (else unsupported)."""
    field, key, scale = MTU_SYSCTLS[name]
    lo, hi, allowed = facts.int_range(key)
    text = value.strip().strip('"')
    try:
        number = int(text, 0) * scale
    except ValueError:
        raise Unsupported(f"sysctl {name}={value}") from None
    if not lo <= number <= hi:
        raise Unsupported(f"sysctl {name}={value} (the simulator takes {allowed})")
    run.stack[field] = number


def route_command(run: Run, route: Route, t_us: int) -> None:
    """A route change: before the connection it sets what the handshake uses (the MSS
    the SYN-ACK offers, the initial cwnd) and is handed to the sender once it exists; on
    an open connection it goes to the sender at once (`ip route change` flushes the
    route cache, so the socket's next transmit finds the new route and its MTU:
    `__sk_dst_check`, `tcp_current_mss` -> `tcp_sync_mss`)."""
    if run.h is None:
        run.route = route
        return
    if route.initcwnd != (run.route.initcwnd if run.route else None) and run.stack.get("slow_start_after_idle"):
        # `tcp_init_cwnd` is read again at a restart after idle (`tcp_cwnd_restart`).
        raise Unsupported("a route's initcwnd changed on an open connection with slow start after idle on")
    run.route = route
    _route_changed(run, route, t_us)


def established(run: Run, t_us: int) -> None:
    """The sender now exists: hand it a route the set-up changed, and check that what
    the script's sysctls ask of it is there."""
    if run.stack.get("mtu_probing") and not hasattr(run.h, "route_changed"):
        raise Unsupported(
            f"net.ipv4.tcp_mtu_probing={run.stack['mtu_probing']}: " + NO_PATH_MTU_MODEL.format("route_changed")
        )
    route = run.route
    # The route's advmss is only what the SYN-ACK offered (which the driver checks); its
    # MTU is the sender's to know.
    if route is not None and (route.mtu is not None or (route.advmss is not None and hasattr(run.h, "route_changed"))):
        _route_changed(run, route, t_us)


def _route_changed(run: Run, route: Route, t_us: int) -> None:
    if not hasattr(run.h, "route_changed"):
        raise Unsupported("a route's mtu or advmss: " + NO_PATH_MTU_MODEL.format("route_changed"))
    mtu = route.mtu if route.mtu is not None else run.tun_mtu
    run.h.route_changed(t_us * 1000, mtu, route.mtu_locked, route.advmss)
    collect(run, run.h.sent())


def route_mtu(run: Run) -> int:
    """The route's MTU: its ``mtu`` metric, else the tun device's."""
    return run.route.mtu if run.route is not None and run.route.mtu is not None else run.tun_mtu


def inbound_icmp(run: Run, ev: Event, p: IcmpPacket, t_us: int) -> None:
    """The peer's ICMP: "fragmentation needed" (RFC 1191) quoting one of our segments
    goes to the sender (`tcp_v4_err` -> `tcp_v4_mtu_reduced`), which checks the quote
    against snd_una..snd_nxt as the kernel does. Any other ICMP is unsupported."""
    if (p.type, p.code) != ("unreachable", "frag_needed"):
        raise Unsupported(f"line {ev.line}: inbound ICMP {p.type}{' ' + p.code if p.code else ''}")
    if p.mtu is None:
        raise Unsupported(f"line {ev.line}: ICMP fragmentation needed without an MTU")
    if p.quoted != "tcp":
        raise Unsupported(f"line {ev.line}: ICMP fragmentation needed quoting a {p.quoted} packet")
    if run.h is None:
        raise Unsupported(f"line {ev.line}: ICMP fragmentation needed before the connection is established")
    if not hasattr(run.h, "icmp_frag_needed"):
        raise Unsupported(f"line {ev.line}: ICMP fragmentation needed: " + NO_PATH_MTU_MODEL.format("icmp_frag_needed"))
    quoted = quoted_offset(run, p)
    if quoted is None:
        return  # below the first data byte, so below snd_una: `tcp_v4_err` drops it
    run.h.icmp_frag_needed(t_us * 1000, p.mtu, quoted)
    collect(run, run.h.sent())


def quoted_offset(run: Run, p: IcmpPacket) -> Optional[int]:
    """The quoted segment's first byte as the sender's stream offset (0: the first data
    byte, after the SYN and any data the SYN carried), or None for a quote of the SYN
    or before it."""
    off = p.start - 1 - run.syn_data
    return off if off >= 0 else None


def handshake_mss_cap(run: Run) -> Optional[int]:
    """With a route changed, its MTU less headers, which caps the MSS the connection
    starts with (`tcp_v4_syn_recv_sock` -> `tcp_sync_mss` with `dst_mtu`; the route's
    advmss is only offered)."""
    if run.route is None:
        return None
    return route_mtu(run) - IPV4_TCP_HEADERS


def init_cwnd(run: Run) -> dict[str, Any]:
    """The route's initcwnd as the sender's setting (`tcp_init_cwnd`), if set."""
    return {"init_cwnd": run.route.initcwnd} if run.route is not None and run.route.initcwnd else {}
