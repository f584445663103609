"""The whole pytest suite, in two processes at once (what ``make test`` runs).

The tests marked ``host`` run in real time on this host (the kernel and VM engines,
packetdrill, real iperf3): they run in the foreground, one at a time. The rest need only
a CPU, and run beside them at nice 19, where the scheduler gives the host tests way:
such a neighbour is what the host tests are checked to tolerate (docs/benchmarks.md,
"The test suite"). Arguments go to both pytest processes; the exit status is the worse.

    python tests/suite.py [PYTEST ARGS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

NO_TESTS = 5  # pytest's status when a process selects none (no host tests here, say)


def main(args: list[str]) -> int:
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="ccbench-suite-") as tmp, open(Path(tmp) / "rest.log", "w+") as log:
        rest = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-m", "not host", "-p", "no:cacheprovider",
                                 "--basetemp", str(Path(tmp) / "rest"), *args],
                                cwd=root, stdout=log, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(19))
        try:
            print("host tests (the rest run beside them at nice 19; their report follows):", flush=True)
            host = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "host", *args], cwd=root).returncode
        except BaseException:
            rest.kill()
            rest.wait()
            raise
        code = rest.wait()
        log.seek(0)
        print("\nthe rest:", flush=True)
        sys.stdout.write(log.read())
    return max((0 if c == NO_TESTS else c) for c in (host, code))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
