"""The CPU policy of a vCPU thread: SCHED_DEADLINE with runtime = share x period and
a deadline of the runtime (the 2BRobust set-up) or the period, set with
``sched_setattr(2)`` and read back with ``sched_getattr(2)``.

A thread is never switched back to SCHED_OTHER: on some host kernels (seen on 6.18) a
deadline thread reverted while it sleeps keeps its bandwidth booked in the root domain
until about twenty such reverts make every new reservation fail with EBUSY. Parameters
are changed in place, and QEMU's exit releases the reservation.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import ScenarioError

SCHED_DEADLINE = 6
SYS_SCHED_SETATTR = 314  # x86_64
SYS_SCHED_GETATTR = 315
# The kernel refuses periods below 2^DL_SCALE ns and runtimes below that too
# (__checkparam_dl, DL_SCALE = 10): about 1 us.
MIN_RUNTIME_NS = 1 << 10
SCHED_DEBUG = Path("/sys/kernel/debug/sched/debug")


class SchedAttr(ctypes.Structure):
    """``struct sched_attr`` (include/uapi/linux/sched/types.h), SCHED_ATTR_SIZE_VER1."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
        ("sched_util_min", ctypes.c_uint32),
        ("sched_util_max", ctypes.c_uint32),
    ]


@dataclass(frozen=True)
class Policy:
    """A thread's scheduling policy as the kernel reports it."""

    policy: int
    runtime_ns: int
    deadline_ns: int
    period_ns: int

    @property
    def share(self) -> Optional[float]:
        return self.runtime_ns / self.period_ns if self.policy == SCHED_DEADLINE and self.period_ns else None

    def describe(self) -> str:
        if self.policy != SCHED_DEADLINE:
            return {0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH", 5: "SCHED_IDLE"}.get(
                self.policy, f"policy {self.policy}"
            )
        return f"SCHED_DEADLINE {self.runtime_ns}/{self.deadline_ns}/{self.period_ns} ns"


_libc = ctypes.CDLL(None, use_errno=True)


def set_deadline(tid: int, share: float, period_ns: int, deadline: str = "slice") -> Policy:
    """Give thread ``tid`` ``share`` of every ``period_ns``, due at the end of the
    runtime (``deadline="runtime"``) or of the period (``"slice"``); returns the policy
    read back. ScenarioError on ``--cpu-share`` when the kernel refuses admission (EBUSY)."""
    runtime = max(MIN_RUNTIME_NS, round(share * period_ns))
    attr = SchedAttr(
        size=ctypes.sizeof(SchedAttr),
        sched_policy=SCHED_DEADLINE,
        sched_runtime=runtime,
        sched_deadline=runtime if deadline == "runtime" else period_ns,
        sched_period=period_ns,
    )
    if _libc.syscall(SYS_SCHED_SETATTR, tid, ctypes.byref(attr), 0) != 0:
        err = ctypes.get_errno()
        if err == errno.EBUSY:
            raise ScenarioError(
                "--cpu-share",
                f"the host refused a deadline reservation of {share:.0%} of "
                f"{period_ns / 1e6:g} ms per vCPU (EBUSY: not enough free deadline bandwidth"
                f"{_free_note()}); use fewer vCPUs or a smaller share",
            )
        raise ScenarioError("--cpu-share", f"sched_setattr on vCPU thread {tid}: {os.strerror(err)}")
    return get_policy(tid)


def get_policy(tid: int) -> Policy:
    attr = SchedAttr()
    if _libc.syscall(SYS_SCHED_GETATTR, tid, ctypes.byref(attr), ctypes.sizeof(SchedAttr), 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"sched_getattr({tid}): {os.strerror(err)}")
    return Policy(attr.sched_policy, attr.sched_runtime, attr.sched_deadline, attr.sched_period)


def schedstat(pid: int, tid: int) -> tuple[int, int]:
    """(CPU time run, time spent runnable waiting for a CPU) of a thread, ns, from
    ``/proc/<pid>/task/<tid>/schedstat``. For a vCPU the second is host work that kept
    the guest from running (and, under SCHED_DEADLINE, its throttled time)."""
    run, delay = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[:2]
    return int(run), int(delay)


def cpu_time_ns(pid: int, tid: int) -> int:
    """CPU time a thread has run."""
    return schedstat(pid, tid)[0]


def context_switches(pid: int, tid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of a thread, from
    ``/proc/<pid>/task/<tid>/status``. For a vCPU thread the first counts the guest going
    idle; the second counts it being taken off the CPU while it had work, which for a
    deadline thread (above every other thread here) is mostly being throttled."""
    text = Path(f"/proc/{pid}/task/{tid}/status").read_text()

    def count(name: str) -> int:
        found = re.search(rf"^{name}:\s*(\d+)", text, re.M)
        return int(found.group(1)) if found else 0

    return count("voluntary_ctxt_switches"), count("nonvoluntary_ctxt_switches")


def host_tick_ns() -> Optional[int]:
    """This host kernel's scheduler tick (1 / CONFIG_HZ), at which SCHED_DEADLINE notices
    an exhausted budget; None when the kernel's configuration cannot be read."""
    import gzip

    sources = [(Path("/proc/config.gz"), gzip.open), (Path(f"/boot/config-{os.uname().release}"), open)]
    for path, opener in sources:
        try:
            with opener(path, "rt") as f:  # type: ignore[operator]
                found = re.search(r"^CONFIG_HZ=(\d+)$", f.read(), re.M)
        except OSError:
            continue
        if found:
            return 1_000_000_000 // int(found.group(1))
    return None


def booked_bandwidth() -> Optional[float]:
    """The root domain's booked deadline bandwidth in CPUs (``total_bw``), when debugfs
    is mounted; None otherwise (it is never mounted for this)."""
    try:
        text = SCHED_DEBUG.read_text()
    except OSError:
        return None
    found = re.search(r"total_bw\s*:\s*(\d+)", text)
    # Fixed point with BW_SHIFT = 20 (kernel/sched/sched.h).
    return int(found.group(1)) / (1 << 20) if found else None


def _free_note() -> str:
    booked = booked_bandwidth()
    return "" if booked is None else f"; {booked:.2f} CPUs are booked"
