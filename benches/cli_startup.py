"""How long the ``ccbench`` command takes from start to exit, as a person at a shell sees it.

    python benches/cli_startup.py              # median of 5 runs of each command, after one warm-up
    python benches/cli_startup.py --runs 11

Each command is a fresh process (the installed ``ccbench`` script next to this Python,
or ``python -m ccbench``); its wall time is measured from outside. The warm-up run
writes any missing bytecode (``PYTHONDONTWRITEBYTECODE`` is cleared for the children),
so the figures are those of an installed package, not of compiling its sources. Prints
the minimum, median and maximum of each command, and the machine's load average, since
other work on the machine slows the start-up down. Targets: ``--help`` under 0.2 s,
a 1-second run under 0.4 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (
    ("--help",),
    ("run", "--cca", "cubic", "--duration", "1s"),
    ("run", "--cca", "cubic", "--duration", "1s", "--json"),
)


def ccbench() -> list[str]:
    script = Path(sys.executable).with_name("ccbench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ccbench"]


def wall_times(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command (default 5)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base = ccbench()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'command':48} {'min s':>7} {'median s':>9} {'max s':>7}")
    for cmd in COMMANDS:
        t = wall_times(base + list(cmd), args.runs, env)
        print(f"{'ccbench ' + ' '.join(cmd):48} {min(t):7.3f} {statistics.median(t):9.3f} {max(t):7.3f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
