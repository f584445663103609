"""The kernel engine: a scenario on the real Linux TCP stack.

One sender and one receiver network namespace per run, joined by a link emulator in
Rust (the simulator's bottleneck and delay lines driven by the monotonic clock) over
two TUN devices; real sockets with the congestion control set per socket. Needs root.
See ``ccbench.kernel`` for the parts and ``docs/validation.md`` for how it works.
"""

from __future__ import annotations

import os
import platform
from typing import TYPE_CHECKING, Any, Optional

from ..result import Result, table_frame
from .base import Engine, PathLike, ScenarioLike, Unsupported, capture_dir

if TYPE_CHECKING:
    from ..scenario import Scenario

SIMULATOR_OPTION = (
    "is a simulator option; the kernel engine runs Linux's own TCP on this machine's CPU (use --engine sim)"
)
# The simulator's own knobs, which a real Linux sender has no way to honour.
SIMULATOR_KNOBS = tuple(
    Unsupported(f"flows[].{knob}", SIMULATOR_OPTION)
    for knob in ("pacing_stride", "fixed_cwnd", "fixed_pacing_rate_bps", "freeze_cc")
)


class KernelEngine(Engine):
    name = "kernel"
    status = "running on the kernel…"
    needs_host_lock = True
    unsupported = (
        Unsupported("host", SIMULATOR_OPTION),
        *SIMULATOR_KNOBS,
    )  # what has a kernel counterpart but no way to set it here is refused by kernel.plan.make_plan

    def load(self, scenario: ScenarioLike) -> "Scenario":
        """Also accepts any algorithm name the kernel might offer (checked at run time)."""
        from ..kernel.scenario import load

        return load(scenario)

    def from_flags(self, **flags: Any) -> "Scenario":
        from ..kernel.scenario import from_flags

        return from_flags(**flags)

    def check(self, scenario: "Scenario") -> "Scenario":
        """Refuse (KernelEngineError, a ScenarioError) unless this machine can run
        ``scenario`` on the kernel; returns the scenario as it would run (``tcp.hz`` is
        the kernel's)."""
        from ..kernel import host
        from ..kernel.plan import make_plan

        super().check(scenario)
        host.require_root()
        return make_plan(scenario, host.facts()).scenario

    def run(self, scenario: ScenarioLike, capture_to: Optional[PathLike] = None) -> Result:
        """Run a scenario on the kernel and return a Result in the simulator's schema.

        Raises KernelEngineError (a ScenarioError) when the run cannot be done here, and
        KernelRunError when it fails while running; either way nothing it created
        remains.
        """
        from ..kernel import host
        from ..kernel.plan import make_plan
        from ..kernel.results import assemble
        from ..kernel.session import run_plan

        sc = self.load(scenario)
        super().check(sc)
        host.require_root()
        facts = host.facts()
        plan = make_plan(sc, facts)
        where = capture_dir(sc, capture_to)
        capture = None if where is None or sc.capture is None else sc.capture.to_core(os.path.abspath(where))
        raw = run_plan(plan, capture)
        summary, flows, link, connections = assemble(plan, raw, facts, self.name)
        return Result(
            summary=summary,
            flows=table_frame(flows),
            link=table_frame(link),
            scenario=plan.scenario,
            connections=table_frame(connections),
        )

    def code_version(self) -> str:
        """The simulator core (the emulator is built from it), the engine's Python side
        and the running kernel."""
        from ..store.version import core_version, package_digest

        return f"{core_version()}/py-{package_digest('kernel')}/linux-{platform.release()}"


ENGINE = KernelEngine()
run = ENGINE.run
check = ENGINE.check
