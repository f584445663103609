"""Whole runs through the simulator core, from the CLI and from Python."""

from __future__ import annotations

import json
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

import ccbench
from ccbench import Scenario
from ccbench.scenario import read_toml

from conftest import SCENARIOS, SHORT_TOML, run_cli

# The keys documented in docs/output.md, "Summary schema".
TOP_KEYS = {
    "engine",
    "version",
    "seed",
    "duration_s",
    "header_bytes",
    "flows",
    "link",
    "jain_index",
    "events",
    "scenario_hash",
}
FLOW_KEYS = {
    "id",
    "cca",
    "paced",
    "start_s",
    "base_rtt_ms",
    "goodput_bps",
    "throughput_bps",
    "delivered_bytes",
    "sent_bytes",
    "retransmits",
    "lost",
    "dropped",
    "rto_count",
    "rtt_ms",
    "self_inflicted_delay_ms",
    "size_bytes",
    "completion_s",
    "final_cwnd",
}
LINK_KEYS = {
    "rate_bps",
    "rtt_ms",
    "buffer_bytes",
    "buffer_packets",
    "bdp_bytes",
    "utilization",
    "drops",
    "drops_overflow",
    "drops_random",
    "queue_delay_ms",
    "queue_bytes",
    "queue_packets",
    "packets_forwarded",
}
STATS_KEYS = {"min", "mean", "p50", "p95", "p99", "max"}


def check_summary(summary: dict, scenario: Scenario) -> None:
    assert TOP_KEYS <= set(summary), TOP_KEYS - set(summary)
    assert isinstance(summary["engine"], str) and summary["engine"]
    assert summary["version"] == ccbench._core.version()
    assert summary["seed"] == scenario.seed
    assert summary["scenario_hash"] == scenario.scenario_hash
    assert summary["header_bytes"] == 52
    assert len(summary["flows"]) == scenario.flow_count
    for flow in summary["flows"]:
        assert FLOW_KEYS <= set(flow), FLOW_KEYS - set(flow)
        assert STATS_KEYS <= set(flow["rtt_ms"])
    assert LINK_KEYS <= set(summary["link"]), LINK_KEYS - set(summary["link"])
    assert STATS_KEYS <= set(summary["link"]["queue_delay_ms"])
    assert 0.0 <= summary["link"]["utilization"] <= 1.0
    assert 0.0 < summary["jain_index"] <= 1.0


def test_cli_json_has_documented_keys(short_scenario: Path) -> None:
    result = run_cli("run", str(short_scenario), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    check_summary(summary, Scenario.from_file(short_scenario))
    assert [f["cca"] for f in summary["flows"]] == ["cubic", "cubic"]
    assert all(f["goodput_bps"] > 0 for f in summary["flows"])


def test_cli_out_writes_four_files(short_scenario: Path, tmp_path: Path) -> None:
    out = tmp_path / "results" / "run1"
    result = run_cli("run", str(short_scenario), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["flows.parquet", "link.parquet", "scenario.toml", "summary.json"]
    assert "flows.parquet columns:" in result.stdout

    summary = json.loads((out / "summary.json").read_text())
    scenario = Scenario.from_file(out / "scenario.toml")
    assert scenario == Scenario.from_file(short_scenario)
    check_summary(summary, scenario)

    flows = pd.read_parquet(out / "flows.parquet")
    link = pd.read_parquet(out / "link.parquet")
    assert len(flows) > 0 and len(link) > 0
    assert len(flows.columns) > 0 and len(link.columns) > 0


def test_json_output_matches_summary_file(short_scenario: Path, tmp_path: Path) -> None:
    result = run_cli("run", str(short_scenario), "--json", "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == (tmp_path / "o" / "summary.json").read_text()


def test_table_output(short_scenario: Path) -> None:
    result = run_cli("run", str(short_scenario))
    assert result.returncode == 0, result.stderr
    for word in ("cubic", "goodput", "Jain", "utilisation"):
        assert word in result.stdout


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    args = [
        "run",
        "--rate",
        "10Mbit",
        "--rtt",
        "20ms",
        "--loss",
        "1%",
        "--duration",
        "2s",
        "--seed",
        "5",
        "--flows",
        "2",
    ]
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli(*args, "--out", str(a)).returncode == 0
    assert run_cli(*args, "--out", str(b)).returncode == 0
    assert (a / "summary.json").read_bytes() == (b / "summary.json").read_bytes()
    assert (a / "scenario.toml").read_bytes() == (b / "scenario.toml").read_bytes()


def test_different_seed_with_loss_differs(tmp_path: Path) -> None:
    base = ["run", "--rate", "10Mbit", "--rtt", "20ms", "--loss", "1%", "--duration", "2s"]
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli(*base, "--seed", "1", "--out", str(a)).returncode == 0
    assert run_cli(*base, "--seed", "2", "--out", str(b)).returncode == 0
    sa = json.loads((a / "summary.json").read_text())
    sb = json.loads((b / "summary.json").read_text())
    assert sa["scenario_hash"] != sb["scenario_hash"]
    del sa["seed"], sb["seed"], sa["scenario_hash"], sb["scenario_hash"]
    assert sa != sb


def test_flags_two_algorithms(tmp_path: Path) -> None:
    result = run_cli(
        "run", "--cca", "cubic,reno", "--flows", "2", "--rate", "10Mbit", "--rtt", "20ms", "--duration", "1s", "--json"
    )
    assert result.returncode == 0, result.stderr
    assert [f["cca"] for f in json.loads(result.stdout)["flows"]] == ["cubic", "cubic", "reno", "reno"]


def test_python_api(tmp_path: Path) -> None:
    scenario = Scenario.from_toml(SHORT_TOML)
    result = ccbench.run(scenario)
    check_summary(result.summary, scenario)
    assert isinstance(result.flows, pd.DataFrame) and isinstance(result.link, pd.DataFrame)
    assert result.scenario is scenario

    from_dict = ccbench.run(tomllib.loads(SHORT_TOML))
    path = tmp_path / "s.toml"
    path.write_text(SHORT_TOML)
    from_path = ccbench.run(path)
    assert from_dict.summary == result.summary == from_path.summary

    written = result.save(tmp_path / "saved")
    assert [p.name for p in written] == ["summary.json", "flows.parquet", "link.parquet", "scenario.toml"]
    loaded = pd.read_parquet(tmp_path / "saved" / "flows.parquet")
    pd.testing.assert_frame_equal(loaded, result.flows)


def test_runs_in_threads_agree() -> None:
    scenario = Scenario.from_toml(SHORT_TOML)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: ccbench.run(scenario).summary, range(2)))
    assert results[0] == results[1]


def test_sized_flow_completes() -> None:
    scenario = Scenario.from_flags(rate="10Mbit", rtt="20ms", duration="5s", size="1MB")
    flow = ccbench.run(scenario).summary["flows"][0]
    assert flow["size_bytes"] == 1_000_000
    assert flow["completion_s"] is not None and flow["completion_s"] > 0
    assert flow["delivered_bytes"] >= 1_000_000


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.name)
def test_shipped_scenarios_run_shortened(path: Path) -> None:
    # read_toml resolves trace paths against the scenario file's directory. Long enough
    # for the latest flow to start (a scenario of arrivals alone has none).
    latest_start_s = max((f.start_ns for f in Scenario.from_file(path).flows), default=0) // 10**9
    scenario = Scenario.from_flags(base=read_toml(path), duration=f"{max(2, latest_start_s + 2)}s")
    summary = ccbench.run(scenario).summary
    check_summary(summary, scenario)
