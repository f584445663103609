"""UDP flows (``[[flows]]`` with ``kind = "udp"``) and ``[[arrivals]]`` in the schema and
the flags: what the simulator gets, the TOML form's round trip, and errors named by the
user's entries (docs/traffic.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ccbench.errors import ScenarioError
from ccbench.scenario import Scenario

LINK = {"rate": "20Mbit", "rtt": "40ms"}


def scenario(**tables: Any) -> Scenario:
    return Scenario.from_dict({"duration": "10s", "link": LINK, **tables})


def error(**tables: Any) -> ScenarioError:
    with pytest.raises(ScenarioError) as e:
        scenario(**tables)
    return e.value


def test_udp_entries_go_to_the_simulators_udp_list_and_keep_their_place() -> None:
    sc = scenario(
        flows=[
            {"cca": "bbr"},
            {"kind": "udp", "rate": "5Mbit", "count": 2, "on": "2s", "off": "1s", "on_off": "exponential"},
            {"cca": "cubic", "kind": "tcp"},
            {"kind": "udp", "rate": "1Mbit", "size": 200, "stop": "8s", "direction": "down"},
        ]
    )
    core = sc.to_core()
    assert [f["cca"] for f in core["flows"]] == ["bbr", "cubic"]
    assert core["udp"][0] == core["udp"][1]  # count expanded
    assert core["udp"][0] == {
        "start_ns": 0,
        "rate_bps": 5_000_000,
        "payload_bytes": 1472,
        "access_delay_ns": 0,
        "on_off": {"on_ns": 2_000_000_000, "off_ns": 1_000_000_000, "exponential": True},
    }
    assert core["udp"][2]["payload_bytes"] == 200 and core["udp"][2]["stop_ns"] == 8_000_000_000
    assert sc.udp_places == (1, 3)
    # The TOML form writes the array back in its order, and loads to the same scenario.
    kinds = [f.get("kind", "tcp") for f in sc.to_dict()["flows"]]
    assert kinds == ["tcp", "udp", "tcp", "udp"]
    again = Scenario.from_toml(sc.effective_toml())
    assert again == sc and again.scenario_hash == sc.scenario_hash


def test_scenarios_without_traffic_keep_their_json() -> None:
    core = scenario(flows=[{"cca": "cubic"}]).to_core()
    assert "udp" not in core and "arrivals" not in core
    assert "arrivals" not in scenario(flows=[{"cca": "cubic"}]).to_dict()


def test_a_rate_schedule_or_a_rate_file_steps_the_rate(tmp_path: Path) -> None:
    rates = tmp_path / "rates.txt"
    rates.write_text("# seconds rate\n0 5Mbit\n2.5 0\n4000ms 2Mbit\n")
    from_file = scenario(flows=[{"kind": "udp", "rate_file": str(rates)}]).to_core()["udp"][0]
    inline = scenario(
        flows=[
            {
                "kind": "udp",
                "rate": "5Mbit",
                "rate_schedule": [{"at": "2.5s", "rate": 0}, {"at": "4s", "rate": "2Mbit"}],
            }
        ]
    ).to_core()["udp"][0]
    assert from_file == inline
    assert inline["rate_schedule"] == [
        {"at_ns": 2_500_000_000, "rate_bps": 0},
        {"at_ns": 4_000_000_000, "rate_bps": 2_000_000},
    ]
    both = error(flows=[{"kind": "udp", "rate": "1Mbit", "rate_file": str(rates)}])
    assert both.field == "flows[0].rate" and "line at 0 s" in both.message


def test_arrivals_resolve_to_the_simulators_groups(tmp_path: Path) -> None:
    cdf = tmp_path / "sizes.cdf"
    cdf.write_text("1000 0\n10KB 0.5\n1MB 1\n")
    times = tmp_path / "times.txt"
    times.write_text("0.5\n1.25\n1.25\n3s\n")
    sc = scenario(
        arrivals=[
            {"cca": "cubic", "load": "40%", "sizes": "web-search"},
            {"cca": "bbr", "rate": 20, "sizes": "10KB", "stop": "5s", "connect": "receiver"},
            {"cca": "cubic", "times": str(times), "sizes": str(cdf), "params": {"beta": 512}},
        ]
    )
    groups = sc.to_core()["arrivals"]
    assert groups[0]["load"] == 0.4 and groups[0]["sizes"] == {"builtin": "web-search"}
    assert groups[1]["rate_per_s"] == 20.0 and groups[1]["sizes"] == {"fixed": 10_000}
    assert groups[1]["connect"] == "receiver" and groups[1]["stop_ns"] == 5_000_000_000
    assert groups[2]["times_ns"] == [500_000_000, 1_250_000_000, 1_250_000_000, 3_000_000_000]
    assert groups[2]["sizes"] == {"cdf": [[1000, 0.0], [10_000, 0.5], [1_000_000, 1.0]]}
    assert sc.flows == [] and sc.to_core()["flows"] == []
    again = Scenario.from_toml(sc.effective_toml())
    assert again == sc and again.scenario_hash == sc.scenario_hash


def test_files_a_scenario_file_names_are_found_beside_it(tmp_path: Path) -> None:
    (tmp_path / "sizes.cdf").write_text("10KB 0.5\n100KB 1\n")
    (tmp_path / "times.txt").write_text("1\n2\n")
    (tmp_path / "rates.txt").write_text("0 1Mbit\n")
    path = tmp_path / "traffic.toml"
    path.write_text(
        'duration = "5s"\n[link]\nrate = "10Mbit"\nrtt = "20ms"\n'
        '[[flows]]\nkind = "udp"\nrate_file = "rates.txt"\n'
        '[[arrivals]]\ncca = "cubic"\ntimes = "times.txt"\nsizes = "sizes.cdf"\n'
    )
    sc = Scenario.from_file(path)
    assert sc.arrivals[0].sizes.cdf is not None and sc.arrivals[0].sizes.cdf.path == str(tmp_path / "sizes.cdf")
    assert sc.to_core()["udp"][0]["rate_bps"] == 1_000_000


@pytest.mark.parametrize(
    ("tables", "field", "message"),
    [
        ({"flows": [{"cca": "bbr"}, {"kind": "quic"}]}, "flows[1].kind", '"tcp" (the default) or "udp"'),
        ({"flows": [{"kind": "udp", "rate": "1Mbit", "rwnd": "1MB"}]}, "flows[0].rwnd", "is a TCP flow's key"),
        ({"flows": [{"cca": "bbr", "rate": "1Mbit"}]}, "flows[0].rate", 'give the entry kind = "udp"'),
        ({"flows": [{"kind": "udp"}]}, "flows[0].rate", "is required"),
        ({"flows": [{"kind": "udp", "rate": "1Mbit", "on": "1s"}]}, "flows[0].off", "both on and off"),
        ({"flows": [{"kind": "udp", "rate": "1Mbit", "on_off": "exponential"}]}, "flows[0].on_off", "give on and off"),
        # Entries counted as the user wrote them, after a count and a TCP flow.
        (
            {
                "flows": [
                    {"kind": "udp", "rate": "1Mbit", "count": 3},
                    {"cca": "bbr"},
                    {"kind": "udp", "rate": "1Mbit", "start": "12s"},
                ]
            },
            "flows[2].start",
            "before the end of the run",
        ),
        (
            {"flows": [{"kind": "udp", "rate": "1Mbit", "start": "2s", "stop": "1s"}]},
            "flows[0].stop",
            "after its start",
        ),
        ({"udp": [{"rate": "1Mbit"}]}, "udp", 'kind = "udp"'),
        ({"arrivals": [{"cca": "cubic", "sizes": "10KB"}]}, "arrivals[0]", "give one of rate"),
        ({"arrivals": [{"cca": "cubic", "sizes": "10KB", "rate": 1, "load": 0.5}]}, "arrivals[0]", "got rate and load"),
        ({"arrivals": [{"cca": "cubic", "sizes": "10KB", "load": 1.5}]}, "arrivals[0].load", "at most 1"),
        ({"arrivals": [{"cca": "cubic", "sizes": "10KB", "rate": 0}]}, "arrivals[0].rate", "above 0"),
        ({"arrivals": [{"cca": "cubic", "sizes": 0, "rate": 1}]}, "arrivals[0].sizes", "must be positive"),
        ({"arrivals": [{"cca": "nope", "sizes": "10KB", "rate": 1}]}, "arrivals[0].cca", "unknown algorithm"),
        ({"arrivals": [{"cca": "cubic", "sizes": "10KB", "rate": 1, "count": 2}]}, "arrivals[0].count", "unknown key"),
        (
            {"arrivals": [{"cca": "cubic", "sizes": "10KB", "rate": 1, "start": "10s"}]},
            "arrivals[0].start",
            "before the end",
        ),
        ({"arrivals": [{"cca": "cubic", "sizes": "10KB", "rate": 1e8}]}, "arrivals[0].rate", "10,000,000"),
        (
            {"arrivals": [{"cca": "bbr", "sizes": "10KB", "rate": 1, "direction": "up"}]},
            "arrivals[0].direction",
            "reverse bottleneck",
        ),
        ({}, "flows", "at least one [[flows]] or [[arrivals]] entry"),
    ],
)
def test_bad_traffic_is_named(tables: dict[str, Any], field: str, message: str) -> None:
    e = error(**tables)
    assert e.field == field, str(e)
    assert message in e.message, str(e)


def test_arrivals_refuse_a_path_mtu() -> None:
    with pytest.raises(ScenarioError, match="link.mtu: cannot be combined with arrivals"):
        Scenario.from_dict(
            {
                "duration": "5s",
                "link": {**LINK, "mtu": 1400},
                "arrivals": [{"cca": "cubic", "sizes": "10KB", "rate": 1}],
            }
        )


def test_flags_make_udp_flows_and_arrivals(tmp_path: Path) -> None:
    sc = Scenario.from_flags(cca="bbr,cubic", udp="5Mbit,1Mbit", udp_on="1s", udp_off="2s", udp_size="1000")
    assert [f.cca for f in sc.flows] == ["bbr", "cubic"]
    assert [u.rate_bps for u in sc.udp] == [5_000_000, 1_000_000]
    assert all(u.on_ns == 1_000_000_000 and u.payload_bytes == 1000 for u in sc.udp)
    # Arrivals alone: without a scenario file or --cca, no bulk flow beside them.
    alone = Scenario.from_flags(arrivals="cubic,bbr", arrival_load="25%", arrival_sizes="data-mining")
    assert alone.flows == [] and [a.cca for a in alone.arrivals] == ["cubic", "bbr"]
    assert {a.sizes.builtin for a in alone.arrivals} == {"data-mining"} and alone.arrivals[0].load == 0.25
    beside = Scenario.from_flags(cca="cubic", arrivals="bbr", arrival_rate="20")
    assert [f.cca for f in beside.flows] == ["cubic"] and beside.arrivals[0].rate_per_s == 20.0
    # Over a scenario file: --cca replaces its TCP flows and keeps its UDP ones; a new
    # process replaces the groups' other one.
    base = scenario(
        flows=[{"cca": "bbr"}, {"kind": "udp", "rate": "2Mbit"}],
        arrivals=[{"cca": "cubic", "load": 0.5, "sizes": "10KB"}],
    )
    over = Scenario.from_flags(base=base, cca="reno", arrival_rate="3")
    assert [f.cca for f in over.flows] == ["reno"] and len(over.udp) == 1
    assert over.arrivals[0].load is None and over.arrivals[0].rate_per_s == 3.0
    assert Scenario.from_flags(base=base, cca="none").flows == []
    # --set names entries as the file does, UDP ones included.
    assert Scenario.from_flags(base=base, set_values=["flows[1].rate=3Mbit"]).udp[0].rate_bps == 3_000_000


@pytest.mark.parametrize(
    ("flags", "field", "message"),
    [
        ({"arrivals": "cubic"}, "--arrivals", "--arrival-load, --arrival-rate or --arrival-times"),
        ({"arrival_load": "0.5"}, "--arrival-load", "needs arrivals"),
        ({"arrivals": "cubic", "arrival_load": "0.5", "arrival_rate": "3"}, "--arrival-load", "not --arrival-rate"),
        ({"udp_off": "1s"}, "--udp-off", "needs UDP flows"),
        ({"udp_direction": "up"}, "--udp-direction", "needs UDP flows"),
        ({"udp": "1Mbit,2Mbit", "udp_direction": "down,up,down"}, "--udp-direction", "one per UDP flow entry"),
    ],
)
def test_bad_traffic_flags_are_named(flags: dict[str, str], field: str, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        Scenario.from_flags(**flags)
    assert e.value.field == field and message in e.value.message, str(e.value)
