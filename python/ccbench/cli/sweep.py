"""``ccbench sweep``: every point of a sweep plan that the results store lacks."""

from __future__ import annotations

import re
import sys
from typing import Any, Optional

import click

from .. import engines
from ..errors import ScenarioError

EXIT_RUNS_FAILED = 1
_ADDRESS = re.compile(r"^[a-z][a-z0-9+.-]*://[^\s/:]+:\d{1,5}/?$")


def _duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{seconds:.1f}s")


@click.command()
@click.argument("plan_path", required=False, metavar="PLAN.toml")
@click.option(
    "--engine", type=click.Choice(engines.names()), default=engines.DEFAULT, show_default=True, help=engines.help_text()
)
@click.option(
    "--guest-kernel",
    metavar="SPEC",
    help="--engine vm: every run's guest kernel (default "
    "$CCBENCH_GUEST_KERNEL, else debian:6.1; see ccbench run --help).",
)
@click.option("--workers", type=int, metavar="N", help="Local worker processes (default: one per core).")
@click.option("--cluster", metavar="tcp://HOST:PORT", help="Run on this Dask scheduler's workers instead.")
@click.option("--store", "store_dir", metavar="DIR", help="Results store (default ./ccbench-results).")
@click.option("--name", metavar="NAME", help="Sweep name (default: the plan's sweep.name, or its file name).")
@click.option("--no-series", is_flag=True, help="Store summaries only, no per-run files (faster, smaller).")
@click.option("--dry-run", is_flag=True, help="List the runs and whether the store has them; run nothing.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def sweep(
    plan_path: Optional[str],
    engine: str,
    guest_kernel: Optional[str],
    workers: Optional[int],
    cluster: Optional[str],
    store_dir: Optional[str],
    name: Optional[str],
    no_series: bool,
    dry_run: bool,
    quiet: bool,
) -> None:
    """Run every point of a sweep plan that the results store does not have yet.

    A plan is a scenario whose values may be lists or ranges; it expands to their cross
    product, each point repeated sweep.repetitions times with its own seed. Every point
    is validated before the first run. Stopped and started again, a sweep runs only
    what is missing.
    """
    from ..store import open_store
    from ..sweep.plan import load_plan
    from ..sweep.runner import run_sweep

    if plan_path is None:
        raise ScenarioError("PLAN.toml", "missing; give a sweep plan (see docs/sweeps.md)")
    if workers is not None and workers < 1:
        raise ScenarioError("--workers", f"must be at least 1, got {workers}")
    if cluster is not None:
        if workers is not None:
            raise ScenarioError("--workers", "not used with --cluster; the cluster's workers run the sweep")
        if not _ADDRESS.match(cluster):
            raise ScenarioError(
                "--cluster", f"expected a scheduler address such as tcp://10.0.0.5:8786, got {cluster!r}"
            )
    engines.use_by_default(engine, guest_kernel=guest_kernel)
    plan = load_plan(plan_path, engine=engine, name=name)
    store = open_store(store_dir)
    if dry_run:
        _print_dry_run(plan, store, engine)
        return
    report = run_sweep(
        plan, store, engine=engine, workers=workers, cluster=cluster, progress=not quiet, keep_series=not no_series
    )
    total = len(report.records) + len(report.failures)
    click.echo(
        f"sweep {plan.name}: {total} run(s) of {plan.point_count} point(s) x {plan.repetitions} "
        f"repetition(s): {report.ran} run now, {report.reused} already in the store; "
        f"{_duration(report.elapsed_s)}; store {store.root}"
    )
    if report.failures:
        from ..sweep.runner import SweepFailed

        line = f"error: sweep: {SweepFailed(report)}; run the sweep again to retry them".replace("\n", " ")
        print(line, file=sys.stderr)
        raise SystemExit(EXIT_RUNS_FAILED)


def _print_dry_run(plan: Any, store: Any, engine: str) -> None:
    from ..sweep.runner import dry_run

    runs = dry_run(plan, store, engine)
    for p, rid, stored in runs:
        values = " ".join(f"{k}={v}" for k, v in p.values.items())
        status = "stored" if stored else "to run"
        click.echo(f"{rid}  {status:6}  rep {p.repetition}  seed {p.scenario.seed}  {values}".rstrip())
    missing = sum(not stored for _, _, stored in runs)
    click.echo(
        f"sweep {plan.name}: {len(runs)} run(s) of {plan.point_count} point(s) x {plan.repetitions} "
        f"repetition(s); {missing} to run, {len(runs) - missing} already in {store.root}"
    )
