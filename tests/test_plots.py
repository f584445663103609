"""Figures of a run: `ccbench plot`, `ccbench run --out DIR --plot`, and the state timeline."""

from __future__ import annotations

import contextlib
import io
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import ccbench
from ccbench.cli import cli, main
from ccbench.plots import flow_figure, load_run, plot_run
from ccbench.plots.states import BBR2_PHASES, BBR_MODES, CA_STATES, Segment, segments, state_timeline

from conftest import run_cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURES = ("flow0.png", "flow0.svg", "link.png", "link.svg")


def simulate(
    directory: Path, cca: str, duration: str = "3s", rate: str = "50Mbit", interval: str = "10ms", **extra: object
) -> Path:
    scenario = {
        "seed": 1,
        "duration": duration,
        "interval": interval,
        "link": {"rate": rate, "rtt": "40ms", "buffer": "1bdp", **extra.pop("link", {})},  # type: ignore[dict-item]
        "flows": extra.pop("flows", [{"cca": cca}]),
    }
    ccbench.run(scenario).save(directory)
    return directory


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Short runs of the three families of algorithms, simulated once for the module."""
    base = tmp_path_factory.mktemp("runs")
    return {cca: simulate(base / cca, cca) for cca in ("cubic", "bbr", "bbr3")}


@pytest.fixture(scope="module")
def bbr3_long(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bbr3 for 30 s at 100 Mbit/s: long enough for two PROBE_RTTs."""
    return simulate(tmp_path_factory.mktemp("bbr3_long"), "bbr3", duration="30s", rate="100Mbit", interval="100ms")


