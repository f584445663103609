"""The kernel engine: a scenario on the real Linux TCP stack.

One sender and one receiver network namespace per run, joined by a link emulator in
Rust (the simulator's bottleneck and delay lines driven by the monotonic clock) over
two TUN devices; real sockets with the congestion control set per socket. Needs root.
See ``ccbench.kernel`` for the parts and ``docs/validation.md`` for how it works.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Union

from ..kernel import host
from ..kernel.plan import make_plan
from ..kernel.results import assemble
from ..kernel.scenario import load
from ..kernel.session import run_plan
from ..result import Result, table_frame
from ..scenario import Scenario
from .sim import capture_dir

ScenarioLike = Union[Scenario, Mapping[str, Any], str, "os.PathLike[str]"]


def check(scenario: ScenarioLike) -> Scenario:
    """Refuse (KernelEngineError) unless this machine can run ``scenario`` on the
    kernel; returns the scenario as it would run (``tcp.hz`` is the kernel's)."""
    sc = load(scenario)
    host.require_root()
    return make_plan(sc, host.facts()).scenario


def run(scenario: ScenarioLike, capture_to: Union[str, "os.PathLike[str]", None] = None) -> Result:
    """Run a scenario on the kernel and return a Result in the simulator's schema.

    With a ``[capture]`` table the emulator writes pcap files of the real packets to its
    ``dir`` or, without one, to ``capture_to``. Raises KernelEngineError (a
    ScenarioError) when the run cannot be done here, and KernelRunError when it fails
    while running; either way nothing it created remains.
    """
    sc = load(scenario)
    host.require_root()
    facts = host.facts()
    plan = make_plan(sc, facts)
    where = capture_dir(sc, capture_to)
    capture = None if where is None or sc.capture is None else sc.capture.to_core(os.path.abspath(where))
    raw = run_plan(plan, capture)
    summary, flows, link = assemble(plan, raw, facts)
    return Result(summary=summary, flows=table_frame(flows), link=table_frame(link), scenario=plan.scenario)
