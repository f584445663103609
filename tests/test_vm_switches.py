"""The vCPU's absences from the host's context-switch records (``ccbench.vm.switches``) and
guest kernel's tick profile (``ccbench.vm.kprofile``)."""

from __future__ import annotations

import math
import os
import time

import pytest

from ccbench.vm import kprofile
from ccbench.vm.switches import Absences, SwitchTrace, absences, bin_centre_ns

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (perf_event_open on a thread)")
pytestmark = pytest.mark.host

MS = 1_000_000
# A thread sleeps at 1 ms, is woken at 4.99 ms and back at 5 ms; it is throttled (still
# runnable) at 5.5 ms and back at 10.5 ms; it sleeps at 11 ms, is woken at 11.1 ms but
# kept off until 12 ms (throttled when it went to sleep); it sleeps at 13 ms and is back
# at 14 ms, its wake-up unseen. Records before its first departure end no absence.
SWITCHES = [
    (0, False, False),
    (1 * MS, True, False),
    (5 * MS, False, False),
    (11 * MS // 2, True, True),
    (21 * MS // 2, False, False),
    (11 * MS, True, False),
    (12 * MS, False, False),
    (13 * MS, True, False),
    (14 * MS, False, False),
]
WAKEUPS = [4_990_000, 11_100_000]


def test_absences_are_told_apart_by_whether_the_thread_was_kept_off() -> None:
    a = absences(SWITCHES, WAKEUPS)
    assert a.count("slept") == 2 and a.count("held") == 2
    assert sorted(bin_centre_ns(b) for b in a.slept) == pytest.approx([1.12 * MS, 4.47 * MS], rel=0.01)
    assert sorted(bin_centre_ns(b) for b in a.held) == pytest.approx([1.12 * MS, 4.47 * MS], rel=0.01)
    assert absences([], []) == Absences()


def test_an_absence_costs_a_refill_that_grows_with_its_length() -> None:
    a = absences(SWITCHES, WAKEUPS)
    # No decay: each absence a whole refill; a long decay: short absences cost little.
    assert a.cold("slept", 0) == 2
    assert 0 < a.cold("slept", 100 * MS) < 0.1 < a.cold("slept", MS) < 2
    assert math.isclose(a.cold("held", 5 * MS), sum(1 - math.exp(-bin_centre_ns(b) / (5 * MS)) for b in a.held))
    assert Absences.from_dict(a.as_dict()) == a


def test_the_profile_ranks_functions_by_ticks() -> None:
    got = kprofile.by_function(
        {"step": 16, "ticks": 10, "functions": {"tcp_ack": 3, "(modules)": 2, "native_safe_halt": 5}}, top=2
    )
    assert got["ticks"] == 10
    assert got["functions"] == [
        {"function": "native_safe_halt", "ticks": 5, "share": 0.5},
        {"function": "tcp_ack", "ticks": 3, "share": 0.3},
    ]


@needs_root
def test_the_switch_records_see_a_thread_sleep_and_leave_nothing_behind() -> None:
    import threading

    from ccbench.kernel import state

    tids: list[int] = []
    stop = threading.Event()

    def napper() -> None:
        tids.append(threading.get_native_id())
        while not stop.is_set():
            time.sleep(0.002)

    t = threading.Thread(target=napper)
    t.start()
    while not tids:
        time.sleep(0.001)
    with state.recorded_run() as (st, _):
        trace = SwitchTrace(st, tids)
        trace.start()
        assert os.path.isdir(st.traces[0])
        time.sleep(0.3)
        found = trace.stop()
        assert not os.path.exists(st.traces[0])
    stop.set()
    t.join()
    assert not st.path.exists() and not any(m in open("/proc/mounts").read() for m in st.mounts)
    # About 150 naps of 2 ms, each an absence it slept through.
    assert 50 < found.count("slept") < 400, found
    assert found.cold("slept", 0) == found.count("slept")
    naps = [bin_centre_ns(b) for b, n in found.slept.items() for _ in range(n)]
    assert 1 * MS < sorted(naps)[len(naps) // 2] < 5 * MS, naps


@needs_root
def test_cleanup_removes_the_trace_of_a_run_that_died() -> None:
    from ccbench.kernel import state

    st = state.RunState.create()
    trace = SwitchTrace(st, [os.getpid()])
    trace.start()
    path = st.traces[0]
    # Its owner "died": the record names a process that cannot exist.
    st.owner_pid, st.owner_start = 2**22 + 1, None
    st.save()
    removed = state.cleanup_stale()
    assert f"run {st.id}: tracing instance {path}" in removed, removed
    assert not os.path.exists(path) and not st.path.exists()
    trace.close()  # the records, which die with the process anyway
