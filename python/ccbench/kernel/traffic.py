"""UDP flows and groups of arrivals as the kernel engine runs them, and the load a run
puts on the emulator and the agents, refused up front beyond what they keep up with.

Both are read from the scenario's core JSON (``udp[k]``, ``arrivals[k]``), which the
emulator and the summary read too. Their timing is the simulator's: each UDP flow sends
at the instants its simulated source would (``_core.udp_schedule``), each group opens
its connections at the simulator's instants with the simulator's sizes
(``_core.arrival_schedule``), both drawn from the scenario's seed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .. import _core
from ..bpf.name import is_bpf
from .host import HostFacts, KernelEngineError

# IPv4 and UDP headers: a datagram's bytes on the wire beyond its payload.
UDP_OVERHEAD = 28
# The first bytes of a datagram's payload carry its number and the instant it was sent
# (two 64-bit integers), for the sink's loss and one-way delay.
UDP_STAMP_BYTES = 16
# The first bytes of a transfer (or of its request, where the receiver opens the
# connection) carry its number among its group's connections.
TRANSFER_TAG_BYTES = 4
# Datagrams a second the Python agents send (and stamp) and receive (and time), over all
# UDP flows: on a two-CPU machine 10,000 a second left the sender's 99th percentile of
# lateness under a millisecond; at 20,000 it reached 6 ms, at 40,000 a quarter were lost
# before the emulator (docs/kernel-engine.md).
AGENT_DATAGRAMS_PER_S = 10_000
# Connections the busiest second of arrivals may open, over all groups: each costs both
# agents a few system calls and a socket for its life. At 1,000 a second of 10 KB the
# median FCT stayed within 1.5% of the simulator's (docs/kernel-engine.md).
AGENT_CONNECTIONS_PER_S = 1_000
# Packets a second the emulator's one thread reads and writes: a saturating flow at
# 1 Gbit/s (83,000 full-sized packets a second and an ACK for every two), where it
# still delivered 98.9% of the rate (docs/validation.md, "The self-check").
EMULATOR_PACKETS_PER_S = 125_000
# ACKs per data packet a TCP receiver returns (one for every two full-sized segments).
ACKS_PER_PACKET = 0.5
S = 1_000_000_000


@dataclass(frozen=True)
class UdpPlan:
    index: int
    up: bool
    payload_bytes: int
    # Its send instants: runs (first ns after the epoch, gap ns, count).
    runs: list[tuple[int, int, int]] = field(repr=False)
    # Its highest rate while on (the rate or a step's), bit/s of IP packets.
    peak_rate_bps: int = 0

    @property
    def field(self) -> str:
        return f"udp[{self.index}]"

    @property
    def wire_bytes(self) -> int:
        return self.payload_bytes + UDP_OVERHEAD

    @property
    def peak_datagrams_per_s(self) -> float:
        return self.peak_rate_bps / (self.wire_bytes * 8)


@dataclass(frozen=True)
class ArrivalsPlan:
    index: int
    cca: str
    up: bool
    # "sender": the sender connects, then writes; "receiver": the receiver connects and
    # sends a request, the sender answers it.
    connect: str
    # Every connection: (ns after the epoch, size in bytes), in order.
    schedule: list[tuple[int, int]] = field(repr=False)

    @property
    def field(self) -> str:
        return f"arrivals[{self.index}]"

    def busiest_second(self) -> int:
        """Connections that arrive in its busiest second."""
        return busiest_window([t for t, _ in self.schedule], S)


def busiest_window(times: list[int], width: int) -> int:
    """The most of the (non-decreasing) ``times`` in any window ``width`` long."""
    first, most = 0, 0
    for last, t in enumerate(times):
        while t - times[first] >= width:
            first += 1
        most = max(most, last - first + 1)
    return most


def udp_plans(core: dict[str, Any], mtu: int) -> list[UdpPlan]:
    """Each UDP flow of the core JSON, checked against what the kernel engine sends."""
    plans = []
    for k, u in enumerate(core.get("udp") or []):
        payload = int(u.get("payload_bytes", 1472))
        where = f"udp[{k}]"
        if payload < UDP_STAMP_BYTES:
            raise KernelEngineError(
                f"{where}.size",
                f"the kernel engine stamps each datagram's number and send time in its first "
                f"{UDP_STAMP_BYTES} bytes; give at least {UDP_STAMP_BYTES}",
            )
        if payload + UDP_OVERHEAD > mtu:
            raise KernelEngineError(
                f"{where}.size",
                f"its IP packets (size + {UDP_OVERHEAD}) must fit the hosts' MTU ({mtu} bytes, "
                "tcp.mss + 52), beyond which the kernel fragments them",
            )
        steps = [int(s["rate_bps"]) for s in u.get("rate_schedule") or []]
        runs = _core.udp_schedule(_schedule_json(core), k)
        plans.append(UdpPlan(k, u.get("direction") == "up", payload, runs, max([int(u["rate_bps"]), *steps])))
    return plans


def arrivals_plans(core: dict[str, Any], host: HostFacts) -> list[ArrivalsPlan]:
    """Each group of arrivals of the core JSON, checked against what the kernel can run."""
    plans = []
    for k, a in enumerate(core.get("arrivals") or []):
        where = f"arrivals[{k}]"
        _check_algorithm(a["cca"], a.get("params") or {}, where, host)
        schedule = _core.arrival_schedule(_schedule_json(core), k)
        if schedule and min(size for _, size in schedule) < TRANSFER_TAG_BYTES:
            raise KernelEngineError(
                f"{where}.sizes",
                f"the kernel engine numbers each transfer in its first {TRANSFER_TAG_BYTES} bytes; "
                f"sizes must be at least {TRANSFER_TAG_BYTES} bytes",
            )
        connect = "receiver" if a.get("connect") == "receiver" else "sender"
        plans.append(ArrivalsPlan(k, a["cca"], a.get("direction") == "up", connect, schedule))
    return plans


def _check_algorithm(cca: str, params: dict[str, Any], where: str, host: HostFacts) -> None:
    """A group's algorithm: one of the kernel's, without parameters; BPF objects are
    registered for flows only."""
    if is_bpf(cca):
        raise KernelEngineError(
            f"{where}.cca",
            "the kernel engine registers BPF algorithms for flows[] only; give arrivals one of the kernel's",
        )
    host.require_module_algorithm(cca, params, where)


def _schedule_json(core: dict[str, Any]) -> str:
    """The core JSON the simulator draws the schedules from: the same seed, UDP flows and
    arrivals, without the TCP flows and with a simulator algorithm for the groups, which
    the schedules do not depend on and which the simulator may not have."""
    groups = [dict(a, cca="cubic", params={}) for a in core.get("arrivals") or []]
    return json.dumps(dict(core, flows=[], arrivals=groups))


@dataclass(frozen=True)
class Load:
    """What a run asks of the emulator and the agents, a second at its busiest."""

    emulator_packets: float
    datagrams: float
    connections: int


def estimate(core: dict[str, Any], udp: list[UdpPlan], arrivals: list[ArrivalsPlan], mtu: int) -> Load:
    """The packets a second the emulator reads and writes at most: each direction's
    bottleneck full of full-sized packets, with the other direction's ACKs, and every UDP
    flow at its peak (what is dropped is read all the same); the datagrams a second the
    agents send and receive; the connections the busiest second opens."""
    link = core["link"]
    reverse = link.get("reverse") or {}
    packets = sum(_peak_rate(x) / (mtu * 8) for x in (link, reverse) if x)
    datagrams = sum(u.peak_datagrams_per_s for u in udp)
    return Load(
        emulator_packets=packets * (1 + ACKS_PER_PACKET) + datagrams,
        datagrams=datagrams,
        connections=sum(a.busiest_second() for a in arrivals),
    )


def _peak_rate(link: dict[str, Any]) -> float:
    """A link's highest rate: its rate, a step's, or a trace's busiest second."""
    rates = [float(link.get("rate_bps") or 0), *(float(s["rate_bps"]) for s in link.get("rate_schedule") or [])]
    opportunities = (link.get("trace") or {}).get("opportunities_ms") or []
    # Each opportunity carries one packet of up to 1500 bytes (Mahimahi's).
    return max(rates + [busiest_window(opportunities, 1000) * 1500 * 8.0])


