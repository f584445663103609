"""Scenarios with flows going up, for the engines' tests, until the scenario schema has
``flows[].direction`` and ``[link.reverse]``.

The TOML-shaped document loads as any other (kernel-only algorithm names allowed); the
flows named go up (their ``direction``, where the engines read it), and the core JSON,
which the emulator and the summary read, carries both values as the simulator takes
them: ``FlowConfig.direction`` and ``LinkConfig.reverse`` (``rate_bps``, ``buffer``, ...).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from pydantic import PrivateAttr

from ccbench.kernel.scenario import from_dict
from ccbench.scenario import Scenario


class BothWays(Scenario):
    """A scenario whose core JSON has its flows' directions and the reverse link."""

    _reverse: Optional[dict[str, Any]] = PrivateAttr(default=None)

    def to_core(self) -> dict[str, Any]:
        core = super().to_core()
        going = [getattr(f, "direction", "down") for f in self.flows for _ in range(f.count)]
        for flow, direction in zip(core["flows"], going):
            if direction == "up":
                flow["direction"] = "up"
        if self._reverse is not None:
            core["link"]["reverse"] = self._reverse
        return core


def both_ways(doc: Mapping[str, Any], up: Sequence[int], reverse: Optional[dict[str, Any]]) -> Scenario:
    """``doc`` with the ``[[flows]]`` entries ``up`` going up and ``reverse`` (core JSON) as
    the reverse link."""
    sc = from_dict(doc)
    flows = [f.model_copy(update={"direction": "up"}) if i in up else f for i, f in enumerate(sc.flows)]
    out = BothWays.model_construct(_fields_set=sc.model_fields_set, **{**dict(sc), "flows": flows})
    out._reverse = reverse
    return out
