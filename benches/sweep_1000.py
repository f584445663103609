"""The 1,000-point sweep benchmark: 30-second simulator runs at 10 to 100 Mbit/s.

    python benches/sweep_1000.py                      # all cores, a fresh store in a temporary directory
    python benches/sweep_1000.py --workers 2 --store /tmp/s1000
    python benches/sweep_1000.py --no-series          # summaries only
    python benches/sweep_1000.py --compare 100        # first: threads against processes, 100 runs each

The plan (benches/sweep_1000.toml) is 10 rates x 5 RTTs x 5 buffers x 4 algorithms, one
flow, one repetition. Prints the wall time, the CPU time of this process and its worker
processes (CPU time / wall time = cores kept busy), where the time went (engine and
files in the workers, files and database rows here), and the machine's load average
before and after, since other work on the machine slows the sweep down.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context
from pathlib import Path

PLAN = Path(__file__).with_name("sweep_1000.toml")


def cpu_seconds() -> tuple[float, float]:
    """CPU time (user + system) of this process, and of its reaped children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def compare(n: int, workers: int) -> None:
    """Runs per second of the task function (engine and Parquet files, no store) on a
    thread pool and on a process pool of the same size."""
    from ccbench.sweep import load_plan
    from ccbench.sweep.worker import Task, init_local_worker, run_task

    tasks = [
        Task(run_id=str(i), scenario=p.scenario, engine="sim", keep_series=True)
        for i, p in enumerate(load_plan(PLAN).points()[:: max(1, 1000 // n)][:n])
    ]
    pools: list[tuple[str, Executor]] = [
        ("threads", ThreadPoolExecutor(workers)),
        ("processes", ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=init_local_worker)),
    ]
    for label, pool in pools:
        with pool:
            list(pool.map(run_task, tasks[:workers]))  # start-up (and imports) not counted
            start = time.perf_counter()
            list(pool.map(run_task, tasks))
            wall = time.perf_counter() - start
        print(f"{label:9}: {len(tasks)} runs in {wall:6.2f} s = {len(tasks) / wall:5.1f} runs/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    parser.add_argument("--store", help="store directory (default: a temporary one, removed afterwards)")
    parser.add_argument("--no-series", action="store_true", help="store summaries only")
    parser.add_argument("--compare", type=int, metavar="N", help="first compare threads and processes on N runs")
    args = parser.parse_args()

    from ccbench import _core
    from ccbench.sweep import load_plan, run_sweep

    workers = args.workers or os.cpu_count() or 1
    if args.compare:
        compare(args.compare, workers)
    plan = load_plan(PLAN)
    tmp = None if args.store else tempfile.mkdtemp(prefix="ccbench-sweep-1000-")
    store = Path(args.store or tmp or ".")
    load_before = os.getloadavg()
    cpu_before = cpu_seconds()
    try:
        report = run_sweep(plan, store, workers=workers, keep_series=not args.no_series, progress=sys.stderr.isatty())
        cpu_self, cpu_kids = (a - b for a, b in zip(cpu_seconds(), cpu_before))
        load_after = os.getloadavg()
        size = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    wall = report.elapsed_s
    print(
        f"ccbench sweep benchmark, simulator {_core.version()}, {os.cpu_count()} cores, {workers} worker processes"
        f"{', no time series' if args.no_series else ''}"
    )
    print(f"plan: {plan.point_count} points x {plan.repetitions} repetition(s) of 30 s, 10-100 Mbit/s")
    print(f"runs: {report.ran} run, {report.reused} already stored, {len(report.failures)} failed")
    print(f"wall: {wall:.1f} s ({report.ran / wall:.1f} runs/s)")
    print(
        f"cpu:  {cpu_self + cpu_kids:.1f} s ({cpu_kids:.1f} s in workers, {cpu_self:.1f} s here) = "
        f"{(cpu_self + cpu_kids) / wall:.2f} cores busy on average"
    )
    print(
        f"in workers: {report.run_s:.1f} s running and making files ({1000 * report.run_s / max(report.ran, 1):.1f} "
        f"ms a run); here: {report.store_s:.1f} s writing files and rows"
    )
    print(f"store: {size / 1e6:.1f} MB")
    print(f"load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
