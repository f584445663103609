"""Running a sweep: skip what the store already has, run the rest on a backend, store
each run as it finishes.

Only this (the coordinating) process writes to the store. A run's files are written as
soon as it returns; rows are committed in batches (about once a second), so a sweep
stopped at any moment loses at most the runs of the last second, which the next start
runs again. Nothing is stored twice: runs are keyed by (scenario_hash, seed, engine,
code_version).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import Optional, Sequence, Union

from .. import engines
from ..errors import ScenarioError
from ..store import Membership, RunRecord, Store, open_store, run_id_for
from .backends import Backend, InProcess, choose
from .plan import Plan, Point, points_of
from .progress import SweepProgress
from .worker import Outcome, Task

FLUSH_EVERY_S = 1.0
FLUSH_EVERY_RUNS = 500


@dataclass(frozen=True)
class Failure:
    point: Point
    message: str


@dataclass
class SweepReport:
    """What a sweep did. ``records`` has one record per point of the plan (repetitions
    included), in plan order, for every point that has a complete run."""

    name: Optional[str]
    records: list[RunRecord]
    ran: int = 0  # runs made now
    reused: int = 0  # points whose run the store already had
    failures: list[Failure] = field(default_factory=list)
    elapsed_s: float = 0.0
    run_s: float = 0.0  # summed over runs: time in the engine and making the files, where they ran
    store_s: float = 0.0  # time this process spent writing run files and database rows


class SweepFailed(RuntimeError):
    """Some runs failed; every other run is stored. ``report`` says what happened."""

    def __init__(self, report: SweepReport) -> None:
        first = report.failures[0]
        where = ", ".join(f"{k}={v}" for k, v in first.point.values.items()) or "the scenario"
        super().__init__(
            f"{len(report.failures)} of {len(report.records) + len(report.failures)} runs failed; "
            f"first: {where} repetition {first.point.repetition}: {first.message}"
        )
        self.report = report


class _Recorder:
    """Stores finished runs: files at once, rows in batches."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.records: list[RunRecord] = []
        self.members: list[Membership] = []
        self.last_flush = time.monotonic()
        self.busy_s = 0.0

    def write_files(self, run_id: str, files: Optional[dict[str, bytes]]) -> Optional[str]:
        if files is None:
            return None
        start = time.perf_counter()
        try:
            return self.store.write_run_files(run_id, files)
        finally:
            self.busy_s += time.perf_counter() - start

    def add(self, record: RunRecord, members: Sequence[Membership]) -> None:
        self.records.append(record)
        self.members.extend(members)
        if len(self.records) >= FLUSH_EVERY_RUNS or time.monotonic() - self.last_flush >= FLUSH_EVERY_S:
            self.flush()

    def flush(self) -> None:
        start = time.perf_counter()
        if self.records or self.members:
            self.store.commit(self.records, self.members)
        self.records, self.members = [], []
        self.last_flush = time.monotonic()
        self.busy_s += time.perf_counter() - start


def execute(
    plan_or_points: Union[Plan, Sequence[Point]],
    store: Union[Store, str, "os.PathLike[str]", None] = None,
    *,
    engine: str = engines.DEFAULT,
    workers: Optional[int] = None,
    cluster: Optional[str] = None,
    progress: bool = True,
    sweep_name: Optional[str] = None,
    keep_series: bool = True,
) -> list[RunRecord]:
    """Run every point of a plan that the store does not have yet; return a record per
    point (in plan order). Raises SweepFailed, after storing the rest, if runs failed."""
    report = run_sweep(
        plan_or_points,
        store,
        engine=engine,
        workers=workers,
        cluster=cluster,
        progress=progress,
        sweep_name=sweep_name,
        keep_series=keep_series,
    )
    if report.failures:
        raise SweepFailed(report)
    return report.records


def run_sweep(
    plan_or_points: Union[Plan, Sequence[Point]],
    store: Union[Store, str, "os.PathLike[str]", None] = None,
    *,
    engine: str = engines.DEFAULT,
    workers: Optional[int] = None,
    cluster: Optional[str] = None,
    progress: bool = True,
    sweep_name: Optional[str] = None,
    keep_series: bool = True,
) -> SweepReport:
    """:func:`execute`, returning a SweepReport instead of raising for failed runs."""
    started = time.monotonic()
    engines.get(engine)  # an unknown name is refused before anything else
    if workers is not None and workers < 1:
        raise ScenarioError("--workers", f"must be at least 1, got {workers}")
    name = sweep_name if sweep_name is not None else (plan_or_points.name if isinstance(plan_or_points, Plan) else None)
    points = points_of(plan_or_points, engine)
    st = store if isinstance(store, Store) else open_store(store)
    backend = choose(engine, workers, cluster, len(points))
    try:
        points, ids, version = prepare(points, engine, backend)
        with st.sweep_lock():
            st.remove_stale_tmp()
            report = _run(points, ids, version, st, backend, engine, name, progress, keep_series)
    finally:
        backend.close()
    report.elapsed_s = time.monotonic() - started
    return report


def prepare(points: list[Point], engine: str, backend: Backend) -> tuple[list[Point], list[str], str]:
    """The points as the engine will run them, their run ids and the code version.
    Scenarios are checked where they will run (the kernel engine's HZ replaces tcp.hz;
    what the engine cannot run is refused) before anything is written."""
    version = backend.code_version(engine)
    checked = backend.check(engine, [p.scenario for p in points])
    points = [replace(p, scenario=sc) for p, sc in zip(points, checked)]
    ids = [run_id_for(p.scenario.scenario_hash, p.scenario.seed, engine, version) for p in points]
    return points, ids, version


