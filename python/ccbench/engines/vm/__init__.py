"""The VM engine: the senders in a QEMU guest running a real Debian kernel, its vCPU
threads under SCHED_DEADLINE when the scenario's ``[host]`` gives a CPU share; the
bottleneck is the kernel engine's emulator and the receivers stay in a namespace of
this host. See ``ccbench.vm`` and docs/vm-engine.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional

from ...errors import ScenarioError
from ...result import Result, table_frame
from ..base import Engine, PathLike, ScenarioLike, Unsupported, capture_dir
from ..kernel import SIMULATOR_KNOBS, KernelEngine

if TYPE_CHECKING:
    from ...kernel.host import HostFacts
    from ...scenario import Scenario

# The guest kernel of runs that name none (sweeps, replications): what `--guest-kernel`
# of `ccbench sweep` and `ccbench replicate` sets, and worker processes inherit.
GUEST_KERNEL_ENV = "CCBENCH_GUEST_KERNEL"
DEFAULT_GUEST_KERNEL = "debian:6.1"
NO_VM_MEANING = (
    "has no meaning for a VM; the VM engine's sender CPU is the guest's vCPUs, given a share with "
    "host.cpu_share and host.cpu_slice"
)
MAX_VCPUS = 16


class VmEngine(Engine):
    name = "vm"
    status = "running in the VM…"
    needs_host_lock = True
    unsupported = (
        Unsupported("host.cpu", NO_VM_MEANING),
        Unsupported("host.cpu_trace", NO_VM_MEANING),
        Unsupported("host.rx_ring", NO_VM_MEANING),
        Unsupported("host.cost", NO_VM_MEANING),
        Unsupported(
            "host.tx_completion_ns",
            "is the guest's own virtual NIC's on the VM engine (ccbench calibrate-host measures it for the simulator)",
        ),
        *SIMULATOR_KNOBS,
    )
    # Scenarios load as on the kernel engine: any algorithm name a kernel might offer.
    load = KernelEngine.load
    from_flags = KernelEngine.from_flags

    def __init__(
        self,
        guest_kernel: Optional[str] = None,
        vcpus: int = 1,
        trace_tx: bool = False,
        profile_guest: bool = False,
        trace_vcpu: bool = False,
    ) -> None:
        self._guest_kernel, self.vcpus = guest_kernel, vcpus
        self.trace_tx, self.profile_guest, self.trace_vcpu = trace_tx, profile_guest, trace_vcpu

    @property
    def guest_kernel(self) -> str:
        """The one configured, else ``$CCBENCH_GUEST_KERNEL``, else Debian's 6.1."""
        return self._guest_kernel or os.environ.get(GUEST_KERNEL_ENV) or DEFAULT_GUEST_KERNEL

    def configure(
        self,
        *,
        guest_kernel: Optional[str] = None,
        vcpus: Optional[int] = None,
        trace_tx: Optional[bool] = None,
        profile_guest: Optional[bool] = None,
        trace_vcpu: Optional[bool] = None,
        **others: Any,
    ) -> "VmEngine":
        """``guest_kernel`` (see ``ccbench.vm.guest``), ``vcpus`` (1 to MAX_VCPUS), and
        what to measure besides: ``trace_tx``, how long the guest's NIC holds each skb
        it sends (the guest kernel's trace events; ``vm.tx_completion``);
        ``profile_guest``, the guest kernel's tick profile by function
        (``vm.guest_profile``, ``ccbench.vm.kprofile``); ``trace_vcpu``, when and why the
        vCPU threads were off their CPUs (the host's context-switch records;
        ``vm.vcpu_absences``, ``ccbench.vm.switches``)."""
        super().configure(**others)
        if vcpus is not None and not (isinstance(vcpus, int) and 1 <= vcpus <= MAX_VCPUS):
            raise ScenarioError("--vcpus", f"must be an integer from 1 to {MAX_VCPUS}, got {vcpus!r}")

        def pick(given: Optional[bool], current: bool) -> bool:
            return current if given is None else given

        return VmEngine(
            guest_kernel or self._guest_kernel,
            vcpus or self.vcpus,
            pick(trace_tx, self.trace_tx),
            pick(profile_guest, self.profile_guest),
            pick(trace_vcpu, self.trace_vcpu),
        )

    def check(self, scenario: "Scenario") -> "Scenario":
        from ...kernel import host
        from ...kernel.plan import make_plan
        from ...vm.qemu import require_qemu

        super().check(scenario)
        _refuse_another_tick(scenario)
        _refuse_connecting_when_due(scenario)
        _refuse_path_mtu(scenario)
        _refuse_flows_going_up(scenario)
        _refuse_udp_and_arrivals(scenario)
        host.require_root("VM")
        require_qemu()
        scenario, kernel, _ = self._guest_for(scenario)
        return make_plan(scenario, self._facts(scenario, kernel)).scenario

    def run(self, scenario: ScenarioLike, capture_to: Optional[PathLike] = None) -> Result:
        """Run a scenario with its senders in the guest. Raises ScenarioError for what
        cannot run here, KernelRunError or VmError when the run fails; nothing it
        created remains either way."""
        import tempfile
        from pathlib import Path

        from ...kernel import host
        from ...kernel.plan import make_plan
        from ...kernel.results import assemble
        from ...kernel.session import run_plan
        from ...vm import deadline
        from ...vm.image import agent_binary, guest_image
        from ...vm.qemu import accelerator, require_qemu

        sc = self.load(scenario)
        super().check(sc)
        _refuse_another_tick(sc)
        _refuse_connecting_when_due(sc)
        _refuse_path_mtu(sc)
        _refuse_flows_going_up(sc)
        _refuse_udp_and_arrivals(sc)
        host.require_root("VM")
        require_qemu()
        sc, kernel, patch_notes = self._guest_for(sc)
        facts = self._facts(sc, kernel)
        plan = make_plan(sc, facts)
        initrd = guest_image(kernel, agent_binary())
        with tempfile.TemporaryDirectory(prefix="ccbench-vm-") as tmp:
            accel = accelerator(kernel, initrd, Path(tmp))
        sender = self._sender(sc, kernel, initrd, accel)
        where = capture_dir(sc, capture_to)
        capture = None if where is None or sc.capture is None else sc.capture.to_core(os.path.abspath(where))
        booked = deadline.booked_bandwidth()
        try:
            raw = run_plan(plan, capture, sender)
        finally:
            sender.stop()
        summary, flows, link, _ = assemble(plan, raw, facts, self.name)
        summary["vm"] = self._vm_summary(kernel, accel, sender, raw.sender)
        summary["available_congestion_control"] = sender.info.get(
            "available_congestion_control", facts.available_congestion_control
        )
        summary["kernel"] = summary["vm"]["release"]
        vm_notes = _vm_notes(kernel, accel, booked, summary["vm"]["io_thread"]["waiting"])
        summary["notes"] = summary["notes"] + patch_notes + list(kernel.notes) + vm_notes
        return Result(summary=summary, flows=table_frame(flows), link=table_frame(link), scenario=plan.scenario)

    def _sender(self, sc: "Scenario", kernel: Any, initrd: Any, accel: str) -> Any:
        """The guest that runs the senders, its vCPUs given the scenario's CPU share (if
        below 1) in slices of ``host.cpu_slice``."""
        from ...vm.sender import GuestSender, Instruments

        share = sc.host.cpu_share if sc.host is not None and sc.host.cpu_share < 1 else None
        period = sc.host.cpu_slice_ns if sc.host is not None else 10_000_000
        kind = sc.host.cpu_deadline if sc.host is not None else "runtime"
        return GuestSender(
            kernel,
            initrd,
            accel,
            self.vcpus,
            share,
            period,
            kind,
            Instruments(self.trace_tx, self.profile_guest, self.trace_vcpu),
        )

    def _vm_summary(self, kernel: Any, accel: str, sender: Any, sent: dict[str, Any]) -> dict[str, Any]:
        """The summary's ``vm`` object: the guest, its vCPUs and what they did, and what
        the guest itself measured (``sent``: the agent's results)."""
        from ...vm import deadline, kprofile
        from ...vm.qemu import qemu_version

        vm = {
            "guest_kernel": kernel.source,
            "release": sender.info.get("kernel", kernel.release),
            # The Debian packages (name=version) the guest's kernel and built modules came from.
            "guest_packages": list(kernel.packages),
            "accelerator": accel,
            "qemu": qemu_version(),
            "vcpus": self.vcpus,
            "boot_s": round(sender.vm.boot_s, 3) if sender.vm else None,
            "cpu_policy": [p.describe() for p in sender.policies],
            "cpu_share_applied": [p.share for p in sender.policies],
            "host_tick_ns": deadline.host_tick_ns(),
            # What the vCPU threads used during the run (CPU time / wall time), and the
            # work the guest's sockets did: the inputs of ccbench calibrate-host.
            "vcpu_cpu_use": [round(u, 4) for u in sender.vcpu_use()],
            "vcpu_cpu_s": round(sender.vcpu_cpu_s(), 6),
            "vcpu_sleeps": sender.vcpu_sleeps(),
            "vcpu_preemptions": sender.vcpu_preemptions(),
            "vcpu_run_delay_s": round(sender.vcpu_run_delay_s(), 6),
            "io_thread": sender.io_thread(),
            "placement": sender.placement.describe() if sender.placement else None,
            "run_wall_s": round(sender.wall_s, 6),
            "work": {**_work(sent.get("final", [])), "skbs": sender.skbs},
            "guest_available_congestion_control": sender.info.get("available_congestion_control"),
        }
        vm["testbed_bound"] = _testbed_bound(vm)
        if "cpu_counters" in sent:
            # The guest's own account of its CPU over the run, beside the host's above.
            vm["guest_cpu"] = sent["cpu_counters"]
        if sender.absences is not None:
            vm["vcpu_absences"] = sender.absences.as_dict()
        if "kernel_profile" in sent:
            vm["guest_profile"] = kprofile.by_function(sent["kernel_profile"])
        if "tx_completions" in sent:
            vm["tx_completion"] = tx_completion(sent["tx_completions"])
        return vm

    def code_version(self) -> str:
        """The emulator and the engines' Python side, the host kernel, QEMU and the guest
        kernel (for Debian's, the package and version the series resolved to) all shape
        a VM run's results."""
        import platform
        import re

        from ...store.version import core_version, package_digest
        from ...vm import guest
        from ...vm.qemu import qemu_version

        found = re.search(r"version (\S+)", qemu_version())
        qemu = found.group(1) if found else "unknown"
        return (
            f"{core_version()}/py-{package_digest('kernel')}-{package_digest('vm')}/linux-{platform.release()}"
            f"/qemu-{qemu}/{guest.resolve(self.guest_kernel).identity}/vcpus-{self.vcpus}"
        )

    def use_by_default(self, *, guest_kernel: Optional[str] = None, **others: Any) -> None:
        """``--guest-kernel`` of a command that runs many scenarios: checked (and
        downloaded) once, then the guest kernel of every VM run of this process and of
        the workers it starts (``$CCBENCH_GUEST_KERNEL``)."""
        super().use_by_default(**others)
        if guest_kernel is not None:
            from ...vm import guest

            guest.resolve(guest_kernel)
            os.environ[GUEST_KERNEL_ENV] = guest_kernel

    def patched(self, setting: str) -> frozenset[str]:
        """The algorithms a flow with ``params.<setting> = 1`` runs on as a module built
        from the guest kernel's own code (``ccbench.vm.patched``)."""
        from ...vm.patched import PATCHES

        return frozenset(p.base for p in PATCHES if p.switch == setting)

    def congestion_control(self) -> tuple[str, ...]:
        """The congestion controls the guest kernel offers (read from its modules)."""
        from ...vm import guest

        return tuple(guest.resolve(self.guest_kernel).congestion_control())

    def _guest_for(self, scenario: "Scenario") -> "tuple[Scenario, Any, list[str]]":
        """The scenario as the guest runs it (a flow that asks for a patch runs the
        guest's patched algorithm: ``ccbench.vm.patched``), the guest kernel with the
        modules it needs, and a note for each flow changed."""
        from ...vm import guest, patched

        scenario, patches, notes = patched.substitute(scenario)
        return scenario, patched.with_patches(guest.resolve(self.guest_kernel), patches), notes

    def _facts(self, scenario: "Scenario", kernel: Any = None) -> "HostFacts":
        from ...bpf.name import is_bpf
        from ...kernel.host import HostFacts
        from ...vm import bpf, guest

        kernel = kernel or guest.resolve(self.guest_kernel)
        offered = kernel.congestion_control()
        for i, f in enumerate(scenario.flows):
            if f.cca not in offered and not is_bpf(f.cca):
                raise ScenarioError(
                    f"flows[{i}].cca",
                    f"'{f.cca}' is not available in the guest kernel "
                    f"({kernel.source}); available: {', '.join(offered)}",
                )
        # A BPF algorithm is registered in the guest as it boots (ccbench.vm.bpf).
        unavailable = bpf.unavailable(kernel) if any(is_bpf(f.cca) for f in scenario.flows) else None
        return HostFacts(kernel.release, kernel.hz(), offered, bpf_unavailable=unavailable)


