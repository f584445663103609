"""Refuse, before it starts, a run that would exceed the machine.

The simulator estimates a scenario's data packets, time-series rows, peak memory and
wall time (``ccbench_sim::config::Scenario::estimate``). A run whose memory would pass
half of this machine's RAM, or whose wall time would pass :data:`MAX_WALL_SECONDS`, is
refused with the estimate and the way to run it anyway (``--allow-large`` or
``CCBENCH_ALLOW_LARGE=1``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Optional

from . import _core
from .errors import ScenarioError

MAX_WALL_SECONDS = 30 * 60
MEMORY_SHARE = 0.5
ALLOW_ENV = "CCBENCH_ALLOW_LARGE"


@dataclass(frozen=True)
class Estimate:
    packets: float
    series_rows: float
    memory_bytes: float
    wall_seconds: float

    def describe(self) -> str:
        return (
            f"about {self.packets:.3g} packets, {_bytes(self.memory_bytes)} of memory "
            f"({self.series_rows:.3g} time-series rows) and {_duration(self.wall_seconds)} of simulation"
        )


def estimate(scenario: "object") -> Estimate:
    """The simulator's estimate for a :class:`~ccbench.scenario.Scenario`."""
    return Estimate(**json.loads(_core.estimate(scenario.to_json())))  # type: ignore[attr-defined]


def physical_memory() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check(scenario: "object", allow_large: bool = False, flag: Optional[str] = "--allow-large") -> Estimate:
    """The estimate; a ScenarioError if the run is beyond the machine and not allowed.
    ``flag`` is the command's override, if it has one besides the environment variable."""
    est = estimate(scenario)
    if allow_large or os.environ.get(ALLOW_ENV, "") not in ("", "0"):
        return est
    ram = physical_memory()
    over = []
    if ram is not None and est.memory_bytes > MEMORY_SHARE * ram:
        over.append(f"more than half of this machine's {_bytes(ram)} of memory")
    if est.wall_seconds > MAX_WALL_SECONDS:
        over.append(f"more than {_duration(MAX_WALL_SECONDS)}")
    if over:
        raise ScenarioError(
            "scenario",
            f"too large to run here: {est.describe()}; that is {' and '.join(over)}. "
            f"Shorten duration, lower the rate, raise interval, or "
            + (f"pass {flag} ({ALLOW_ENV}=1)" if flag else f"set {ALLOW_ENV}=1")
            + " to run it anyway",
        )
    return est


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} TB"  # pragma: no cover


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.3g} s"
    if s < 7200:
        return f"{s / 60:.3g} min"
    return f"{s / 3600:.3g} h"
