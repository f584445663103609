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

from ..scenario import Scenario
from ..store.files import run_files
from ..store.version import code_version


@dataclass(frozen=True)
class Task:
    run_id: str           # the id the coordinator expects; the store records the actual one
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
    """Run one scenario on ``task.engine``; kernel runs hold the host's kernel-run lock."""
    start = time.perf_counter()
    if task.engine == "kernel":
        from ..engines import kernel as kernel_engine

        with kernel_host_lock():
            result = kernel_engine.run(task.scenario)
    else:
        from ..engines.sim import run

        result = run(task.scenario)
    files = run_files(result.summary, result.scenario, result.flows, result.link) if task.keep_series else None
    return Outcome(
        run_id=task.run_id,
        scenario=result.scenario.to_dict(),
        scenario_hash=result.scenario.scenario_hash,
        seed=result.scenario.seed,
        engine=task.engine,
        code_version=code_version(task.engine),
        summary=result.summary,
        files=files,
        wall_s=time.perf_counter() - start,
        host=socket.gethostname(),
    )


def check_kernel_scenarios(scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios as the kernel engine of this host would run them (``tcp.hz`` set to
    the kernel's); raises KernelEngineError if this host cannot run one."""
    from ..engines import kernel as kernel_engine

    return [kernel_engine.check(sc) for sc in scenarios]


def host_code_version(engine: str) -> str:
    return code_version(engine)


def _lock_path() -> Path:
    run_lock = Path("/run/lock")
    directory = run_lock if run_lock.is_dir() and os.access(run_lock, os.W_OK) else Path("/tmp")
    return directory / "ccbench-kernel-run.lock"


@contextlib.contextmanager
def kernel_host_lock() -> Iterator[None]:
    """One kernel run at a time on this host, across processes (local workers, Dask
    workers, other sweeps); the kernel drops the lock if its holder dies."""
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
