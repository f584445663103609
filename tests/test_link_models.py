"""Cellular paths at the bottleneck from the front end: trace files, rate and RTT
schedules, Gilbert-Elliott loss and AQMs in the scenario schema, the CLI flags, the
effective TOML, and the shipped examples."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

import ccbench
from ccbench import Scenario, ScenarioError
from ccbench.scenario import read_toml
from ccbench.traces import read_trace

from conftest import ROOT, SCENARIOS, SHORT_TOML, run_cli
from test_cli_errors import assert_one_line_error

TRACES = ROOT / "traces"
LTE = ("ATT-LTE-driving-2016.down", "ATT-LTE-driving-2016.up", "TMobile-LTE-short.down", "TMobile-LTE-short.up")
NEW_EXAMPLES = ("lte-driving-down.toml", "uplink-bufferbloat-fq-codel.toml", "rate-steps.toml", "bursty-loss.toml")
NEW_LINK_KEYS = {"trace_mean_bps", "aqm", "drops_aqm", "loss_model", "ack_link"}


def scenario_on(trace: str, extra: str = "") -> str:
    return f"""\
duration = "5s"
[link]
trace = "{trace}"
rtt = "40ms"
{extra}
[[flows]]
cca = "cubic"
"""


def mean_of(path: Path) -> float:
    """A trace's mean capacity from the file: 1500-byte opportunities over the last time."""
    ms = [int(line) for line in path.read_text().split()]
    return len(ms) * 1500 * 8 / (ms[-1] / 1000)


# Trace files


@pytest.mark.parametrize("name", LTE)
def test_shipped_traces_read_and_their_means_match_the_readme(name: str) -> None:
    t = read_trace(TRACES / name)
    assert abs(t.mean_bps - mean_of(TRACES / name)) <= 1
    assert t.path == str(TRACES / name)


BAD_TRACES = {
    "not-a-number": ("1\n2\nabc\n4\n", 3, "'abc' is not a whole, non-negative number"),
    "negative": ("1\n-2\n", 2, "'-2' is not a whole"),
    "decreasing": ("1\n5\n5\n4\n9\n", 4, "4 comes after 5; timestamps must not decrease"),
    "empty": ("", 1, "the file is empty"),
    "blank": ("\n\n", 1, "the file is empty"),
    "blank-line": ("1\n\n3\n", 2, "empty line"),
    "all-zero": ("0\n0\n0\n", 3, "every timestamp is 0"),
    "decimal": ("1\n2.5\n", 2, "'2.5' is not a whole"),
}


@pytest.mark.parametrize("name", sorted(BAD_TRACES))
def test_a_malformed_trace_is_one_line_naming_file_and_line(name: str, tmp_path: Path) -> None:
    text, line, message = BAD_TRACES[name]
    (tmp_path / "bad.trace").write_text(text)
    scenario = tmp_path / "s.toml"
    scenario.write_text(scenario_on("bad.trace"))
    out = tmp_path / "out"
    result = run_cli("run", str(scenario), "--out", str(out), cwd=ROOT)
    assert_one_line_error(result, "link.trace", f"{tmp_path / 'bad.trace'} line {line}: {message}")
    assert not out.exists()


def test_a_malformed_ack_trace_given_as_a_flag_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "up.trace").write_text("3\n2\n")
    result = run_cli("run", "--ack-trace", "up.trace", "--duration", "1s", cwd=tmp_path)
    assert_one_line_error(result, "link.ack_trace", "up.trace line 2: 2 comes after 3")


def test_a_missing_trace_file(tmp_path: Path) -> None:
    result = run_cli("run", "--trace", "nowhere.trace", cwd=tmp_path)
    assert_one_line_error(result, "link.trace", "nowhere.trace: no such trace file")


