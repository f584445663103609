"""Where the VM engine puts its threads on the host (``ccbench.vm.placement``): planned
from the CPUs this process may use, applied to threads and processes of this test."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest

from ccbench.vm import placement
from ccbench.vm.placement import Placement

pytestmark = pytest.mark.host


def test_the_vcpus_take_the_first_cpus_and_the_rest_of_the_run_the_others() -> None:
    assert placement.plan([0, 1], 1) == Placement((0,), (1,))
    assert placement.plan([3, 1, 2, 0], 2) == Placement((0, 1), (2, 3))
    assert placement.plan({5, 7, 9}, 1) == Placement((5,), (7, 9))
    assert placement.plan([0, 1, 2], 1, deadline=True) == Placement((), (1, 2))


@pytest.mark.parametrize("cpus, vcpus", [([0], 1), ([0, 1], 2), ([0, 1], 3), ([0, 1], 0)])
def test_nothing_is_moved_without_a_cpu_to_spare(cpus: list[int], vcpus: int) -> None:
    assert placement.plan(cpus, vcpus) is None


def test_the_placement_says_where_each_part_runs() -> None:
    text = Placement((0, 1), (2, 3)).describe()
    assert text.startswith("vCPU 0 on CPU 0, vCPU 1 on CPU 1;") and text.endswith("on CPU(s) 2,3")


TWO_CPUS = len(os.sched_getaffinity(0)) >= 2


def last_cpu(tid: int) -> Optional[int]:
    """The CPU thread ``tid`` last ran on (field 39 of its stat; the name may hold spaces)."""
    try:
        with open(f"/proc/{tid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except OSError:
        return None


class _Ticking:
    """A thread that wakes every millisecond, as a guest's vCPU does for its timers."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        while self.thread.native_id is None:
            time.sleep(0.001)

    def _run(self) -> None:
        while not self.stop.wait(0.001):
            pass

    @property
    def tid(self) -> int:
        assert self.thread.native_id is not None
        return self.thread.native_id


@pytest.fixture
def processes() -> Iterator[tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]]:
    """Stand-ins for QEMU and the emulator: processes of this test's own."""
    procs = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
    try:
        yield procs[0], procs[1]
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs")
def test_apply_moves_the_vcpu_to_its_cpu_and_everything_else_away(
    processes: tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]],
) -> None:
    qemu, emulator = processes
    where = placement.plan(os.sched_getaffinity(0), 1)
    assert where is not None
    vcpu = _Ticking()
    try:
        placement.apply(where, [vcpu.tid], qemu.pid, [emulator.pid])
        assert os.sched_getaffinity(qemu.pid) == set(where.host_cpus)
        assert os.sched_getaffinity(emulator.pid) == set(where.host_cpus)
        assert os.sched_getaffinity(vcpu.tid) == {where.vcpu_cpus[0]}
        # A sleeping thread moves when it next wakes.
        end = time.monotonic() + 1.0
        while last_cpu(vcpu.tid) != where.vcpu_cpus[0] and time.monotonic() < end:
            time.sleep(0.001)
        assert last_cpu(vcpu.tid) == where.vcpu_cpus[0]
    finally:
        vcpu.stop.set()
        vcpu.thread.join()


@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs")
def test_a_vcpu_to_be_sched_deadline_stays_free_to_run_anywhere(
    processes: tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]],
) -> None:
    # sched_setattr(SCHED_DEADLINE) refuses a thread whose affinity is smaller than its
    # root domain.
    qemu, emulator = processes
    everywhere = os.sched_getaffinity(0)
    where = placement.plan(everywhere, 1, deadline=True)
    assert where is not None and where.vcpu_cpus == ()
    assert where.describe().startswith("the vCPUs (SCHED_DEADLINE) on any CPU;")
    vcpu = _Ticking()
    try:
        placement.apply(where, [vcpu.tid], qemu.pid, [emulator.pid])
        assert os.sched_getaffinity(vcpu.tid) == everywhere
        assert os.sched_getaffinity(emulator.pid) == set(where.host_cpus)
    finally:
        vcpu.stop.set()
        vcpu.thread.join()


def test_threads_of_a_process_that_is_gone_are_none() -> None:
    p = subprocess.Popen(["true"])
    p.wait()
    assert placement.threads(p.pid) == [] and last_cpu(p.pid) is None


def test_a_grid_resumes_only_from_runs_on_a_testbed_arranged_the_same_way(tmp_path: Path) -> None:
    from ccbench.engines.vm.cpu_grid import _read_kept

    kept = tmp_path / "cpu-cells.jsonl"
    placed = Placement((0,), (1,)).describe()
    rows = [
        {"cell": "a", "rep": 0, "duration": "10s", "guest": "debian:6.1", "vm_mbps": 1.0},  # before placement
        {"cell": "a", "rep": 1, "duration": "10s", "guest": "debian:6.1", "vm_mbps": 2.0, "placement": placed},
        {"cell": "b", "rep": 0, "duration": "10s", "guest": "debian:6.1", "vm_mbps": 3.0, "placement": None},
    ]
    kept.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert set(_read_kept(kept, "10s", "debian:6.1", placed)) == {("a", 1)}
    assert set(_read_kept(kept, "10s", "debian:6.1", None)) == {("a", 0), ("b", 0)}
