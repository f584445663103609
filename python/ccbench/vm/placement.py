"""Which host CPUs the VM engine's threads run on.

The testbed this engine reproduces gave the sender VM a host of its own: the emulator and
the receivers were other machines. Here they share one host, and unplaced they share the
vCPU's CPU: the emulator's thread is SCHED_FIFO (and its writes to the receiver's TUN
device run the receiver's TCP stack in its context), so it preempts a vCPU under
SCHED_OTHER, and a vCPU under SCHED_DEADLINE preempts it and delays the bottleneck. With
an unlimited TCG guest on two CPUs (Cubic, 100 Mbit/s, 10 ms), the vCPU was runnable but
waiting for its CPU a third of the run, and during the guest's pauses the other CPU was
idle 57% of the time.

So when the host has a CPU to spare, each vCPU gets a CPU of its own and everything else
of the run (QEMU's other threads, the emulator, the receivers) the remaining ones; the
same unlimited run then gave 90.3 instead of 75.9 Mbit/s, the vCPU waiting 0.6% of the
time instead of 33% (docs/vm-engine.md, "Where the testbed's threads run"). A thread
cannot be SCHED_DEADLINE with an affinity smaller than its root domain
(``__sched_setscheduler``: EPERM), so a vCPU that gets a share stays free to run
anywhere, and it does not keep to one CPU: at every replenishment a lone deadline
task is queued and at once pushed to a CPU that runs no deadline task (``dl_task_timer``
-> ``push_dl_task``), so it alternates between the CPUs period by period (measured: half
its samples on each) and half of its periods preempt the emulator. Even so, Cubic at 70%
of 20 ms (100 Mbit/s, 10 ms) got 60-70 Mbit/s with the rest placed, 53-59 without.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional


@dataclass(frozen=True)
class Placement:
    """CPUs of the vCPU threads, in their order (none: free to run anywhere), and of the
    rest of the run."""

    vcpu_cpus: tuple[int, ...]
    host_cpus: tuple[int, ...]

    def describe(self) -> str:
        vcpus = (
            ", ".join(f"vCPU {i} on CPU {c}" for i, c in enumerate(self.vcpu_cpus))
            or "the vCPUs (SCHED_DEADLINE) on any CPU"
        )
        return f"{vcpus}; QEMU's other threads, the emulator and the receivers on CPU(s) " + ",".join(
            str(c) for c in self.host_cpus
        )


def plan(cpus: Iterable[int], vcpus: int, deadline: bool = False) -> Optional[Placement]:
    """The vCPUs on the first CPUs (unless they are to be SCHED_DEADLINE), the rest of
    the run on the others; None when the host has no CPU beyond one per vCPU (then
    nothing is moved)."""
    ordered = sorted(set(cpus))
    if vcpus < 1 or len(ordered) <= vcpus:
        return None
    return Placement(() if deadline else tuple(ordered[:vcpus]), tuple(ordered[vcpus:]))


def threads(pid: int) -> list[int]:
    """The thread ids of process ``pid`` (empty if it is gone)."""
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def _set(tid: int, cpus: Iterable[int]) -> None:
    try:
        os.sched_setaffinity(tid, set(cpus))
    except OSError:  # gone since it was listed
        pass


def apply(placement: Placement, vcpu_tids: list[int], qemu_pid: int, others: Iterable[int]) -> None:
    """Move the run's threads as ``placement`` says."""
    for tid in threads(qemu_pid):
        if tid not in vcpu_tids:
            _set(tid, placement.host_cpus)
    for pid in others:
        for tid in threads(pid):
            _set(tid, placement.host_cpus)
    for tid, cpu in zip(vcpu_tids, placement.vcpu_cpus):
        _set(tid, [cpu])
