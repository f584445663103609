"""When the vCPU threads were off their CPU during a run, and why: the host kernel's
context-switch records for those threads (``perf_event_open(2)`` with
``context_switch``: a ``PERF_RECORD_SWITCH`` each time a thread leaves or enters a CPU,
flagged ``PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`` when it left still runnable), and their
``sched_wakeup`` trace events, in a tracing instance of the run's own
(``instances/ccb-<run>-vcpu`` in tracefs), both on ``CLOCK_MONOTONIC``.

Every time a vCPU thread comes back onto a CPU ends an *absence*, from when it left. The
absence is *held* when the thread was kept off while ready to run for more than
``HELD_NS`` (it left still runnable, throttled by its SCHED_DEADLINE budget or
preempted, or it was woken and then had to wait: throttled when it went to sleep), and
*slept* otherwise (the guest idle until an interrupt woke it). ``ccbench
calibrate-host`` fits what coming back costs against how long the thread was away: a
CPU's caches go cold while it is away (docs/vm-engine.md, "What coming back costs").

(The ``sched_switch`` trace event alone would do, but on some hosts it misses a
thread's return from an idle CPU: seen on a 6.18 host with the haltpoll idle driver,
where a thread on one CPU had 3 of its 141 returns traced and all 141 in the perf
records.)
"""

from __future__ import annotations

import bisect
import ctypes
import math
import mmap
import os
import re
import struct
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..kernel.state import PREFIX, RunState

# Absences are kept as a histogram: BINS_PER_DECADE log-spaced bins from 1 us.
BINS_PER_DECADE = 10
# Ready but kept off for longer than this: held. A woken thread that finds its CPU idle
# runs within a few microseconds.
HELD_NS = 50_000
TRACEFS = Path("/sys/kernel/tracing")
_WAKEUP = re.compile(r"\s(\d+)\.(\d+): sched_wakeup: .*pid=(\d+) ")

_NR_PERF_EVENT_OPEN = 298  # x86_64
_PERF_TYPE_SOFTWARE, _PERF_COUNT_SW_DUMMY = 1, 9
_PERF_SAMPLE_TID, _PERF_SAMPLE_TIME = 1 << 1, 1 << 2
_DISABLED, _SAMPLE_ID_ALL, _USE_CLOCKID, _CONTEXT_SWITCH = 1 << 0, 1 << 18, 1 << 25, 1 << 26
_CLOCK_MONOTONIC = 1
_PERF_FLAG_FD_CLOEXEC = 1 << 3
_PERF_EVENT_IOC_ENABLE, _PERF_EVENT_IOC_DISABLE = 0x2400, 0x2401
_PERF_RECORD_LOST, _PERF_RECORD_SWITCH = 2, 14
_MISC_SWITCH_OUT, _MISC_SWITCH_OUT_PREEMPT = 1 << 13, 1 << 14
# struct perf_event_mmap_page: data_head, data_tail, data_offset, data_size.
_HEAD, _TAIL = 1024, 1032
# Pages of records per thread (1 MB: four seconds of 10,000 24-byte records a second); the
# reader drains them every READ_EVERY_S.
_DATA_PAGES = 256
READ_EVERY_S = 0.05


class SwitchError(RuntimeError):
    pass


def _bin(ns: float) -> int:
    return max(0, math.floor(math.log10(max(ns, 1000.0) / 1000.0) * BINS_PER_DECADE))


def bin_centre_ns(i: int) -> float:
    """The geometric centre of histogram bin ``i``."""
    return 1000.0 * 10 ** ((i + 0.5) / BINS_PER_DECADE)


