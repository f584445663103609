"""The simulator engine: hands the resolved scenario to the Rust core."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Union

from .. import _core
from ..errors import ScenarioError
from ..result import Result, table_frame
from ..scenario import Scenario

ScenarioLike = Union[Scenario, Mapping[str, Any], str, "os.PathLike[str]"]


def run(scenario: ScenarioLike) -> Result:
    """Run a scenario (a Scenario, a TOML-shaped mapping or a path to a TOML file).

    The GIL is released while the simulator runs, so runs in several threads proceed in
    parallel. Raises ScenarioError for a scenario the simulator does not accept.
    """
    sc = Scenario.load(scenario)
    try:
        summary_json, flows, link = _core.run(sc.to_json())
    except ScenarioError as e:
        raise ScenarioError(sc._entry_field(e.field), e.message) from None
    summary = json.loads(summary_json)
    summary["scenario_hash"] = sc.scenario_hash
    return Result(summary=summary, flows=table_frame(flows), link=table_frame(link), scenario=sc)
