"""What runs where the work is done: in a local worker process, in the coordinating
process itself, or on a Dask worker. A task runs one scenario and returns everything the
store needs as plain data; only the coordinating process writes to the store."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from .. import engines
from ..scenario import Scenario
from ..store.files import result_files


@dataclass(frozen=True)
class Task:
    run_id: str  # the id the coordinator expects; the store records the actual one
    scenario: Scenario
    engine: str
    keep_series: bool


@dataclass(frozen=True)
class Outcome:
    run_id: str
    scenario: dict[str, Any]
    scenario_hash: str
    seed: int
    engine: str
    code_version: str
    summary: dict[str, Any]
    files: Optional[dict[str, bytes]]  # the run directory's files, None without time series
    wall_s: float
    host: str


def run_task(task: Task) -> Outcome:
    """Run one scenario on ``task.engine``; an engine that uses the host's network stack
    holds the host-wide run lock."""
    start = time.perf_counter()
    engine = engines.get(task.engine)
    with host_run_lock() if engine.needs_host_lock else contextlib.nullcontext():
        result = engine.run(task.scenario)
    files = result_files(result) if task.keep_series else None
    return Outcome(
        run_id=task.run_id,
        scenario=result.scenario.to_dict(),
        scenario_hash=result.scenario.scenario_hash,
        seed=result.scenario.seed,
        engine=task.engine,
        code_version=engine.code_version(),
        summary=result.summary,
        files=files,
        wall_s=time.perf_counter() - start,
        host=socket.gethostname(),
    )


def check_scenarios(engine: str, scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios as ``engine`` would run them on this host (the kernel engine sets
    ``tcp.hz`` to the kernel's); raises ScenarioError if this host cannot run one."""
    checker = engines.get(engine)
    return [checker.check(sc) for sc in scenarios]


def host_code_version(engine: str) -> str:
    return engines.get(engine).code_version()


def _lock_path() -> Path:
    run_lock = Path("/run/lock")
    directory = run_lock if run_lock.is_dir() and os.access(run_lock, os.W_OK) else Path("/tmp")
    return directory / "ccbench-kernel-run.lock"


@contextlib.contextmanager
def host_run_lock() -> Iterator[None]:
    """One run on the host's network stack at a time, across processes (local workers,
    Dask workers, other sweeps); the kernel drops the lock if its holder dies."""
    fd = os.open(_lock_path(), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


# Local worker processes


def init_local_worker() -> None:
    """Initialiser of local worker processes: Ctrl-C is the coordinator's to handle,
    and a worker whose coordinator died (even by kill -9) exits at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.25)
        os._exit(1)

    threading.Thread(target=watch, name="ccbench-parent-watch", daemon=True).start()
