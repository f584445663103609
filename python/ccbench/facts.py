"""The scenario facts the simulator owns (``ccbench_sim::config::schema_facts``), read
once: every table's defaults, the integer ranges with the words its errors use, the AQMs
and their parameters, the CPU costs by ``[host.cost]`` key and the CPU presets. The
schema (``ccbench.scenario``) and the unit parsers take these numbers and names from here
and repeat none of them.
"""

from __future__ import annotations

import json
from typing import Any

from . import _core

FACTS: dict[str, Any] = json.loads(_core.schema_facts())


def default(table: str, name: str) -> Any:
    """The simulator's default of ``name`` in ``table`` (``tcp``, ``flow``, ``link``,
    ``host``, or ``""`` for the scenario's own keys)."""
    defaults = FACTS["defaults"]
    return (defaults[table] if table else defaults)[name]


def int_range(key: str) -> tuple[int, int, str]:
    """The inclusive range of the integer ``key`` (``tcp.mss``, ``host.cost.per_ack_ns``)
    and what it allows, worded as the simulator's errors word it."""
    r = FACTS["ranges"][key]
    return r["lo"], r["hi"], r["allowed"]


AQMS: tuple[str, ...] = tuple(a["name"] for a in FACTS["aqms"])
# {aqm: {parameter field: default}}; drop-tail has none (its limit is link.buffer).
AQM_PARAMS: dict[str, dict[str, Any]] = {a["name"]: a["params"] for a in FACTS["aqms"] if a["params"] is not None}
# Each CPU cost: {"key", "field", "unit" ("ns" or "ps"), "about", "example"}, in order.
CPU_COSTS: tuple[dict[str, str], ...] = tuple(FACTS["cpu_costs"])
CPU_PRESETS: dict[str, dict[str, int]] = {p["name"]: p["costs"] for p in FACTS["cpu_presets"]}
CPU_PRESET_WHEN_RESERVED: str = FACTS["cpu_preset_when_reserved"]
MAX_BDP_MULTIPLE: float = FACTS["limits"]["max_bdp_multiple"]
