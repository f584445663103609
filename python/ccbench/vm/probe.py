"""``ccbench vm probe``: boot the guest once and report what it offers and what the host
gives it: guest kernel, accelerator, boot time, congestion controls, vCPU threads and,
with a CPU share, the deadline policy read back and the CPU time a busy vCPU got."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional

from ..kernel.state import recorded_run
from . import deadline
from .guest import DEFAULT, resolve
from .image import guest_image
from .qemu import Vm, VmError, accelerator, qemu_version

# A guest under a small share on a busy host may take a while to reach its busy loop.
BUSY_START_TIMEOUT_S = 60.0


@dataclass
class ProbeReport:
    guest_kernel: str
    release: str
    accelerator: str
    qemu: str
    boot_s: float
    vcpus: int
    congestion_control: list[str]
    vcpu_threads: list[int]
    policy: list[str]
    requested_share: Optional[float]
    period_ns: Optional[int]
    busy_s: float
    vcpu_cpu_use: list[float]  # CPU time / wall time of each vCPU thread while busy
    booked_deadline_bandwidth: Optional[float]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def probe(
    guest_kernel: str = DEFAULT,
    vcpus: int = 1,
    share: Optional[float] = None,
    period_ns: int = 10_000_000,
    busy_s: float = 0.0,
) -> ProbeReport:
    """Boot, optionally apply the deadline policy to every vCPU thread, optionally keep
    the guest busy for ``busy_s`` seconds measuring what each vCPU thread got."""
    kernel = resolve(guest_kernel)
    with _workspace() as (where, record):
        initrd = guest_image(kernel)
        accel = accelerator(kernel, initrd, where)
        busy = f" ccbench.busy={busy_s:g}" if busy_s > 0 else ""
        with Vm(
            kernel, initrd, where / "vm", append=f"ccbench.mode=probe{busy}", vcpus=vcpus, accel=accel, on_spawn=record
        ) as vm:
            vm.start()
            tids = vm.vcpu_threads()
            policies = [
                deadline.set_deadline(t, share, period_ns) if share is not None else deadline.get_policy(t)
                for t in tids
            ]
            use: list[float] = []
            if not vm.wait_for("CCBENCH WAITING", BUSY_START_TIMEOUT_S):
                raise VmError(f"the guest did not open its control channel within {BUSY_START_TIMEOUT_S:.0f} s")
            vm.control().sendall(b"go\n")
            if busy_s > 0 and vm.wait_for("CCBENCH BUSY", BUSY_START_TIMEOUT_S):
                t0, c0 = time.monotonic(), [deadline.cpu_time_ns(vm.pid, t) for t in tids]
                time.sleep(max(0.0, busy_s - 0.5))
                t1, c1 = time.monotonic(), [deadline.cpu_time_ns(vm.pid, t) for t in tids]
                use = [(b - a) / 1e9 / (t1 - t0) for a, b in zip(c0, c1)]
            elif busy_s > 0:
                raise VmError(f"the guest did not start its busy loop within {BUSY_START_TIMEOUT_S:.0f} s")
            booked = deadline.booked_bandwidth()
            vm.wait_for("CCBENCH DONE", busy_s + 10.0)
    return ProbeReport(
        guest_kernel=kernel.source,
        release=vm.ready.get("release", kernel.release),
        accelerator=accel,
        qemu=qemu_version(),
        boot_s=round(vm.boot_s, 3),
        vcpus=vcpus,
        congestion_control=vm.ready.get("cc", "").split(","),
        vcpu_threads=tids,
        policy=[p.describe() for p in policies],
        requested_share=share,
        period_ns=period_ns if share is not None else None,
        busy_s=busy_s,
        vcpu_cpu_use=[round(u, 4) for u in use],
        booked_deadline_bandwidth=booked,
    )


@contextlib.contextmanager
def _workspace() -> Iterator[tuple[Path, Callable[[int], None]]]:
    """Where the probe's QEMU keeps its sockets and log, and how its pid is recorded. As
    root the probe is a recorded run, as a kernel run is: killed, it leaves nothing that
    ``ccbench kernel cleanup`` (or the next run) does not remove; without root (no
    deadline policy to set) a temporary directory does."""
    if os.geteuid() != 0:
        with tempfile.TemporaryDirectory(prefix="ccbench-vm-") as tmp:
            yield Path(tmp), lambda pid: None
        return
    with recorded_run() as (st, _):
        yield st.workdir, lambda pid: st.add_process(pid, "qemu")
