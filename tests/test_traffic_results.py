"""UDP flows and arrivals from a run to what is made of it: the two examples' figures
within tolerances, the connections table saved and read back, the terminal and HTML
reports, plots, the store's listing and export, the analysis's tables, and advise and
recommend ranking by p99 slowdown (docs/traffic.md)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import ccbench
from ccbench import report, traffic
from ccbench.analysis import arrivals_frame, record_from_result, runs_frame
from ccbench.errors import ScenarioError
from conftest import SCENARIOS, run_cli


def bucket(group: dict, name: str) -> dict:
    return next(b for b in group["buckets"] if b["bucket"] == name)


@pytest.fixture(scope="module")
def video() -> ccbench.Result:
    return ccbench.run(SCENARIOS / "udp-video-beside-tcp.toml")


@pytest.fixture(scope="module")
def web() -> ccbench.Result:
    return ccbench.run(SCENARIOS / "web-search-fct.toml")


def test_the_video_example_loses_a_little_and_waits_in_the_tcp_flows_queue(video: ccbench.Result) -> None:
    (u,) = video.summary["udp"]
    assert u["offered_bps"] == pytest.approx(5e6, rel=0.01)
    assert 0.003 < u["loss"] < 0.03, u["loss"]
    assert u["delivered_bps"] == pytest.approx(u["offered_bps"] * (1 - u["loss"]), rel=0.01)
    # 20 ms one way, and most of a 1 BDP queue (40 ms) on top.
    assert 45 < u["one_way_delay_ms"]["p50"] < 60
    assert u["one_way_delay_ms"]["min"] >= 20
    bbr, cubic = video.summary["flows"]
    assert bbr["goodput_bps"] > 5 * cubic["goodput_bps"]
    assert 13.5e6 < bbr["goodput_bps"] + cubic["goodput_bps"] + u["delivered_bps"] * 1472 / 1500 < 20e6


def test_fq_codel_gives_the_video_a_queue_of_its_own(video: ccbench.Result) -> None:
    fq = ccbench.run(ccbench.Scenario.from_flags(base=video.scenario, aqm="fq_codel"))
    (u,) = fq.summary["udp"]
    assert u["loss"] < 0.001 and u["one_way_delay_ms"]["p50"] < 25
    bbr, cubic = fq.summary["flows"]
    assert bbr["goodput_bps"] == pytest.approx(cubic["goodput_bps"], rel=0.2)


def test_the_web_search_example_slows_cubics_large_transfers_beside_bbrs(web: ccbench.Result) -> None:
    cubic, bbr = web.summary["arrivals"]
    assert (cubic["cca"], bbr["cca"]) == ("cubic", "bbr")
    for g in (cubic, bbr):
        # 25% of 100 Mbit/s in transfers of 1.67 MB on average: 1.87 a second, 225 in 120 s.
        assert 160 < g["arrived"] < 290 and g["completed"] + g["unfinished"] == g["arrived"]
        assert 0.15 < g["offered_load"] < 0.4
        assert bucket(g, "<100KB")["slowdown_p50"] < 1.1  # short transfers mostly meet nobody
        assert g["all"]["slowdown_p99"] >= g["all"]["slowdown_p50"] >= 1.0
    assert bucket(cubic, "1MB-10MB")["slowdown_p50"] > 2 * bucket(bbr, "1MB-10MB")["slowdown_p50"]


def test_the_connections_table_gives_the_summarys_percentiles(web: ccbench.Result) -> None:
    conns = web.connections
    assert list(conns.columns) == ["group", "arrival_s", "size_bytes", "fct_ms", "ideal_fct_ms", "retransmits"]
    assert len(conns) == sum(g["arrived"] for g in web.summary["arrivals"])
    assert conns["arrival_s"].is_monotonic_increasing
    for g in web.summary["arrivals"]:
        mine = conns[(conns["group"] == g["id"]) & conns["fct_ms"].notna()]
        slowdown = (mine["fct_ms"] / mine["ideal_fct_ms"]).to_numpy()
        assert len(mine) == g["completed"]
        assert np.percentile(slowdown, 99, method="inverted_cdf") == pytest.approx(g["all"]["slowdown_p99"])
        assert np.percentile(mine["fct_ms"], 50, method="inverted_cdf") == pytest.approx(g["all"]["fct_p50_ms"])
        # With company a transfer is hardly ever faster than alone: at most by a fraction of
        # a percent, when its own slow-start losses fall otherwise.
        assert (slowdown > 0.99).all() and np.median(slowdown) > 1
        sizes = mine["size_bytes"].to_numpy()
        small = mine[sizes <= 100_000]
        assert traffic.bucket_of(float(small["size_bytes"].max())) == "<100KB"


def test_the_same_seed_carries_the_same_transfers_for_any_algorithm(web: ccbench.Result) -> None:
    cubic = ccbench.run(ccbench.Scenario.from_flags(base=web.scenario, arrivals="cubic", arrival_load="50%"))
    bbr = ccbench.run(ccbench.Scenario.from_flags(base=web.scenario, arrivals="bbr", arrival_load="50%"))
    for column in ("arrival_s", "size_bytes"):
        assert cubic.connections[column].equals(bbr.connections[column])


def test_a_run_directory_keeps_the_connections_and_draws_them(web: ccbench.Result, tmp_path: Path) -> None:
    from ccbench.plots import load_run, plot_run

    written = [p.name for p in web.save(tmp_path / "run")]
    assert "connections.parquet" in written
    run = load_run(tmp_path / "run")
    assert run.connections is not None and run.connections.equals(web.connections)
    paths = plot_run(run, formats="png")
    # Arrivals alone: no TCP flow to draw, the link, and the arrivals' figure.
    assert sorted(p.name for p in paths) == ["arrivals.png", "link.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)


def test_runs_without_arrivals_write_no_connections(video: ccbench.Result, tmp_path: Path) -> None:
    written = [p.name for p in video.save(tmp_path / "run")]
    assert "connections.parquet" not in written and video.connections.empty


def test_the_terminal_shows_udp_flows_and_arrivals(video: ccbench.Result, web: ccbench.Result) -> None:
    console = Console(width=200, record=True)
    report.render(video.summary, console)
    report.render(web.summary, console)
    text = console.export_text()
    assert "UDP flows" in text and "Arrivals" in text
    udp_row = next(line for line in text.splitlines() if line.strip().startswith("0    5.00"))
    assert "%" in udp_row
    assert "1MB-10MB" in text and "198/201" in text
    # A run of arrivals alone has no empty flows table.
    assert text.count("Flows") == 1


def test_the_html_report_has_the_traffic_section(video: ccbench.Result, web: ccbench.Result, tmp_path: Path) -> None:
    from ccbench.report_html import run_report

    for name, result in (("video", video), ("web", web)):
        result.save(tmp_path / name)
        page = run_report(tmp_path / name, formats="png").read_text()
        if name == "video":
            assert "<h2>UDP flows</h2>" in page and "one-way delay min ms" in page
        else:
            assert "<h2>Arrivals</h2>" in page and "Slowdown against size, CDF of FCT" in page
            assert "arrivals.png" in page and "<h3>Flows</h3>" not in page


def test_the_store_lists_and_exports_them(video: ccbench.Result, web: ccbench.Result, tmp_path: Path) -> None:
    from ccbench.store import open_store
    from ccbench.store.query import flow_rows

    store = open_store(tmp_path / "store")
    records = [record_from_result(r, {}, 0, "traffic") for r in (video, web)]
    from test_store import record_for

    for result in (video, web):
        store.add(record_for(result, sweep="traffic"), result)
    listed = run_cli("results", "--store", str(tmp_path / "store"))
    assert listed.returncode == 0, listed.stderr
    assert "UDP loss %" in listed.stdout and "slowdown p99" in listed.stdout
    assert "cubic (arrivals),bbr (arrivals)" in listed.stdout
    rows = flow_rows(store.records("traffic"))
    kinds = rows.groupby("kind").size().to_dict()
    assert kinds == {"arrivals": 2, "tcp": 2, "udp": 1}
    udp = rows[rows["kind"] == "udp"].iloc[0]
    assert udp["offered_bps"] == pytest.approx(5e6, rel=0.01)
    groups = rows[rows["kind"] == "arrivals"]
    assert list(groups["cca"]) == ["cubic", "bbr"] and groups["slowdown_p99"].notna().all()
    exported = run_cli("results", "--store", str(tmp_path / "store"), "--csv", "-", "--cca", "bbr")
    assert len(list(csv.DictReader(io.StringIO(exported.stdout)))) == 2 + 3  # both runs have a BBR
    stored = json.loads((Path(store.records("traffic")[0].series_dir) / "summary.json").read_text())
    assert "udp" in stored or "arrivals" in stored
    assert records[1].summary["arrivals"] == web.summary["arrivals"]


def test_the_analysis_keeps_the_arrivals_figures(web: ccbench.Result) -> None:
    runs = runs_frame([record_from_result(web)])
    row = runs.iloc[0]
    worst = max(g["all"]["slowdown_p99"] for g in web.summary["arrivals"])
    assert row["slowdown_p99"] == worst and row["arrival_load_pct"] == 50.0
    assert row["cca_mix"] == "bbr+cubic" and np.isnan(row["goodput_mbps"])
    frame = arrivals_frame([record_from_result(web)])
    assert set(frame["bucket"]) == {"all", *traffic.BUCKETS}
    assert list(frame[frame["bucket"] == "all"]["group_cca"]) == ["cubic", "bbr"]


@pytest.fixture(scope="module")
def fct_records() -> list:
    """Arrivals of each algorithm at two loads and two buffers, on one seed."""
    recs = []
    for load in ("20%", "60%"):
        for buffer in ("0.5bdp", "2bdp"):
            for cca in ("cubic", "bbr"):
                sc = ccbench.Scenario.from_flags(
                    arrivals=cca, arrival_load=load, rate="50Mbit", rtt="20ms", buffer=buffer, duration="20s"
                )
                point = {"arrivals[0].cca": cca, "arrivals[0].load": load, "link.buffer": buffer}
                recs.append(record_from_result(ccbench.run(sc), point, 0, "fct"))
    return recs


def test_advise_ranks_by_p99_slowdown(fct_records: list) -> None:
    from ccbench.advise.command import advise
    from ccbench.advise.winners import winners

    runs = runs_frame(fct_records)
    points = winners(runs, "slowdown")
    assert len(points) == 4 and set(points["winner"]) <= {"cubic", "bbr"}
    for _, p in points.iterrows():
        assert p[f"value_{p['winner']}"] == min(p["value_cubic"], p["value_bbr"])
    # Arrivals alone have no goodput: only the slowdown tree.
    (result,) = advise(fct_records, "slowdown")
    assert result.objective == "slowdown" and set(result.features) <= {"buffer_bdp", "arrival_load_pct"}
    with pytest.raises(ScenarioError, match="these runs have no arrivals"):
        winners(runs_frame([record_from_result(ccbench.run(ccbench.Scenario.from_flags(duration="1s")))]), "slowdown")


def test_recommend_by_slowdown_runs_the_candidates_as_arrivals() -> None:
    from ccbench.advise.recommend import recommend

    rec = recommend(
        "50Mbit", "20ms", "1bdp", duration="10s", seeds=1, ccas=["cubic", "bbr"], neighbours=False, objective="slowdown"
    )
    here = rec.at("1bdp")
    assert rec.choice == here["slowdown_p99_mean"].idxmin()
    assert rec.reasons[0].startswith("buffer is 1 BDP: ") and "p99 slowdown" in rec.reasons[0]
    assert rec.point["arrival_load"] == "50%" and rec.point["arrival_sizes"] == "web-search"
    with pytest.raises(ScenarioError, match="only with --objective slowdown"):
        recommend("50Mbit", "20ms", "1bdp", duration="1s", seeds=1, arrivals={"arrival_load": "20%"})
    with pytest.raises(ScenarioError, match="--flows"):
        recommend("50Mbit", "20ms", "1bdp", flows=2, duration="1s", seeds=1, objective="slowdown")


def test_recommend_slowdown_from_the_command_line() -> None:
    result = run_cli(
        "recommend",
        *("--rate", "20Mbit", "--rtt", "20ms", "--buffer", "1bdp", "--duration", "5s", "--seeds", "1"),
        *("--cca", "cubic,bbr", "--no-neighbours", "--objective", "slowdown", "--arrival-load", "30%"),
        *("--arrival-sizes", "100KB"),
    )
    assert result.returncode == 0, result.stderr
    assert "30% load of 100KB sizes" in result.stdout  # the title, wrapped to the table's width
    assert "Recommendation (slowdown): use " in result.stdout
