"""ccbench: a TCP congestion-control laboratory.

>>> import ccbench
>>> result = ccbench.run("scenarios/example.toml")      # doctest: +SKIP
>>> result.summary["jain_index"], result.flows.head()   # doctest: +SKIP
"""

from __future__ import annotations

from .errors import ScenarioError  # first: the compiled core raises this class
from .scenario import Scenario
from .result import Result
from .engines.sim import run

__all__ = ["Result", "Scenario", "ScenarioError", "run", "__version__"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ccbench")
    except PackageNotFoundError:  # running from a source tree
        from . import _core

        return _core.version()


__version__ = _version()
