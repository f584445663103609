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
the rest stay off the first CPU, where the VM engine puts its first vCPU. Arguments go
to both pytest processes; the exit status is the worst.

    python tests/suite.py [PYTEST ARGS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
NO_TESTS = 5  # pytest's status when a lane selects none (no host tests here, say)


def main(args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="ccbench-suite-") as tmp, open(Path(tmp) / "rest.log", "w+") as log:
        commands = [["cargo", "test", "--workspace", "--release", "--quiet"],
                    [sys.executable, "-m", "pytest", "-q", "-m", "not host", "-p", "no:cacheprovider",
                     "--basetemp", str(Path(tmp) / "rest"), *args]]
        codes: list[int] = []
        rest = threading.Thread(target=_in_idle_time, args=(commands, log, codes))
        rest.start()
        print("host tests (cargo test and the rest run beside them under SCHED_IDLE; their report follows):",
              flush=True)
        host = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "host", *args], cwd=ROOT).returncode
        rest.join()
        log.seek(0)
        print("\ncargo test and the rest:", flush=True)
        sys.stdout.write(log.read())
    return max((0 if c == NO_TESTS else c) for c in (host, *codes))


def _idle() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(0, cpus[1:])  # ccbench.vm.placement gives vCPU 0 the first
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    os.nice(19)


def _in_idle_time(commands: list[list[str]], log: IO[str], codes: list[int]) -> None:
    """Run each command under SCHED_IDLE, its output into ``log``, its status into ``codes``."""
    for command in commands:
        codes.append(subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                    preexec_fn=_idle).returncode)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
