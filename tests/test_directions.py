"""Flows in either direction from the front end: ``[link.reverse]`` and
``flows[].direction`` in the schema, the flags and the effective TOML; their errors;
scenarios/asymmetric-upload.toml against its own claims; and every view of a run (the
terminal and HTML reports, plots, the store's export, sweeps) per direction."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import ccbench
from ccbench import Scenario, ScenarioError
from ccbench.scenario import read_toml

from conftest import ROOT, SCENARIOS, SHORT_TOML, run_cli
from test_cli_errors import assert_one_line_error

EXAMPLE = SCENARIOS / "asymmetric-upload.toml"
UPLOAD = """\
seed = 3
duration = "3s"

[link]
rate = "20Mbit"
rtt = "40ms"

[link.reverse]
rate = "5Mbit"
{reverse}

[[flows]]
cca = "cubic"

[[flows]]
cca = "cubic"
direction = "up"
"""
# Payload per wire byte of a full segment: 1448 of 1500.
PAYLOAD_SHARE = 1448 / 1500


def upload(reverse: str = "") -> str:
    return UPLOAD.format(reverse=reverse)


# The schema


def test_the_uplink_and_directions_round_trip_through_the_effective_toml() -> None:
    s = Scenario.from_toml(
        upload('aqm = "fq_codel"\naqm_params = { target = "10ms" }\nloss = "1%"\necn_threshold = "20pkt"')
    )
    doc = tomllib.loads(s.effective_toml())
    reverse = doc["link"]["reverse"]
    assert reverse["rate"] == "5Mbit" and reverse["aqm"] == "fq_codel" and "buffer" not in reverse
    assert reverse["aqm_params"]["target"] == "10ms" and reverse["loss"] == "1%"
    assert [f["direction"] for f in doc["flows"]] == ["down", "up"]
    again = Scenario.from_toml(s.effective_toml())
    assert again == s and again.scenario_hash == s.scenario_hash
    core = json.loads(s.to_json())
    assert core["link"]["reverse"]["rate_bps"] == 5_000_000
    assert core["link"]["reverse"]["aqm"]["fq_codel"]["target_ns"] == 10_000_000
    assert core["link"]["reverse"]["ecn_threshold"] == {"packets": 20}
    assert "direction" not in core["flows"][0] and core["flows"][1]["direction"] == "up"


def test_the_uplinks_buffer_defaults_to_one_bdp_of_its_own_rate() -> None:
    s = Scenario.from_toml(upload())
    assert json.loads(s.to_json())["link"]["reverse"] == {"rate_bps": 5_000_000, "buffer": {"bdp": 1.0}, "loss": 0.0}
    link = ccbench.run(s).summary["link"]["reverse"]
    assert link["bdp_bytes"] == link["buffer_bytes"] == 5_000_000 * 40 // 1000 // 8


def test_scenarios_going_down_keep_their_hash_and_their_core_json() -> None:
    plain = Scenario.from_toml(SHORT_TOML)
    explicit = Scenario.from_toml(SHORT_TOML + 'direction = "down"\n')
    assert plain.scenario_hash == explicit.scenario_hash
    core = json.loads(plain.to_json())
    assert "reverse" not in core["link"] and all("direction" not in f for f in core["flows"])
    assert all("direction" not in f for f in ccbench.run(plain).summary["flows"])


def test_a_reverse_trace_is_read_relative_to_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "up.trace").write_text("0\n5\n10\n")
    (tmp_path / "s.toml").write_text(upload().replace('rate = "5Mbit"', 'trace = "up.trace"'))
    s = Scenario.from_file(tmp_path / "s.toml")
    assert s.link.reverse is not None and s.link.reverse.trace is not None
    assert s.link.reverse.trace.path == str(tmp_path / "up.trace")
    reverse = json.loads(s.to_json())["link"]["reverse"]
    assert reverse["trace"] == {"opportunities_ms": [0, 5, 10]} and "rate_bps" not in reverse


def test_flags_set_the_uplink_and_each_flows_direction(tmp_path: Path) -> None:
    s = Scenario.from_flags(
        cca="cubic,bbr", direction="down,up", reverse_rate="5Mbit", reverse_buffer="50KB", reverse_loss="1%"
    )
    assert [f.direction for f in s.flows] == ["down", "up"]
    assert s.link.reverse is not None and s.link.reverse.rate_bps == 5_000_000
    assert s.link.reverse.buffer.to_core() == {"bytes": 50_000} and s.link.reverse.loss == 0.01
    # One direction is every flow's; an AQM drops the base's drop-tail limit.
    up = Scenario.from_flags(base=s, direction="up", reverse_aqm="codel")
    assert [f.direction for f in up.flows] == ["up", "up"]
    assert up.link.reverse is not None and up.link.reverse.aqm == "codel"
    # A trace replaces the base's rate, as --trace does [link]'s.
    (tmp_path / "up.trace").write_text("1\n2\n")
    traced = Scenario.from_flags(base=s, reverse_trace=str(tmp_path / "up.trace"))
    assert traced.link.reverse is not None and traced.link.reverse.rate_bps is None
    with pytest.raises(ScenarioError) as e:
        Scenario.from_flags(cca="cubic,bbr", direction="down,up,up", reverse_rate="5Mbit")
    assert e.value.field == "--direction"


def test_a_sweep_varies_the_uplink() -> None:
    from ccbench.sweep import plan_from_dict

    doc = tomllib.loads(upload())
    doc["link"]["reverse"]["rate"] = ["2Mbit", "5Mbit"]
    plan = plan_from_dict(doc)
    assert plan.swept_keys == ["link.reverse.rate"] and plan.point_count == 2


# Errors: one line naming the field, exit status 2, nothing written

BAD = {
    "rate-and-trace": (
        upload('trace = "{trace}"'),
        "link.reverse.rate",
        "give rate or trace, not both",
    ),
    "with-ack-trace": (
        upload().replace('rtt = "40ms"', 'rtt = "40ms"\nack_trace = "{trace}"'),
        "link.reverse",
        "cannot be combined with link.ack_trace",
    ),
    "sideways": (upload().replace('"up"', '"sideways"'), "flows[1].direction", "'down' or 'up'"),
    "up-without-uplink": (
        upload().replace('[link.reverse]\nrate = "5Mbit"\n', ""),
        "flows[1].direction",
        "needs a reverse bottleneck",
    ),
    "no-capacity": (upload().replace('rate = "5Mbit"', 'buffer = "1bdp"'), "link.reverse.rate", "is required"),
    "buffer-with-aqm": (upload('aqm = "codel"\nbuffer = "1bdp"'), "link.reverse.buffer", "drop-tail's limit"),
    "unknown-key": (upload("jitter = 1"), "link.reverse.jitter", "unknown key"),
    "bad-aqm-parameter": (
        upload('aqm = "codel"\naqm_params = { quantum = 300 }'),
        "link.reverse.aqm_params.quantum",
        "not a parameter of codel",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_uplinks_and_directions_are_one_line(name: str, tmp_path: Path) -> None:
    text, field, message = BAD[name]
    (tmp_path / "up.trace").write_text("1\n2\n")
    (tmp_path / "s.toml").write_text(text.replace("{trace}", "up.trace"))
    out = tmp_path / "out"
    result = run_cli("run", str(tmp_path / "s.toml"), "--out", str(out))
    assert_one_line_error(result, field, message)
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        (["--direction", "up"], "flows[0].direction", "needs a reverse bottleneck"),
        (["--cca", "cubic,bbr", "--direction", "up,down,up"], "--direction", "one per flow entry"),
        (["--reverse-buffer", "2bdp"], "link.reverse.rate", "is required"),
        (["--reverse-rate", "5Mbit", "--reverse-loss", "100%"], "link.reverse.loss", "below 100%"),
    ],
)
def test_bad_direction_flags_are_one_line(args: list[str], field: str, message: str, tmp_path: Path) -> None:
    result = run_cli("run", "--duration", "1s", *args, "--out", str(tmp_path / "out"))
    assert_one_line_error(result, field, message)
    assert not (tmp_path / "out").exists()


# The shipped example


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    base = read_toml(EXAMPLE)
    return {
        "both": ccbench.run(Scenario.from_flags(base=base)),
        "alone": ccbench.run(Scenario.from_flags(base=base, cca="cubic")),
        "fq_codel": ccbench.run(Scenario.from_flags(base=base, reverse_aqm="fq_codel")),
    }


def test_the_upload_fills_the_uplink(example: dict[str, Any]) -> None:
    summary = example["both"].summary
    down, up = summary["flows"]
    assert (down["direction"], up["direction"]) == ("down", "up")
    assert 0.9 * 5e6 * PAYLOAD_SHARE < up["goodput_bps"] <= 5e6 * PAYLOAD_SHARE, up["goodput_bps"]
    assert summary["link"]["reverse"]["utilization"] > 0.97


def test_the_downloads_acks_wait_behind_the_upload(example: dict[str, Any]) -> None:
    both, alone = example["both"].summary, example["alone"].summary
    download, by_itself = both["flows"][0], alone["flows"][0]
    print({"with upload": download["goodput_bps"] / 1e6, "alone": by_itself["goodput_bps"] / 1e6})
    assert by_itself["goodput_bps"] > 0.95 * 20e6 * PAYLOAD_SHARE
    assert download["goodput_bps"] < 0.6 * by_itself["goodput_bps"]
    # The uplink's queue is in the download's RTT.
    queue = both["link"]["reverse"]["queue_delay_ms"]["mean"]
    assert queue > 80 and download["rtt_ms"]["mean"] > by_itself["rtt_ms"]["mean"] + 0.8 * queue


def test_fq_codel_on_the_uplink_gives_the_download_back(example: dict[str, Any]) -> None:
    fq, alone = example["fq_codel"].summary, example["alone"].summary
    assert fq["flows"][0]["goodput_bps"] > 0.9 * alone["flows"][0]["goodput_bps"]
    assert fq["link"]["reverse"]["queue_delay_ms"]["mean"] < 10


def test_the_example_says_how_to_run_it() -> None:
    text = EXAMPLE.read_text()
    assert text.startswith("# ") and "ccbench run scenarios/asymmetric-upload.toml" in text


# Views of a run


def render(summary: dict[str, Any]) -> str:
    from ccbench.report import render as render_summary

    console = Console(record=True, width=200)
    render_summary(summary, console)
    return console.export_text()


def test_the_terminal_report_has_a_row_per_direction(example: dict[str, Any]) -> None:
    text = render(example["both"].summary)
    assert " dir " in text and "direction" in text
    rows = [line.split() for line in text.splitlines() if line.split()[:1] in (["down"], ["up"])]
    assert [r[:2] for r in rows] == [["down", "20.00"], ["up", "5.00"]], rows
    plain = render(ccbench.run(Scenario.from_toml(SHORT_TOML)).summary)
    assert "direction" not in plain and " dir " not in plain


def test_plots_draw_both_directions(example: dict[str, Any], tmp_path: Path) -> None:
    from ccbench.plots import link_figure, load_run, plot_run

    example["both"].save(tmp_path / "run")
    paths = plot_run(tmp_path / "run", flows=None, formats="png")
    assert sorted(p.name for p in paths) == ["flow0.png", "flow1.png", "link.png"]
    fig = link_figure(load_run(tmp_path / "run"))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[1].startswith("(b) down") and titles[2].startswith("(c) up")
    labels = {text.get_text() for ax in fig.axes if ax.get_legend() for text in ax.get_legend().get_texts()}
    assert {"down: utilisation", "up: utilisation", "up: queue (at each sample)"} <= labels


def test_an_up_flows_figure_measures_against_the_uplink(example: dict[str, Any], tmp_path: Path) -> None:
    from ccbench.plots import flow_figure, load_run

    example["both"].save(tmp_path / "run")
    fig, _ = flow_figure(load_run(tmp_path / "run"), 1)
    assert ", up," in fig._suptitle.get_text()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "bottleneck rate (5 Mbit/s, wire)" in labels


def test_an_ack_traces_queue_is_drawn_as_the_up_direction(tmp_path: Path) -> None:
    from ccbench.plots import link_figure, load_run

    trace = ROOT / "traces" / "TMobile-LTE-short.up"
    ccbench.run(Scenario.from_flags(ack_trace=str(trace), duration="2s")).save(tmp_path / "run")
    fig = link_figure(load_run(tmp_path / "run"))
    assert any(ax.get_title().startswith("(c) up: the ACK trace's queue") for ax in fig.axes)


def test_the_html_run_report_has_a_row_per_direction(example: dict[str, Any], tmp_path: Path) -> None:
    from ccbench.report_html import run_report

    example["both"].save(tmp_path / "run")
    page = run_report(tmp_path / "run", formats="png").read_text()
    # The flows table and the bottleneck's, each with a direction column and an up row.
    assert page.count('<th class="text">direction</th>') == 2
    assert page.count('<td class="text">up</td>') == 2
    assert "Bottleneck, both directions" in page and "Mbit/s up" in page


def test_the_stores_export_and_the_sweep_tables_carry_the_uplink(example: dict[str, Any]) -> None:
    from ccbench.analysis import algorithm_table, flows_frame, record_from_result, runs_frame
    from ccbench.store.query import flow_rows

    record = record_from_result(example["both"])
    rows = flow_rows([record])
    assert list(rows["direction"]) == ["down", "up"]
    assert rows["link_up_utilization"].iloc[0] > 0.97 and rows["link_utilization"].iloc[0] < 0.6
    runs = runs_frame([record])
    assert runs["up_utilization"].iloc[0] > 0.97
    assert "up_utilization_mean" in algorithm_table(runs)
    assert list(flows_frame([record])["direction"]) == ["down", "up"]
    plain = record_from_result(ccbench.run(Scenario.from_toml(SHORT_TOML)))
    assert "direction" not in flow_rows([plain]) and not any(c.startswith("link_up") for c in flow_rows([plain]))
    assert "up_utilization" not in runs_frame([plain])


def test_results_lists_the_uplinks_figures(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(upload().replace('"3s"', '"1s"') + '\n[sweep]\nname = "uplink"\n')
    store = str(tmp_path / "store")
    assert run_cli("sweep", str(plan), "--store", store).returncode == 0
    listed = run_cli("results", "--store", store)
    assert listed.returncode == 0, listed.stderr
    assert "up util %" in listed.stdout and "cubic,cubic (up)" in listed.stdout
