"""Shared helpers: running the CLI in a subprocess, and the end-to-end gate."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"

# A scenario small enough to simulate in a moment.
SHORT_TOML = """\
seed = 3
duration = "2s"
interval = "100ms"

[link]
rate = "10Mbit"
rtt = "20ms"
buffer = "1bdp"

[[flows]]
cca = "cubic"
count = 2
"""


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, cwd: Path | None = None) -> Completed:
    """``ccbench ARGS`` in a fresh interpreter, as a user would run it."""
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "ccbench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )
    return Completed(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def short_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "short.toml"
    path.write_text(SHORT_TOML)
    return path


# How much of a CPU other processes may use before a test of the host's timing skips.
QUIET_CPUS = 0.3
LOAD_SAMPLE_S = 0.5


def other_cpu_load(seconds: float = LOAD_SAMPLE_S) -> float:
    """The CPUs' worth of work other processes did over ``seconds`` while this one slept:
    about 0 on a quiet host, about 1 beside one busy loop (niced or not: a niced task
    still delays a vCPU that wakes beside it). Tasks under SCHED_IDLE in this process's
    scheduling group are left out, such as the rest of the suite that tests/suite.py runs
    beside the host tests: they give way at once. In another autogroup (another session,
    when the kernel groups sessions) SCHED_IDLE gives way only within that group, whose
    share is any other group's, so such tasks count."""
    ours = _autogroup("self")

    def cpu_ticks() -> dict[str, int]:
        ticks = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # stat(5): utime and stime are fields 14 and 15, policy field 41 (3 fields
            # precede the remainder read here).
            if int(fields[38]) != os.SCHED_IDLE or _autogroup(entry.name) != ours:
                ticks[entry.name] = int(fields[11]) + int(fields[12])
        return ticks

    before = cpu_ticks()
    time.sleep(seconds)
    after = cpu_ticks()
    used = sum(t - before.get(pid, t) for pid, t in after.items())
    return used / os.sysconf("SC_CLK_TCK") / seconds


def _autogroup(pid: str) -> str:
    """The process's autogroup (``/autogroup-N``), or "" when the kernel groups no
    sessions (sched(7), "The autogroup feature")."""
    try:
        return Path(f"/proc/{pid}/autogroup").read_text().split()[0]
    except (OSError, IndexError):
        return ""


def require_quiet_host(what: str) -> None:
    """Skip, with the figure, when other processes keep the host busy: ``what`` depends on
    the host's timing (a vCPU's waits, the emulator's capacity, a kernel run's RTT)."""
    load = other_cpu_load()
    if load > QUIET_CPUS:
        pytest.skip(
            f"{what} needs a quiet host, and other processes kept {load:.2f} CPUs busy over "
            f"{LOAD_SAMPLE_S} s (at most {QUIET_CPUS})"
        )


def timing_check(ok: bool, what: str, detail: object = "") -> None:
    """Assert ``ok``, a check of ``what`` that depends on the host's timing; when it fails
    on a host that other processes keep busy, skip with their load instead."""
    if not ok:
        require_quiet_host(what)
    assert ok, f"{what}: {detail}"


# Command-line marks of the processes a kernel or VM run starts (agents, the emulator, QEMU).
RUN_PROCESS_MARKS = ("ccbench/kernel/agent.py", "ccbench.kernel.emu", "ccbench.mode=agent")


def runs_left_behind() -> dict[str, list[str]]:
    """Namespaces, root-namespace devices and processes of kernel and VM runs that no run
    in progress owns."""
    from ccbench.kernel import state

    live = state.live_runs()
    live_ns = {ns for st in live for ns in st.namespaces}
    live_dev = {d for st in live for d in st.devices}
    live_pids = {p.pid for st in live for p in st.processes}
    procs = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in live_pids:
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(mark in cmd for mark in RUN_PROCESS_MARKS):
            procs.append(f"{entry.name}: {cmd[:200]}")
    return {
        "namespaces": [n for n in state.list_namespaces() if n.startswith(state.PREFIX) and n not in live_ns],
        "devices": [d for d in state.list_devices() if d.startswith(state.PREFIX) and d not in live_dev],
        "processes": procs,
    }