def test_trace_paths_in_a_file_are_relative_to_the_file(tmp_path: Path) -> None:
    sub = tmp_path / "exp"
    sub.mkdir()
    (sub / "one.trace").write_text("1\n")
    (sub / "s.toml").write_text(scenario_on("one.trace"))
    s = Scenario.from_file(sub / "s.toml")
    assert s.link.trace is not None and s.link.trace.path == str(sub / "one.trace")
    assert s.link.reference_rate_bps == 12_000_000 and s.link.rate_bps is None
    # From elsewhere on the command line too.
    result = run_cli("run", str(sub / "s.toml"), "--json", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["link"]["trace_mean_bps"] == 12_000_000


# The schema


def test_link_models_round_trip_through_the_effective_toml(tmp_path: Path) -> None:
    (tmp_path / "t.trace").write_text("0\n0\n5\n")
    text = scenario_on(
        "t.trace",
        """\
ack_trace = "t.trace"
aqm = "fq_codel"
aqm_params = { target = "10ms", ce_threshold = "2ms" }
loss_model = { type = "gilbert-elliott", p = "1%", r = 0.3, h = "10%", k = "99.5%" }
rtt_schedule = [{ at = "2s", rtt = "80ms" }, { at = "4s", rtt = "20ms" }]
""",
    )
    (tmp_path / "s.toml").write_text(text)
    s = Scenario.from_file(tmp_path / "s.toml")
    doc = tomllib.loads(s.effective_toml())
    link = doc["link"]
    assert "rate" not in link and "buffer" not in link
    assert link["trace"] == link["ack_trace"] == str(tmp_path / "t.trace")
    assert link["aqm_params"] == {
        "target": "10ms",
        "interval": "100ms",
        "limit": 10240,
        "ecn": True,
        "ce_threshold": "2ms",
        "mtu": 1514,
        "quantum": 1514,
        "flows": 1024,
        "memory_limit": "32MiB",
        "drop_batch": 64,
    }
    assert link["loss_model"] == {"type": "gilbert-elliott", "p": "1%", "r": "30%", "h": "10%", "k": "99.5%"}
    assert link["rtt_schedule"] == [{"at": "2s", "rtt": "80ms"}, {"at": "4s", "rtt": "20ms"}]
    again = Scenario.from_toml(s.effective_toml())
    assert again == s and again.scenario_hash == s.scenario_hash
    core = json.loads(s.to_json())["link"]
    assert core["trace"] == {"opportunities_ms": [0, 0, 5]} and core["rate_bps"] == 3 * 12_000 * 200
    assert core["aqm"]["fq_codel"]["target_ns"] == 10_000_000
    assert core["loss_model"] == {"gilbert_elliott": {"p": 0.01, "r": 0.3, "h": 0.1, "k": 0.995}}


def test_defaults_made_explicit_do_not_change_the_hash() -> None:
    base = SHORT_TOML.replace('buffer = "1bdp"\n', 'aqm = "codel"\n')
    explicit = base.replace(
        'aqm = "codel"\n',
        'aqm = "codel"\naqm_params = { target = "5ms", limit = 1000, ecn = false, mtu = 1514, interval = "100ms" }\n',
    )
    assert Scenario.from_toml(base).scenario_hash == Scenario.from_toml(explicit).scenario_hash
    # Without any of the new options the canonical JSON has none of their keys.
    plain = json.loads(Scenario.from_toml(SHORT_TOML).to_json())["link"]
    assert set(plain) == {"rate_bps", "rtt_ns", "buffer", "loss", "nic_rate_bps", "ecn_threshold"}


def test_the_aqms_and_their_defaults_are_the_simulators() -> None:
    from ccbench import facts
    from ccbench.scenario import AQMS

    assert AQMS == facts.AQMS == ("droptail", "codel", "fq_codel")
    for aqm, params in facts.AQM_PARAMS.items():
        s = Scenario.from_toml(SHORT_TOML.replace('buffer = "1bdp"', f'aqm = "{aqm}"'))
        assert json.loads(s.to_json())["link"]["aqm"] == {aqm: params}


def test_reverse_buffer_parses_like_buffer_and_is_absent_by_default(tmp_path: Path) -> None:
    (tmp_path / "up.trace").write_text("10\n")
    with_ack = SHORT_TOML.replace('buffer = "1bdp"\n', f'buffer = "1bdp"\nack_trace = "{tmp_path / "up.trace"}"\n')
    plain = Scenario.from_toml(with_ack)
    assert plain.link.reverse_buffer is None
    assert "reverse_buffer" not in json.loads(plain.to_json())["link"]
    assert "reverse_buffer" not in tomllib.loads(plain.effective_toml())["link"]
    for value, core in (("8pkt", {"packets": 8}), ("4KB", {"bytes": 4000}), ("0.5bdp", {"bdp": 0.5})):
        s = Scenario.from_toml(with_ack.replace("[link]\n", f'[link]\nreverse_buffer = "{value}"\n'))
        assert json.loads(s.to_json())["link"]["reverse_buffer"] == core
        assert tomllib.loads(s.effective_toml())["link"]["reverse_buffer"] == value
        assert Scenario.from_toml(s.effective_toml()).scenario_hash == s.scenario_hash != plain.scenario_hash
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(with_ack.replace("[link]\n", '[link]\nreverse_buffer = "lots"\n'))
    assert e.value.field == "link.reverse_buffer"


def test_reverse_buffer_without_an_ack_trace_is_refused_in_one_line(tmp_path: Path) -> None:
    result = run_cli("run", "--duration", "1s", "--set", "link.reverse_buffer=8pkt", "--out", str(tmp_path / "o"))
    assert_one_line_error(result, "link.reverse_buffer", "only with link.ack_trace")
    assert not (tmp_path / "o").exists()


def test_a_reverse_buffer_drops_acks_in_the_summary(tmp_path: Path) -> None:
    (tmp_path / "up.trace").write_text("10\n")
    base = Scenario.from_flags(rate="50Mbit", rtt="40ms", duration="3s", ack_trace=str(tmp_path / "up.trace"))
    limited = ccbench.run(Scenario.from_flags(base=base, set_values=["link.reverse_buffer=8pkt"])).summary
    assert limited["link"]["ack_link"]["drops"] > 0
    assert "drops" not in ccbench.run(base).summary["link"]["ack_link"]


def test_the_hash_follows_the_trace_content_not_its_path(tmp_path: Path) -> None:
    (tmp_path / "a.trace").write_text("1\n2\n")
    (tmp_path / "b.trace").write_text("1\n2\n")
    (tmp_path / "c.trace").write_text("1\n3\n")
    h = {n: Scenario.from_toml(scenario_on(str(tmp_path / n))).scenario_hash for n in ("a.trace", "b.trace", "c.trace")}
    assert h["a.trace"] == h["b.trace"] != h["c.trace"]


SCHEMA_ERRORS = [
    (SHORT_TOML.replace('rate = "10Mbit"\n', 'rate = "10Mbit"\ntrace = "x"\n'), "link.rate", "not both"),
    (SHORT_TOML.replace('rate = "10Mbit"\n', ""), "link.rate", "or give link.trace"),
    (SHORT_TOML.replace("[link]", '[link]\naqm = "red"'), "link.aqm", "droptail"),
    (SHORT_TOML.replace("[link]", '[link]\naqm_params = { target = "5ms" }'), "link.aqm_params", "only with aqm"),
    (SHORT_TOML.replace("[link]", '[link]\naqm = "codel"'), "link.buffer", "drop-tail's limit"),
    (
        SHORT_TOML.replace('buffer = "1bdp"', 'aqm = "codel"\naqm_params = { quantum = 300 }'),
        "link.aqm_params.quantum",
        "not a parameter of codel",
    ),
    (
        SHORT_TOML.replace('buffer = "1bdp"', 'aqm = "fq_codel"\naqm_params = { quantum = 100 }'),
        "link.aqm_params.quantum",
        "from 256",
    ),
    (
        SHORT_TOML.replace('buffer = "1bdp"', 'aqm = "fq_codel"\naqm_params = { target = "0ms" }'),
        "link.aqm_params.target",
        "must be positive",
    ),
    (
        SHORT_TOML.replace("[link]", '[link]\nloss_model = { type = "gilbert-elliott", p = 0, r = "20%" }'),
        "link.loss_model.p",
        "above 0",
    ),
    (
        SHORT_TOML.replace("[link]", '[link]\nloss_model = { type = "gilbert-elliott", p = "1%", r = "120%" }'),
        "link.loss_model.r",
        "out of range",
    ),
    (
        SHORT_TOML.replace("[link]", '[link]\nloss_model = { type = "markov", p = "1%", r = "20%" }'),
        "link.loss_model.type",
        "gilbert-elliott",
    ),
    (
        SHORT_TOML.replace("[link]", '[link]\nloss_model = { type = "gilbert-elliott", p = "1%" }'),
        "link.loss_model.r",
        "is required",
    ),
    (
        SHORT_TOML.replace(
            "[link]", '[link]\nloss = "1%"\nloss_model = { type = "gilbert-elliott", p = "1%", r = "20%" }'
        ),
        "link.loss_model",
        "cannot be combined with link.loss",
    ),
    (
        SHORT_TOML.replace(
            "[link]", '[link]\nrate_schedule = [{ at = "2s", rate = "5Mbit" }, { at = "1s", rate = "5Mbit" }]'
        ),
        "link.rate_schedule[1].at",
        "increasing",
    ),
    (
        SHORT_TOML.replace("[link]", '[link]\nrate_schedule = [{ at = "1s", rate = "5Mbit", speed = 1 }]'),
        "link.rate_schedule[0].speed",
        "unknown key; allowed keys: at, rate",
    ),
    (
        SHORT_TOML.replace("[link]", '[link]\nrtt_schedule = { at = "1s", rtt = "5ms" }'),
        "link.rtt_schedule",
        "an array of tables",
    ),
    (
        SHORT_TOML.replace("[link]", '[link]\nrtt_schedule = [{ at = "1s", rtt = "0ms" }]'),
        "link.rtt_schedule[0].rtt",
        "must be positive",
    ),
]


@pytest.mark.parametrize("text, field, message", SCHEMA_ERRORS, ids=[e[1] + ":" + e[2] for e in SCHEMA_ERRORS])
def test_schema_errors_name_the_field(text: str, field: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_toml(text)
    assert info.value.field == field, info.value
    assert message in info.value.message, info.value


def test_trace_and_rate_steps_do_not_mix(tmp_path: Path) -> None:
    (tmp_path / "t.trace").write_text("1\n")
    text = scenario_on(str(tmp_path / "t.trace"), 'rate_schedule = [{ at = "1s", rate = "5Mbit" }]')
    with pytest.raises(ScenarioError) as info:
        Scenario.from_toml(text)
    assert info.value.field == "link.rate_schedule" and "link.trace" in info.value.message


# Flags


def test_trace_aqm_and_ack_trace_flags(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli(
        "run",
        "--trace",
        "traces/TMobile-LTE-short.up",
        "--ack-trace",
        "traces/TMobile-LTE-short.down",
        "--aqm",
        "fq_codel",
        "--duration",
        "3s",
        "--json",
        "--out",
        str(out),
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    link = json.loads(result.stdout)["link"]
    assert link["trace_mean_bps"] == read_trace(TRACES / "TMobile-LTE-short.up").mean_bps
    assert link["aqm"]["name"] == "fq_codel" and link["buffer_packets"] == 10240
    assert link["ack_link"]["trace_mean_bps"] == read_trace(TRACES / "TMobile-LTE-short.down").mean_bps
    # The saved effective scenario loads back from its own directory, to the same run.
    again = Scenario.from_file(out / "scenario.toml")
    assert again.scenario_hash == json.loads((out / "summary.json").read_text())["scenario_hash"]


def test_flags_override_a_files_capacity_and_queue() -> None:
    base = read_toml(SCENARIOS / "uplink-bufferbloat-fq-codel.toml")
    dt = Scenario.from_flags(base=base, aqm="droptail", buffer="1MB")
    assert dt.link.aqm == "droptail" and dt.link.aqm_params is None and dt.link.buffer.amount == 1_000_000
    traced = Scenario.from_flags(base=base, trace=str(TRACES / "ATT-LTE-driving-2016.up"))
    assert traced.link.rate_bps is None and traced.link.trace is not None
    lte = read_toml(SCENARIOS / "lte-driving-down.toml")
    fixed = Scenario.from_flags(base=lte, rate="5Mbit")
    assert fixed.link.trace is None and fixed.link.rate_bps == 5_000_000 and fixed.link.ack_trace is not None
    with pytest.raises(ScenarioError) as info:
        Scenario.from_flags(base=base, buffer="100pkt")
    assert info.value.field == "link.buffer"


def test_aqm_flag_with_a_buffer_is_an_error() -> None:
    result = run_cli("run", "--aqm", "codel", "--buffer", "100pkt")
    assert_one_line_error(result, "link.buffer", "aqm_params.limit")


def test_bad_aqm_flag() -> None:
    result = run_cli("run", "--aqm", "red")
    assert_one_line_error(result, "--aqm", "'red' is not one of")


# Summaries


def test_plain_runs_have_none_of_the_new_summary_keys() -> None:
    summary = ccbench.run(Scenario.from_toml(SHORT_TOML)).summary
    assert not NEW_LINK_KEYS & set(summary["link"])


def test_a_trace_runs_summary_reports_capacity() -> None:
    name = "ATT-LTE-driving-2016.up"
    # One full period, 250 packets of buffer (as the simulator's own trace tests).
    s = Scenario.from_toml(scenario_on(str(TRACES / name), 'buffer = "375KB"').replace('"5s"', '"120002ms"'))
    r = ccbench.run(s)
    link = r.summary["link"]
    mean = mean_of(TRACES / name)
    assert abs(link["rate_bps"] / mean - 1) < 1e-3
    used = link["utilization"] * link["rate_bps"]
    assert abs(used / mean - 1) < 0.05, used / mean
    # Each sample covers the time since the previous one (the last one 2 ms).
    dt = r.link["time_s"].diff().fillna(r.link["time_s"].iloc[0])
    assert abs((r.link["capacity_bps"] * dt).sum() / 120.002 / mean - 1) < 1e-3


# Shipped examples


def test_the_new_examples_are_shipped() -> None:
    assert set(NEW_EXAMPLES) <= {p.name for p in SCENARIOS.glob("*.toml")}


def test_fq_codel_example_cures_the_uplinks_bufferbloat() -> None:
    base = read_toml(SCENARIOS / "uplink-bufferbloat-fq-codel.toml")
    fq = ccbench.run(Scenario.from_flags(base=base))
    codel = ccbench.run(Scenario.from_flags(base=base, aqm="codel"))
    dt = ccbench.run(Scenario.from_flags(base=base, aqm="droptail", buffer="1MB"))
    delays = {
        name: r.summary["link"]["queue_delay_ms"] for name, r in (("fq_codel", fq), ("codel", codel), ("droptail", dt))
    }
    print({k: (round(v["mean"], 1), round(v["p95"], 1)) for k, v in delays.items()})
    assert delays["droptail"]["mean"] > 1000
    for name in ("fq_codel", "codel"):
        assert delays[name]["mean"] < 50 and delays[name]["p95"] < 100, delays[name]
    # The 200 KB upload finishes in about a second behind FQ-CoDel, not behind 2 s of queue.
    assert fq.summary["flows"][1]["completion_s"] < 2.0 < dt.summary["flows"][1]["completion_s"]


def test_bursty_loss_example_loses_its_mean_share() -> None:
    r = ccbench.run(read_toml(SCENARIOS / "bursty-loss.toml"))
    link = r.summary["link"]
    assert abs(link["loss_model"]["mean_loss"] - 0.005 / 0.255) < 1e-12
    share = link["drops_random"] / (link["packets_forwarded"] + link["drops"])
    assert abs(share / link["loss_model"]["mean_loss"] - 1) < 0.15, share


def test_rate_steps_example_follows_its_steps() -> None:
    r = ccbench.run(read_toml(SCENARIOS / "rate-steps.toml"))
    lk = r.link
    for lo, hi, rate in ((3, 10, 20e6), (13, 20, 50e6), (23, 30, 5e6)):
        part = lk[(lk.time_s > lo) & (lk.time_s <= hi)]
        assert (abs(part.capacity_bps - rate) < 1).all()
        assert part.throughput_bps.mean() > 0.95 * rate, (lo, part.throughput_bps.mean())


def test_a_trace_run_plots(tmp_path: Path) -> None:
    from ccbench.plots import plot_run

    s = Scenario.from_flags(trace=str(TRACES / "TMobile-LTE-short.up"), aqm="fq_codel", duration="3s", cca="cubic,bbr")
    ccbench.run(s).save(tmp_path / "run")
    paths = plot_run(tmp_path / "run", flows=None, formats="png")
    assert sorted(p.name for p in paths) == ["flow0.png", "flow1.png", "link.png"]
