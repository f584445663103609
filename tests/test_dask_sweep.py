"""A sweep on a real Dask cluster: a scheduler and two workers started with Dask's own
commands as separate processes on 127.0.0.1. One worker is killed halfway; the sweep
still completes, and its runs equal those of the same sweep run locally."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

import ccbench
from ccbench.store import open_store

distributed = pytest.importorskip("distributed")

PLAN = """\
duration = "6s"

[link]
rate = ["200Mbit", "400Mbit", "600Mbit"]
rtt = "20ms"
loss = ["0%", "0.1%"]

[[flows]]
cca = ["cubic", "bbr"]

[sweep]
name = "on-dask"
"""
RUNS = 12
START_TIMEOUT_S = 30
SWEEP_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    """The test's environment, with this ccbench importable by the Dask processes."""
    package_root = str(Path(ccbench.__file__).resolve().parent.parent)
    paths = [package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def start(args: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", *args], stdout=log, stderr=subprocess.STDOUT, env=env())


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_for_workers(address: str, n: int) -> None:
    from distributed import Client

    with Client(address, timeout=START_TIMEOUT_S, set_as_default=False) as client:
        client.wait_for_workers(n, timeout=START_TIMEOUT_S)


def run_dirs(store: Path) -> int:
    runs = store / "runs"
    return sum(1 for p in runs.iterdir() if not p.name.startswith(".")) if runs.is_dir() else 0


def comparable(records: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (r.run_id, r.seed, r.repetition, json.dumps(r.point), json.dumps(r.summary, sort_keys=True)) for r in records
    ]


def test_sweep_on_a_dask_cluster_with_a_lost_worker(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    with open(tmp_path / "dask.log", "wb") as log:
        try:
            procs.append(
                start(
                    ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                    log,
                )
            )
            for i in range(2):
                procs.append(
                    start(
                        [
                            "distributed.cli.dask_worker",
                            address,
                            "--host",
                            "127.0.0.1",
                            "--name",
                            f"w{i}",
                            "--nthreads",
                            "1",
                            "--no-nanny",
                            "--no-dashboard",
                            "--death-timeout",
                            str(START_TIMEOUT_S),
                        ],
                        log,
                    )
                )
            wait_for_workers(address, 2)

            store = tmp_path / "cluster"
            sweep = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ccbench",
                    "sweep",
                    str(plan),
                    "--cluster",
                    address,
                    "--store",
                    str(store),
                    "--quiet",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env(),
            )
            procs.append(sweep)  # type: ignore[arg-type]
            deadline = time.monotonic() + SWEEP_TIMEOUT_S
            while run_dirs(store) < 3 and sweep.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            procs[2].kill()  # lose a worker mid-sweep: Dask runs its tasks on the other one
            out, err = sweep.communicate(timeout=SWEEP_TIMEOUT_S)
            assert sweep.returncode == 0, (out, err, (tmp_path / "dask.log").read_text())
            assert f"{RUNS} run now, 0 already in the store" in out
        finally:
            for proc in reversed(procs):
                stop(proc)

    cluster_records = open_store(tmp_path / "cluster").records("on-dask")
    assert len(cluster_records) == len(open_store(tmp_path / "cluster").records()) == RUNS
    local = subprocess.run(
        [
            sys.executable,
            "-m",
            "ccbench",
            "sweep",
            str(plan),
            "--store",
            str(tmp_path / "local"),
            "--workers",
            "1",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env(),
        timeout=SWEEP_TIMEOUT_S,
    )
    assert local.returncode == 0, local.stderr
    local_records = open_store(tmp_path / "local").records("on-dask")
    assert comparable(cluster_records) == comparable(local_records)
    # The files came back from the workers intact.
    for c, loc in zip(cluster_records, local_records):
        assert c.series_dir is not None and loc.series_dir is not None
        assert (Path(c.series_dir) / "flows.parquet").read_bytes() == (
            Path(loc.series_dir) / "flows.parquet"
        ).read_bytes()
