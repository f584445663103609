"""One stored run, and the id that names it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional

RUN_ID_CHARS = 20


def run_id_for(scenario_hash: str, seed: int, engine: str, code_version: str) -> str:
    """The stable id of a run: equal keys give equal ids, and nothing else does in
    practice (80 bits of sha256)."""
    key = f"{scenario_hash}\0{seed}\0{engine}\0{code_version}"
    return hashlib.sha256(key.encode()).hexdigest()[:RUN_ID_CHARS]


def point_key(point: Mapping[str, Any]) -> str:
    """Canonical JSON of a point's swept values (sorted keys): equal points, equal keys."""
    return json.dumps(point, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class RunRecord:
    """A complete run as the store holds it.

    ``point`` holds the swept values by dotted key as the plan spelled them
    (``{"link.rate": "50Mbit", "flows[0].cca": "bbr"}``); ``scenario`` is the effective
    scenario (``Scenario.to_dict()``) and ``summary`` the summary schema of docs/output.md.
    """

    run_id: str
    scenario_hash: str
    seed: int
    engine: str
    code_version: str
    sweep: Optional[str]
    point: dict[str, Any]
    repetition: int
    scenario: dict[str, Any]
    summary: dict[str, Any]
    series_dir: Optional[str]

    def expected_run_id(self) -> str:
        return run_id_for(self.scenario_hash, self.seed, self.engine, self.code_version)
