"""Running sweeps: local processes and in-process give the same runs, a second run of a
plan runs nothing, same plan -> same seeds and summaries, shared experiments run once,
failed runs are reported after the rest is stored and retried next time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ccbench.store import open_store
from ccbench.sweep import SweepFailed, execute, plan_from_dict, run_sweep
from ccbench.sweep import backends

from conftest import run_cli

PLAN: dict[str, Any] = {
    "duration": "2s",
    "link": {"rate": {"from": 10, "to": 30, "step": 10, "unit": "Mbit"}, "rtt": "20ms", "loss": ["0%", "1%"]},
    "flows": [{"cca": ["bbr", "cubic"]}],
    "sweep": {"name": "grid", "repetitions": 2},
}


def key(records: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (r.run_id, r.seed, r.repetition, tuple(r.point.items()), json.dumps(r.summary, sort_keys=True)) for r in records
    ]


def without_seed(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in ("seed", "scenario_hash")}


def test_processes_match_in_process_and_resume_runs_nothing(tmp_path: Path) -> None:
    plan = plan_from_dict(PLAN)
    parallel = run_sweep(plan, tmp_path / "a", workers=2, progress=True)
    assert (parallel.ran, parallel.reused, parallel.failures) == (24, 0, [])
    serial = run_sweep(plan, tmp_path / "b", workers=1, progress=False)
    assert key(parallel.records) == key(serial.records)
    assert [r.point for r in parallel.records] == [p.values for p in plan.points()]
    # Same plan, same seeds, same summaries; runs with loss differ between repetitions.
    lossy = [r for r in serial.records if r.point["link.loss"] == "1%"]
    assert lossy[0].seed == 1 and lossy[1].seed != 1
    assert without_seed(lossy[0].summary) != without_seed(lossy[1].summary)

    again = run_sweep(plan, tmp_path / "a", workers=2, progress=False)
    assert (again.ran, again.reused) == (0, 24)
    assert key(again.records) == key(parallel.records)
    store = open_store(tmp_path / "a")
    assert len(store.records()) == len(store.records("grid")) == 24
    assert len(list((tmp_path / "a" / "runs").iterdir())) == 24


def test_extending_a_plan_runs_only_the_new_points(tmp_path: Path) -> None:
    small = dict(PLAN, sweep={"name": "grid", "repetitions": 1})
    execute(plan_from_dict(small), tmp_path / "s", workers=1, progress=False)
    bigger = dict(PLAN, sweep={"name": "grid", "repetitions": 2})
    report = run_sweep(plan_from_dict(bigger), tmp_path / "s", workers=1, progress=False)
    assert (report.ran, report.reused) == (12, 12)


def test_identical_points_share_one_run(tmp_path: Path) -> None:
    plan = plan_from_dict(
        {
            **PLAN,
            "link": {"rate": "10Mbit", "rtt": "20ms", "buffer": ["1bdp", "1.0bdp"]},
            "flows": [{"cca": "cubic"}],
            "sweep": {"name": "same"},
        }
    )
    report = run_sweep(plan, tmp_path / "s", workers=2, progress=False)
    assert report.ran == 1 and len(report.records) == 2
    assert report.records[0].run_id == report.records[1].run_id
    assert [r.point["link.buffer"] for r in open_store(tmp_path / "s").records("same")] == ["1bdp", "1.0bdp"]
    assert len(open_store(tmp_path / "s").records()) == 1


def test_points_without_a_name_and_without_series(tmp_path: Path) -> None:
    points = plan_from_dict(PLAN).points()[:3]
    records = execute(points, tmp_path / "s", workers=1, progress=False, keep_series=False)
    assert [r.sweep for r in records] == [None] * 3
    assert all(r.series_dir is None for r in records)
    assert not (tmp_path / "s" / "runs").exists()
    assert open_store(tmp_path / "s").sweeps() == []


def test_failed_runs_are_reported_and_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_from_dict(PLAN)
    doomed = plan.points()[5].scenario.scenario_hash
    real = backends.run_task

    def flaky(task: Any) -> Any:
        if task.scenario.scenario_hash == doomed:
            raise RuntimeError("the engine broke")
        return real(task)

    monkeypatch.setattr(backends, "run_task", flaky)
    with pytest.raises(SweepFailed, match=r"1 of 24 runs failed; first: .* repetition 1: RuntimeError: the engine"):
        execute(plan, tmp_path / "s", workers=1, progress=False)
    assert len(open_store(tmp_path / "s").records()) == 23
    monkeypatch.setattr(backends, "run_task", real)
    report = run_sweep(plan, tmp_path / "s", workers=1, progress=False)
    assert (report.ran, report.reused, report.failures) == (1, 23, [])


def test_sweep_command(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'duration = "1s"\n[link]\nrate = ["10Mbit", "20Mbit"]\nrtt = "10ms"\n'
        '[[flows]]\ncca = "reno"\n[sweep]\nrepetitions = 2\n'
    )
    first = run_cli("sweep", "plan.toml", "--workers", "2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(
        "sweep plan: 4 run(s) of 2 point(s) x 2 repetition(s): 4 run now, 0 already in the store;"
    )
    assert (tmp_path / "ccbench-results" / "ccbench.duckdb").exists()
    dry = run_cli("sweep", "plan.toml", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0
    assert dry.stdout.count(" stored ") == 4 and "0 to run, 4 already in" in dry.stdout
    second = run_cli("sweep", "plan.toml", "--quiet", "--no-series", cwd=tmp_path)
    assert "0 run now, 4 already in the store" in second.stdout and second.stderr == ""


def die_on_20mbit(task: Any) -> Any:
    """A task that kills its worker process (as a crash in the engine would)."""
    import os

    from ccbench.sweep.worker import run_task

    if task.scenario.link.rate_bps == 20_000_000:
        os._exit(3)
    return run_task(task)


def test_a_dying_worker_process_fails_only_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_from_dict({**PLAN, "sweep": {"name": "crash"}})
    monkeypatch.setattr(backends, "run_task", die_on_20mbit)
    report = run_sweep(plan, tmp_path / "s", workers=2, progress=False)
    assert 4 <= len(report.failures) < 12 and report.ran == 12 - len(report.failures)
    assert all("BrokenProcessPool" in f.message for f in report.failures)
    monkeypatch.undo()
    again = run_sweep(plan, tmp_path / "s", workers=2, progress=False)
    assert (again.ran, again.reused, again.failures) == (len(report.failures), report.ran, [])