def refuse_overload(load: Load, udp: list[UdpPlan], arrivals: list[ArrivalsPlan]) -> None:
    """Refuse a run the agents or the emulator could not keep up with (the constants above)."""
    if load.datagrams > AGENT_DATAGRAMS_PER_S:
        raise KernelEngineError(
            "udp",
            f"the UDP flows send {load.datagrams:,.0f} datagrams a second at their peak; the kernel "
            f"engine's agents keep up with {AGENT_DATAGRAMS_PER_S:,}: lower their rates or send larger datagrams",
        )
    if load.connections > AGENT_CONNECTIONS_PER_S:
        busiest = max(arrivals, key=lambda a: a.busiest_second())
        raise KernelEngineError(
            busiest.field if len(arrivals) == 1 else "arrivals",
            f"{load.connections:,} connections arrive in the busiest second; the kernel engine's agents "
            f"open at most {AGENT_CONNECTIONS_PER_S:,} a second: lower the rate or the load",
        )
    # A run of TCP flows alone is not refused: its self-check tells afterwards whether
    # the emulator kept up (docs/validation.md, "The self-check").
    if (udp or arrivals) and load.emulator_packets > EMULATOR_PACKETS_PER_S:
        what = "link.rate" if not udp else "udp"
        raise KernelEngineError(
            what,
            f"the emulator would move up to {load.emulator_packets:,.0f} packets a second (the links full, "
            f"with their ACKs{', and the UDP flows' if udp else ''}); it keeps up with "
            f"{EMULATOR_PACKETS_PER_S:,} (1 Gbit/s of full-sized packets and their ACKs)",
        )


@dataclass(frozen=True)
class Traffic:
    """A run's UDP flows and groups of arrivals, planned."""

    udp: list[UdpPlan] = field(default_factory=list)
    arrivals: list[ArrivalsPlan] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.udp or self.arrivals)


def plan_traffic(core: dict[str, Any], host: HostFacts, mtu: int) -> Traffic:
    """The core JSON's UDP flows and arrivals as the kernel engine runs them, or
    KernelEngineError naming the first it cannot run, or a load it cannot keep up with."""
    udp = udp_plans(core, mtu)
    arrivals = arrivals_plans(core, host)
    refuse_overload(estimate(core, udp, arrivals, mtu), udp, arrivals)
    return Traffic(udp, arrivals)
