"""``ccbench calibrate-host``: the guest's CPU cost per unit of sender work, measured.

Measures the vCPU time of an idle guest (its timers and housekeeping), then runs bulk
flows from the guest at several rates, RTTs and flow counts, unpaced (Cubic) and paced
(BBR), most with no CPU limit and some with the vCPU held to a share of 1, 10 or 20 ms
slices (so that the work varies independently of time), records each run's vCPU CPU
time, the skbs it sent, its sockets' work (ACKs in, segments out, from their last
TCP_INFO), and every time the vCPU thread was off its CPU, how long and why (the host's
context-switch records, ``switches``), and fits

    vCPU time = idle x wall time + ack x ACKs + packet x segments + burst x skbs
                + idle_exit x sleeps
                + idle_refill x sum over sleeps of (1 - exp(-away / cache_decay))
                + resume x sum over holds of (1 - exp(-away / cache_decay))

by non-negative least squares for each ``cache_decay`` of ``DECAYS_NS``, keeping the one
that fits best. The idle term is fixed at the idle guest's (fitted freely, it took up
activity the per-unit terms should carry: about 0.1 CPU where an idle guest uses about
0.01). Skbs are the packets the guest's TAP received: with TSO a whole GSO skb is one.
Sleeps are the vCPU thread's ``voluntary_ctxt_switches`` (the guest idle, until an
interrupt wakes it); holds are its absences in which it was kept off for more than 50 us
while ready to run (throttled by its budget). The two refill terms are what coming back costs after an absence ``away``: a
CPU's caches go cold while it is away, so the first work after a long absence runs
slower (on this project's test host a plain process walking 8 MB took 94 us after no
sleep and 297 us after 10 ms of sleep; docs/vm-engine.md, "What coming back costs").
Without them the costs fitted on unlimited runs predicted 38 to 66% of a held guest's
CPU time, and 43 to 63% of an unlimited guest's at low rates.

``ack``, ``packet``, ``burst``, ``idle_exit``, ``idle_refill``, ``resume`` and
``cache_decay`` are the simulator's ``[host.cost]`` entries of the same names; the idle
term is the guest's timer ticks and housekeeping, which the simulator does not charge.
The result is a ``[host.cost]`` table (with ``host.tx_completion``, below) that
``--cpu-costs FILE`` or a scenario's ``[host]`` takes, so that the simulator's host model
and the VM run on the same costs.

It also measures how long the guest's virtual NIC holds a sent skb: from the driver's
``ndo_start_xmit`` to the free that returns the skb's bytes to its socket (and so the
TCP Small Queues budget), from the guest kernel's trace events in one more light run
(Cubic at 20 Mbit/s, little queueing in the device; traced apart, since tracing costs
CPU). Its median is the simulator's ``host.tx_completion``. A last traced run at 200
Mbit/s records what the holding becomes under load (on a TCG testbed, several times
the light median): the simulator's completion is a constant, and the file says by how
much the load moves it.

A byte term is not fitted: with full-sized segments bytes are segments x MSS, and the
two cannot be told apart.
Under TCG every cost is several times what KVM or bare metal would show; the file
records the accelerator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...vm.qemu import VmError
from ...vm.switches import Absences


@dataclass(frozen=True)
class Point:
    """One calibration run: bulk flows at ``rate``, with no CPU limit unless ``share``
    (of ``cpu_slice``) is given."""

    rate: str
    flows: int = 1
    cca: str = "cubic"
    share: Optional[float] = None
    cpu_slice: str = "10ms"
    rtt: str = "2ms"

    @property
    def name(self) -> str:
        limit = f", {self.share:.0%} of {self.cpu_slice}" if self.share is not None else ""
        return f"{self.cca} {self.rate} x {self.flows} flow(s), {self.rtt}{limit}"


# Rates from light to beyond what an unlimited TCG guest sends, 1 and 4 flows, so that
# ACKs per segment and work per second both vary; light flows on a 10 ms path, which
# leave the vCPU asleep for milliseconds between ACKs; paced BBR, whose timers wake the
# guest without an ACK; and vCPUs held to shares of 1, 10 and 20 ms slices, which batch
# the work and take the vCPU away for milliseconds in the middle of it.
THROTTLED = (
    Point("20Mbit", cca="bbr", share=0.15, cpu_slice="1ms"),
    Point("100Mbit", share=0.25),
    Point("100Mbit", cca="bbr", share=0.1, rtt="10ms"),
    Point("100Mbit", share=0.1, cpu_slice="20ms", rtt="40ms"),
)
SPARSE = (Point("2Mbit", rtt="10ms"), Point("6Mbit", rtt="10ms"), Point("5Mbit", cca="bbr", rtt="10ms"))
DEFAULT_POINTS: tuple[Point, ...] = (
    *(Point(r, n) for n in (1, 4) for r in ("20Mbit", "100Mbit", "400Mbit", "2Gbit")),
    Point("20Mbit", cca="bbr"),
    Point("100Mbit", cca="bbr"),
    *SPARSE,
    *THROTTLED,
)
QUICK_POINTS: tuple[Point, ...] = (
    Point("20Mbit"),
    Point("400Mbit"),
    Point("100Mbit", 4),
    Point("2Gbit", 4),
    *SPARSE[:2],
    *THROTTLED[:3],
)
# The length of each run when validate --cpu calibrates for want of a kept calibration.
QUICK_DURATION = "5s"
# Cache decay times tried by the fit.
DECAYS_NS = (250_000, 500_000, 1_000_000, 2_000_000, 3_000_000, 5_000_000, 8_000_000)
# The runs whose skbs are traced for the NIC's completion delay: the light one gives
# host.tx_completion, the loaded one how far the load moves it.
TX_COMPLETION_POINT = Point("20Mbit")
TX_COMPLETION_LOADED = Point("200Mbit")


def with_paced_bbr(points: Sequence[Point], offered: Sequence[str]) -> list[Point]:
    """``points`` with their paced BBR as the guest kernel offers it: ``bbr`` (v1), or
    ``bbr3`` in a kernel built with BBRv3 in its place (``ccbench vm build-kernel``)."""
    bbr = next((cc for cc in ("bbr", "bbr3", "bbr2") if cc in offered), None)
    if bbr is None:
        raise VmError("calibrate-host: the guest kernel offers no BBR, whose pacing timers the fit needs")
    return [replace(p, cca=bbr) if p.cca == "bbr" else p for p in points]


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
    # The vCPU's absences (``switches.Absences.as_dict``); None if not traced.
    absences: Optional[dict[str, Any]] = None

    @property
    def holds(self) -> int:
        """Absences in which the vCPU was kept off while ready (0 if not traced)."""
        return 0 if self.absences is None else Absences.from_dict(self.absences).count("held")

    def cold(self, kind: str, decay_ns: float) -> float:
        """Refills the absences of ``kind`` cost at ``decay_ns`` (see ``Absences.cold``)."""
        return 0.0 if self.absences is None else Absences.from_dict(self.absences).cold(kind, decay_ns)


@dataclass
class Calibration:
    guest_kernel: str
    release: str
    accelerator: str
    qemu: str
    vcpus: int
    idle_cpu_per_s: float  # CPU seconds per second of wall time of an idle guest (measured)
    ack_ns: float
    packet_ns: float
    burst_ns: float
    idle_exit_ns: float
    idle_refill_ns: float
    resume_ns: float
    cache_decay_ns: float
    r_squared: float
    samples: list[Sample]
    # ndo_start_xmit to free, per skb, in microseconds: quantiles over every skb ("all"),
    # over frees that woke the idle vCPU ("idle") and over the others ("busy"); light,
    # and under load (TX_COMPLETION_LOADED).
    tx_completion: dict[str, Any]
    tx_completion_loaded: Optional[dict[str, Any]] = None

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
            f"{self.idle_exit_ns:.0f} ns x vCPU sleeps + {self.idle_refill_ns:.0f} ns x sleeps' refills + "
            f"{self.resume_ns:.0f} ns x holds' refills, a refill after d away being 1 - exp(-d / "
            f"{self.cache_decay_ns / 1e6:g} ms) (R^2 = {self.r_squared:.3f}, {len(self.samples)} runs)",
            f"# tx_completion: median of {every['skbs']} skbs, ndo_start_xmit to free, {TX_COMPLETION_POINT.name}: "
            f"p10 {every['p10']:.0f} us, p90 {every['p90']:.0f} us; {idle.get('p50', 0):.0f} us median when the "
            f"free woke the idle vCPU ({idle['skbs']} skbs), {busy.get('p50', 0):.0f} us when it was busy ({busy['skbs']})",
            *self._loaded_comment(),
            "[host]",
            f'tx_completion = "{round(self.tx_completion_us)}us"',
            "[host.cost]",
            *(f'{key} = "{round(ns)}ns"' for key, ns in self.host_costs().items()),
        ]
        return "\n".join(lines) + "\n"

    def host_costs(self) -> dict[str, float]:
        """The fitted costs in ns by their ``[host.cost]`` key (``<key>_ns`` here), in the
        simulator's order; the costs not fitted (``byte``, ``wakeup``, ``timer``) are left
        to the preset."""
        from ...scenario.host import COST_FIELDS

        fitted = {key: getattr(self, f"{key}_ns", None) for key in COST_FIELDS}
        return {key: ns for key, ns in fitted.items() if ns is not None}

    def _loaded_comment(self) -> list[str]:
        loaded = (self.tx_completion_loaded or {}).get("all_us") or {}
        if not loaded.get("skbs"):
            return []
        return [
            f"# under load, {TX_COMPLETION_LOADED.name}: median {loaded['p50']:.0f} us of {loaded['skbs']} skbs "
            f"(p10 {loaded['p10']:.0f}, p90 {loaded['p90']:.0f}); the simulator's completion stays the light "
            f"median"
        ]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Fit:
    """Costs in ns (idle in CPU seconds per second) and how well they fit."""

    idle: float
    ack_ns: float
    packet_ns: float
    burst_ns: float
    idle_exit_ns: float
    idle_refill_ns: float = 0.0
    resume_ns: float = 0.0
    cache_decay_ns: float = 0.0
    r_squared: float = 1.0


def fit(samples: Sequence[Sample], idle: Optional[float] = None) -> Fit:
    """The costs that fit the samples best, by non-negative least squares at each cache
    decay time of ``DECAYS_NS`` (the refill terms only if the samples have traced
    absences); with ``idle`` given (measured on an idle guest), only the per-unit costs
    are fitted, to what is left above it."""
    traced = any(s.absences is not None for s in samples)
    best: Optional[Fit] = None
    for decay in DECAYS_NS if traced else (0,):
        got = _fit_at(samples, idle, decay)
        if best is None or got.r_squared > best.r_squared:
            best = got
    assert best is not None
    return best


def _fit_at(samples: Sequence[Sample], idle: Optional[float], decay_ns: float) -> Fit:
    from scipy.optimize import nnls

    a = np.array(
        [
            [s.wall_s, s.acks, s.segments, s.skbs, s.sleeps, s.cold("slept", decay_ns), s.cold("held", decay_ns)]
            for s in samples
        ],
        dtype=float,
    )
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
    ack, packet, burst, idle_exit, idle_refill, resume = (c * 1e9 for c in per_unit)
    if idle_refill == resume == 0:
        decay_ns = 0
    return Fit(idle_fit, ack, packet, burst, idle_exit, idle_refill, resume, float(decay_ns), r2)


def calibrate(
    guest_kernel: str = "debian:6.1",
    vcpus: int = 1,
    points: Sequence[Point] = DEFAULT_POINTS,
    duration: str = "5s",
    progress: Optional[Callable[[str], None]] = None,
) -> Calibration:
    """Run every point on the VM engine and fit the costs."""
    from . import ENGINE

    engine = ENGINE.configure(guest_kernel=guest_kernel, vcpus=vcpus, trace_vcpu=True)
    points = with_paced_bbr(points, engine.congestion_control())
    # The guest with nothing to send (one 1 KB flow at the very end): what its vCPU uses
    # for timers and housekeeping, which the per-unit costs are fitted above.
    quiet = engine.run(_idle_scenario(duration)).summary["vm"]
    idle_measured = quiet["vcpu_cpu_s"] / quiet["run_wall_s"]
    if progress is not None:
        progress(
            f"  idle guest: vCPU {quiet['vcpu_cpu_s']:.3f} s of {quiet['run_wall_s']:.2f} s, "
            f"{quiet['vcpu_sleeps']} sleeps"
        )
    samples: list[Sample] = []
    vm: dict[str, Any] = {}
    for p in points:
        summary = engine.run(_scenario(p, duration)).summary
        vm = summary["vm"]
        sample = Sample(
            p.name,
            p.flows,
            vm["run_wall_s"],
            vm["vcpu_cpu_s"],
            vm["work"]["segs_in"],
            vm["work"]["segs_out"],
            sum(f["goodput_bps"] for f in summary["flows"]) / 1e6,
            vm["vcpu_sleeps"],
            vm["vcpu_preemptions"],
            vm["work"]["skbs"],
            vm.get("vcpu_absences"),
        )
        samples.append(sample)
        if progress is not None:
            progress(
                f"  {p.name}: {sample.goodput_mbps:.1f} Mbit/s, vCPU {sample.vcpu_cpu_s:.2f} s "
                f"of {sample.wall_s:.2f} s, {sample.acks} ACKs, {sample.segments} segments, {sample.skbs} skbs, "
                f"{sample.sleeps} sleeps, {sample.holds} holds"
            )
    costs = fit(samples, idle_measured)
    traced = ENGINE.configure(guest_kernel=guest_kernel, vcpus=vcpus, trace_tx=True)
    tx, loaded = (
        traced.run(_scenario(p, duration)).summary["vm"]["tx_completion"]
        for p in (TX_COMPLETION_POINT, TX_COMPLETION_LOADED)
    )
    if not tx["all_us"]["skbs"]:
        raise VmError("calibrate-host: the guest's trace events showed no skb sent and freed")
    for p, q in ((TX_COMPLETION_POINT, tx["all_us"]), (TX_COMPLETION_LOADED, loaded["all_us"])):
        if progress is not None and q["skbs"]:
            progress(
                f"  {p.name}, traced: ndo_start_xmit to free {q['p50']:.0f} us (median of {q['skbs']} skbs; "
                f"p10 {q['p10']:.0f}, p90 {q['p90']:.0f})"
            )
    return Calibration(
        guest_kernel=vm["guest_kernel"],
        release=vm["release"],
        accelerator=vm["accelerator"],
        qemu=vm["qemu"],
        vcpus=vcpus,
        idle_cpu_per_s=costs.idle,
        ack_ns=costs.ack_ns,
        packet_ns=costs.packet_ns,
        burst_ns=costs.burst_ns,
        idle_exit_ns=costs.idle_exit_ns,
        idle_refill_ns=costs.idle_refill_ns,
        resume_ns=costs.resume_ns,
        cache_decay_ns=costs.cache_decay_ns,
        r_squared=costs.r_squared,
        samples=samples,
        tx_completion=tx,
        tx_completion_loaded=loaded,
    )


def _idle_scenario(duration: str) -> dict[str, Any]:
    from ...units import format_duration, parse_duration

    start = format_duration(max(0, parse_duration(duration) - 100_000_000))
    return {
        "duration": duration,
        "link": {"rate": "10Mbit", "rtt": "2ms"},
        "flows": [{"cca": "cubic", "start": start, "size": "1KB"}],
    }


def _scenario(p: Point, duration: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "duration": duration,
        "link": {"rate": p.rate, "rtt": p.rtt, "buffer": "2bdp"},
        "flows": [{"cca": p.cca, "count": p.flows}],
    }
    if p.share is not None:
        doc["host"] = {"cpu_share": p.share, "cpu_slice": p.cpu_slice}
    return doc


def kept_path(engine: Any) -> Path:
    """Where the calibration of this host and of ``engine``'s guest is kept: one per host
    kernel, CPU model, QEMU, guest kernel and vCPU count, what the fitted costs depend
    on (``ccbench validate --cpu`` uses it when given no costs file)."""
    import hashlib
    import platform

    from ...vm import guest
    from ...vm.qemu import qemu_version

    parts = (
        platform.release(),
        _cpu_model(),
        qemu_version(),
        guest.resolve(engine.guest_kernel).identity,
        f"vcpus-{engine.vcpus}",
    )
    key = hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
    return guest.cache_dir() / "vm" / "calibrations" / f"{key}.toml"


def keep(result: Calibration, engine: Any) -> Path:
    """Keep ``result`` as this host's and guest's calibration (whole or not at all)."""
    path = kept_path(engine)
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_suffix(".part")
    staged.write_text(result.toml())
    staged.replace(path)
    return path


def command(
    *,
    quick: bool,
    guest_kernel: str,
    vcpus: int,
    duration: str,
    out: str,
    as_json: bool,
    say: Callable[[str], None],
    show: Callable[[str], None],
) -> None:
    """``ccbench calibrate-host``: calibrate, write ``out`` and keep the calibration for
    this host and guest; ``say`` reports progress, ``show`` prints the result."""
    import json

    from ...errors import ScenarioError
    from ...kernel import host
    from ...lifecycle import signals_interrupt
    from ...units import parse_duration
    from . import ENGINE

    try:
        parse_duration(duration)
    except ValueError as e:
        raise ScenarioError("--duration", str(e)) from None
    if Path(out).is_dir():
        raise ScenarioError("--out", f"{out!r} is a directory; give a file name")
    host.require_root("VM")
    with signals_interrupt():
        result = calibrate(guest_kernel, vcpus, QUICK_POINTS if quick else DEFAULT_POINTS, duration, progress=say)
    Path(out).write_text(result.toml())
    kept = keep(result, ENGINE.configure(guest_kernel=guest_kernel, vcpus=vcpus))
    show(json.dumps(result.as_dict(), indent=1) if as_json else result.toml().rstrip("\n"))
    say(f"wrote {out}; kept for this host and guest as {kept}")


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"
