"""Sweep plans: expansion to points, ranges, zip groups, [sweep.vary], seeds, and the
errors of malformed plans (from Python; the command line is in test_sweep_cli_errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ccbench import ScenarioError
from ccbench.sweep import derive_seed, load_plan, plan_from_dict
from ccbench.sweep.ranges import expand_range

from conftest import ROOT

BASE: dict[str, Any] = {
    "duration": "2s",
    "link": {"rate": "10Mbit", "rtt": "20ms"},
    "flows": [{"cca": "cubic"}],
}


def plan(**changes: Any) -> Any:
    doc: dict[str, Any] = {
        "duration": BASE["duration"],
        "link": dict(BASE["link"]),
        "flows": [dict(f) for f in BASE["flows"]],
    }
    for key, value in changes.items():
        if key in ("link", "sweep"):
            doc.setdefault(key, {}).update(value)
        else:
            doc[key] = value
    return plan_from_dict(doc)


def test_cross_product_in_file_order_last_key_fastest() -> None:
    p = plan(
        link={"rate": ["10Mbit", "20Mbit"], "buffer": ["0.5bdp", "1bdp", "2bdp"]}, flows=[{"cca": ["bbr", "cubic"]}]
    )
    assert p.swept_keys == ["link.rate", "link.buffer", "flows[0].cca"]
    points = p.points()
    assert len(points) == p.run_count == p.point_count == 12
    assert points[0].values == {"link.rate": "10Mbit", "link.buffer": "0.5bdp", "flows[0].cca": "bbr"}
    assert points[1].values == {"link.rate": "10Mbit", "link.buffer": "0.5bdp", "flows[0].cca": "cubic"}
    assert points[-1].values == {"link.rate": "20Mbit", "link.buffer": "2bdp", "flows[0].cca": "cubic"}
    assert [p.index for p in points] == list(range(12))
    assert points[-1].scenario.link.rate_bps == 20_000_000
    assert points[-1].scenario.flows[0].cca == "cubic"
    assert len({pt.scenario.scenario_hash for pt in points}) == 12


def test_no_swept_value_is_one_point() -> None:
    points = plan().points()
    assert len(points) == 1 and points[0].values == {} and points[0].scenario.seed == 1


def test_repetitions_and_seeds() -> None:
    p = plan(seed=7, link={"rate": ["10Mbit", "20Mbit"]}, sweep={"repetitions": 3})
    points = p.points()
    assert len(points) == 6
    assert [pt.repetition for pt in points] == [0, 1, 2, 0, 1, 2]
    seeds = [pt.scenario.seed for pt in points]
    assert seeds[:3] == [7, derive_seed(7, 1), derive_seed(7, 2)]
    assert seeds[:3] == seeds[3:]  # the same seeds at every point: paired comparisons
    assert len(set(seeds[:3])) == 3
    assert all(0 <= s < 2**32 for s in seeds[1:3])
    assert derive_seed(7, 1) == 2963715625  # fixed forever: stored runs are keyed by their seeds


def test_same_plan_same_points() -> None:
    path = ROOT / "scenarios" / "sweeps" / "buffers.toml"
    a, b = load_plan(path).points(), load_plan(path).points()
    assert [(p.scenario.scenario_hash, p.scenario.seed, p.values, p.repetition) for p in a] == [
        (p.scenario.scenario_hash, p.scenario.seed, p.values, p.repetition) for p in b
    ]


def test_example_plans_load() -> None:
    buffers = load_plan(ROOT / "scenarios" / "sweeps" / "buffers.toml")
    assert (buffers.name, buffers.point_count, buffers.repetitions) == ("buffers", 32, 3)
    sharing = load_plan(ROOT / "scenarios" / "sweeps" / "sharing.toml")
    assert (sharing.name, sharing.point_count, sharing.repetitions) == ("sharing", 36, 2)
    rates_rtts = {(p.values["link.rate"], p.values["link.rtt"]) for p in sharing.points()}
    assert rates_rtts == {("10Mbit", "10ms"), ("100Mbit", "40ms"), ("1Gbit", "160ms")}


def test_name_defaults_to_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "my-plan.toml"
    path.write_text('duration = "1s"\n[link]\nrate = "1Mbit"\nrtt = "1ms"\n[[flows]]\ncca = "reno"\n')
    assert load_plan(path).name == "my-plan"
    assert load_plan(path, name="other").name == "other"


def test_zip_varies_keys_together() -> None:
    p = plan(
        link={"rate": ["10Mbit", "20Mbit", "40Mbit"], "rtt": ["10ms", "20ms", "40ms"]},
        flows=[{"cca": ["bbr", "cubic"]}],
        sweep={"zip": [["link.rate", "link.rtt"]]},
    )
    assert [a.keys for a in p.axes] == [("link.rate", "link.rtt"), ("flows[0].cca",)]
    pairs = [(pt.values["link.rate"], pt.values["link.rtt"]) for pt in p.points()]
    assert pairs == [("10Mbit", "10ms")] * 2 + [("20Mbit", "20ms")] * 2 + [("40Mbit", "40ms")] * 2


def test_vary_table_by_dotted_key() -> None:
    p = plan(
        flows=[{"cca": "cubic"}, {}],
        sweep={"vary": {"flows[1].cca": ["bbr", "bbr3"], "flows[0].params.beta": [600, 717], "tcp.mss": [1448, 8948]}},
    )
    points = p.points()
    assert len(points) == 8
    assert points[0].values == {"flows[1].cca": "bbr", "flows[0].params.beta": 600, "tcp.mss": 1448}
    assert points[0].scenario.flows[1].cca == "bbr"
    assert points[0].scenario.flows[0].params == {"beta": 600}
    assert points[-1].scenario.tcp.mss == 8948


def test_ranges_in_place() -> None:
    p = plan(
        link={
            "rate": {"from": 10, "to": 30, "step": 10, "unit": "Mbit"},
            "loss": {"from": 0.0, "to": 0.02, "step": 0.01},
        },
        tcp={"init_cwnd": {"from": 2, "to": 8, "factor": 2}},
    )
    assert [a.steps for a in p.axes] == [
        (("10Mbit",), ("20Mbit",), ("30Mbit",)),
        ((0.0,), (0.01,), (0.02,)),
        ((2,), (4,), (8,)),
    ]
    assert {pt.scenario.tcp.init_cwnd for pt in p.points()} == {2, 4, 8}


@pytest.mark.parametrize(
    "spec, values",
    [
        ({"from": 10, "to": 100, "step": 10, "unit": "Mbit"}, [f"{r}Mbit" for r in range(10, 101, 10)]),
        ({"from": 10, "to": 95, "step": 10}, [10, 20, 30, 40, 50, 60, 70, 80, 90]),
        ({"from": 0, "to": 0.3, "step": 0.1}, [0.0, 0.1, 0.2, 0.3]),
        ({"from": 100, "to": 10, "step": -30}, [100, 70, 40, 10]),
        ({"from": 5, "to": 5, "step": 1}, [5]),
        (
            {"from": 10, "to": 1000, "count": 5, "scale": "log", "unit": "Mbit"},
            ["10Mbit", "31.62Mbit", "100Mbit", "316.2Mbit", "1000Mbit"],
        ),
        ({"from": 10, "to": 1000, "count": 3, "scale": "log"}, [10, 100, 1000]),
        ({"from": 0.0, "to": 1, "count": 4}, [0.0, 0.3333, 0.6667, 1.0]),
        ({"from": 0.0, "to": 1, "count": 4, "digits": 2}, [0.0, 0.33, 0.67, 1.0]),
        (
            {"from": 1, "to": 64, "factor": 2, "unit": "bdp"},
            ["1bdp", "2bdp", "4bdp", "8bdp", "16bdp", "32bdp", "64bdp"],
        ),
        ({"from": 8, "to": 1, "factor": 0.5}, [8.0, 4.0, 2.0, 1.0]),
        ({"from": 0.5, "to": 2, "step": 0.5, "unit": "%"}, ["0.5%", "1%", "1.5%", "2%"]),
    ],
)
def test_range_values(spec: dict[str, Any], values: list[Any]) -> None:
    got = expand_range("x", spec)
    assert got == values
    assert [type(v) for v in got] == [type(v) for v in values]


PLAN_ERRORS: dict[str, tuple[dict[str, Any], str, str]] = {
    "empty-list": (dict(link={"rate": []}), "link.rate", "empty list"),
    "duplicate": (dict(link={"rate": ["1Mbit", "1Mbit"]}), "link.rate", "listed twice"),
    "nested-list": (dict(link={"rate": [["1Mbit"]]}), "link.rate", "plain values"),
    "step-zero": (dict(link={"rate": {"from": 1, "to": 5, "step": 0}}), "link.rate", "must not be 0"),
    "wrong-direction": (dict(link={"rate": {"from": 1, "to": 5, "step": -1}}), "link.rate", "use step = 1"),
    "factor-wrong-direction": (dict(link={"rate": {"from": 1, "to": 5, "factor": 0.5}}), "link.rate", "use factor = 2"),
    "factor-one": (dict(link={"rate": {"from": 1, "to": 5, "factor": 1}}), "link.rate", "not 1"),
    "unknown-range-key": (dict(link={"rate": {"from": 1, "to": 5, "stride": 1}}), "link.rate", "'stride'"),
    "two-shapes": (
        dict(link={"rate": {"from": 1, "to": 5, "step": 1, "count": 3}}),
        "link.rate",
        "exactly one of step, count or factor",
    ),
    "no-to": (dict(link={"rate": {"from": 1, "step": 1}}), "link.rate", "needs from and to"),
    "unit-in-from": (dict(link={"rate": {"from": "1Mbit", "to": 5, "step": 1}}), "link.rate", "unit"),
    "log-from-zero": (dict(link={"loss": {"from": 0, "to": 1, "count": 3, "scale": "log"}}), "link.loss", "above 0"),
    "rounding-collides": (dict(tcp={"mss": {"from": 1000, "to": 1002, "count": 5}}), "tcp.mss", "twice"),
    "too-many": (dict(seed={"from": 0, "to": 10**6, "step": 1}), "seed", "more than 100000"),
    "list-for-table": (dict(link=None, tcp=["a"]), "tcp", "cannot be swept as a whole"),
    "flows-not-tables": (dict(flows=["bbr", "cubic"]), "flows", "array of tables"),
    "unknown-sweep-key": (dict(sweep={"colour": 1}), "sweep.colour", "allowed keys: name, repetitions"),
    "reps-zero": (dict(sweep={"repetitions": 0}), "sweep.repetitions", "from 1 to"),
    "name-empty": (dict(sweep={"name": " "}), "sweep.name", "non-empty"),
    "zip-unswept": (
        dict(link={"rate": ["1Mbit", "2Mbit"]}, sweep={"zip": [["link.rate", "link.rtt"]]}),
        "sweep.zip",
        "'link.rtt' is not swept",
    ),
    "zip-lengths": (
        dict(
            link={"rate": ["1Mbit", "2Mbit"], "rtt": ["1ms", "2ms", "3ms"]}, sweep={"zip": [["link.rate", "link.rtt"]]}
        ),
        "sweep.zip",
        "link.rtt has 3",
    ),
    "zip-twice": (
        dict(
            link={"rate": ["1Mbit", "2Mbit"], "rtt": ["1ms", "2ms"], "loss": [0.0, 0.1]},
            sweep={"zip": [["link.rate", "link.rtt"], ["link.rate", "link.loss"]]},
        ),
        "sweep.zip",
        "named twice",
    ),
    "vary-and-in-place": (
        dict(link={"rate": ["1Mbit", "2Mbit"]}, sweep={"vary": {"link.rate": ["3Mbit"]}}),
        "link.rate",
        "swept twice",
    ),
    "vary-and-fixed": (dict(sweep={"vary": {"link.rate": ["3Mbit"]}}), "link.rate", "give it in one place"),
    "vary-table": (dict(sweep={"vary": {"link": ["3Mbit"]}}), "sweep.vary.link", "names a table"),
    "vary-missing-flow": (
        dict(sweep={"vary": {"flows[1].cca": ["bbr"]}}),
        "sweep.vary.flows[1].cca",
        "the plan has 1 [[flows]] entry",
    ),
    "vary-bad-key": (dict(sweep={"vary": {"link..rate": ["bbr"]}}), "sweep.vary.link..rate", "dotted key"),
    "vary-scalar": (dict(sweep={"vary": {"link.loss": 0.1}}), "sweep.vary.link.loss", "a list of values or a range"),
    "bad-point": (
        dict(link={"rate": ["10Mbit", "0Mbit"]}),
        "link.rate",
        "must be positive (point 2 of 2: link.rate=0Mbit)",
    ),
    "unknown-swept-key": (dict(link={"jitter": [1, 2]}), "link.jitter", "unknown key"),
    "bad-cca": (dict(flows=[{"cca": ["bbr", "copa"]}]), "flows[0].cca", "unknown algorithm 'copa'"),
    "bad-param-in-one-point": (
        dict(flows=[{"cca": ["cubic", "reno"], "params": {"beta": 700}}]),
        "flows[0].params.beta",
        "flows[0].cca=reno",
    ),
}


@pytest.mark.parametrize("name", sorted(PLAN_ERRORS))
def test_plan_errors(name: str) -> None:
    given, field, message = PLAN_ERRORS[name]
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    with pytest.raises(ScenarioError) as info:
        plan(**changes)
    assert info.value.field == field
    assert message in info.value.message