def _work(final: list[dict[str, Any]]) -> dict[str, int]:
    """The guest sockets' work over the run, from their last TCP_INFO: segments out
    (data and retransmissions, in MSS units as GSO splits them), segments in (ACKs) and
    bytes sent."""
    return {
        "segs_out": sum(int(i.get("segs_out", 0)) for i in final),
        "segs_in": sum(int(i.get("segs_in", 0)) for i in final),
        "bytes_sent": sum(int(i.get("bytes_sent", 0)) for i in final),
    }


ENGINE = VmEngine()
run = ENGINE.run
check = ENGINE.check


# An unreserved vCPU busy this much of the run: the guest's CPU, not the network, set the pace.
GUEST_BUSY_BOUND = 0.9


def _testbed_bound(vm: dict[str, Any]) -> Optional[str]:
    """Why the testbed rather than the network held this run's sender, or None: QEMU's
    main thread (the guest's packets) waited for a host CPU most of the run, or an
    unreserved vCPU was busy nearly all of it."""
    from ...vm.sender import IO_WAIT_BOUND

    waiting = vm["io_thread"]["waiting"]
    if waiting > IO_WAIT_BOUND:
        return f"QEMU's main thread waited for a host CPU {waiting:.0%} of the run"
    use = max(vm["vcpu_cpu_use"], default=0.0)
    if all(share is None for share in vm["cpu_share_applied"]) and use > GUEST_BUSY_BOUND:
        return f"the guest's vCPU was busy {use:.0%} of the run"
    return None


