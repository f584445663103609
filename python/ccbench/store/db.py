"""The store's DuckDB database: schema and short-lived connections.

Connections are opened for one batch of work and closed again, so that ``ccbench
results`` (or a report) can read the store between the batches of a running sweep.
DuckDB lets only one process hold a database file open for writing; a connection that
finds the file locked retries until ``timeout_s``.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Iterator

import duckdb

from .errors import StoreError

DB_NAME = "ccbench.duckdb"
SCHEMA_VERSION = "1"
LOCK_TIMEOUT_S = 30.0

# One row per complete run. `sweep`, `point` and `repetition` are those of the sweep
# that produced it; `sweep_runs` lists every sweep a run belongs to (two sweeps may
# share a point, and two points of one sweep may be the same experiment).
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    scenario_hash VARCHAR NOT NULL,
    seed UBIGINT NOT NULL,
    engine VARCHAR NOT NULL,
    code_version VARCHAR NOT NULL,
    sweep VARCHAR,
    point VARCHAR NOT NULL,
    repetition INTEGER NOT NULL,
    scenario VARCHAR NOT NULL,
    summary VARCHAR NOT NULL,
    series_dir VARCHAR,
    created_at TIMESTAMP NOT NULL,
    UNIQUE (scenario_hash, seed, engine, code_version)
);
CREATE TABLE IF NOT EXISTS sweep_runs (
    sweep VARCHAR NOT NULL,
    point_key VARCHAR NOT NULL,
    repetition INTEGER NOT NULL,
    run_id VARCHAR NOT NULL,
    point VARCHAR NOT NULL,
    ordinal BIGINT NOT NULL,
    PRIMARY KEY (sweep, point_key, repetition, run_id)
);
"""


def _is_lock_error(e: Exception) -> bool:
    return "lock" in str(e).lower()


@contextlib.contextmanager
def connect(
    path: Path, *, read_only: bool = False, timeout_s: float = LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to the database at ``path``, waiting while another process holds it."""
    deadline = time.monotonic() + timeout_s
    delay = 0.02
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as e:
            if not _is_lock_error(e):
                raise StoreError(str(path.parent), f"cannot open {path.name}: {e}") from None
            if time.monotonic() >= deadline:
                raise StoreError(
                    str(path.parent),
                    f"is in use by another process (waited {timeout_s:g} s); try again when it has finished",
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        except duckdb.Error as e:
            raise StoreError(str(path.parent), f"cannot open {path.name}: {e}") from None
    try:
        yield con
    finally:
        con.close()


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(SCHEMA)
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [SCHEMA_VERSION])
    elif row[0] != SCHEMA_VERSION:
        raise StoreError("--store", f"holds schema version {row[0]}; this ccbench reads version {SCHEMA_VERSION}")
