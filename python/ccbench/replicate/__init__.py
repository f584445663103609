"""Replications of published studies: ``ccbench replicate NAME``.

A study is a module in this package that registers a function with :func:`study`::

    @study("cao2019", summary="When to use and when not to use BBR (IMC 2019)")
    def run(quick: bool, out: Path, workers: int | None, store: Store | None, console: Console) -> None: ...

A study that can also run on another engine registers a second function for it
(``@study("elmenhorst2026", summary=..., engine="vm")``), taking the same arguments;
``ccbench replicate NAME --engine ENGINE`` picks it.

The function runs the study's experiments (through ``ccbench.sweep.execute``, into the
results store), prints the study's findings next to ccbench's with
:func:`ccbench.replicate.compare.print_comparison`, and writes its figures, the
comparison (CSV and Markdown) and an HTML report into ``out``. Every module here is
imported when the registry is first read, so adding a file is enough to add a study.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from .. import engines
from ..errors import ScenarioError

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import Store

StudyRun = Callable[[bool, Path, Optional[int], Optional["Store"], "Console"], None]
# Modules of this package that are helpers, not studies.
HELPERS = frozenset({"compare", "command"})


@dataclass(frozen=True)
class Study:
    name: str
    summary: str
    # The study's run function per engine it can run on (the simulator's always).
    runs: dict[str, StudyRun]

    @property
    def run(self) -> StudyRun:
        return self.runs[engines.DEFAULT]

    def on(self, engine: str) -> StudyRun:
        """The run function for ``engine``; ScenarioError naming the engines it has."""
        if engine not in self.runs:
            raise ScenarioError("--engine", f"study {self.name!r} runs on {', '.join(self.runs)}, not {engine!r}")
        return self.runs[engine]


_STUDIES: dict[str, Study] = {}
_discovered = False


def study(name: str, summary: str, engine: str = engines.DEFAULT) -> Callable[[StudyRun], StudyRun]:
    """Register ``run`` as the replication of study ``name`` on ``engine``."""

    def register(run: StudyRun) -> StudyRun:
        known = _STUDIES.get(name)
        if known is not None and known.runs.get(engine, run) is not run:
            raise ValueError(f"study {name!r} is registered twice")
        runs = {**(known.runs if known is not None else {}), engine: run}
        _STUDIES[name] = Study(name, known.summary if known is not None else summary, runs)
        return run

    return register


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_") and module.name not in HELPERS:
            importlib.import_module(f"{__name__}.{module.name}")


def studies() -> dict[str, Study]:
    """Every registered study, by name."""
    _discover()
    return dict(sorted(_STUDIES.items()))


def get(name: str, field: str = "NAME") -> Study:
    """The study called ``name``; ScenarioError listing the available ones otherwise."""
    known = studies()
    if name not in known:
        raise ScenarioError(field, f"unknown study {name!r}; available: {', '.join(known) or '(none)'}")
    return known[name]


__all__ = ["Study", "StudyRun", "get", "studies", "study"]
