"""The engines that run a scenario, by name. Each is one module (or package) here
implementing :class:`ccbench.engines.base.Engine`; this registry is the only place that
lists them, and the workflows an engine brings besides its runs (the VM engine's host
calibration and CPU grid). Modules are imported when an engine or a workflow is first
asked for, so that listing the names (for ``--engine``'s choices) costs nothing."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import ScenarioError

if TYPE_CHECKING:
    from .base import Engine

DEFAULT = "sim"

# name: (module, one line for --help)
ENGINES: dict[str, tuple[str, str]] = {
    "sim": ("ccbench.engines.sim", "the packet-level simulator"),
    "kernel": (
        "ccbench.engines.kernel",
        "the real Linux stack in network namespaces (root; one run at a time per host)",
    ),
    "vm": (
        "ccbench.engines.vm",
        "the senders in a QEMU guest running a Debian kernel, its vCPUs under "
        "SCHED_DEADLINE with [host] cpu_share (root; one run at a time per host)",
    ),
}


# Workflows an engine registers: name: (engine, its module). Each module has a
# ``command(**options)`` that the command line calls.
WORKFLOWS: dict[str, tuple[str, str]] = {
    "calibrate-host": ("vm", "ccbench.engines.vm.calibrate"),
    "validate-cpu": ("vm", "ccbench.engines.vm.validate_cpu"),
}


def names() -> tuple[str, ...]:
    return tuple(ENGINES)


def help_text() -> str:
    """``--engine``'s help: every engine with its line."""
    return "; ".join(f"{name}: {line}" for name, (_, line) in ENGINES.items()) + "."


def get(name: str, field: str = "--engine", **options: Any) -> "Engine":
    """The engine called ``name``, configured with ``options`` (None values are left
    out); ScenarioError (on ``field``) for an unknown name or an option it lacks."""
    if name not in ENGINES:
        raise ScenarioError(field, f"unknown engine {name!r}; allowed: {', '.join(ENGINES)}")
    engine: Engine = importlib.import_module(ENGINES[name][0]).ENGINE
    given = {k: v for k, v in options.items() if v is not None}
    return engine.configure(**given) if given else engine


def use_by_default(name: str, **options: Any) -> None:
    """Options (None values left out) that every run of engine ``name`` in this process
    and its workers takes: ``Engine.use_by_default``."""
    given = {k: v for k, v in options.items() if v is not None}
    if given:
        get(name).use_by_default(**given)


def workflow(name: str) -> ModuleType:
    """The module of the workflow ``name`` (``calibrate-host``, ``validate-cpu``)."""
    return importlib.import_module(WORKFLOWS[name][1])
