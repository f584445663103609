"""How long the ``ccbench`` command takes from start to exit, as a person at a shell sees it.

    python benches/cli_startup.py              # median of 5 runs of each command, after one warm-up
    python benches/cli_startup.py --runs 11

Each command is a fresh process (the installed ``ccbench`` script next to this Python,
or ``python -m ccbench``); its wall time is measured from outside. The warm-up run
writes any missing bytecode (``PYTHONDONTWRITEBYTECODE`` is cleared for the children),
so the figures are those of an installed package, not of compiling its sources. Prints
the minimum, median and maximum wall time and the median CPU time (user + system,
less sensitive to other work on the machine) of each command, of ``python -c pass`` (the
interpreter's own start-up, under every command), and the machine's load average, since
other work on the machine slows the start-up down. Targets: ``--help`` under 0.2 s,
a 1-second run under 0.4 s.
"""

from __future__ import annotations

import argparse
import os
import resource
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


def children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def timings(argv: list[str], runs: int, env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of each run."""
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # warm-up
    wall, cpu = [], []
    for _ in range(runs):
        cpu0, start = children_cpu(), time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        wall.append(time.perf_counter() - start)
        cpu.append(children_cpu() - cpu0)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command (default 5)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base = ccbench()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'command':48} {'wall: min':>9} {'median':>7} {'max':>7}   {'cpu median':>10}")
    # The interpreter's own start-up, the floor under every command.
    rows = [("python -c pass", [sys.executable, "-c", "pass"])]
    rows += [("ccbench " + " ".join(cmd), base + list(cmd)) for cmd in COMMANDS]
    for label, argv in rows:
        t, cpu = timings(argv, args.runs, env)
        print(f"{label:48} {min(t):9.3f} {statistics.median(t):7.3f} {max(t):7.3f}   {statistics.median(cpu):10.3f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
