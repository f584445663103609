"""The compiled module ccbench._core."""

from __future__ import annotations

import json

import pytest

import ccbench
from ccbench import ScenarioError, _core
from ccbench.scenario import Scenario

from conftest import SHORT_TOML


def test_version_and_algorithms() -> None:
    assert isinstance(_core.version(), str) and _core.version()
    algs = _core.algorithms()
    assert isinstance(algs, list) and {"reno", "cubic"} <= set(algs)
    assert all(isinstance(a, str) and a == a.lower() for a in algs)


def test_one_exception_class() -> None:
    assert _core.ScenarioError is ccbench.ScenarioError
    assert issubclass(ScenarioError, ValueError)
    e = ScenarioError("link.rate", "must be positive")
    assert (e.field, e.message, str(e)) == ("link.rate", "must be positive", "link.rate: must be positive")


def test_core_errors_carry_field_and_message() -> None:
    with pytest.raises(ScenarioError) as info:
        _core.run("{}")
    assert info.value.field == "scenario"
    assert "seed" in info.value.message

    doc = json.loads(Scenario.from_toml(SHORT_TOML).to_json())
    doc["link"]["rate_bps"] = 0
    with pytest.raises(ScenarioError) as info:
        _core.validate(json.dumps(doc))
    assert info.value.field == "link.rate"


def test_validate_accepts_what_the_front_end_produces() -> None:
    assert _core.validate(Scenario.from_toml(SHORT_TOML).to_json()) is None


def test_unknown_json_fields_are_rejected_by_the_core() -> None:
    doc = json.loads(Scenario.from_toml(SHORT_TOML).to_json())
    doc["link"]["surprise"] = 1
    with pytest.raises(ScenarioError, match="surprise"):
        _core.validate(json.dumps(doc))
