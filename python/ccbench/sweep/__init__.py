"""Sweeps: a plan (a scenario whose values may be lists or ranges) expanded to points,
run in parallel locally or on a Dask cluster, each run stored once in a results store.

>>> from ccbench.sweep import load_plan, execute
>>> plan = load_plan("scenarios/sweeps/buffers.toml")     # doctest: +SKIP
>>> records = execute(plan, "ccbench-results")             # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .runner import Failure, SweepFailed, SweepReport, execute, run_sweep
    from .plan import Axis, Plan, Point, derive_seed, load_plan, plan_from_dict

# Imported on first use, so that the command line (which registers the sweep commands)
# does not load DuckDB and Dask for every command.
_EXPORTS = {
    "Failure": "runner",
    "SweepFailed": "runner",
    "SweepReport": "runner",
    "execute": "runner",
    "run_sweep": "runner",
    "Axis": "plan",
    "Plan": "plan",
    "Point": "plan",
    "derive_seed": "plan",
    "load_plan": "plan",
    "plan_from_dict": "plan",
}
__all__ = [
    "Axis",
    "Failure",
    "Plan",
    "Point",
    "SweepFailed",
    "SweepReport",
    "derive_seed",
    "execute",
    "load_plan",
    "plan_from_dict",
    "run_sweep",
]
assert __all__ == sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
