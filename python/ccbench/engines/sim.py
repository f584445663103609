"""The simulator engine: hands the resolved scenario to the Rust core."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Optional

from ..errors import ScenarioError
from ..result import Result, table_frame
from .base import Engine, PathLike, ScenarioLike, capture_dir

if TYPE_CHECKING:
    from ..scenario import Scenario


class SimEngine(Engine):
    name = "sim"
    status = "simulating…"

    def __init__(self, allow_large: bool = False) -> None:
        self.allow_large = allow_large

    def configure(self, *, allow_large: Optional[bool] = None, **others: Any) -> "SimEngine":
        """``allow_large``: run a scenario whose estimated memory or time is beyond this
        machine (``ccbench.resources``)."""
        super().configure(**others)
        return SimEngine(bool(allow_large))

    def check(self, scenario: "Scenario") -> "Scenario":
        """Also refuse, with the estimate, a run beyond this machine's memory or patience."""
        from ..resources import check as check_resources

        super().check(scenario)
        check_resources(scenario, self.allow_large)
        return scenario

    def run(self, scenario: ScenarioLike, capture_to: Optional[PathLike] = None) -> Result:
        """Run a scenario (a Scenario, a TOML-shaped mapping or a path to a TOML file).

        The GIL is released while the simulator runs, so runs in several threads proceed
        in parallel. Raises ScenarioError for a scenario the simulator does not accept.
        """
        from .. import _core

        sc = self.load(scenario)
        where = capture_dir(sc, capture_to)
        capture = None if where is None or sc.capture is None else json.dumps(sc.capture.to_core(where))
        try:
            summary_json, flows, link, states, connections = _core.run(sc.to_json(), capture)
        except ScenarioError as e:
            raise ScenarioError(sc._entry_field(e.field), e.message) from None
        summary = json.loads(summary_json)
        summary["scenario_hash"] = sc.scenario_hash
        _name_host_costs(summary, sc)
        _name_bpf_objects(summary)
        _name_directions(summary, sc)
        return Result(
            summary=summary,
            flows=table_frame(flows),
            link=table_frame(link),
            scenario=sc,
            states=table_frame(states),
            connections=table_frame(connections),
        )

    def code_version(self) -> str:
        from ..store.version import core_version

        return core_version()


def _name_host_costs(summary: dict[str, Any], sc: "Scenario") -> None:
    """Say in the summary whose costs a modelled sender CPU had: its preset, the costs
    the scenario set otherwise, and the preset's note."""
    if sc.host is None or not summary.get("host"):
        return
    summary["host"]["preset"] = sc.host.preset
    summary["host"]["cost_overrides"] = sc.host.overridden_costs()
    notes = sc.host.notes()
    if notes:
        summary["notes"] = notes


def _name_directions(summary: dict[str, Any], sc: "Scenario") -> None:
    """Say which way each flow went (``direction``: down or up) when the run has flows
    going up or an uplink of its own; other summaries stay as they were."""
    directions = [f.direction for f in sc.flows for _ in range(f.count)]
    if sc.link.reverse is None and "up" not in directions:
        return
    for flow, direction in zip(summary.get("flows") or [], directions):
        flow["direction"] = direction


def _name_bpf_objects(summary: dict[str, Any]) -> None:
    """Say in the summary what each BPF flow ran (``bpf``: the object, its digest, its
    map and name, what compiled it), and, in the notes, what compiled each source."""
    from ..bpf import name as bpf_name

    compiled = []
    for f in summary.get("flows") or []:
        if not bpf_name.is_bpf(str(f.get("cca", ""))):
            continue
        f["bpf"] = bpf_name.provenance(f["cca"])
        if f["bpf"]["compiled"]:
            compiled.append(f"{f['bpf']['source']}: compiled with {f['bpf']['compiled']}")
    if compiled:
        summary["notes"] = [*summary.get("notes", []), *dict.fromkeys(compiled)]


ENGINE = SimEngine()
run = ENGINE.run