def assert_nothing_left_behind(within_s: float) -> None:
    """Fail unless every run's leftovers are gone within ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while (left := runs_left_behind()) != {"namespaces": [], "devices": [], "processes": []}:
        if time.monotonic() > deadline:
            pytest.fail(f"left behind: {left}")
        time.sleep(0.1)


# Three 300 KB Cubic downloads, 0.5 s apart, at 20 Mbit/s and 20 ms: the kernel and VM
# engines' repeated-download tests run this.
THREE_DOWNLOADS = {
    "duration": "20s",
    "link": {"rate": "20Mbit", "rtt": "20ms", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "size": "300KB", "repeat": 3, "pause": "0.5s"}],
}


def assert_three_downloads_one_after_another(summary: dict, max_gap_s: float) -> list[dict]:
    """THREE_DOWNLOADS ran as three downloads of 300 KB, each starting the pause (and
    less than ``max_gap_s`` in all) after the receiver had the last one, each from slow
    start on a new connection; returns the downloads."""
    f = summary["flows"][0]
    downloads = f["downloads"]
    assert [d["index"] for d in downloads] == [0, 1, 2]
    assert all(d["delivered_bytes"] == 300_000 for d in downloads) and f["delivered_bytes"] == 900_000
    for before, after in zip(downloads, downloads[1:]):
        gap = after["start_s"] - (before["start_s"] + before["completion_s"])
        assert 0.5 <= gap < max_gap_s, gap
    # 300 KB at 20 Mbit/s and 20 ms takes several round trips from 10 segments.
    assert all(0.08 < d["completion_s"] < 2 * downloads[0]["completion_s"] for d in downloads)
    assert summary["duration_s"] < 20
    return downloads


#: Our scripts of the close paths and of Fast Open (tests/conformance/scripts), which
#: both stacks run: the kernel in test_conformance_kernel.py, the simulator in
#: test_conformance_sim.py.
CLOSE_SCRIPTS = [
    "close-before-established.pkt",
    "close-fin-behind-data.pkt",
    "close-fin-on-unsent-data.pkt",
    "close-last-ack-rto.pkt",
    "close-linger-zero-rst.pkt",
    "close-listener-rst.pkt",
    "close-passive.pkt",
    "close-simultaneous.pkt",
    "close-then-data-rst.pkt",
    "close-time-wait.pkt",
    "close-unread-rst.pkt",
    "rst-in-close-wait.pkt",
    "rst-then-read.pkt",
    "rst-then-write.pkt",
    "shutdown-wr.pkt",
]
FASTOPEN_SCRIPTS = [
    "fastopen-cookie-request.pkt",
    "fastopen-cookie.pkt",
    "fastopen-sendto-blocking.pkt",
    "fastopen-server.pkt",
    "fastopen-syn-data-not-acked.pkt",
]
#: Our scripts of the MSS and the path MTU: ICMP fragmentation needed, TCP_MAXSEG on an
#: open connection, MTU probing. All pass on Linux 6.18 (test_conformance_kernel.py).
MTU_SCRIPTS = [
    "icmp-frag-needed-out-of-window.pkt",
    "icmp-frag-needed.pkt",
    "maxseg-established-icmp.pkt",
    "maxseg-established.pkt",
    "mtu-probe-always.pkt",
    "mtu-probe-black-hole.pkt",
]


def offline_run(plan: Any) -> Any:
    """A kernel run's context for `plan` with made-up names and addresses and no host or
    emulator behind it: what the agents' configurations are built from."""
    from ccbench.kernel.session import RunContext

    return RunContext(
        plan,
        cast(Any, None),
        cast(Any, None),
        ns_sender="ccb-t-snd",
        ns_receiver="ccb-t-rcv",
        tun_sender="ccb-t-s",
        tun_receiver="ccb-t-r",
        addr_sender="10.1.2.1",
        addr_receiver="10.1.2.2",
        addr_ecn="10.1.2.3",
        addr_sender_ecn="10.1.2.8",
    )
