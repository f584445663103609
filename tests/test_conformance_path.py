"""The path-MTU part of the simulator's driver (ccbench.conformance.sim_path): ICMP lines
and route commands parsed strictly, the tcp_mtu_probing sysctls mapped to the sender's
settings, and what goes to ScriptedSender (a stand-in here) or makes a script
unsupported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ccbench.conformance import sim_path
from ccbench.conformance.script import IcmpPacket, ScriptError, parse
from ccbench.conformance.sim import run_script
from ccbench.conformance.sim_state import Run, Unsupported

OWN = Path(__file__).parent / "conformance" / "scripts"


def _body(line: str) -> Any:
    return parse(f"0 {line}\n").events[0].body


def test_icmp_lines_parse_with_type_code_mtu_and_quote() -> None:
    assert _body("< icmp unreachable frag_needed mtu 640 [2001:3001(1000)]") == IcmpPacket(
        "<", "unreachable", "frag_needed", 640, None, "tcp", 2001, 3001, 1000
    )
    assert _body("< [ect0] icmp unreachable port_unreachable [udp (10)]") == IcmpPacket(
        "<", "unreachable", "port_unreachable", quoted="udp", length=10
    )
    assert _body("< icmp echo_reply id 7") == IcmpPacket("<", "echo_reply", echo_id=7)
    assert _body("> icmp unreachable frag_needed mtu 1400").mtu == 1400
    with pytest.raises(ScriptError):
        parse("0 < icmp unreachable frag_needed mtu [1:2(1)]\n")


def test_route_changes_parse_their_metrics() -> None:
    r = sim_path.parse_route("ip route change 192.0.2.1 via 192.168.0.2 dev tun0 advmss 600 mtu lock 640 initcwnd 11")
    assert r == sim_path.Route(mtu=640, mtu_locked=True, advmss=600, initcwnd=11)
    assert sim_path.parse_route("ip route replace 192.0.2.1/32 dev tun0 mtu 1200") == sim_path.Route(1200)
    # ip route change replaces the route: metrics left out are unset again.
    assert sim_path.parse_route("ip route change 192.0.2.1 via 192.168.0.2 dev tun0") == sim_path.Route()
    assert sim_path.parse_route("tc qdisc add dev tun0 root pfifo") is None
    assert sim_path.parse_route("ip route change 10.0.0.1 dev tun0 mtu 1200", "10.0.0.1") == sim_path.Route(1200)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("ip route add 192.0.2.1 dev tun0 mtu 1200", "only 'ip route change' and 'ip route replace'"),
        ("ip route change 192.0.2.7 dev tun0 mtu 1200", "a route to 192.0.2.7, not to the peer 192.0.2.1"),
        ("ip route change 192.0.2.1 dev eth0", "device 'eth0', not the tun device tun0"),
        ("ip route change 192.0.2.1 dev tun0 rto_min 10ms", "route attribute 'rto_min' is not modelled"),
        ("ip route change 192.0.2.1 dev tun0 mtu lock", "'mtu' without a value"),
        ("ip route change 192.0.2.1 dev tun0 mtu 40", "mtu '40' outside 68 to 65535"),
        ("ip route change 192.0.2.1 dev tun0 advmss x", "advmss 'x' outside"),
        ("ip route change 192.0.2.1 via fd::1 dev tun0", "gateway 'fd::1' is not an IPv4 address"),
        ("ip route change 192.0.2.1 dev tun0 initcwnd 0", "initcwnd '0' outside 1 to"),
        ("ip route", "only 'ip route change'"),
    ],
)
def test_a_route_command_not_understood_is_unsupported_with_the_reason(line: str, why: str) -> None:
    with pytest.raises(Unsupported) as e:
        sim_path.parse_route(line)
    assert why in e.value.reason and "\n" not in e.value.reason


def _run(text: str = "") -> Run:
    return Run(parse(text), 4000, {})


def test_mtu_probing_sysctls_map_to_the_senders_settings() -> None:
    run = _run()
    for name, value in [
        ("net.ipv4.tcp_mtu_probing", "1"),
        ("net.ipv4.tcp_base_mss", "512"),
        ("net.ipv4.tcp_probe_threshold", "16"),
        ("net.ipv4.tcp_probe_interval", "300"),
        ("net.ipv4.tcp_mtu_probe_floor", "128"),
    ]:
        sim_path.mtu_sysctl(run, name, value)
    assert run.stack == {
        "mtu_probing": 1,
        "base_mss": 512,
        "probe_threshold": 16,
        "probe_interval_ns": 300_000_000_000,
        "mtu_probe_floor": 128,
    }
    for name, value in [
        ("net.ipv4.tcp_mtu_probing", "3"),
        ("net.ipv4.tcp_base_mss", "20"),
        ("net.ipv4.tcp_base_mss", "x"),
    ]:
        with pytest.raises(Unsupported, match=f"sysctl {name}={value}"):
            sim_path.mtu_sysctl(run, name, value)


class FakeSender:
    """What the driver calls on a ScriptedSender with a path-MTU model."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def icmp_frag_needed(self, now_ns: int, mtu: int, quoted_seq: int) -> None:
        self.calls.append(("icmp_frag_needed", now_ns, mtu, quoted_seq))

    def route_changed(self, now_ns: int, mtu: int, mtu_locked: bool, advmss: Any) -> None:
        self.calls.append(("route_changed", now_ns, mtu, mtu_locked, advmss))

    def sent(self) -> list[Any]:
        return []


