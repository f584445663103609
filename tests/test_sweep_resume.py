"""A sweep killed with SIGKILL halfway and started again completes with exactly one
stored run per point: nothing lost, nothing duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from ccbench.store import open_store, point_key
from ccbench.sweep import load_plan

from conftest import run_cli

# 9 rates x 3 algorithms x 2 repetitions = 54 runs of 0.1-0.3 s each: long enough to
# be killed in the middle, short enough for the test.
PLAN = """\
duration = "8s"

[link]
rate = { from = 200, to = 1000, step = 100, unit = "Mbit" }
rtt = "20ms"

[[flows]]
cca = ["cubic", "reno", "bbr"]

[sweep]
name = "killed"
repetitions = 2
"""
RUNS = 54
TIMEOUT_S = 60


def completed_dirs(store: Path) -> int:
    runs = store / "runs"
    return sum(1 for p in runs.iterdir() if not p.name.startswith(".")) if runs.is_dir() else 0


def test_kill_9_halfway_then_resume(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(PLAN)
    store_dir = tmp_path / "store"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ccbench",
            "sweep",
            str(plan_path),
            "--store",
            str(store_dir),
            "--workers",
            "2",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while completed_dirs(store_dir) < RUNS // 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.02)
        children = psutil.Process(proc.pid).children(recursive=True)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # The worker processes notice their coordinator is gone and exit.
        _, alive = psutil.wait_procs(children, timeout=10)
        assert alive == [], alive
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for child in children:
            if child.is_running():
                child.kill()

    assert proc.returncode == -signal.SIGKILL
    stored_before = len(open_store(store_dir).records())
    assert stored_before < RUNS, "the sweep finished before it was killed"

    result = run_cli("sweep", str(plan_path), "--store", str(store_dir), "--workers", "2", "--quiet")
    assert result.returncode == 0, result.stderr
    ran = int(result.stdout.split(": ")[2].split(" run now")[0])
    assert f"{ran} run now, {RUNS - ran} already in the store" in result.stdout
    assert RUNS - ran >= stored_before

    store = open_store(store_dir)
    records = store.records("killed")
    plan = load_plan(plan_path)
    assert len(records) == len(store.records()) == RUNS
    assert len({r.run_id for r in records}) == RUNS
    assert sorted((point_key(r.point), r.repetition) for r in records) == sorted(
        (point_key(p.values), p.repetition) for p in plan.points()
    )
    dirs = sorted(p.name for p in (store_dir / "runs").iterdir())
    assert dirs == sorted(r.run_id for r in records)  # no leftover or temporary directory
    for r in records:
        assert (Path(str(r.series_dir)) / "flows.parquet").stat().st_size > 0


def test_ctrl_c_stores_what_finished_then_resume(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(PLAN)
    store_dir = tmp_path / "store"
    # As from a terminal: SIGINT at its default (a shell's background job would ignore it).
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ccbench",
            "sweep",
            str(plan_path),
            "--store",
            str(store_dir),
            "--workers",
            "2",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while completed_dirs(store_dir) < RUNS // 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.02)
        children = psutil.Process(proc.pid).children(recursive=True)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    _, alive = psutil.wait_procs(children, timeout=10)
    for child in alive:
        child.kill()
    assert alive == []
    assert proc.returncode == 130
    # (click puts an empty line before it, after the ^C a terminal echoes)
    assert [line for line in err.splitlines() if line] == ["error: interrupted: stopped before the run finished"]
    stored = open_store(store_dir).records()
    assert 0 < len(stored) < RUNS
    # Everything that finished is stored: Ctrl-C waits for the rows of runs already in.
    assert sorted(r.run_id for r in stored) == sorted(p.name for p in (store_dir / "runs").iterdir())

    result = run_cli("sweep", str(plan_path), "--store", str(store_dir), "--quiet")
    assert f"{RUNS - len(stored)} run now, {len(stored)} already in the store" in result.stdout, result.stderr
    assert len(open_store(store_dir).records()) == RUNS
