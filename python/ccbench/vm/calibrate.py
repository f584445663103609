"""``ccbench calibrate-host``: the guest's CPU cost per unit of sender work, measured.

Measures the vCPU time of an idle guest (its timers and housekeeping), then runs bulk
flows from the guest at several rates and flow counts, unpaced (Cubic) and
paced (BBR), most with no CPU limit and two with the vCPU held to a share (so that the
work varies independently of time), records each run's vCPU CPU time, how often the vCPU
thread went to sleep and was taken off the CPU, the skbs it sent, and its sockets' work (ACKs in, segments
out, from their last TCP_INFO), and fits

    vCPU time = idle x wall time + ack x ACKs + packet x segments + burst x skbs
                + idle_exit x sleeps

by non-negative least squares, with the idle term fixed at the idle guest's (fitted
freely, it took up activity the per-unit terms should carry: about 0.1 CPU where an idle
guest uses about 0.01). Skbs are the packets the guest's TAP received: with TSO
a whole GSO skb is one. Sleeps are the vCPU thread's ``voluntary_ctxt_switches`` (the
guest idle, until an interrupt wakes it). Its ``nonvoluntary_ctxt_switches`` are
recorded but not fitted: an unlimited vCPU thread is preempted by QEMU's other threads
tens of thousands of times a run, which tracks the load, not a cost of the guest's.
``ack``, ``packet``, ``burst`` and ``idle_exit`` are the simulator's ``[host.cost]``
entries of the same names; the idle term is the guest's timer ticks and housekeeping,
which the simulator does not charge. The result is a ``[host.cost]`` table (with
``host.tx_completion``, below) that ``--cpu-costs FILE`` or a scenario's ``[host]``
takes, so that the simulator's host model and the VM run on the same costs.

It also measures how long the guest's virtual NIC holds a sent skb: from the driver's
``ndo_start_xmit`` to the free that returns the skb's bytes to its socket (and so the
TCP Small Queues budget), from the guest kernel's trace events in one more light run
(Cubic at 20 Mbit/s, little queueing in the device; traced apart, since tracing costs
CPU). Its median is the simulator's ``host.tx_completion``.

A byte term is not fitted: with full-sized segments bytes are segments x MSS, and the
two cannot be told apart.
Under TCG every cost is several times what KVM or bare metal would show; the file
records the accelerator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .qemu import VmError


@dataclass(frozen=True)
class Point:
    """One calibration run: bulk flows at ``rate``, with no CPU limit unless ``share``
    (of ``cpu_slice``) is given."""

    rate: str
    flows: int = 1
    cca: str = "cubic"
    share: Optional[float] = None
    cpu_slice: str = "10ms"

    @property
    def name(self) -> str:
        limit = f", {self.share:.0%} of {self.cpu_slice}" if self.share is not None else ""
        return f"{self.cca} {self.rate} x {self.flows} flow(s){limit}"


# Rates from light to beyond what an unlimited TCG guest sends, 1 and 4 flows, so that
# ACKs per segment and work per second both vary; paced BBR, whose timers wake the guest
# without an ACK; and vCPUs held to a share, whose windows batch the work.
THROTTLED = (Point("20Mbit", cca="bbr", share=0.15, cpu_slice="1ms"), Point("100Mbit", share=0.25))
DEFAULT_POINTS: tuple[Point, ...] = (
    *(Point(r, n) for n in (1, 4) for r in ("20Mbit", "100Mbit", "400Mbit", "2Gbit")),
    Point("20Mbit", cca="bbr"), Point("100Mbit", cca="bbr"), *THROTTLED)
QUICK_POINTS: tuple[Point, ...] = (Point("20Mbit"), Point("400Mbit"), Point("100Mbit", 4), Point("2Gbit", 4),
                                   *THROTTLED)
# The run whose skbs are traced for the NIC's completion delay.
TX_COMPLETION_POINT = Point("20Mbit")


@dataclass
class Sample:
    rate: str
    flows: int
    wall_s: float
    vcpu_cpu_s: float
    acks: int
    segments: int
    goodput_mbps: float
    sleeps: int = 0
    preemptions: int = 0
    skbs: int = 0


@dataclass
class Calibration:
    guest_kernel: str
    release: str
    accelerator: str
    qemu: str
    vcpus: int
    idle_cpu_per_s: float      # CPU seconds per second of wall time of an idle guest (measured)
    ack_ns: float
    packet_ns: float
    burst_ns: float
    idle_exit_ns: float
    r_squared: float
    samples: list[Sample]
    # ndo_start_xmit to free, per skb, in microseconds: quantiles over every skb ("all"),
    # over frees that woke the idle vCPU ("idle") and over the others ("busy").
    tx_completion: dict[str, Any]

    @property
    def tx_completion_us(self) -> float:
        return float(self.tx_completion["all_us"]["p50"])

    def toml(self) -> str:
        """``host.tx_completion`` and a ``[host.cost]`` table, with their provenance in
        comments."""
        every, idle, busy = (self.tx_completion[k] for k in ("all_us", "idle_us", "busy_us"))
        lines = [
            "# Sender CPU costs measured by ccbench calibrate-host",
            f"# guest {self.guest_kernel} ({self.release}), {self.accelerator.upper()}, {self.qemu}, "
            f"{self.vcpus} vCPU(s)",
            f"# fit: vCPU time = {self.idle_cpu_per_s:.4f} x wall (an idle guest's) + {self.ack_ns:.0f} ns x ACKs + "
            f"{self.packet_ns:.0f} ns x segments + {self.burst_ns:.0f} ns x skbs + "
            f"{self.idle_exit_ns:.0f} ns x vCPU sleeps "
            f"(R^2 = {self.r_squared:.3f}, {len(self.samples)} runs)",
            f"# tx_completion: median of {every['skbs']} skbs, ndo_start_xmit to free, {TX_COMPLETION_POINT.name}: "
            f"p10 {every['p10']:.0f} us, p90 {every['p90']:.0f} us; {idle.get('p50', 0):.0f} us median when the "
            f"free woke the idle vCPU ({idle['skbs']} skbs), {busy.get('p50', 0):.0f} us when it was busy ({busy['skbs']})",
            "[host]",
            f'tx_completion = "{round(self.tx_completion_us)}us"',
            "[host.cost]",
            f'ack = "{round(self.ack_ns)}ns"',
            f'packet = "{round(self.packet_ns)}ns"',
            f'burst = "{round(self.burst_ns)}ns"',
            f'idle_exit = "{round(self.idle_exit_ns)}ns"',
        ]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit(samples: Sequence[Sample], idle: Optional[float] = None) -> tuple[float, float, float, float, float, float]:
    """(idle CPU per second, ns per ACK, ns per segment, ns per skb, ns per vCPU sleep,
    R^2) by non-negative least squares over the samples; with ``idle`` given (measured
    on an idle guest), only the per-unit costs are fitted, to what is left above it."""
    from scipy.optimize import nnls

    a = np.array([[s.wall_s, s.acks, s.segments, s.skbs, s.sleeps] for s in samples], dtype=float)
    y = np.array([s.vcpu_cpu_s for s in samples], dtype=float)
    if idle is not None:
        a, y = a[:, 1:], y - idle * a[:, 0]
    scale = a.max(axis=0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(a / scale, y)
    coef = coef / scale
    predicted = a @ coef
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(((y - predicted) ** 2).sum()) / total if total > 0 else 1.0
    if idle is not None:
        coef = np.concatenate(([idle], coef))
    idle_fit, *per_unit = (float(c) for c in coef)
    ack, packet, burst, idle_exit = (c * 1e9 for c in per_unit)
    return idle_fit, ack, packet, burst, idle_exit, r2


def calibrate(guest_kernel: str = "debian:6.1", vcpus: int = 1,
              points: Sequence[Point] = DEFAULT_POINTS, duration: str = "5s",
              progress: Optional[Callable[[str], None]] = None) -> Calibration:
    """Run every point on the VM engine and fit the costs."""
    from ..engines import get

    engine = get("vm", guest_kernel=guest_kernel, vcpus=vcpus)
    # The guest with nothing to send (one 1 KB flow at the very end): what its vCPU uses
    # for timers and housekeeping, which the per-unit costs are fitted above.
    quiet = engine.run(_idle_scenario(duration)).summary["vm"]
    idle_measured = quiet["vcpu_cpu_s"] / quiet["run_wall_s"]
    if progress is not None:
        progress(f"  idle guest: vCPU {quiet['vcpu_cpu_s']:.3f} s of {quiet['run_wall_s']:.2f} s, "
                 f"{quiet['vcpu_sleeps']} sleeps")
    samples: list[Sample] = []
    vm: dict[str, Any] = {}
    for p in points:
        summary = engine.run(_scenario(p, duration)).summary
        vm = summary["vm"]
        sample = Sample(p.name, p.flows, vm["run_wall_s"], vm["vcpu_cpu_s"], vm["work"]["segs_in"],
                        vm["work"]["segs_out"], sum(f["goodput_bps"] for f in summary["flows"]) / 1e6,
                        vm["vcpu_sleeps"], vm["vcpu_preemptions"], vm["work"]["skbs"])
        samples.append(sample)
        if progress is not None:
            progress(f"  {p.name}: {sample.goodput_mbps:.1f} Mbit/s, vCPU {sample.vcpu_cpu_s:.2f} s "
                     f"of {sample.wall_s:.2f} s, {sample.acks} ACKs, {sample.segments} segments, {sample.skbs} skbs, "
                     f"{sample.sleeps} sleeps, {sample.preemptions} preemptions")
    idle, ack, packet, burst, idle_exit, r2 = fit(samples, idle_measured)
    traced = get("vm", guest_kernel=guest_kernel, vcpus=vcpus, trace_tx=True)
    tx = traced.run(_scenario(TX_COMPLETION_POINT, duration)).summary["vm"]["tx_completion"]
    if not tx["all_us"]["skbs"]:
        raise VmError("calibrate-host: the guest's trace events showed no skb sent and freed")
    if progress is not None:
        progress(f"  {TX_COMPLETION_POINT.name}, traced: ndo_start_xmit to free {tx['all_us']['p50']:.0f} us "
                 f"(median of {tx['all_us']['skbs']} skbs; p10 {tx['all_us']['p10']:.0f}, p90 {tx['all_us']['p90']:.0f})")
    return Calibration(guest_kernel=vm["guest_kernel"], release=vm["release"], accelerator=vm["accelerator"],
                       qemu=vm["qemu"], vcpus=vcpus, idle_cpu_per_s=idle, ack_ns=ack, packet_ns=packet, burst_ns=burst,
                       idle_exit_ns=idle_exit, r_squared=r2, samples=samples, tx_completion=tx)


def _idle_scenario(duration: str) -> dict[str, Any]:
    from ..units import format_duration, parse_duration

    start = format_duration(max(0, parse_duration(duration) - 100_000_000))
    return {"duration": duration, "link": {"rate": "10Mbit", "rtt": "2ms"},
            "flows": [{"cca": "cubic", "start": start, "size": "1KB"}]}


def _scenario(p: Point, duration: str) -> dict[str, Any]:
    doc: dict[str, Any] = {"duration": duration, "link": {"rate": p.rate, "rtt": "2ms", "buffer": "2bdp"},
                           "flows": [{"cca": p.cca, "count": p.flows}]}
    if p.share is not None:
        doc["host"] = {"cpu_share": p.share, "cpu_slice": p.cpu_slice}
    return doc
