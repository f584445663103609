"""``--set PATH=VALUE``: any scenario value, named as a scenario file names it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccbench import Scenario, ScenarioError
from ccbench.overrides import apply, parse_value

from conftest import run_cli


def test_values_are_read_as_toml_values_and_otherwise_as_strings() -> None:
    assert parse_value("1400") == 1400
    assert parse_value("0.3") == 0.3
    assert parse_value("true") is True
    assert parse_value('"a b"') == "a b"
    assert parse_value("50Mbit") == "50Mbit"
    assert parse_value("30%") == "30%"


def test_a_set_value_equals_the_named_flag() -> None:
    assert (
        Scenario.from_flags(set_values=["link.rate=50Mbit"]).scenario_hash
        == Scenario.from_flags(rate="50Mbit").scenario_hash
    )
    assert (
        Scenario.from_flags(set_values=["flows.rwnd=1MB"]).scenario_hash
        == Scenario.from_flags(rwnd="1MB").scenario_hash
    )


def test_one_flow_every_flow_and_a_nested_table() -> None:
    sc = Scenario.from_flags(
        cca="bbr,cubic", set_values=["flows[1].rwnd=1MB", "flows.size=2MB", "tcp.mss=1400", "host.cpu_share=30%"]
    )
    assert [f.rwnd_bytes for f in sc.flows] == [6 * 2**20, 1_000_000]
    assert [f.size_bytes for f in sc.flows] == [2_000_000, 2_000_000]
    assert sc.tcp.mss == 1400
    assert sc.host is not None and sc.host.cpu_share == 0.3


def test_later_assignments_win_and_set_comes_after_the_flags() -> None:
    sc = Scenario.from_flags(rate="20Mbit", set_values=["link.rate=30Mbit", "link.rate=40Mbit"])
    assert sc.link.rate_bps == 40_000_000


@pytest.mark.parametrize(
    "assignment, field, words",
    [
        ("link.rat=1", "link.rat", "allowed keys: rate, trace, rtt"),
        ("flows[3].cca=bbr", "flows[3]", "flows has 1 entry, indices 0 to 0"),
        ("link.rate=fast", "link.rate", "is not a rate"),
        ("tcp.mss", "--set", "expected PATH=VALUE"),
        ("link.rate.x=1", "link.rate", "is not a table"),
        ("link..rate=1", "--set", "is not a key"),
    ],
)
def test_bad_assignments_name_the_field(assignment: str, field: str, words: str) -> None:
    with pytest.raises(ScenarioError) as e:
        Scenario.from_flags(set_values=[assignment])
    assert e.value.field == field and words in e.value.message


def test_apply_changes_only_what_is_named() -> None:
    doc = {"link": {"rate": "10Mbit"}, "flows": [{"cca": "bbr"}, {"cca": "cubic"}]}
    apply(doc, ["flows[0].cca=reno", "link.rtt=20ms"])
    assert doc == {"link": {"rate": "10Mbit", "rtt": "20ms"}, "flows": [{"cca": "reno"}, {"cca": "cubic"}]}


def test_the_command_takes_set_over_a_scenario_file(short_scenario: Path) -> None:
    res = run_cli("run", str(short_scenario), "--set", "link.rate=30Mbit", "--set", "flows.cca=bbr", "--json")
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout)
    assert s["link"]["rate_bps"] == 30_000_000 and {f["cca"] for f in s["flows"]} == {"bbr"}
    bad = run_cli("run", "--set", "flows[2].cca=bbr")
    assert bad.returncode == 2 and bad.stderr.startswith("error: flows[2]:") and "Traceback" not in bad.stderr