def _vm_notes(kernel: Any, accel: str, booked: Optional[float], io_waiting: float) -> list[str]:
    """What a reader of a VM run's results should know: where the senders ran, the
    deadline bandwidth already booked, and a QEMU main thread that waited for a CPU."""
    from ...vm.sender import IO_WAIT_BOUND

    notes = [
        f"the senders ran in a QEMU guest ({kernel.source}) under {accel.upper()}"
        + (
            "; TCG translates every guest instruction, so guest CPU work costs several times what it costs "
            "under KVM or on bare metal"
            if accel == "tcg"
            else ""
        ),
        "deadline bandwidth booked before the run: "
        + ("unknown (debugfs not mounted)" if booked is None else f"{booked:.2f} CPUs"),
    ]
    if io_waiting > IO_WAIT_BOUND:
        notes.append(
            f"QEMU's main thread, which carries the guest's packets to and from its TAP, waited for a host CPU "
            f"{io_waiting:.0%} of the run: the testbed held the guest's skbs and ACKs, so this run's rate, RTT and "
            "TX completions are partly the host's, not the guest's (a host with CPUs to spare avoids it)"
        )
    return notes


def _refuse_another_tick(sc: "Scenario") -> None:
    """``host.cpu_tick`` is this host kernel's: a scenario may restate it, not change it."""
    from ...units import format_duration
    from ...vm.deadline import host_tick_ns

    if sc.host is None or "cpu_tick_ns" not in sc.host.model_fields_set:
        return
    tick = host_tick_ns()
    if tick is not None and sc.host.cpu_tick_ns != tick:
        raise ScenarioError(
            "host.cpu_tick",
            f"is this host kernel's scheduler tick, {format_duration(tick)} "
            "(1 / CONFIG_HZ); the VM engine cannot change it: leave it out or give that value",
        )


