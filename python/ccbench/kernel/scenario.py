"""Scenarios for the kernel engine.

The scenario schema accepts the algorithms the simulator implements. The kernel engine
can also run any algorithm the kernel offers (``bbr`` before the simulator has it, for
instance), so these loaders validate such a flow with a stand-in algorithm and put the
real name back afterwards; whether the kernel has it is checked when the run is planned.
Everything else is validated exactly as for the simulator.
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any, Mapping, Optional, Sequence, Union

from ..errors import ScenarioError
from ..scenario import Scenario, algorithms, read_toml

# Validates a flow whose algorithm the simulator does not know (it has no parameters).
STAND_IN = "reno"
_NAME = re.compile(r"[a-z0-9_]+")

ScenarioLike = Union[Scenario, Mapping[str, Any], str, "os.PathLike[str]"]


def _foreign(name: object) -> Optional[str]:
    """The normalised name if the simulator does not know it but the kernel might."""
    if not isinstance(name, str):
        return None
    n = name.strip().lower()
    return n if _NAME.fullmatch(n) and n not in algorithms() else None


def _stand_in(doc: dict[str, Any]) -> dict[int, str]:
    """Replace foreign algorithm names in ``doc["flows"]`` (in place); returns them by
    the index of their entry among the TCP entries (the loaded scenario's ``flows``: UDP
    entries go to its ``udp``)."""
    names: dict[int, str] = {}
    entries = doc.get("flows")
    if not isinstance(entries, list):
        return names
    tcp = [(i, e) for i, e in enumerate(entries) if not (isinstance(e, dict) and e.get("kind") == "udp")]
    for k, (i, entry) in enumerate(tcp):
        if not isinstance(entry, dict):
            continue
        name = _foreign(entry.get("cca"))
        if name is None:
            continue
        if entry.get("params"):
            raise ScenarioError(
                f"flows[{i}].params",
                "the kernel engine cannot set per-flow algorithm "
                "parameters (kernel module parameters are global); remove params",
            )
        names[k] = name
        entry["cca"] = STAND_IN
    return names


def _restore(sc: Scenario, names: dict[int, str]) -> Scenario:
    if not names:
        return sc
    flows = [f.model_copy(update={"cca": names[i]}) if i in names else f for i, f in enumerate(sc.flows)]
    return sc.model_copy(update={"flows": flows})


def from_dict(data: Mapping[str, Any]) -> Scenario:
    doc = copy.deepcopy(dict(data))
    names = _stand_in(doc)
    return _restore(Scenario.from_dict(doc), names)


def load(scenario: ScenarioLike) -> Scenario:
    """A Scenario from a Scenario, a TOML-shaped mapping or a path to a TOML file."""
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, Mapping):
        return from_dict(scenario)
    if isinstance(scenario, (str, os.PathLike)):
        return from_dict(read_toml(scenario))
    raise TypeError(f"expected a Scenario, a mapping or a path, got {type(scenario).__name__}")


def from_flags(
    *, base: Optional[Mapping[str, Any]] = None, cca: Union[str, Sequence[str], None] = None, **flags: Any
) -> Scenario:
    """:meth:`Scenario.from_flags` that also accepts kernel-only algorithm names."""
    doc = None if base is None else copy.deepcopy(dict(base))
    if cca is not None:
        wanted = [c.strip() for c in cca.split(",")] if isinstance(cca, str) else list(cca)
        wanted = [c for c in wanted if c]
        names = {i: n for i, c in enumerate(wanted) if (n := _foreign(c)) is not None}
        stand_ins = [STAND_IN if i in names else c for i, c in enumerate(wanted)]
        return _restore(Scenario.from_flags(base=doc, cca=stand_ins, **flags), names)
    if doc is None:
        return Scenario.from_flags(**flags)
    names = _stand_in(doc)
    return _restore(Scenario.from_flags(base=doc, **flags), names)
