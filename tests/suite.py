"""The whole test suite, Rust's and Python's, in two lanes at once (what ``make test``
runs after installing).

The pytest tests marked ``host`` run in real time on this host (the kernel and VM
engines, packetdrill, real iperf3): they run in the foreground, one at a time. The rest
need only a CPU, and run beside them under SCHED_IDLE (and nice 19): ``cargo test`` of
the workspace, then the other pytest tests. A SCHED_IDLE task runs only when nothing
else wants its CPU and gives way to a task that wakes, so a host test's emulator hardly
waits behind it. A task that wakes thousands of times a second still waits tens of
microseconds each time for the CPU to be taken back (a vCPU beside a SCHED_IDLE build
waited 12% of its run, beside a nice-19 one 17%), so on a machine of two CPUs or more
the rest stay off the first CPU, where the VM engine puts its first vCPU. Once the host
tests are done, whatever of the rest is still running gets every CPU on equal terms.
Arguments go to both pytest processes; the exit status is the worst.

    python tests/suite.py [PYTEST ARGS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Optional

ROOT = Path(__file__).resolve().parent.parent
NO_TESTS = 5  # pytest's status when a lane selects none (no host tests here, say)


def main(args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="ccbench-suite-") as tmp, open(Path(tmp) / "rest.log", "w+") as log:
        rest = IdleLane(
            [
                ["cargo", "test", "--workspace", "--release", "--quiet"],
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-m",
                    "not host",
                    "-p",
                    "no:cacheprovider",
                    "--basetemp",
                    str(Path(tmp) / "rest"),
                    *args,
                ],
            ],
            log,
        )
        rest.start()
        print(
            "host tests (cargo test and the rest run beside them under SCHED_IDLE; their report follows):", flush=True
        )
        host = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "host", *args], cwd=ROOT).returncode
        rest.release()
        rest.join()
        log.seek(0)
        print("\ncargo test and the rest:", flush=True)
        sys.stdout.write(log.read())
    return max((0 if c == NO_TESTS else c) for c in (host, *rest.codes))


class IdleLane(threading.Thread):
    """Commands run one after another under SCHED_IDLE, off the first CPU, until
    :meth:`release`; their output goes to ``log`` and their statuses to ``codes``."""

    def __init__(self, commands: list[list[str]], log: IO[str]) -> None:
        super().__init__()
        self.commands, self.log, self.codes = commands, log, []
        self.lock = threading.Lock()
        self.released = False
        self.running: Optional[subprocess.Popen[bytes]] = None

    def run(self) -> None:
        for command in self.commands:
            with self.lock:
                self.running = subprocess.Popen(
                    command,
                    cwd=ROOT,
                    stdout=self.log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=None if self.released else _idle,
                )
            self.codes.append(self.running.wait())

    def release(self) -> None:
        """Every CPU on equal terms, for what runs now and what runs next."""
        with self.lock:
            self.released = True
            if self.running is not None and self.running.poll() is None:
                for tid in _tasks_under(self.running.pid):
                    _unidle(tid)


def _idle() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(0, cpus[1:])  # ccbench.vm.placement gives vCPU 0 the first
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    os.nice(19)


def _unidle(tid: int) -> None:
    try:
        os.sched_setaffinity(tid, range(os.cpu_count() or 1))
        os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, tid, 0)  # lowering nice needs root: as far as it goes otherwise
    except OSError:
        pass  # gone, or not ours to raise


def _tasks_under(root: int) -> list[int]:
    """The threads of process ``root`` and of every process below it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
    tree, grew = {root}, True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= below
        grew = bool(below)
    tasks = []
    for pid in tree:
        try:
            tasks += [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            continue
    return tasks


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