def dry_run(plan: Plan, store: Store, engine: str = engines.DEFAULT) -> list[tuple[Point, str, bool]]:
    """Every run of the plan as this machine would run it: (point, run id, stored)."""
    points, ids, _ = prepare(plan.points(engine), engine, InProcess())
    have = store.existing(ids)
    return [(p, rid, rid in have) for p, rid in zip(points, ids)]


def _run(
    points: list[Point],
    ids: list[str],
    version: str,
    store: Store,
    backend: Backend,
    engine: str,
    name: Optional[str],
    progress: bool,
    keep_series: bool,
) -> SweepReport:
    members = (
        [Membership(name, p.values, p.repetition, rid, p.index) for p, rid in zip(points, ids)]
        if name is not None
        else []
    )

    have = store.existing(ids)
    if members:  # points whose run exists already join this sweep now
        store.commit([], [m for m in members if m.run_id in have])
    # Each run not stored yet, once (points of the plan may name the same run).
    todo: dict[str, Point] = {}
    for p, rid in zip(points, ids):
        if rid not in have and rid not in todo:
            todo[rid] = p
    members_of: dict[str, list[Membership]] = {}
    for m in members:
        if m.run_id in todo:
            members_of.setdefault(m.run_id, []).append(m)

    runs = _Runs(store, engine, name, version, todo, members_of)
    tasks = [Task(run_id=rid, scenario=p.scenario, engine=engine, keep_series=keep_series) for rid, p in todo.items()]
    runs.execute(backend, tasks, progress)
    return runs.report(points, ids, have)


class _Runs:
    """The runs a sweep makes now: each stored as it finishes, or its failure kept."""

    def __init__(
        self,
        store: Store,
        engine: str,
        name: Optional[str],
        version: str,
        todo: dict[str, Point],
        members_of: dict[str, list[Membership]],
    ) -> None:
        self.store, self.engine, self.name, self.version = store, engine, name, version
        self.todo, self.members_of = todo, members_of
        self.done: dict[str, RunRecord] = {}
        self.failed: dict[str, str] = {}
        self.recorder = _Recorder(store)
        self.run_s = 0.0

    def execute(self, backend: Backend, tasks: list[Task], progress: bool) -> None:
        """Run ``tasks`` on ``backend``; whatever happens, the rows of the runs made so
        far are committed."""
        try:
            with SweepProgress(self.name or "", len(tasks), enabled=progress) as bar:
                for task, outcome in backend.run(tasks):
                    if isinstance(outcome, BaseException):
                        self.failed[task.run_id] = f"{type(outcome).__name__}: {outcome}"
                        bar.advance(failed=True)
                        continue
                    problem = _mismatch(task, outcome, self.version)
                    if problem is not None:
                        self.failed[task.run_id] = problem
                        bar.advance(failed=True)
                        continue
                    self.store_run(task, outcome)
                    bar.advance()
        finally:
            self.recorder.flush()

    def store_run(self, task: Task, outcome: Outcome) -> None:
        """The run's files now, its row (and its sweep memberships) with the next batch."""
        point = self.todo[task.run_id]
        self.run_s += outcome.wall_s
        series_dir = self.recorder.write_files(task.run_id, outcome.files)
        record = RunRecord(
            run_id=task.run_id,
            scenario_hash=outcome.scenario_hash,
            seed=outcome.seed,
            engine=self.engine,
            code_version=outcome.code_version,
            sweep=self.name,
            point=point.values,
            repetition=point.repetition,
            scenario=outcome.scenario,
            summary=outcome.summary,
            series_dir=series_dir,
        )
        self.recorder.add(record, self.members_of.get(task.run_id, []))
        self.done[task.run_id] = record

    def report(self, points: list[Point], ids: list[str], have: set[str]) -> SweepReport:
        """A record per point of the plan, from the store or from this sweep, or a failure."""
        stored = self.store.get(have)
        stored.update(self.done)
        records, failures = [], []
        for p, rid in zip(points, ids):
            if rid in stored:
                records.append(replace(stored[rid], sweep=self.name, point=dict(p.values), repetition=p.repetition))
            else:
                failures.append(Failure(p, self.failed.get(rid, "did not run")))
        return SweepReport(
            name=self.name,
            records=records,
            ran=len(self.done),
            reused=sum(rid in have for rid in ids),
            failures=failures,
            run_s=self.run_s,
            store_s=self.recorder.busy_s,
        )


def _mismatch(task: Task, outcome: Outcome, version: str) -> Optional[str]:
    """Why an outcome is not the run the task asked for, if it is not."""
    expected = run_id_for(outcome.scenario_hash, outcome.seed, outcome.engine, outcome.code_version)
    if expected == task.run_id:
        return None
    if outcome.code_version != version:
        return f"{outcome.host} runs code version {outcome.code_version}, expected {version}"
    return (
        f"{outcome.host} ran scenario {outcome.scenario_hash[:12]} seed {outcome.seed}, not the one asked for "
        f"({task.scenario.scenario_hash[:12]} seed {task.scenario.seed})"
    )