def _refuse_connecting_when_due(sc: "Scenario") -> None:
    """The guest's agent connects every flow ahead of its data, without Fast Open."""
    for i, f in enumerate(sc.flows):
        if f.connect != "ahead" or f.fastopen:
            key = "connect" if f.connect != "ahead" else "fastopen"
            raise ScenarioError(
                f"flows[{i}].{key}",
                "the VM engine's agent connects ahead of the data, without Fast Open; "
                "use the simulator or the kernel engine",
            )


def _refuse_path_mtu(sc: "Scenario") -> None:
    """A path MTU below the hosts' (the emulator's drop and ICMP) has been checked on the
    kernel engine's namespaces only, not with a guest's kernel behind its TAP."""
    if sc.link.mtu_bytes is not None:
        raise ScenarioError(
            "link.mtu",
            "the VM engine does not emulate a path MTU below the guest's; use the simulator or the kernel engine",
        )


def _refuse_flows_going_up(sc: "Scenario") -> None:
    """Every sender runs in the guest, every receiver in this host's namespace: a flow
    going up would need its sender on the host and its receiver in the guest."""
    from ...kernel.plan import goes_up

    for i, f in enumerate(sc.flows):
        if goes_up(f):
            raise ScenarioError(
                f"flows[{i}].direction",
                'the VM engine runs every sender in its guest, so every flow goes down; "up" runs on '
                "the simulator or the kernel engine",
            )


