"""ccbench: a TCP congestion-control laboratory.

>>> import ccbench
>>> result = ccbench.run("scenarios/example.toml")      # doctest: +SKIP
>>> result.summary["jain_index"], result.flows.head()   # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Union

from .errors import ScenarioError  # first: the compiled core raises this class
from .engines import DEFAULT as DEFAULT_ENGINE
from .scenario import Scenario
from .result import Result

__all__ = ["Result", "Scenario", "ScenarioError", "run", "__version__"]


def run(scenario: Union[Scenario, Mapping[str, Any], str, "os.PathLike[str]"],
        capture_to: Union[str, "os.PathLike[str]", None] = None, *, engine: str = DEFAULT_ENGINE,
        **engine_options: Any) -> Result:
    """Run a scenario (a Scenario, a TOML-shaped mapping or a path to a TOML file) on
    ``engine`` (``ccbench.engines.names()``; default the simulator), configured with
    ``engine_options`` (the VM engine's ``guest_kernel`` and ``vcpus``), and return its
    Result. With a ``[capture]`` table, pcap files go to its ``dir`` or else to
    ``capture_to``."""
    from .engines import get

    return get(engine, "engine", **engine_options).run(scenario, capture_to)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ccbench")
    except PackageNotFoundError:  # running from a source tree
        from . import _core

        return _core.version()


__version__ = _version()
