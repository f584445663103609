"""ccbench advise: winners per point, the decision tree, its rules in words."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import ccbench
from ccbench.advise import Weights, fit_tree, threshold_words, winners
from ccbench.advise.command import advise, describe, draw
from ccbench.analysis import record_from_result, runs_frame
from ccbench.errors import ScenarioError
from ccbench import engines

from conftest import run_cli


def _points() -> pd.DataFrame:
    """BBR wins below 1 BDP, Cubic above, whatever the RTT."""
    rows = [
        {"buffer_bdp": b, "rtt_ms": r, "rate_mbps": 20.0, "winner": "bbr" if b < 1 else "cubic"}
        for b in (0.1, 0.25, 0.5, 2.0, 4.0, 8.0)
        for r in (10.0, 40.0, 80.0)
    ]
    return pd.DataFrame(rows)


def test_tree_finds_the_buffer_split_and_says_it_in_words():
    result = fit_tree(_points(), "goodput")
    assert result.features == ["buffer_bdp", "rtt_ms"]  # the constant rate is left out
    assert result.model.get_depth() == 1 and result.accuracy == 1.0 and result.folds == 5
    assert result.baseline == 0.5
    rules = result.rules()
    assert [(r.conditions, r.winner, r.points, r.agree) for r in rules] == [
        (["buffer ≤ 1.25 BDP"], "bbr", 9, 9),
        (["buffer > 1.25 BDP"], "cubic", 9, 9),
    ]
    text = result.text()
    assert "buffer ≤ 1.25 BDP" in text and "→ cubic (9 of 9 points)" in text
    lines = describe(result)
    assert "cross-validated accuracy 100%" in lines[1]
    assert any(line.strip() == "1. buffer ≤ 1.25 BDP: bbr (9 of 9 points)" for line in lines)


def test_thresholds_read_in_units():
    assert threshold_words("loss_pct", 2.5, True) == "loss > 2.5 %"
    assert threshold_words("rate_mbps", 30.0, False) == "bandwidth ≤ 30 Mbit/s"
    assert threshold_words("flows", 2.5, True) == "flows ≥ 3"
    assert threshold_words("flows", 2.5, False) == "flows ≤ 2"
    assert threshold_words("cpu_share", 0.375, False) == "CPU share ≤ 37.5 %"


def test_one_winner_everywhere_is_a_single_leaf():
    points = _points().assign(winner="bbr")
    result = fit_tree(points, "goodput")
    assert result.model.get_n_leaves() == 1 and result.accuracy == 1.0
    assert "one algorithm wins at every point" in describe(result)[1]


def test_weights_parse_and_reject():
    assert Weights.parse("goodput=2, delay=0.5") == Weights(2.0, 0.5, 1.0)
    with pytest.raises(ScenarioError, match="unknown term 'speed'"):
        Weights.parse("speed=1")
    with pytest.raises(ScenarioError, match="non-negative"):
        Weights.parse("delay=-1")
    with pytest.raises(ScenarioError, match="at least one weight"):
        Weights.parse("goodput=0,delay=0,retrans=0")


@pytest.fixture(scope="module")
def records():
    recs = []
    for rtt in ("10ms", "40ms"):
        for buffer in ("0.1bdp", "0.25bdp", "4bdp", "8bdp"):
            for cca in ("bbr", "cubic"):
                sc = ccbench.Scenario.from_flags(cca=cca, rate="20Mbit", rtt=rtt, buffer=buffer, duration="3s")
                point = {"link.rtt": rtt, "link.buffer": buffer, "flows[0].cca": cca}
                recs.append(record_from_result(ccbench.run(sc), point, 0, "adv"))
    return recs


def test_objectives_pick_different_winners_on_real_runs(records, tmp_path: Path):
    runs = runs_frame(records)
    by_goodput = winners(runs, "goodput").set_index(["rtt_ms", "buffer_bdp"])["winner"]
    by_delay = winners(runs, "delay").set_index(["rtt_ms", "buffer_bdp"])["winner"]
    assert len(by_goodput) == 8
    # In a deep buffer Cubic fills the queue: BBR keeps the RTT lower.
    assert (by_delay.xs(8.0, level="buffer_bdp") == "bbr").all()
    results = advise(records, "score", Weights(1, 1, 1))
    assert [r.objective for r in results] == ["goodput", "score"]
    paths = draw(results, tmp_path)
    assert sorted(p.name for p in paths) == ["tree_goodput.png", "tree_goodput.svg", "tree_score.png", "tree_score.svg"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_advise_command_on_a_stored_sweep(records, tmp_path: Path):
    store_api = pytest.importorskip("ccbench.store")
    store = store_api.open_store(tmp_path / "store")
    version = engines.get("sim").code_version()
    for r in records:
        run_id = store_api.run_id_for(r.scenario_hash, r.seed, r.engine, version)
        store.add(
            store_api.RunRecord(
                run_id=run_id,
                scenario_hash=r.scenario_hash,
                seed=r.seed,
                engine=r.engine,
                code_version=version,
                sweep="adv",
                point=r.point,
                repetition=r.repetition,
                scenario=r.scenario,
                summary=r.summary,
                series_dir=None,
            ),
            None,
        )
    done = run_cli(
        "advise",
        "--sweep",
        "adv",
        "--store",
        str(tmp_path / "store"),
        "--objective",
        "delay",
        "--out",
        str(tmp_path / "trees"),
    )
    assert done.returncode == 0, done.stderr
    assert "Which algorithm has the highest goodput: 8 points" in done.stdout
    assert "Which algorithm has the lowest mean RTT" in done.stdout
    assert "cross-validated accuracy" in done.stdout and "In words:" in done.stdout
    assert (tmp_path / "trees" / "tree_delay.svg").exists()
    bad = run_cli(
        "advise", "--sweep", "adv", "--store", str(tmp_path / "store"), "--weights", "x=1", "--objective", "score"
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: --weights: unknown term 'x'")
