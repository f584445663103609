"""The simulator engine: hands the resolved scenario to the Rust core."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional, Union

from .. import _core
from ..errors import ScenarioError
from ..result import Result, table_frame
from ..scenario import Scenario

ScenarioLike = Union[Scenario, Mapping[str, Any], str, "os.PathLike[str]"]


def capture_dir(sc: Scenario, default: Union[str, "os.PathLike[str]", None]) -> Optional[str]:
    """Where a scenario's ``[capture]`` files go: its ``dir``, else ``default`` (the run's
    output directory); None without a ``[capture]`` table. ScenarioError when neither
    names a directory."""
    if sc.capture is None:
        return None
    where = sc.capture.dir if sc.capture.dir is not None else default
    if where is None:
        raise ScenarioError("capture.dir", "packet capture needs a directory: set [capture] dir, or give --out DIR "
                            "(the files are DIR/capture-<point>.pcap)")
    return os.fspath(where)


def run(scenario: ScenarioLike, capture_to: Union[str, "os.PathLike[str]", None] = None) -> Result:
    """Run a scenario (a Scenario, a TOML-shaped mapping or a path to a TOML file).

    With a ``[capture]`` table, pcap files are written to its ``dir`` or, without one,
    to ``capture_to``. The GIL is released while the simulator runs, so runs in several
    threads proceed in parallel. Raises ScenarioError for a scenario the simulator does
    not accept.
    """
    sc = Scenario.load(scenario)
    where = capture_dir(sc, capture_to)
    capture = None if where is None or sc.capture is None else json.dumps(sc.capture.to_core(where))
    try:
        summary_json, flows, link = _core.run(sc.to_json(), capture)
    except ScenarioError as e:
        raise ScenarioError(sc._entry_field(e.field), e.message) from None
    summary = json.loads(summary_json)
    summary["scenario_hash"] = sc.scenario_hash
    return Result(summary=summary, flows=table_frame(flows), link=table_frame(link), scenario=sc)
