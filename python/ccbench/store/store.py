"""The results store: a directory holding a DuckDB database (one row per complete run)
and a directory of files per run.

A run's files are written first, into a temporary directory that is then renamed; its
database row is inserted last. So a row exists only for a complete run, and a run
interrupted at any moment (Ctrl-C, kill -9, a lost worker) leaves at most files without
a row, which the next attempt replaces.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
import shutil
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

import pyarrow as pa

from . import db
from .errors import StoreError
from .files import result_files
from .records import RunRecord, point_key

if TYPE_CHECKING:
    from ..result import Result

DEFAULT_STORE = "ccbench-results"
RUNS_DIR = "runs"
SWEEP_LOCK = ".sweep.lock"
TMP_PREFIX = ".tmp-"

_COLUMNS = "run_id, scenario_hash, seed, engine, code_version, sweep, point, repetition, scenario, summary, series_dir"
# The same columns for a sweep's view: its own point and repetition for each run.
_SWEEP_COLUMNS = (
    "r.run_id, r.scenario_hash, r.seed, r.engine, r.code_version, m.sweep, m.point, m.repetition, "
    "r.scenario, r.summary, r.series_dir"
)


_RUN_FIELDS = [
    ("run_id", pa.string()),
    ("scenario_hash", pa.string()),
    ("seed", pa.uint64()),
    ("engine", pa.string()),
    ("code_version", pa.string()),
    ("sweep", pa.string()),
    ("point", pa.string()),
    ("repetition", pa.int32()),
    ("scenario", pa.string()),
    ("summary", pa.string()),
    ("series_dir", pa.string()),
    ("created_at", pa.timestamp("us")),
]
_MEMBER_FIELDS = [
    ("sweep", pa.string()),
    ("point_key", pa.string()),
    ("repetition", pa.int32()),
    ("run_id", pa.string()),
    ("point", pa.string()),
    ("ordinal", pa.int64()),
]


def _table(fields: list[tuple[str, Any]], rows: list[list[Any]]) -> pa.Table:
    columns = list(zip(*rows))
    return pa.table({name: pa.array(col, type=kind) for (name, kind), col in zip(fields, columns)})


def _unique(rows: list[list[Any]], key_columns: int) -> list[list[Any]]:
    """Rows with distinct keys (the first ``key_columns`` values), first one kept."""
    seen: dict[tuple[Any, ...], list[Any]] = {}
    for row in rows:
        seen.setdefault(tuple(row[:key_columns]), row)
    return list(seen.values())


@dataclass(frozen=True)
class Membership:
    """A run as a point of a sweep; ``ordinal`` orders the points as the plan lists them."""

    sweep: str
    point: dict[str, Any]
    repetition: int
    run_id: str
    ordinal: int


def _dumps(value: Any, sort_keys: bool = True) -> str:
    return json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Let a commit finish before Ctrl-C takes effect (DuckDB would abandon the query
    half-way); KeyboardInterrupt is raised right after it. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    """A results store rooted at ``root``. See docs/sweeps.md."""

    def __init__(self, root: Union[str, os.PathLike[str]]) -> None:
        self.root = Path(root)
        self.db_path = self.root / db.DB_NAME
        self.runs_dir = self.root / RUNS_DIR
        self._schema_ready = False

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    # Connections

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        self.root.mkdir(parents=True, exist_ok=True)
        with db.connect(self.db_path) as con:
            if not self._schema_ready:
                db.ensure_schema(con)
                self._schema_ready = True
            yield con

    @contextlib.contextmanager
    def _read(self) -> Iterator[Optional[Any]]:
        """A read-only connection, or None while the store has no database yet."""
        if not self.db_path.exists():
            yield None
            return
        with db.connect(self.db_path, read_only=True) as con:
            tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            yield con if {"runs", "sweep_runs"} <= tables else None

    # Reading

    def records(self, sweep: Optional[str] = None, *, code_version: Optional[str] = None) -> list[RunRecord]:
        """Complete runs. Without ``sweep``: every run once, with the sweep, point and
        repetition that produced it. With ``sweep``: every run of that sweep, with that
        sweep's point values (a run shared by two sweeps is listed by both).
        ``code_version`` keeps only runs of that code version."""
        version_filter = "" if code_version is None else " AND r.code_version = ?"
        args: list[Any] = [] if code_version is None else [code_version]
        if sweep is None:
            # Grouped by the producing sweep, in its plan's order.
            sql = (
                f"SELECT {_COLUMNS} FROM runs r LEFT JOIN (SELECT run_id AS m_run, sweep AS m_sweep, "
                "min(ordinal) AS ordinal FROM sweep_runs GROUP BY run_id, sweep) m "
                f"ON m.m_run = r.run_id AND m.m_sweep = r.sweep WHERE TRUE{version_filter} "
                "ORDER BY r.sweep NULLS FIRST, m.ordinal, r.repetition, r.created_at, r.run_id"
            )
        else:
            sql = (
                f"SELECT {_SWEEP_COLUMNS} FROM sweep_runs m JOIN runs r ON r.run_id = m.run_id "
                f"WHERE m.sweep = ?{version_filter} ORDER BY m.ordinal, m.point_key, m.repetition, r.run_id"
            )
            args.insert(0, sweep)
        with self._read() as con:
            rows = [] if con is None else con.execute(sql, args).fetchall()
        return [self._record(row) for row in rows]

    def sweeps(self) -> list[str]:
        """Names of the sweeps in the store, sorted."""
        with self._read() as con:
            if con is None:
                return []
            return [r[0] for r in con.execute("SELECT DISTINCT sweep FROM sweep_runs ORDER BY sweep").fetchall()]

    def get(self, run_ids: Iterable[str]) -> dict[str, RunRecord]:
        """The stored runs among ``run_ids``, by id."""
        wanted = sorted(set(run_ids))
        if not wanted:
            return {}
        with self._read() as con:
            if con is None:
                return {}
            con.register("wanted", pa.table({"run_id": pa.array(wanted, type=pa.string())}))
            rows = con.execute(f"SELECT {_COLUMNS} FROM runs WHERE run_id IN (SELECT run_id FROM wanted)").fetchall()
        return {row[0]: self._record(row) for row in rows}

    def existing(self, run_ids: Iterable[str]) -> set[str]:
        """Which of ``run_ids`` the store holds."""
        wanted = set(run_ids)
        if not wanted:
            return set()
        with self._read() as con:
            if con is None:
                return set()
            return {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()} & wanted

    def _record(self, row: Sequence[Any]) -> RunRecord:
        (run_id, scenario_hash, seed, engine, code_version, sweep, point, repetition, scenario, summary, series_dir) = (
            row
        )
        return RunRecord(
            run_id=run_id,
            scenario_hash=scenario_hash,
            seed=int(seed),
            engine=engine,
            code_version=code_version,
            sweep=sweep,
            point=json.loads(point),
            repetition=int(repetition),
            scenario=json.loads(scenario),
            summary=json.loads(summary),
            series_dir=None if series_dir is None else str(self.root / series_dir),
        )

    # Writing

    def add(self, record: RunRecord, result: Optional["Result"]) -> None:
        """Store one complete run: ``result``'s files first (when given; then
        ``series_dir`` is the store's directory for the run), the row last. A run already
        in the store is left as it is; a sweep's membership is added either way."""
        if record.run_id != record.expected_run_id():
            raise ValueError(f"run_id {record.run_id!r} does not match its key; expected {record.expected_run_id()!r}")
        if result is not None:
            record = dataclasses.replace(record, series_dir=self.write_run_files(record.run_id, result_files(result)))
        memberships = []
        if record.sweep is not None:
            memberships.append(
                Membership(
                    record.sweep, record.point, record.repetition, record.run_id, self._next_ordinal(record.sweep)
                )
            )
        self.commit([record], memberships)

    def _next_ordinal(self, sweep: str) -> int:
        with self._read() as con:
            if con is None:
                return 0
            row = con.execute("SELECT max(ordinal) FROM sweep_runs WHERE sweep = ?", [sweep]).fetchone()
        return 0 if row is None or row[0] is None else int(row[0]) + 1

    def write_run_files(self, run_id: str, files: Mapping[str, bytes]) -> str:
        """Write a run's files into a temporary directory and rename it into place.
        Returns the absolute path of the run's directory."""
        final = self.runs_dir / run_id
        tmp = self.runs_dir / f"{TMP_PREFIX}{run_id}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        if final.exists():  # files of an attempt whose row never made it
            shutil.rmtree(final)
        os.rename(tmp, final)
        return str(final)

    def commit(self, records: Sequence[RunRecord], memberships: Sequence[Membership] = ()) -> None:
        """Insert rows for complete runs (whose files are written) and sweep memberships,
        in one transaction; rows already present are left alone."""
        if not records and not memberships:
            return
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        run_rows = [
            [
                r.run_id,
                r.scenario_hash,
                r.seed,
                r.engine,
                r.code_version,
                r.sweep,
                _dumps(r.point, sort_keys=False),
                r.repetition,
                _dumps(r.scenario),
                _dumps(r.summary),
                self._relative(r.series_dir),
                now,
            ]
            for r in records
        ]
        member_rows = [
            [m.sweep, point_key(m.point), m.repetition, m.run_id, _dumps(m.point, sort_keys=False), m.ordinal]
            for m in memberships
        ]
        with _sigint_deferred(), self._write() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                # Bulk inserts from Arrow tables: executemany costs about 5 ms a row.
                if run_rows:
                    con.register("new_runs", _table(_RUN_FIELDS, _unique(run_rows, 1)))
                    con.execute("INSERT OR IGNORE INTO runs SELECT * FROM new_runs")
                    con.unregister("new_runs")
                if member_rows:
                    con.register("new_members", _table(_MEMBER_FIELDS, _unique(member_rows, 4)))
                    con.execute("INSERT OR IGNORE INTO sweep_runs SELECT * FROM new_members")
                    con.unregister("new_members")
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def _relative(self, series_dir: Optional[str]) -> Optional[str]:
        """Series directories inside the store are kept relative, so a store can move."""
        if series_dir is None:
            return None
        path = Path(series_dir)
        try:
            return str(path.resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path.resolve())

    # Housekeeping

    def remove_stale_tmp(self) -> None:
        """Remove temporary run directories of processes that are gone."""
        if not self.runs_dir.is_dir():
            return
        for entry in self.runs_dir.iterdir():
            if not entry.name.startswith(TMP_PREFIX):
                continue
            pid = entry.name.rsplit("-", 1)[-1]
            if not pid.isdigit() or not _pid_alive(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)

    @contextlib.contextmanager
    def sweep_lock(self) -> Iterator[None]:
        """Held by the process running a sweep on this store; the kernel releases it when
        that process dies, however it dies."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / SWEEP_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                raise StoreError(
                    str(self.root),
                    f"a sweep (pid {holder}) is running on this store; wait for it to finish or use another --store",
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)


def open_store(path: Union[str, os.PathLike[str], None] = None, *, create: bool = True) -> Store:
    """The store at ``path`` (default ``./ccbench-results``). With ``create=False`` a
    directory without a store is an error."""
    root = Path(DEFAULT_STORE if path is None else path)
    if root.exists() and not root.is_dir():
        raise StoreError(str(root), "exists and is not a directory")
    if not create and not (root / db.DB_NAME).exists():
        raise StoreError(str(root), "no results store here; 'ccbench sweep PLAN.toml' creates one")
    return Store(root)
