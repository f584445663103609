"""ccbench replicate cao2019: its sweeps, the comparison computed from the runs, the
figures and the report."""

from __future__ import annotations

import csv
import io

import pytest
from rich.console import Console

from ccbench.analysis import goodput_ratio, runs_frame
from ccbench.replicate import cao2019

sweep = pytest.importorskip("ccbench.sweep.plan")
store_api = pytest.importorskip("ccbench.store")

TINY = cao2019.Grid(
    rates=("10Mbit", "20Mbit"),
    rtts=("20ms",),
    buffers=("5KB", "20KB", "200KB"),
    losses=("0%", "5%", "20%", "30%"),
    sharing_buffers=("0.25bdp", "4bdp"),
    duration="4s",
    repetitions=2,
    loss_point=("20Mbit", "20ms", "1bdp"),
    sharing_point=("20Mbit", "20ms"),
)


def test_full_mode_is_the_studys_640_combinations():
    grid = sweep.plan_from_dict(cao2019.plans(cao2019.FULL, "x")["grid"])
    assert grid.point_count == 640 * 2  # each combination for BBR and for Cubic
    assert sorted(grid.swept_keys) == ["flows[0].cca", "link.buffer", "link.rate", "link.rtt"]
    quick = {part: sweep.plan_from_dict(doc) for part, doc in cao2019.plans(cao2019.QUICK, "y").items()}
    assert sum(p.run_count for p in quick.values()) < 600


@pytest.fixture(scope="module")
def replication(tmp_path_factory):
    root = tmp_path_factory.mktemp("cao")
    store = store_api.open_store(root / "store")
    console = Console(file=io.StringIO(), width=200)
    cao2019.run(True, root / "out", 2, store, console, grid=TINY)
    return root, store, console.file.getvalue()


def test_comparison_rows_come_from_the_runs(replication):
    root, store, printed = replication
    rows = list(csv.DictReader((root / "out" / "comparison.csv").open()))
    points = [r["point"] for r in rows]
    assert points[0].startswith("BBR's goodput advantage with shallow buffers")
    assert "Decision tree: BBR or Cubic for goodput" in points and len(rows) == 8
    assert all(r["study"] and r["ccbench"] for r in rows)
    grid = runs_frame(store.records("cao2019-quick-grid"))
    assert len(grid) == 2 * 3 * 2 * 2  # rates x buffers x algorithms x repetitions
    ratio = goodput_ratio(grid)
    shallow = ratio[ratio["buffer_bdp"] <= cao2019.SHALLOW]["ratio"]
    assert f"BBR/Cubic goodput up to {shallow.max():.2f}x" in rows[0]["ccbench"]
    assert "the study's findings and ccbench's" in printed and "Linux 4.15" in printed
    md = (root / "out" / "comparison.md").read_text()
    assert md.startswith("| point / finding | study | ccbench | note |")


def test_figures_and_report_are_written(replication):
    root, _, _ = replication
    out = root / "out"
    for stem in ("gpr_heatmap", "retransmissions", "loss_goodput", "loss_retransmissions", "sharing", "tree_goodput"):
        assert (out / f"{stem}.png").stat().st_size > 1000, stem
        assert (out / f"{stem}.svg").exists()
    html = (out / "index.html").read_text()
    assert html.count("data:image/svg+xml;base64,") == 6
    assert "Linux 4.15" in html and "Findings" in html
    assert (out / "grid" / "index.html").exists()


def test_a_second_run_reuses_the_stored_runs(replication):
    root, store, _ = replication
    before = {s: len(store.records(s)) for s in store.sweeps()}
    assert set(before) == {"cao2019-quick-grid", "cao2019-quick-loss", "cao2019-quick-sharing"}
    console = Console(file=io.StringIO(), width=200)
    cao2019.run(True, root / "again", 2, store, console, grid=TINY)
    assert {s: len(store.records(s)) for s in store.sweeps()} == before
    assert (root / "again" / "comparison.csv").read_text() == (root / "out" / "comparison.csv").read_text()
