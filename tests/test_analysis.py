"""Tidy tables from run records, and means with Student-t intervals."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

import ccbench
from ccbench.analysis import (
    aggregate,
    algorithm_table,
    cca_mix,
    cpu_share,
    dimensions,
    flows_frame,
    goodput_ratio,
    mean_ci,
    record_from_result,
    runs_frame,
)


def _record(cca: str, buffer: str, seed: int = 1, loss: str = "0", flows: int = 1, sweep: str = "t"):
    sc = ccbench.Scenario.from_flags(
        cca=cca, rate="20Mbit", rtt="20ms", buffer=buffer, loss=loss, duration="2s", seed=seed, flows=flows
    )
    point = {"link.buffer": buffer, "flows[0].cca": cca}
    return record_from_result(ccbench.run(sc), point=point, repetition=seed - 1, sweep=sweep)


@pytest.fixture(scope="module")
def records():
    recs = [
        _record(cca, buf, seed, loss="0.5%")
        for cca in ("bbr", "cubic")
        for buf in ("0.25bdp", "4bdp")
        for seed in (1, 2, 3)
    ]
    recs.append(_record("bbr,cubic", "1bdp", loss="0.5%"))
    return recs


def test_one_row_per_run_with_conditions_in_units(records):
    runs = runs_frame(records)
    assert len(runs) == len(records)
    row = runs[(runs["cca"] == "bbr") & (runs["link.buffer"] == "0.25bdp")].iloc[0]
    assert row["rate_mbps"] == 20.0 and row["rtt_ms"] == 20.0
    assert row["buffer_bdp"] == pytest.approx(0.25)
    assert row["buffer_kb"] == pytest.approx(12.5)  # 20 Mbit/s x 20 ms = 50 KB
    assert row["loss_pct"] == pytest.approx(0.5)
    assert row["flows"] == 1 and row["cca_mix"] == "bbr"
    assert math.isnan(row["cpu_share"])
    flow = records[0].summary["flows"][0]
    assert row["goodput_mbps"] == pytest.approx(flow["goodput_bps"] / 1e6)
    assert row["retrans_rate"] == pytest.approx(flow["retransmits"] / (flow["sent_bytes"] / 1448))
    assert 0 < row["utilization"] <= 1


def test_mixed_run_is_labelled_and_flows_carry_shares(records):
    runs = runs_frame(records)
    mixed = runs[runs["cca"] == "mixed"].iloc[0]
    assert mixed["cca_mix"] == "bbr+cubic" and mixed["flows"] == 2
    flows = flows_frame(records)
    shares = flows[flows["run_id"] == mixed["run_id"]]
    assert sorted(shares["flow_cca"]) == ["bbr", "cubic"]
    assert shares["share"].sum() == pytest.approx(1.0)
    assert len(flows) == sum(len(r.summary["flows"]) for r in records)


def test_dimensions_are_what_the_sweep_varied(records):
    runs = runs_frame(records)
    assert dimensions(runs[runs["cca"] != "mixed"]) == ["buffer_bdp"]
    assert dimensions(runs) == ["buffer_bdp", "flows"]


def test_mean_ci_is_student_t():
    x = [10.0, 12.0, 11.0, 15.0]
    mean, half = mean_ci(x)
    sd = pd.Series(x).std(ddof=1)
    assert mean == pytest.approx(12.0)
    assert half == pytest.approx(stats.t.ppf(0.975, 3) * sd / 2)
    assert math.isnan(mean_ci([3.0])[1])
    assert mean_ci([2.0, 2.0]) == (2.0, 0.0)
    assert all(math.isnan(v) for v in mean_ci([]))


def test_aggregate_over_repetitions(records):
    runs = runs_frame(records)
    table = algorithm_table(runs, ["goodput_mbps", "retransmits"])
    bbr = table[(table["cca"] == "bbr") & (table["buffer_bdp"] == 0.25)].iloc[0]
    assert bbr["n"] == 3
    sel = runs[(runs["cca"] == "bbr") & (runs["buffer_bdp"] == 0.25)]["goodput_mbps"]
    assert bbr["goodput_mbps_mean"] == pytest.approx(sel.mean())
    assert bbr["goodput_mbps_lo"] <= bbr["goodput_mbps_mean"] <= bbr["goodput_mbps_hi"]
    # Groups with a missing key (no CPU share) are kept.
    assert len(aggregate(runs, ["cpu_share", "cca"], ["goodput_mbps"])) == 3


def test_goodput_ratio_per_point(records):
    ratio = goodput_ratio(runs_frame(records))
    assert sorted(ratio["buffer_bdp"]) == [0.25, 4.0]
    row = ratio.iloc[0]
    assert row["ratio"] == pytest.approx(row["bbr"] / row["cubic"])


def test_cpu_share_is_read_when_present_and_tolerated_when_absent():
    assert math.isnan(cpu_share({"link": {}}))
    assert cpu_share({"host": {"cpu_share": 0.25}}) == 0.25
    assert cpu_share({"cpu": {"share": "50%"}}) == 0.5
    assert cpu_share({"cpu": "10%"}) == pytest.approx(0.1)


def test_cca_mix_names():
    assert cca_mix(["cubic"] * 4) == "cubic×4"
    assert cca_mix(["cubic", "bbr", "bbr"]) == "bbr×2+cubic"