def test_an_icmp_frag_needed_goes_to_the_sender_with_the_quoted_stream_offset() -> None:
    script = parse("0.1 < icmp unreachable frag_needed mtu 640 [2001:3001(1000)]\n")
    ev = script.events[0]
    run = Run(script, 4000, {})
    run.h = FakeSender()
    sim_path.inbound_icmp(run, ev, ev.body, 100_000)
    assert run.h.calls == [("icmp_frag_needed", 100_000_000, 640, 2000)]
    # A quote of the SYN (sequence 0) lies below snd_una: dropped as tcp_v4_err does.
    sim_path.inbound_icmp(run, ev, IcmpPacket("<", "unreachable", "frag_needed", 640), 100_000)
    assert len(run.h.calls) == 1
    # Data the SYN carried comes before the sender's byte 0.
    run.syn_data = 960
    sim_path.inbound_icmp(run, ev, ev.body, 100_000)
    assert run.h.calls[-1][3] == 1040


@pytest.mark.parametrize(
    ("icmp", "why"),
    [
        (IcmpPacket("<", "unreachable", "port_unreachable"), "inbound ICMP unreachable port_unreachable"),
        (IcmpPacket("<", "unreachable", "frag_needed"), "without an MTU"),
        (IcmpPacket("<", "unreachable", "frag_needed", 600, quoted="udp"), "quoting a udp packet"),
    ],
)
def test_other_icmp_is_unsupported(icmp: IcmpPacket, why: str) -> None:
    script = parse("0 < icmp unreachable frag_needed mtu 640 [1:2(1)]\n")
    run = Run(script, 4000, {})
    run.h = FakeSender()
    with pytest.raises(Unsupported, match=why):
        sim_path.inbound_icmp(run, script.events[0], icmp, 0)


def test_without_the_senders_methods_the_script_is_unsupported() -> None:
    script = parse("0 < icmp unreachable frag_needed mtu 640 [1:2(1)]\n")
    run = Run(script, 4000, {})
    run.h = object()
    with pytest.raises(Unsupported, match=r"no path-MTU model \(ScriptedSender.icmp_frag_needed\)"):
        sim_path.inbound_icmp(run, script.events[0], script.events[0].body, 0)
    with pytest.raises(Unsupported, match=r"ScriptedSender.route_changed"):
        sim_path.route_command(run, sim_path.Route(1200), 0)
    run.stack["mtu_probing"] = 1
    with pytest.raises(Unsupported, match=r"tcp_mtu_probing=1: .*ScriptedSender.route_changed"):
        sim_path.established(run, 0)


def test_route_changes_reach_the_sender_before_and_after_the_handshake() -> None:
    run = _run()
    sim_path.route_command(run, sim_path.Route(640, True, 600, 11), 0)
    assert run.route == sim_path.Route(640, True, 600, 11) and sim_path.init_cwnd(run) == {"init_cwnd": 11}
    run.h = FakeSender()
    sim_path.established(run, 200_000)
    # A route without an mtu metric has the tun device's MTU.
    sim_path.route_command(run, sim_path.Route(None, False, None, 11), 300_000)
    assert run.h.calls == [
        ("route_changed", 200_000_000, 640, True, 600),
        ("route_changed", 300_000_000, 1500, False, None),
    ]
    # initcwnd is read again only at an idle restart: with slow start after idle on, a
    # change is not modelled.
    run.stack["slow_start_after_idle"] = True
    with pytest.raises(Unsupported, match="initcwnd changed on an open connection"):
        sim_path.route_command(run, sim_path.Route(), 400_000)


def test_the_route_sets_the_offered_and_the_used_mss(tmp_path: Path) -> None:
    # advmss is offered in the SYN-ACK; the route's mtu caps the MSS used.
    script = tmp_path / "route.pkt"
    script.write_text(
        "`ip route change 192.0.2.1 via 192.168.0.2 dev tun0 advmss 600 initcwnd 4`\n"
        "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
        "+0 bind(3, ..., ...) = 0\n"
        "+0 listen(3, 1) = 0\n"
        "+.1 < S 0:0(0) win 65535 <mss 1460,sackOK,nop,nop,nop,wscale 7>\n"
        "+0 > S. 0:0(0) ack 1 <mss 600,nop,nop,sackOK,nop,wscale 10>\n"
        "+.1 < . 1:1(0) ack 1 win 500\n"
        "+0 accept(3, ..., ...) = 4\n"
        "+0 write(4, ..., 10000) = 10000\n"
        "+0 > P. 1:5841(5840) ack 1\n"
        "+0 %{ assert tcpi_snd_mss == 1460 and tcpi_snd_cwnd == 4 }%\n"
    )
    verdict = run_script(script, "route.pkt")
    assert verdict.outcome == "pass", verdict


@pytest.mark.parametrize("name", ["maxseg-established.pkt"])
def test_tcp_maxseg_on_an_open_connection_changes_nothing_as_on_linux(name: str) -> None:
    assert run_script(OWN / name, name).outcome == "pass"


@pytest.mark.parametrize(
    "name",
    [
        "icmp-frag-needed.pkt",
        "icmp-frag-needed-out-of-window.pkt",
        "maxseg-established-icmp.pkt",
        "mtu-probe-black-hole.pkt",
        "mtu-probe-always.pkt",
    ],
)
def test_our_path_mtu_scripts_run_or_name_what_is_missing(name: str) -> None:
    from ccbench import _core

    verdict = run_script(OWN / name, name)
    probe = _core.ScriptedSender()
    if hasattr(probe, "icmp_frag_needed") and hasattr(probe, "route_changed"):
        assert verdict.outcome == "pass", verdict  # as on Linux 6.18
    else:
        assert verdict.outcome == "unsupported" and "no path-MTU model" in (verdict.reason or "")
