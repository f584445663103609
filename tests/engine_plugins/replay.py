"""A third engine for the tests: the simulator under another name, keyed by its own
code version and refusing the host CPU model. It shows what adding an engine takes:
this module and one entry in ``ccbench.engines.ENGINES``."""

from __future__ import annotations

from typing import Optional

from ccbench.engines.base import Engine, PathLike, ScenarioLike, Unsupported
from ccbench.engines.sim import ENGINE as SIM
from ccbench.result import Result


class ReplayEngine(Engine):
    name = "replay"
    status = "replaying…"
    unsupported = (Unsupported("host", "has no CPU model"),)

    def run(self, scenario: ScenarioLike, capture_to: Optional[PathLike] = None) -> Result:
        sc = self.check(self.load(scenario))
        result = SIM.run(sc, capture_to)
        result.summary["engine"] = self.name
        return result

    def code_version(self) -> str:
        return "replay-" + SIM.code_version()


ENGINE = ReplayEngine()
