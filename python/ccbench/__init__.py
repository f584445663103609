"""ccbench: a TCP congestion-control laboratory.

>>> import ccbench
>>> result = ccbench.run("scenarios/example.toml")      # doctest: +SKIP
>>> result.summary["jain_index"], result.flows.head()   # doctest: +SKIP

``Scenario``, ``Result``, ``run`` and ``__version__`` are loaded on first use, so that
``import ccbench`` (and every ``ccbench`` command) starts without pydantic or pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ScenarioError  # first: the compiled core raises this class

if TYPE_CHECKING:
    from .engines.sim import run
    from .result import Result
    from .scenario import Scenario

__all__ = ["Result", "Scenario", "ScenarioError", "run", "__version__"]


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
    elif name == "run":
        from .engines.sim import run as value
    elif name == "__version__":
        value = _version()
    else:
        raise AttributeError(f"module 'ccbench' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
