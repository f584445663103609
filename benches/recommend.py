"""How long ``ccbench recommend`` takes at one operating point, from start to exit.

    python benches/recommend.py             # the point tests/test_recommend.py checks, median of 3
    python benches/recommend.py --runs 5

The command simulates Cubic, BBR, BBRv3 and Reno, 3 seeds each, 4 simulated seconds, at
the given buffer and at half and double it (36 runs on all cores). Prints each run's
wall time, the median, and the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

COMMAND = (
    "recommend",
    "--rate",
    "50Mbit",
    "--rtt",
    "30ms",
    "--buffer",
    "64KB",
    "--loss",
    "0.1%",
    "--duration",
    "4s",
    "--seeds",
    "3",
    "--reno",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="timed runs (default 3)")
    args = parser.parse_args()
    argv = [sys.executable, "-m", "ccbench", *COMMAND]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("ccbench " + " ".join(COMMAND))
    times = []
    for i in range(args.runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
        print(f"  run {i + 1}: {times[-1]:.2f} s")
    print(f"median {statistics.median(times):.2f} s, min {min(times):.2f} s, max {max(times):.2f} s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