def call(*args: str) -> tuple[int, str, str]:
    """``ccbench ARGS`` in-process through the console entry point: (status, out, err)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as e:
            status = int(e.code or 0)
    return status, out.getvalue(), err.getvalue()


def check_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC), path
    assert len(data) > 10_000, path
    assert b"Software" not in data  # no software version in the metadata


def check_svg(path: Path) -> ET.Element:
    text = path.read_text(encoding="utf-8")
    root = ET.fromstring(text)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "<dc:date>" not in text  # no timestamp
    assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 100
    return root


@pytest.mark.parametrize("cca", ["cubic", "bbr", "bbr3"])
def test_plot_command_writes_png_and_svg(cca: str, runs: dict[str, Path]) -> None:
    run_dir = runs[cca]
    status, out, err = call("plot", str(run_dir))
    assert status == 0, err
    plots = run_dir / "plots"
    assert sorted(p.name for p in plots.iterdir()) == sorted(FIGURES)
    for name in FIGURES:
        path = plots / name
        check_png(path) if name.endswith(".png") else check_svg(path)
    assert out.strip() == f"wrote {plots}: {', '.join(FIGURES)}"


def test_plot_out_and_format(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "figs"
    status, _, err = call("plot", str(runs["bbr"]), "--out", str(out), "--format", "svg")
    assert status == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["flow0.svg", "link.svg"]
    check_svg(out / "flow0.svg")


def test_output_is_deterministic(runs: dict[str, Path], tmp_path: Path) -> None:
    first = plot_run(runs["bbr3"], out=tmp_path / "a")
    second = plot_run(runs["bbr3"], out=tmp_path / "b")
    assert [p.name for p in first] == [p.name for p in second] == list(FIGURES)
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name


def visited(run_dir: Path, column: str, names: tuple[str, ...], only_probe_bw: bool = False) -> set[str]:
    f = load_run(run_dir).flow_frame(0)
    if only_probe_bw:
        f = f[f["cc_mode"] == 2]
    return {names[int(v)] for v in f[column].dropna().unique()}


def test_bbr3_timeline_shows_every_mode(bbr3_long: Path) -> None:
    run = load_run(bbr3_long)
    fig, rows = flow_figure(run, 0)
    by_name = {r.name: r for r in rows}
    assert list(by_name) == ["mode", "phase", "ca_state"]
    assert by_name["mode"].labels == {"STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"}
    # Drawn from the logged moves: every sampled state, and those between samples too.
    assert visited(bbr3_long, "cc_mode", BBR_MODES) <= by_name["mode"].labels
    assert visited(bbr3_long, "cc_phase", BBR2_PHASES, only_probe_bw=True) <= by_name["phase"].labels
    assert {"UP", "DOWN", "CRUISE"} <= by_name["phase"].labels
    assert by_name["ca_state"].labels == visited(bbr3_long, "ca_state", CA_STATES)
    # The mode row tiles the whole run, in order, and PROBE_RTT recurs (about every 5 s).
    mode = by_name["mode"].segments
    assert mode[0].start == 0.0 and mode[0].label == "STARTUP"
    assert mode[-1].end == pytest.approx(run.flows["time_s"].max())  # the last sample
    assert mode[-1].end >= 29.8
    assert all(a.end == b.start and a.label != b.label for a, b in zip(mode, mode[1:]))
    assert sum(s.label == "PROBE_RTT" for s in mode) >= 4
    # Every band drawn is one of these segments: one bar collection per (row, label).
    timeline = fig.axes[4]
    drawn = sum(len(c.get_paths()) for c in timeline.collections)
    assert drawn == sum(len(r.segments) for r in rows)


def test_bbr_v1_timeline_shows_the_gain_cycle(runs: dict[str, Path]) -> None:
    _, rows = flow_figure(load_run(runs["bbr"]), 0)
    by_name = {r.name: r for r in rows}
    assert list(by_name)[:2] == ["mode", "gain"]
    assert {"STARTUP", "PROBE_BW"} <= by_name["mode"].labels
    assert by_name["mode"].labels == visited(runs["bbr"], "cc_mode", BBR_MODES)
    assert {"gain 1.25", "gain 0.75", "gain 1"} == by_name["gain"].labels


def test_cubic_timeline_shows_ca_state(runs: dict[str, Path]) -> None:
    _, rows = flow_figure(load_run(runs["cubic"]), 0)
    assert [r.name for r in rows] == ["ca_state"]
    assert rows[0].labels == visited(runs["cubic"], "ca_state", CA_STATES)
    assert {"Open", "Recovery"} <= rows[0].labels  # slow start overflows a 1 BDP buffer


@pytest.mark.parametrize(("cca", "title", "series"), [("vegas", "Vegas", "diff"), ("dctcp", "DCTCP", "α")])
def test_an_algorithm_with_a_state_of_its_own_gets_its_panel(cca: str, title: str, series: str, tmp_path: Path) -> None:
    run = load_run(simulate(tmp_path / cca, "", duration="3s", flows=[{"cca": cca}]))
    fig, _ = flow_figure(run, 0)
    titles = [ax.get_title() for ax in fig.axes]
    panel = next(ax for ax in fig.axes if ax.get_title().startswith("(e) "))
    assert title in panel.get_title() and any(series in line.get_label() for line in panel.get_lines())
    assert titles[-1].startswith("(f) ") and len(fig.axes) == 6
    # Cubic has none: five panels, the timeline (e).
    cubic, _ = flow_figure(load_run(simulate(tmp_path / "cubic", "", duration="1s", flows=[{"cca": "cubic"}])), 0)
    assert len(cubic.axes) == 5 and cubic.axes[-1].get_title().startswith("(e) ")


def test_segments_merge_and_cover_each_interval() -> None:
    times = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    got = segments(times, ["A", "A", None, "B", "B"], 0.1)
    assert got == (Segment(0.0, 0.2, "A"), Segment(0.3, 0.5, "B"))
    assert state_timeline(pd.DataFrame({"time_s": [], "flow": []}), "cubic", 0.1) == []


def test_late_and_sized_flows_are_masked(tmp_path: Path) -> None:
    run_dir = simulate(
        tmp_path / "run",
        "",
        duration="4s",
        flows=[
            {"cca": "bbr3"},
            {"cca": "cubic", "start": "1s", "size": "1MB"},
        ],
    )
    run = load_run(run_dir)
    f = run.flow_frame(1)
    info = run.summary["flows"][1]
    assert info["completion_s"] is not None
    end = 1.0 + info["completion_s"]
    assert f.loc[f["time_s"] <= 1.0, "cwnd"].isna().all()
    assert f.loc[f["time_s"] >= end + 0.011, "cwnd"].isna().all()
    assert f.loc[(f["time_s"] > 1.0) & (f["time_s"] < end), "cwnd"].notna().all()
    _, rows = flow_figure(run, 1)
    assert rows[0].segments[0].start == pytest.approx(1.0)
    paths = plot_run(run_dir, flows=None, formats="png")
    assert [p.name for p in paths] == ["flow0.png", "flow1.png", "link.png"]


def test_run_with_plot_flag(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("run", "--cca", "bbr2,reno", "--duration", "2s", "--rate", "20Mbit", "--out", str(out), "--plot")
    assert result.returncode == 0, result.stderr
    plots = out / "plots"
    names = ["flow0.png", "flow0.svg", "flow1.png", "flow1.svg", "link.png", "link.svg"]
    assert sorted(p.name for p in plots.iterdir()) == names
    assert f"wrote {plots}: {', '.join(names)}" in result.stdout
    check_png(plots / "flow1.png")
    check_svg(plots / "flow1.svg")


# -- bad input: one line on stderr, status 2, nothing written --------------------------


def assert_one_line(status: int, out: str, err: str, start: str, *words: str) -> str:
    assert status == 2, (status, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(start), lines[0]
    for w in words:
        assert w in lines[0], lines[0]
    assert "Traceback" not in err
    return lines[0]


def test_missing_run_dir(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert_one_line(*call("plot", str(missing)), "error: RUN_DIR: ", "no such directory", str(missing))
    assert not missing.exists()


def test_dir_without_parquet(runs: dict[str, Path], tmp_path: Path) -> None:
    d = tmp_path / "partial"
    d.mkdir()
    (d / "summary.json").write_bytes((runs["cubic"] / "summary.json").read_bytes())
    assert_one_line(*call("plot", str(d)), "error: RUN_DIR: ", "flows.parquet", "link.parquet")
    assert sorted(p.name for p in d.iterdir()) == ["summary.json"]


def test_damaged_parquet(runs: dict[str, Path], tmp_path: Path) -> None:
    d = tmp_path / "damaged"
    d.mkdir()
    for name in ("summary.json", "link.parquet"):
        (d / name).write_bytes((runs["cubic"] / name).read_bytes())
    (d / "flows.parquet").write_bytes(b"not parquet")
    assert_one_line(*call("plot", str(d)), "error: flows.parquet: ", "cannot read")
    assert not (d / "plots").exists()


@pytest.mark.parametrize("flow", ["1", "-1", "7"])
def test_flow_out_of_range(flow: str, runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "figs"
    line = assert_one_line(
        *call("plot", str(runs["bbr"]), "--flow", flow, "--out", str(out)),
        "error: --flow: ",
        f"flow {flow} out of range",
        "1 flow: 0",
    )
    assert line.endswith("0")
    assert not out.exists()


def test_flow_out_of_range_names_the_range(tmp_path: Path) -> None:
    run_dir = simulate(tmp_path / "two", "", duration="1s", flows=[{"cca": "cubic", "count": 3}])
    assert_one_line(*call("plot", str(run_dir), "--flow", "3"), "error: --flow: ", "3 flows: 0..2")


@pytest.mark.parametrize(
    "args, start, words",
    [
        (["--format", "gif"], "error: --format: ", ["unknown format 'gif'", "allowed: png, svg"]),
        (["--format", ","], "error: --format: ", ["no format"]),
        (["--flow", "x"], "error: --flow: ", ["not a valid integer"]),
    ],
)
def test_bad_options(args: list[str], start: str, words: list[str], runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "figs"
    assert_one_line(*call("plot", str(runs["cubic"]), "--out", str(out), *args), start, *words)
    assert not out.exists()


def test_missing_argument() -> None:
    assert_one_line(*call("plot"), "error: RUN_DIR: ", "missing")


def test_run_plot_needs_out(tmp_path: Path) -> None:
    assert_one_line(*call("run", "--duration", "1s", "--plot"), "error: --plot: ", "--out")


def test_plot_is_listed() -> None:
    result = CliRunner().invoke(cli, ["plot", "--help"])
    assert result.exit_code == 0
    assert "RUN_DIR" in result.output and "--flow" in result.output and "--format" in result.output
