"""The ``ccbench sweep`` and ``ccbench results`` commands."""

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
    from .runner import run_sweep
    from .plan import load_plan

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
        from .runner import SweepFailed

        line = f"error: sweep: {SweepFailed(report)}; run the sweep again to retry them".replace("\n", " ")
        print(line, file=sys.stderr)
        raise SystemExit(EXIT_RUNS_FAILED)


def _print_dry_run(plan: Any, store: Any, engine: str) -> None:
    from .runner import dry_run

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


@click.command()
@click.option("--store", "store_dir", metavar="DIR", help="Results store (default ./ccbench-results).")
@click.option("--sweep", "sweep_name", metavar="NAME", help="Only the runs of this sweep.")
@click.option(
    "--where",
    "wheres",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only runs whose scenario has this value, e.g. link.rate=50Mbit (repeatable).",
)
@click.option("--cca", metavar="NAME", help="Only runs with a flow of this algorithm.")
@click.option("--engine", type=click.Choice(engines.names()), help="Only runs of this engine.")
@click.option("--code-version", metavar="VERSION", help="Only runs of this code version ('current': this build).")
@click.option("--csv", "csv_path", metavar="FILE", help="Write one row per flow to FILE ('-': stdout).")
@click.option("--limit", type=int, default=50, show_default=True, metavar="N", help="Rows to list (0: all).")
def results(
    store_dir: Optional[str],
    sweep_name: Optional[str],
    wheres: tuple[str, ...],
    cca: Optional[str],
    engine: Optional[str],
    code_version: Optional[str],
    csv_path: Optional[str],
    limit: int,
) -> None:
    """List the runs in the results store, or export them as CSV (one row per flow)."""
    from ..store import open_store
    from ..store.query import Where, flow_rows, select

    where = [Where.parse(w) for w in wheres]
    if limit < 0:
        raise ScenarioError("--limit", f"must be 0 (all) or more, got {limit}")
    store = open_store(store_dir, create=False)
    if sweep_name is not None and sweep_name not in store.sweeps():
        known = ", ".join(store.sweeps()) or "none"
        raise ScenarioError("--sweep", f"no sweep named {sweep_name!r} in {store.root}; sweeps: {known}")
    if code_version == "current":
        code_version = engines.get(engine or engines.DEFAULT).code_version()
    records = select(store.records(sweep_name, code_version=code_version), where=where, cca=cca, engine=engine)
    if csv_path is not None:
        frame = flow_rows(records)
        if csv_path == "-":
            frame.to_csv(sys.stdout, index=False)
        else:
            try:
                frame.to_csv(csv_path, index=False)
            except OSError as e:
                raise ScenarioError("--csv", f"cannot write {csv_path!r}: {e.strerror or e}") from None
            click.echo(f"wrote {csv_path}: {len(frame)} row(s), the flows of {len(records)} run(s)", err=True)
        return
    _print_runs(records, limit, store)


def _print_runs(records: list[Any], limit: int, store: Any) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from ..store.query import point_keys

    swept = point_keys(records)
    t = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
    for col in ("run", "sweep", *swept, "rep", "seed", "engine", "flows", "goodput Mbit/s", "util %", "drops", "Jain"):
        t.add_column(col, no_wrap=True, justify="right" if col in ("rep", "util %", "drops", "Jain") else "left")
    shown = records if limit == 0 else records[:limit]
    for r in shown:
        flows = r.summary.get("flows", [])
        link = r.summary.get("link", {})
        goodput = "/".join(f"{f['goodput_bps'] / 1e6:.2f}" for f in flows if f.get("goodput_bps") is not None)
        util = link.get("utilization")
        jain = r.summary.get("jain_index")
        t.add_row(
            r.run_id[:10],
            r.sweep or "–",
            *(str(r.point.get(k, "–")) for k in swept),
            str(r.repetition),
            str(r.seed),
            r.engine,
            ",".join(str(f.get("cca")) for f in flows),
            goodput,
            "–" if util is None else f"{100 * util:.1f}",
            str(link.get("drops", "–")),
            "–" if jain is None else f"{jain:.3f}",
        )
    # Piped output is not cut to a terminal's width.
    console = Console() if sys.stdout.isatty() else Console(width=1000)
    if shown:
        console.print(t)
    more = f"; listing the first {len(shown)} (--limit 0 lists all)" if len(shown) < len(records) else ""
    sweeps = ", ".join(store.sweeps()) or "none"
    console.print(f"{len(records)} run(s){more}. Store {store.root}; sweeps: {sweeps}", highlight=False)


def register(cli: click.Group) -> None:
    cli.add_command(sweep)
    cli.add_command(results)
