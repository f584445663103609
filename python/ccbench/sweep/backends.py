"""Where a sweep's runs happen: in this process, in local worker processes, or on a Dask
distributed cluster. Each backend turns tasks into (task, outcome or exception) pairs as
runs finish, in any order."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import socket
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Iterator, Protocol, Union

from ..errors import ScenarioError
from ..scenario import Scenario
from .. import engines
from .worker import Outcome, Task, check_scenarios, host_code_version, init_local_worker, run_task

Finished = tuple[Task, Union[Outcome, BaseException]]

# Tasks handed to local workers ahead of time, per worker: enough to keep every worker
# busy while the coordinator stores results, few enough to stop quickly on Ctrl-C.
IN_FLIGHT_PER_WORKER = 4
MAX_POOL_RESTARTS = 3
CONNECT_TIMEOUT_S = 20
PROBE_TIMEOUT_S = 5
WORKERS_TIMEOUT_S = 60


class Backend(Protocol):
    def code_version(self, engine: str) -> str: ...
    def check(self, engine: str, scenarios: list[Scenario]) -> list[Scenario]: ...
    def run(self, tasks: list[Task]) -> Iterator[Finished]: ...
    def close(self) -> None: ...


class InProcess:
    """Runs one task after another in this process (one worker, or an engine whose runs
    on a host happen one at a time anyway)."""

    def code_version(self, engine: str) -> str:
        return host_code_version(engine)

    def check(self, engine: str, scenarios: list[Scenario]) -> list[Scenario]:
        return check_scenarios(engine, scenarios)

    def run(self, tasks: list[Task]) -> Iterator[Finished]:
        for task in tasks:
            try:
                outcome: Union[Outcome, BaseException] = run_task(task)
            except Exception as e:  # a failed run is reported, the sweep goes on
                outcome = e
            yield task, outcome

    def close(self) -> None:
        pass


class LocalProcesses(InProcess):
    """A pool of worker processes on this machine. Processes rather than threads: the
    simulator releases the GIL, but building the time-series tables and Parquet files
    of short runs is Python work that threads would serialise (docs/benchmarks.md)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def _start(self) -> ProcessPoolExecutor:
        # spawn, not fork: the coordinator may hold DuckDB and progress-bar threads.
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=init_local_worker
        )
        return self._pool

    def run(self, tasks: list[Task]) -> Iterator[Finished]:
        pool = self._start()
        pending: dict[Future[Outcome], Task] = {}
        queue = iter(tasks)
        limit = self.workers * IN_FLIGHT_PER_WORKER
        restarts = 0
        try:
            while True:
                if getattr(pool, "_broken", False) and not pending:
                    # A worker process died (a crash, an OOM kill); its runs failed. Go on
                    # with a new pool, unless workers keep dying.
                    if restarts == MAX_POOL_RESTARTS:
                        dying = BrokenProcessPool("local worker processes keep dying")
                        for rest in queue:
                            yield rest, dying
                        break
                    restarts += 1
                    self.close()
                    pool = self._start()
                while len(pending) < limit:
                    upcoming = next(queue, None)
                    if upcoming is None:
                        break
                    try:
                        pending[pool.submit(run_task, upcoming)] = upcoming
                    except BrokenProcessPool:
                        queue = itertools.chain([upcoming], queue)
                        break
                if not pending:
                    if getattr(pool, "_broken", False):
                        continue
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    task = pending.pop(future)
                    error = future.exception()
                    yield task, (error if error is not None else future.result())
            self.close(wait=True)
        finally:
            self.close()

    def close(self, wait: bool = False) -> None:
        """Shut the pool down: after the last run, let the workers exit; otherwise
        (Ctrl-C, an error) stop them now rather than wait for the runs in progress."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if wait:
            pool.shutdown(wait=True)
            return
        processes: list[Any] = list((getattr(pool, "_processes", None) or {}).values())  # gone after shutdown
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=5)


class DaskCluster:
    """An existing Dask distributed cluster; its scheduler at ``address``."""

    def __init__(self, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - a dependency
            raise ScenarioError(
                "--cluster", "needs the 'distributed' package: pip install 'dask[distributed]'"
            ) from None
        self.address = address
        _probe(address)
        try:
            self.client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise ScenarioError("--cluster", f"cannot reach a Dask scheduler at {address}: {e}") from None
        try:
            self.client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
        except (OSError, TimeoutError):
            self.client.close()
            raise ScenarioError(
                "--cluster",
                f"no Dask worker joined the scheduler at {address} within "
                f"{WORKERS_TIMEOUT_S} s; start some with 'dask worker {address}'",
            ) from None

    def code_version(self, engine: str) -> str:
        """The code version every worker runs; they must agree, or a resumed sweep could
        never tell which runs it already has."""
        try:
            versions: dict[str, str] = self.client.run(host_code_version, engine)
        except Exception as e:
            raise ScenarioError("--cluster", f"the workers cannot run ccbench: {type(e).__name__}: {e}") from None
        distinct = sorted(set(versions.values()))
        if len(distinct) != 1:
            listing = "; ".join(f"{w}: {v}" for w, v in sorted(versions.items()))
            raise ScenarioError(
                "--cluster",
                f"the workers run different ccbench builds ({listing}); install the same build on every worker",
            )
        return distinct[0]

    def check(self, engine: str, scenarios: list[Scenario]) -> list[Scenario]:
        """Checked where the runs happen: on a worker, whose host may differ from this one."""
        checked: list[Scenario] = self.client.submit(check_scenarios, engine, scenarios, pure=False).result()
        return checked

    def run(self, tasks: list[Task]) -> Iterator[Finished]:
        from distributed import as_completed

        futures = {}
        for task in tasks:
            futures[self.client.submit(run_task, task, pure=False, key=f"ccbench-run-{task.run_id}-{os.getpid()}")] = (
                task
            )
        try:
            for future in as_completed(list(futures), loop=self.client.loop):
                task = futures.pop(future)
                try:
                    outcome: Union[Outcome, BaseException] = future.result()
                except Exception as e:
                    outcome = e
                future.release()
                yield task, outcome
        finally:
            if futures:
                self.client.cancel(list(futures))

    def close(self) -> None:
        self.client.close()


def _probe(address: str) -> None:
    """Fail at once when nothing listens at the address (Dask's client would retry
    until its timeout)."""
    rest = address.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
    except (OSError, ValueError) as e:
        raise ScenarioError("--cluster", f"cannot reach a Dask scheduler at {address}: {e}") from None


def choose(engine: str, workers: int | None, cluster: str | None, runs: int) -> Backend:
    """The backend for a sweep of ``runs`` runs."""
    if cluster is not None:
        return DaskCluster(cluster)
    if engines.get(engine).needs_host_lock:
        return InProcess()
    n = min(workers or os.cpu_count() or 1, max(runs, 1))
    return LocalProcesses(n) if n > 1 else InProcess()