@dataclass
class Absences:
    """Absences of the vCPU threads over a run, by kind, as histograms ``{bin: count}``
    (see :func:`bin_centre_ns`)."""

    slept: dict[int, int] = field(default_factory=dict)
    held: dict[int, int] = field(default_factory=dict)

    def add(self, away_ns: float, held: bool) -> None:
        bins = self.held if held else self.slept
        b = _bin(away_ns)
        bins[b] = bins.get(b, 0) + 1

    def count(self, kind: str) -> int:
        return sum(getattr(self, kind).values())

    def cold(self, kind: str, decay_ns: float) -> float:
        """Sum over the absences of ``kind`` of ``1 - exp(-away / decay)``: how many
        full refills they cost (every one, with no decay)."""
        bins: dict[int, int] = getattr(self, kind)
        if decay_ns <= 0:
            return float(sum(bins.values()))
        return sum(n * (1.0 - math.exp(-bin_centre_ns(b) / decay_ns)) for b, n in bins.items())

    def as_dict(self) -> dict[str, object]:
        return {
            "bins_per_decade": BINS_PER_DECADE,
            "slept": [[b, n] for b, n in sorted(self.slept.items())],
            "held": [[b, n] for b, n in sorted(self.held.items())],
        }

    @classmethod
    def from_dict(cls, d: dict[str, list[list[int]]]) -> "Absences":
        return cls({int(b): int(n) for b, n in d["slept"]}, {int(b): int(n) for b, n in d["held"]})


def absences(switches: list[tuple[int, bool, bool]], wakeups: list[int]) -> Absences:
    """Absences from one thread's switches in time order (time ns, left the CPU, left it
    still runnable) and the times it was woken, sorted."""
    out = Absences()
    left: Optional[tuple[int, bool]] = None
    for t, is_out, preempted in switches:
        if is_out:
            left = (t, preempted)
        elif left is not None:
            since, preempted = left
            # Ready since it left if it was preempted, else from its first wake-up after
            # it left (at once if none was seen).
            i = bisect.bisect_right(wakeups, since)
            woken = wakeups[i] if i < len(wakeups) and wakeups[i] <= t else t
            ready = since if preempted else woken
            out.add(t - since, t - ready > HELD_NS)
            left = None
    return out


class _PerfAttr(ctypes.Structure):
    """``struct perf_event_attr`` up to PERF_ATTR_SIZE_VER5 (112 bytes)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
        ("branch_sample_type", ctypes.c_uint64),
        ("sample_regs_user", ctypes.c_uint64),
        ("sample_stack_user", ctypes.c_uint32),
        ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64),
        ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16),
        ("reserved", ctypes.c_uint16),
    ]


class _ThreadSwitches:
    """One thread's context-switch records, read from their ring as they come."""

    def __init__(self, tid: int) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        attr = _PerfAttr(
            type=_PERF_TYPE_SOFTWARE,
            size=ctypes.sizeof(_PerfAttr),
            config=_PERF_COUNT_SW_DUMMY,
            sample_type=_PERF_SAMPLE_TID | _PERF_SAMPLE_TIME,
            flags=_DISABLED | _SAMPLE_ID_ALL | _USE_CLOCKID | _CONTEXT_SWITCH,
            clockid=_CLOCK_MONOTONIC,
        )
        fd = libc.syscall(_NR_PERF_EVENT_OPEN, ctypes.byref(attr), tid, -1, -1, _PERF_FLAG_FD_CLOEXEC)
        if fd < 0:
            raise SwitchError(f"perf_event_open on thread {tid}: {os.strerror(ctypes.get_errno())}")
        self.fd, self.libc, self.tid = fd, libc, tid
        self.page = mmap.PAGESIZE
        self.ring = mmap.mmap(fd, (1 + _DATA_PAGES) * self.page)
        self.size = _DATA_PAGES * self.page
        self.switches: list[tuple[int, bool, bool]] = []
        self.lost = False

    def ioctl(self, request: int) -> None:
        self.libc.ioctl(self.fd, request, 0)

    def drain(self) -> None:
        head = struct.unpack_from("<Q", self.ring, _HEAD)[0]
        tail = struct.unpack_from("<Q", self.ring, _TAIL)[0]
        while tail < head:
            at = self.page + tail % self.size
            kind, misc, size = struct.unpack_from("<IHH", self._read(at, 8))
            if kind == _PERF_RECORD_SWITCH:
                # sample_id: pid, tid (u32 each), time (u64).
                _, _, t = struct.unpack_from("<IIQ", self._read(at + 8, 16))
                self.switches.append((t, bool(misc & _MISC_SWITCH_OUT), bool(misc & _MISC_SWITCH_OUT_PREEMPT)))
            elif kind == _PERF_RECORD_LOST:
                self.lost = True
            tail += size
        struct.pack_into("<Q", self.ring, _TAIL, tail)

    def _read(self, at: int, n: int) -> bytes:
        """``n`` bytes at ring offset ``at``, wrapping at the end of the data pages."""
        start = at - self.page
        first = min(n, self.size - start)
        data = self.ring[at : at + first]
        return data + self.ring[self.page : self.page + n - first] if first < n else data

    def close(self) -> None:
        self.ring.close()
        os.close(self.fd)
        self.fd = -1


