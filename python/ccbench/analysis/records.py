"""What the analysis reads: run records, as the results store returns them.

The analysis only needs a record's fields, so it accepts anything shaped like
``ccbench.store.RunRecord``; :func:`record_from_result` builds one from a finished
:class:`ccbench.Result` for runs that never went through the store (``ccbench recommend``,
tests).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Protocol

from .. import engines
from ..result import Result
from ..store.records import RunRecord


class RecordLike(Protocol):
    """The fields of a stored run the analysis reads."""

    @property
    def run_id(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def engine(self) -> str: ...
    @property
    def sweep(self) -> Optional[str]: ...
    @property
    def point(self) -> Mapping[str, Any]: ...
    @property
    def repetition(self) -> int: ...
    @property
    def scenario(self) -> Mapping[str, Any]: ...
    @property
    def summary(self) -> Mapping[str, Any]: ...


def record_from_result(
    result: Result, point: Optional[Mapping[str, Any]] = None, repetition: int = 0, sweep: Optional[str] = None
) -> RunRecord:
    """A record of a run made with ``ccbench.run``; ``point`` names what was varied."""
    summary = result.summary
    scenario_hash = str(summary.get("scenario_hash", result.scenario.scenario_hash))
    seed = int(summary.get("seed", result.scenario.seed))
    return RunRecord(
        run_id=f"{scenario_hash[:16]}-{seed}",
        scenario_hash=scenario_hash,
        seed=seed,
        engine=str(summary.get("engine", engines.DEFAULT)),
        code_version=str(summary.get("version", "")),
        sweep=sweep,
        point=dict(point or {}),
        repetition=repetition,
        scenario=result.scenario.to_dict(),
        summary=summary,
        series_dir=None,
    )


def sweep_records(name: str, store_path: Optional[str] = None, field_name: str = "--sweep") -> list[Any]:
    """The records of sweep ``name`` in the results store (default ``./ccbench-results``).

    Raises ScenarioError naming ``field_name`` for an unknown or empty sweep."""
    from ..errors import ScenarioError
    from ..store import open_store

    store = open_store(store_path, create=False)
    records = list(store.records(name))
    if not records:
        known = sorted(store.sweeps())
        allowed = (
            f"stored sweeps: {', '.join(known)}" if known else "the store holds no sweep yet; run 'ccbench sweep' first"
        )
        raise ScenarioError(field_name, f"no runs of sweep {name!r}; {allowed}")
    return records
