"""The validation grid without running the kernel: its cells, the judging, the tables and
the HTML page (in a headless browser when one is installed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccbench.validate import cells as grid
from ccbench.validate.judge import EngineFigures, compare
from ccbench.validate.report import build
from ccbench.validate.tables import markdown, ordered, table_rows, to_json, write


def _run(
    goodputs: list[float],
    rtts: list[float],
    retx: int,
    frac: float = 0.0,
    capacity: float = 20e6,
    completion: list[float] | None = None,
) -> dict:
    flows = [
        {
            "goodput_bps": g,
            "rtt_mean_ms": r,
            "rtt_p95_ms": r * 1.2,
            "completion_s": None if completion is None else completion[i],
            "retransmits": retx,
        }
        for i, (g, r) in enumerate(zip(goodputs, rtts))
    ]
    return {
        "flows": flows,
        "capacity_bps": capacity,
        "retransmits": retx,
        "retransmit_fraction": frac,
        "emulator_ratio": 0.999,
        "emulator_flag_short": False,
        "notes": [],
    }


def _engine(*runs: dict) -> EngineFigures:
    return EngineFigures(True, "", list(runs))


ONE = grid.base(("20Mbit",), ("20ms",), (1.0,), ("cubic",))[0]
MIX = grid.mix((1.0,))[0]


def test_every_cell_of_both_grids_is_a_valid_scenario_with_a_unique_name() -> None:
    for cells in (grid.quick_grid(), grid.full_grid(), grid.algorithm_grid(True), grid.algorithm_grid(False)):
        names = [c.name for c in cells]
        assert len(names) == len(set(names))
        for c in cells:
            assert c.family in grid.FAMILIES
            c.scenario("5s", 1, 250)  # validates against the scenario schema
    full = grid.full_grid()
    assert {c.family for c in full + grid.algorithm_grid(False)} == set(grid.FAMILIES)
    losses = {dict(c.axes)["loss"] for c in full if c.family == "loss"}
    assert set(grid.LOSSES) <= losses and "GE 1%" in losses
    assert {dict(c.axes)["buffer"] for c in full if c.family == "mix"} == {f"{b:g}bdp" for b in grid.MIX_BUFFERS}
    rates = {dict(c.axes).get("rate") for c in full if c.family == "base"}
    rtts = {dict(c.axes).get("rtt") for c in full if c.family == "base"}
    assert {"10Mbit", "500Mbit"} <= rates and {"5ms", "200ms"} <= rtts


def test_the_algorithms_family_judges_each_algorithm_on_the_vm_and_on_this_kernel() -> None:
    from ccbench.validate import command

    cells = grid.algorithm_grid(False)
    assert {c.against for c in cells} == {"vm", "kernel"}
    per = {(c.against, dict(c.axes)["cca"]) for c in cells}
    assert len(per) == 2 * len(grid.OTHER_ALGORITHMS) == 28
    # Three points alone and one beside Cubic, per algorithm and reference.
    assert len(cells) == 28 * 4
    beside = [c for c in cells if dict(c.axes)["point"] == "against cubic"]
    assert all([f["cca"] for f in c.doc["flows"]][1] == "cubic" and c.goodput == grid.OF_CAPACITY for c in beside)
    lossy = [c for c in cells if "loss" in c.doc["link"]]
    assert lossy and all(c.goodput == grid.OF_CAPACITY for c in lossy)
    # Quick: each algorithm once, on the VM; asked for by name only.
    assert [dict(c.axes)["cca"] for c in grid.algorithm_grid(True)] == list(grid.OTHER_ALGORITHMS)
    assert all(c.against == "vm" for c in grid.algorithm_grid(True))
    assert not any(c.family == "algorithms" for c in command.grid(False, None))
    assert len(command.grid(True, "base,algorithms")) == len(grid.quick_grid()) + 14


def test_a_failing_cell_whose_vm_was_held_by_its_testbed_says_so() -> None:
    cell = grid.algorithm_grid(True)[0]
    held = {**_run([5e6], [30.0], 3), "testbed_bound": "the guest's vCPU was busy 97% of the run"}
    res = compare(cell, _engine(_run([19e6], [30.0], 3)), _engine(held))
    assert res.verdict == "testbed" and res.testbed_bound.startswith("the guest's vCPU")
    assert ordered([res, compare(ONE, _engine(_run([5e6], [30.0], 3)), _engine(_run([19e6], [30.0], 3)))])[
        0
    ].verdict == ("FAIL")
    # Where it agrees, it passes, held or not.
    assert compare(cell, _engine(_run([5e6], [30.0], 3)), _engine(held)).verdict == "pass"


def test_a_cell_its_reference_cannot_run_is_not_run_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    from ccbench import engines
    from ccbench.errors import ScenarioError
    from ccbench.validate.runner import run_cell

    class Refusing:
        def check(self, scenario):
            raise ScenarioError("flows[0].cca", "'vegas' is not available in this kernel; available: reno, cubic")

        def run(self, scenario):
            raise AssertionError("not run")

    real = engines.get
    monkeypatch.setattr(engines, "get", lambda name, *a, **k: Refusing() if name == "kernel" else real(name, *a, **k))
    cell = next(c for c in grid.algorithm_grid(False) if c.against == "kernel" and "vegas" in c.name)
    res = run_cell(cell, "1s", 3, progress=lambda _: None)
    assert res.verdict == "n/a" and "'vegas' is not available in this kernel" in res.kernel.reason
    assert not res.sim.runs and res.sim.reason.startswith("not run: ")


def test_a_cell_without_its_trace_files_is_reported_not_run(tmp_path: Path) -> None:
    cell = grid.traces(("TMobile-LTE-short",), ("cubic",), trace_dir=tmp_path)[0]
    assert cell.missing and str(tmp_path) in cell.missing
    from ccbench.validate.runner import run_cell

    res = run_cell(cell, "1s", 1, progress=lambda _: None)
    assert res.verdict == "n/a" and res.checks == []


def test_a_single_flow_is_judged_relative_to_the_kernel() -> None:
    ok = compare(ONE, _engine(_run([18.5e6], [30.0], 0)), _engine(_run([19.5e6], [26.0], 3, 0.0005)))
    assert ok.verdict == "pass" and [c.figure for c in ok.checks] == ["goodput", "rtt_mean", "retransmits"]
    bad = compare(ONE, _engine(_run([16e6], [40.0], 100, 0.01)), _engine(_run([19.5e6], [26.0], 30, 0.003)))
    assert bad.verdict == "FAIL" and not any(c.ok for c in bad.checks)


def test_a_mix_is_judged_per_flow_as_a_share_of_capacity() -> None:
    # 1.5 Mbit/s apart on a 20 Mbit/s link: within 10% of capacity, though 30% of the flow.
    res = compare(MIX, _engine(_run([5e6, 15e6], [50.0, 50.0], 10)), _engine(_run([3.5e6, 16.5e6], [50.0, 50.0], 10)))
    goodput = [c for c in res.checks if c.figure == "goodput"]
    assert [c.flow for c in goodput] == [0, 1] and all(c.ok for c in goodput)
    res = compare(MIX, _engine(_run([7e6, 13e6], [50.0, 50.0], 10)), _engine(_run([3.5e6, 16.5e6], [50.0, 50.0], 10)))
    assert res.verdict == "FAIL"


def test_the_kernel_spread_counts_as_agreement() -> None:
    sim = _engine(_run([15e6], [30.0], 10))
    kernel = _engine(_run([19e6], [30.0], 10), _run([14e6], [30.0], 10), _run([19.5e6], [30.0], 10))
    res = compare(ONE, sim, kernel)
    goodput = res.checks[0]
    assert goodput.kernel.median == 19e6 and goodput.kernel.low == 14e6 and goodput.ok
    assert "[14.00–19.50]" in table_rows([res])[0][1]


def test_completion_times_within_15_percent() -> None:
    cell = grid.sized(("1MB",), ("cubic",))[0]
    res = compare(
        cell, _engine(_run([15e6], [50.0], 0, completion=[0.56])), _engine(_run([15e6], [50.0], 0, completion=[0.5]))
    )
    assert next(c for c in res.checks if c.figure == "completion").ok
    res = compare(
        cell, _engine(_run([15e6], [50.0], 0, completion=[0.6])), _engine(_run([15e6], [50.0], 0, completion=[0.5]))
    )
    assert res.verdict == "FAIL"


def test_receive_window_limited_time_within_10_points_of_the_run_where_either_engine_saw_any() -> None:
    cell = grid.rwnd(("bbr",))[0]

    def run(pct: float) -> dict:
        r = _run([12.4e6], [40.5], 0)
        r["flows"][0]["rwnd_limited_pct"] = pct
        return r

    def check(sim: float, kernel: float):
        return [c for c in compare(cell, _engine(run(sim)), _engine(run(kernel))).checks if c.figure == "rwnd_limited"]

    assert check(0.0, 0.0) == []  # neither was held back: nothing to judge
    [c] = check(38.0, 30.4)
    assert c.ok and c.label == "rwnd_limited" and c.ratio == pytest.approx(38.0 / 30.4)
    [c] = check(57.9, 30.4)
    assert not c.ok
    assert "57.9 / 30.4 (1.90) ✗" in table_rows([compare(cell, _engine(run(57.9)), _engine(run(30.4)))])[0][5]


def _results():
    good = compare(ONE, _engine(_run([19e6], [26.0], 3)), _engine(_run([19e6], [26.0], 3)))
    bad = compare(MIX, _engine(_run([7e6, 13e6], [50.0, 50.0], 10)), _engine(_run([3.5e6, 16.5e6], [50, 50], 10)))
    missing = compare(
        grid.repeated(("cubic",))[0],
        _engine(_run([10e6], [50.0], 0)),
        EngineFigures(False, "not available in the kernel engine: flows[0].repeat"),
    )
    return [good, bad, missing]


def test_tables_put_failing_cells_first_and_write_csv_json_markdown(tmp_path: Path) -> None:
    results = _results()
    assert [r.verdict for r in ordered(results)] == ["FAIL", "pass", "n/a"]
    assert "not available in the kernel engine" in markdown(results, [])
    paths = write(tmp_path, results, [], {"command": "test"})
    assert [p.name for p in paths] == ["validate.csv", "validate.json", "validate.md"]
    doc = json.loads((tmp_path / "validate.json").read_text())
    assert [c["verdict"] for c in doc["cells"]] == ["pass", "FAIL", "n/a"]
    assert doc["cells"][1]["checks"][0]["label"] == "goodput[0]"
    assert (tmp_path / "validate.md").read_text().splitlines()[2].startswith("| bbr+cubic")


def test_report_page_is_deterministic_and_lists_failing_cells_first(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(to_json(_results(), [], {"command": "ccbench validate", "reps": 1})))
    page = build(doc, tmp_path / "a")
    again = build(doc, tmp_path / "b")
    assert page.read_bytes() == again.read_bytes()
    html = page.read_text()
    assert html.index("Failing cells") < html.index("bbr+cubic 20Mbit 40ms 1bdp")
    assert (tmp_path / "a" / "validate-mix.png").is_file() and "1 pass, 1 fail, 1 not run" in html


def test_report_command_renders_a_stored_grid(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ccbench.cli import cli

    write(tmp_path / "grid", _results(), [], {"command": "test"})
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "grid")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "grid" / "report" / "index.html").is_file()


def test_report_renders_in_a_headless_browser(tmp_path: Path) -> None:
    from test_report_html import _check_in_browser

    page = build(json.loads(json.dumps(to_json(_results(), [], {"command": "test"}))), tmp_path)
    html = page.read_text()
    _check_in_browser(page, figures=html.count("<img "))


def test_validate_refuses_bad_options_in_one_line() -> None:
    import subprocess
    import sys

    for argv, message in (
        (["--family", "nope"], "error: --family: unknown family nope"),
        (["--report"], "error: --report: needs --out DIR"),
        (["--cca", "reno", "--quick"], "error: --cca: no cell of the grid uses only reno"),
        (["--cell", "nope"], "error: --cell: no cell of the grid has 'nope' in its name"),
        (["--reps", "1000"], "error: --reps: must be from 1 to 100"),
    ):
        res = subprocess.run([sys.executable, "-m", "ccbench", "validate", *argv], capture_output=True, text=True)
        if res.returncode == 2 and "root" in res.stderr:
            pytest.skip("needs root to reach the option checks")
        assert res.returncode == 2 and res.stderr.strip() == res.stderr.strip().splitlines()[0]
        assert res.stderr.startswith(message), res.stderr


def test_a_stopped_grid_resumes_from_its_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ccbench.validate import runner

    calls: list[str] = []

    def fake_run_cell(cell, duration, reps, progress=None, keep=None, kernel=None):
        calls.append(cell.name)
        if len(calls) == 2 and cell is MIX:
            raise KeyboardInterrupt  # stopped part-way, after the first cell was journalled
        return compare(cell, _engine(_run([19e6], [26.0], 3)), _engine(_run([19e6], [26.0], 3)))

    monkeypatch.setattr(runner, "run_cell", fake_run_cell)
    with pytest.raises(KeyboardInterrupt):
        runner.run_grid([ONE, MIX], "5s", 1, tmp_path, progress=lambda _: None)
    assert calls == [ONE.name, MIX.name]
    results = runner.run_grid([ONE, MIX], "5s", 1, tmp_path, progress=lambda _: None)
    assert calls == [ONE.name, MIX.name, MIX.name]  # the first cell was not run again
    assert [r.cell for r in results] == [ONE, MIX] and results[0].verdict == "pass"
    assert len((tmp_path / "cells.jsonl").read_text().splitlines()) == 2
    # Another length or number of repetitions is another experiment: run again.
    runner.run_grid([ONE], "10s", 1, tmp_path, progress=lambda _: None)
    assert calls[-1] == ONE.name


def test_rerun_sim_keeps_the_kernel_runs_and_runs_the_simulator_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ccbench.validate import runner

    seen: list[object] = []

    def fake_run_cell(cell, duration, reps, progress=None, keep=None, kernel=None):
        seen.append(kernel)
        return compare(
            cell, _engine(_run([18e6 if kernel else 19e6], [26.0], 3)), kernel or _engine(_run([19e6], [26.0], 3))
        )

    monkeypatch.setattr(runner, "run_cell", fake_run_cell)
    runner.run_grid([ONE, MIX], "5s", 1, tmp_path, progress=lambda _: None)
    assert seen == [None, None]
    results = runner.run_grid([ONE], "5s", 1, tmp_path, progress=lambda _: None, rerun_sim=True)
    assert seen[-1] is not None and seen[-1].runs[0]["flows"][0]["goodput_bps"] == 19e6
    assert results[0].checks[0].sim == 18e6
    lines = (tmp_path / "cells.jsonl").read_text().splitlines()
    assert len(lines) == 2 and '"goodput_bps": 18000000.0' in lines[0]  # ONE's line updated, MIX's kept


def test_flows_that_are_all_alike_are_compared_by_rank() -> None:
    two = grid.fairness((2,), ("cubic",))[0]
    assert two.exchangeable and not MIX.exchangeable and not ONE.exchangeable
    assert not grid.rtt_unfairness(("cubic",))[0].exchangeable
    res = compare(two, _engine(_run([11e6, 8e6], [35.0, 35.0], 10)), _engine(_run([8.5e6, 10.5e6], [35.0, 35.0], 10)))
    goodput = [c for c in res.checks if c.figure == "goodput"]
    assert [c.sim for c in goodput] == [11e6, 8e6] and [c.kernel.median for c in goodput] == [10.5e6, 8.5e6]
    assert res.verdict == "pass"