class SwitchTrace:
    """Records the context switches and wake-ups of ``tids`` from :meth:`start` to
    :meth:`stop` (root); the tracing instance is recorded in ``st``, so that cleanup
    removes it if the run dies."""

    def __init__(self, st: RunState, tids: list[int]) -> None:
        self.st = st
        self.threads = [_ThreadSwitches(t) for t in tids]
        self.instance: Optional[Path] = None
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, name="vcpu-switches", daemon=True)

    def start(self) -> None:
        self.instance = _tracefs(self.st) / "instances" / f"{PREFIX}{self.st.id}-vcpu"
        self.st.add_trace(str(self.instance))
        self.instance.mkdir()
        self._write("trace_clock", "mono")
        self._write("events/sched/sched_wakeup/filter", " || ".join(f"pid=={t.tid}" for t in self.threads))
        self._write("events/sched/sched_wakeup/enable", "1")
        self._write("tracing_on", "1")
        for t in self.threads:
            t.ioctl(_PERF_EVENT_IOC_ENABLE)
        self._reader.start()

    def stop(self) -> Absences:
        for t in self.threads:
            t.ioctl(_PERF_EVENT_IOC_DISABLE)
        self._stop.set()
        self._reader.join()
        assert self.instance is not None
        self._write("tracing_on", "0")
        wakeups: dict[int, list[int]] = {}
        for m in _WAKEUP.finditer((self.instance / "trace").read_text(errors="replace")):
            wakeups.setdefault(int(m.group(3)), []).append(
                int(m.group(1)) * 1_000_000_000 + int(m.group(2).ljust(9, "0"))
            )
        self.close()
        out = Absences()
        for t in self.threads:
            if t.lost:
                raise SwitchError("the vCPU switch records overflowed their ring")
            found = absences(t.switches, sorted(wakeups.get(t.tid, [])))
            for kind in ("slept", "held"):
                mine = getattr(out, kind)
                for b, n in getattr(found, kind).items():
                    mine[b] = mine.get(b, 0) + n
        return out

    def close(self) -> None:
        """Stop recording and let go of the records and the tracing instance."""
        if self._reader.is_alive():
            self._stop.set()
            self._reader.join()
        for t in self.threads:
            if t.fd >= 0:
                t.drain()
                t.close()
        if self.instance is not None and self.instance.is_dir():
            os.rmdir(self.instance)

    def _read(self) -> None:
        while not self._stop.wait(READ_EVERY_S):
            for t in self.threads:
                t.drain()

    def _write(self, name: str, value: str) -> None:
        assert self.instance is not None
        (self.instance / name).write_text(value)


def _tracefs(st: RunState) -> Path:
    """Where tracefs is mounted; mounted at TRACEFS for the run (and recorded) if it is
    nowhere."""
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "tracefs":
            return Path(parts[1])
    st.add_mount(str(TRACEFS))
    subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True, capture_output=True)
    return TRACEFS
