"""``ccbench calibrate-host``: the guest's CPU cost per unit of sender work, measured.

Runs bulk Cubic flows from the guest with no CPU limit at several rates and flow counts
(the work varies independently of time), records each run's vCPU CPU time and its
sockets' work (ACKs in, segments out, from their last TCP_INFO), and fits

    vCPU time = idle x wall time + ack x ACKs + packet x segments + idle_exit x sleeps

by non-negative least squares, where sleeps are the times the vCPU thread went to sleep
(the guest idle: ``voluntary_ctxt_switches``), each ending in an interrupt that wakes
it. ``ack``, ``packet`` and ``idle_exit`` are the simulator's ``[host.cost]`` entries of
the same names (CPU time per ACK processed, per segment sent, per wake from idle); the
idle term is the guest's timer ticks and housekeeping, which the simulator does not charge. The
result is a ``[host.cost]`` table that ``--cpu-costs FILE`` or a scenario's ``[host]``
takes, so that the simulator's host model and the VM run on the same costs.

A byte term is not fitted: with full-sized segments bytes are segments x MSS, and the
two cannot be told apart. Nor is a per-burst (per-skb) term: TCP_INFO has no skb count.
Under TCG every cost is several times what KVM or bare metal would show; the file
records the accelerator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

# (rate, flows): rates from light to beyond what an unlimited TCG guest sends, 1 and 4
# flows, so that ACKs per segment and work per second both vary.
DEFAULT_POINTS: tuple[tuple[str, int], ...] = (("20Mbit", 1), ("100Mbit", 1), ("400Mbit", 1), ("2Gbit", 1),
                                               ("20Mbit", 4), ("100Mbit", 4), ("400Mbit", 4), ("2Gbit", 4))
QUICK_POINTS: tuple[tuple[str, int], ...] = (("20Mbit", 1), ("400Mbit", 1), ("100Mbit", 4), ("2Gbit", 4))


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


@dataclass
class Calibration:
    guest_kernel: str
    release: str
    accelerator: str
    qemu: str
    vcpus: int
    idle_cpu_per_s: float      # CPU seconds per second of wall time, with no work
    ack_ns: float
    packet_ns: float
    idle_exit_ns: float
    r_squared: float
    samples: list[Sample]

    def toml(self) -> str:
        """A ``[host.cost]`` table with its provenance in comments."""
        lines = [
            "# Sender CPU costs measured by ccbench calibrate-host",
            f"# guest {self.guest_kernel} ({self.release}), {self.accelerator.upper()}, {self.qemu}, "
            f"{self.vcpus} vCPU(s)",
            f"# fit: vCPU time = {self.idle_cpu_per_s:.4f} x wall + {self.ack_ns:.0f} ns x ACKs + "
            f"{self.packet_ns:.0f} ns x segments + {self.idle_exit_ns:.0f} ns x vCPU sleeps "
            f"(R^2 = {self.r_squared:.3f}, {len(self.samples)} runs)",
            "[host.cost]",
            f'ack = "{round(self.ack_ns)}ns"',
            f'packet = "{round(self.packet_ns)}ns"',
            f'idle_exit = "{round(self.idle_exit_ns)}ns"',
        ]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit(samples: Sequence[Sample]) -> tuple[float, float, float, float, float]:
    """(idle CPU per second, ns per ACK, ns per segment, ns per vCPU sleep, R^2) by
    non-negative least squares over the samples."""
    from scipy.optimize import nnls

    a = np.array([[s.wall_s, s.acks, s.segments, s.sleeps] for s in samples], dtype=float)
    y = np.array([s.vcpu_cpu_s for s in samples], dtype=float)
    scale = a.max(axis=0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(a / scale, y)
    coef = coef / scale
    predicted = a @ coef
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(((y - predicted) ** 2).sum()) / total if total > 0 else 1.0
    return float(coef[0]), float(coef[1] * 1e9), float(coef[2] * 1e9), float(coef[3] * 1e9), r2


def calibrate(guest_kernel: str = "debian:6.1", vcpus: int = 1,
              points: Sequence[tuple[str, int]] = DEFAULT_POINTS, duration: str = "5s",
              progress: Optional[Callable[[str], None]] = None) -> Calibration:
    """Run every point on the VM engine with no CPU limit and fit the costs."""
    from ..engines import get

    engine = get("vm", guest_kernel=guest_kernel, vcpus=vcpus)
    samples: list[Sample] = []
    vm: dict[str, Any] = {}
    for rate, flows in points:
        doc = {"duration": duration, "link": {"rate": rate, "rtt": "2ms", "buffer": "2bdp"},
               "flows": [{"cca": "cubic", "count": flows}]}
        summary = engine.run(doc).summary
        vm = summary["vm"]
        sample = Sample(rate, flows, vm["run_wall_s"], vm["vcpu_cpu_s"], vm["work"]["segs_in"],
                        vm["work"]["segs_out"], sum(f["goodput_bps"] for f in summary["flows"]) / 1e6,
                        vm["vcpu_sleeps"])
        samples.append(sample)
        if progress is not None:
            progress(f"  {rate} x {flows} flow(s): {sample.goodput_mbps:.1f} Mbit/s, vCPU {sample.vcpu_cpu_s:.2f} s "
                     f"of {sample.wall_s:.2f} s, {sample.acks} ACKs, {sample.segments} segments")
    idle, ack, packet, idle_exit, r2 = fit(samples)
    return Calibration(guest_kernel=vm["guest_kernel"], release=vm["release"], accelerator=vm["accelerator"],
                       qemu=vm["qemu"], vcpus=vcpus, idle_cpu_per_s=idle, ack_ns=ack, packet_ns=packet, idle_exit_ns=idle_exit,
                       r_squared=r2, samples=samples)
