"""The results store: rows and files of complete runs, uniqueness, sweeps sharing runs,
leftovers of interrupted runs, the sweep lock, and ``ccbench results``."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from pathlib import Path

import pytest

import ccbench
from ccbench import engines
from ccbench.store import RunRecord, Store, StoreError, open_store, run_id_for
from ccbench.sweep import execute, plan_from_dict

from conftest import run_cli

PLAN = {
    "duration": "1s",
    "link": {"rate": ["10Mbit", "50Mbit"], "rtt": "20ms"},
    "flows": [{"cca": ["bbr", "cubic"]}, {"cca": "reno"}],
    "sweep": {"name": "small", "repetitions": 2},
}


def record_for(
    result: ccbench.Result, sweep: str | None = None, point: dict | None = None, repetition: int = 0
) -> RunRecord:
    sc = result.scenario
    version = engines.get("sim").code_version()
    return RunRecord(
        run_id=run_id_for(sc.scenario_hash, sc.seed, "sim", version),
        scenario_hash=sc.scenario_hash,
        seed=sc.seed,
        engine="sim",
        code_version=version,
        sweep=sweep,
        point=point or {},
        repetition=repetition,
        scenario=sc.to_dict(),
        summary=result.summary,
        series_dir=None,
    )


@pytest.fixture(scope="module")
def result() -> ccbench.Result:
    return ccbench.run(ccbench.Scenario.from_flags(cca="cubic", rate="10Mbit", duration="1s", seed=5))


def test_add_and_read_back(tmp_path: Path, result: ccbench.Result) -> None:
    store = open_store(tmp_path / "store")
    assert store.records() == [] and store.sweeps() == []
    rec = record_for(result, sweep="s", point={"link.rate": "10Mbit"})
    store.add(rec, result)
    store.add(rec, result)  # already there: nothing changes
    (got,) = store.records()
    assert got == dataclasses.replace(rec, series_dir=str(tmp_path / "store" / "runs" / rec.run_id))
    assert store.sweeps() == ["s"]
    assert store.records("s") == [got]
    assert store.records("other") == []
    assert got.series_dir is not None
    files = sorted(p.name for p in Path(got.series_dir).iterdir())
    assert files == ["flows.parquet", "link.parquet", "scenario.toml", "summary.json"]
    assert json.loads((Path(got.series_dir) / "summary.json").read_text()) == result.summary
    # A stored run directory is a run directory: ccbench's own loaders read it.
    from ccbench.plots import load_run

    assert load_run(got.series_dir) is not None


def test_a_single_run_without_series(tmp_path: Path, result: ccbench.Result) -> None:
    store = open_store(tmp_path / "store")
    rec = record_for(result)
    store.add(rec, None)
    (got,) = store.records()
    assert got.sweep is None and got.series_dir is None and got.summary == result.summary
    assert store.sweeps() == []


def test_run_id_must_match_its_key(tmp_path: Path, result: ccbench.Result) -> None:
    store = open_store(tmp_path / "store")
    with pytest.raises(ValueError, match="does not match"):
        store.add(dataclasses.replace(record_for(result), seed=6), None)
    assert not (tmp_path / "store" / "runs").exists()


def test_runs_shared_by_two_sweeps(tmp_path: Path, result: ccbench.Result) -> None:
    store = open_store(tmp_path / "store")
    store.add(record_for(result, sweep="a", point={"link.rate": "10Mbit"}), result)
    store.add(record_for(result, sweep="b", point={"link.rate": "10000kbit"}, repetition=0), None)
    assert store.sweeps() == ["a", "b"]
    assert len(store.records()) == 1  # one row per run
    assert store.records()[0].sweep == "a"  # with the sweep that produced it
    assert store.records("b")[0].point == {"link.rate": "10000kbit"}
    assert store.records("a")[0].run_id == store.records("b")[0].run_id


def test_code_version_filter(tmp_path: Path, result: ccbench.Result) -> None:
    store = open_store(tmp_path / "store")
    rec = record_for(result)
    other = dataclasses.replace(
        rec, code_version="0.0.1+old", run_id=run_id_for(rec.scenario_hash, rec.seed, "sim", "0.0.1+old")
    )
    store.add(rec, None)
    store.add(other, None)
    assert len(store.records()) == 2
    assert [r.code_version for r in store.records(code_version="0.0.1+old")] == ["0.0.1+old"]
    assert engines.get("sim").code_version().startswith(ccbench._core.version() + "+")


def test_files_without_a_row_do_not_count(tmp_path: Path) -> None:
    """A run killed after writing its files but before its row: the next sweep runs it
    again and replaces the files; a temporary directory of a dead process is removed."""
    plan = plan_from_dict(PLAN)
    store = open_store(tmp_path / "store")
    point = plan.points()[0]
    rid = run_id_for(point.scenario.scenario_hash, point.scenario.seed, "sim", engines.get("sim").code_version())
    store.write_run_files(rid, {"summary.json": b"half-written"})
    stale = store.runs_dir / f".tmp-{rid}-999999999"
    stale.mkdir()
    assert store.records() == []
    records = execute(plan, store, workers=1, progress=False)
    assert len(records) == plan.run_count == 8
    assert json.loads((store.runs_dir / rid / "summary.json").read_text())["seed"] == point.scenario.seed
    assert not stale.exists()
    assert sorted(p.name for p in store.runs_dir.iterdir()) == sorted({r.run_id for r in records})


def test_one_sweep_at_a_time(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store")
    with store.sweep_lock():
        with pytest.raises(StoreError, match=rf"a sweep \(pid {os.getpid()}\) is running on this store"):
            with Store(tmp_path / "store").sweep_lock():
                pass
    with store.sweep_lock():  # released
        pass


def test_open_store_checks(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results store here"):
        open_store(tmp_path / "none", create=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        open_store(tmp_path / "file")
    assert open_store(tmp_path / "new").root == tmp_path / "new"
    assert not (tmp_path / "new").exists()  # created by the first write only


# ccbench results


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results") / "store"
    execute(plan_from_dict(PLAN), root, workers=1, progress=False)
    return root


def test_results_lists_runs(filled: Path) -> None:
    result = run_cli("results", "--store", str(filled), "--sweep", "small", "--limit", "0")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:5] == ["run", "sweep", "link.rate", "flows[0].cca", "rep"]
    assert len([ln for ln in lines if " small " in ln]) == 8
    assert "8 run(s). Store" in lines[-1] and "sweeps: small" in lines[-1]


def test_results_limit(filled: Path) -> None:
    result = run_cli("results", "--store", str(filled), "--limit", "3")
    assert result.returncode == 0, result.stderr
    assert len([ln for ln in result.stdout.splitlines() if " small " in ln]) == 3
    assert "listing the first 3" in result.stdout


def _csv(filled: Path, *args: str) -> list[dict[str, str]]:
    result = run_cli("results", "--store", str(filled), "--csv", "-", *args)
    assert result.returncode == 0, result.stderr
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_results_csv_one_row_per_flow(filled: Path) -> None:
    rows = _csv(filled, "--sweep", "small")
    assert len(rows) == 8 * 2
    row = rows[0]
    for col in (
        "run_id",
        "sweep",
        "repetition",
        "seed",
        "engine",
        "code_version",
        "link.rate",
        "flows[0].cca",
        "link.rtt",
        "link.buffer",
        "flow",
        "cca",
        "goodput_bps",
        "retransmits",
        "rtt_mean_ms",
        "link_utilization",
        "jain_index",
        "series_dir",
    ):
        assert col in row, col
    assert (row["link.rate"], row["flows[0].cca"], row["flow"], row["cca"], row["link.rtt"]) == (
        "10Mbit",
        "bbr",
        "0",
        "bbr",
        "20ms",
    )
    assert rows[1]["cca"] == "reno" and rows[1]["run_id"] == row["run_id"]
    assert float(row["goodput_bps"]) > 0


def test_results_filters(filled: Path) -> None:
    by_rate = _csv(filled, "--where", "link.rate=50000kbit")  # compared in bit/s
    assert {r["link.rate"] for r in by_rate} == {"50Mbit"} and len(by_rate) == 8
    by_both = _csv(filled, "--where", "link.rate=50Mbit", "--where", "flows[0].cca=BBR")
    assert len(by_both) == 4 and {r["flows[0].cca"] for r in by_both} == {"bbr"}
    assert len(_csv(filled, "--cca", "reno")) == 16
    assert len(_csv(filled, "--cca", "bbr")) == 8
    assert _csv(filled, "--where", "link.rate=1Gbit") == []
    written = filled.parent / "out.csv"
    result = run_cli("results", "--store", str(filled), "--cca", "cubic", "--csv", str(written))
    assert result.returncode == 0 and "wrote" in result.stderr
    assert len(list(csv.DictReader(written.open()))) == 8


def test_results_unknown_sweep_and_key(filled: Path) -> None:
    result = run_cli("results", "--store", str(filled), "--sweep", "nope")
    assert result.returncode == 2 and "error: --sweep: no sweep named 'nope'" in result.stderr
    assert "sweeps: small" in result.stderr
    result = run_cli("results", "--store", str(filled), "--where", "link.jitter=1")
    assert result.returncode == 2 and result.stderr.startswith("error: --where: no run has a value 'link.jitter'")
