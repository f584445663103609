"""ccbench: a TCP congestion-control laboratory.

>>> import ccbench
>>> result = ccbench.run("scenarios/example.toml")      # doctest: +SKIP
>>> result.summary["jain_index"], result.flows.head()   # doctest: +SKIP

``Scenario``, ``Result`` and ``__version__`` are loaded on first use, so that
``import ccbench`` (and every ``ccbench`` command) starts without pydantic or pandas.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Union

from .errors import ScenarioError  # first: the compiled core raises this class
from .engines import DEFAULT as DEFAULT_ENGINE

if TYPE_CHECKING:
    from .result import Result
    from .scenario import Scenario

__all__ = ["Result", "Scenario", "ScenarioError", "run", "__version__"]


def run(
    scenario: Union["Scenario", Mapping[str, Any], str, "os.PathLike[str]"],
    capture_to: Union[str, "os.PathLike[str]", None] = None,
    *,
    engine: str = DEFAULT_ENGINE,
    **engine_options: Any,
) -> "Result":
    """Run a scenario (a Scenario, a TOML-shaped mapping or a path to a TOML file) on
    ``engine`` (``ccbench.engines.names()``; default the simulator), configured with
    ``engine_options`` (the VM engine's ``guest_kernel``, ``vcpus``, ``trace_tx``,
    ``profile_guest`` and ``trace_vcpu``: ``VmEngine.configure``), and return its
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


def __getattr__(name: str) -> Any:
    # PEP 562: the public names are imported when first asked for.
    if name == "Scenario":
        from .scenario import Scenario as value
    elif name == "Result":
        from .result import Result as value
    elif name == "__version__":
        value = _version()
    else:
        raise AttributeError(f"module 'ccbench' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
