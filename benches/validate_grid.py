"""Wall time of the validation grid, split by engine, against the length of the runs.

    sudo python benches/validate_grid.py            # the quick grid, once
    sudo python benches/validate_grid.py --full     # the full grid's cells, simulator only
    sudo python benches/validate_grid.py --family loss,mix

For every cell: the simulated (and, on the kernel, real) seconds of the run and the wall
time each engine took. The kernel engine runs in real time plus set-up (namespaces,
emulator, agents), so its wall time is the floor of the grid; the simulator's share
shows whether a change made the simulator slower. Prints the totals and their ratio.
Without root, or with --sim-only, only the simulator runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the full grid (default: the quick grid)")
    parser.add_argument("--family", help="only these families (comma-separated)")
    parser.add_argument("--duration", help="grid duration (default 5s quick, 20s full)")
    parser.add_argument("--sim-only", action="store_true", help="time the simulator only")
    args = parser.parse_args()

    from ccbench.engines import kernel as kernel_engine
    from ccbench.engines import sim as sim_engine
    from ccbench.kernel import host
    from ccbench.units import parse_duration
    from ccbench.validate import cells as grid

    cells = grid.full_grid() if args.full else grid.quick_grid()
    if args.family:
        cells = [c for c in cells if c.family in args.family.split(",")]
    cells = [c for c in cells if not c.missing]
    duration = args.duration or ("20s" if args.full else "5s")
    kernel = not args.sim_only and os.geteuid() == 0 and host.tun_usable() is None
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{len(cells)} cells, grid duration {duration}, engines: simulator{' and kernel' if kernel else ''}")
    hz = host.kernel_hz()
    total_sim = total_kernel = simulated = 0.0
    for cell in cells:
        sc = cell.scenario(duration, seed=1, hz=hz)
        length = parse_duration(cell.run_length(duration)) / 1e9
        start = time.perf_counter()
        result = sim_engine.run(sc)
        t_sim = time.perf_counter() - start
        simulated += result.summary["duration_s"]
        total_sim += t_sim
        line = f"  {cell.name:45s} {length:5.0f} s run: simulator {t_sim:6.2f} s"
        if kernel:
            try:
                start = time.perf_counter()
                kernel_engine.run(sc)
                t_kernel = time.perf_counter() - start
                total_kernel += t_kernel
                line += f", kernel {t_kernel:6.2f} s"
            except Exception as e:  # a cell the kernel engine refuses
                line += f", kernel refused: {e}"
        print(line, flush=True)
    print(
        f"simulator: {total_sim:.1f} s wall for {simulated:.0f} simulated s "
        f"({simulated / max(total_sim, 1e-9):.0f}x real time)"
    )
    if kernel:
        print(
            f"kernel: {total_kernel:.1f} s wall; grid total {total_sim + total_kernel:.1f} s; "
            f"simulator share {total_sim / (total_sim + total_kernel):.1%}"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