def _refuse_udp_and_arrivals(sc: "Scenario") -> None:
    """The guest's agent sends TCP flows only: UDP flows and arrivals (in the core JSON,
    where the scenario puts them) are refused."""
    core = sc.to_core()
    for key in ("udp", "arrivals"):
        if core.get(key):
            raise ScenarioError(
                key,
                "the VM engine's guest agent runs TCP flows only; UDP flows and arrivals run on the "
                "simulator or the kernel engine",
            )


def tx_completion(traced: dict[str, Any]) -> dict[str, Any]:
    """The agent's per-skb delays from the NIC's ``ndo_start_xmit`` to the free that
    returns the skb's bytes to its socket, as quantiles in microseconds: ``idle`` for
    frees that woke the guest's CPU, ``busy`` for frees that found it working, ``all``
    for both."""
    import numpy as np

    def quantiles(delays: list[int]) -> dict[str, Any]:
        if not delays:
            return {"skbs": 0}
        q = np.percentile(np.asarray(delays, dtype=float), [10, 25, 50, 75, 90])
        return {
            "skbs": len(delays),
            "mean": round(float(np.mean(delays)), 1),
            **{f"p{p}": round(float(v), 1) for p, v in zip((10, 25, 50, 75, 90), q)},
        }

    idle, busy = traced.get("idle_us", []), traced.get("busy_us", [])
    return {
        "all_us": quantiles(idle + busy),
        "idle_us": quantiles(idle),
        "busy_us": quantiles(busy),
        "unpaired": traced.get("unpaired", 0),
        "lost_events": traced.get("lost_events", 0),
    }
