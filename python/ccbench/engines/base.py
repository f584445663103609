"""The engine interface: what every way of running a scenario provides.

An engine loads and checks scenarios as it can run them, runs one, and names the code
version its results are keyed by in the store. Everything above it (the CLI, sweeps,
the store, validation) holds an :class:`Engine` and never asks which one it is: a new
engine is one new module here and one entry in ``ccbench.engines.ENGINES``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping, Optional, Union

from ..errors import ScenarioError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..result import Result
    from ..scenario import Scenario

ScenarioLike = Union["Scenario", Mapping[str, Any], str, "os.PathLike[str]"]
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Unsupported:
    """A scenario field an engine cannot honour. ``path`` names it in the scenario model
    (``host``, ``tcp.rto_init``, ``flows[].pacing_stride``); a scenario that sets it to
    anything but its default is refused with ``reason``."""

    path: str
    reason: str


class Engine(ABC):
    """One way of running a scenario. Subclasses set the class attributes and ``run``."""

    name: ClassVar[str]
    # What a spinner says while a run is under way.
    status: ClassVar[str] = "running…"
    # Runs use the host's real network stack: one at a time per host, under a lock
    # shared by every process (sweeps run them in the coordinator, one after another).
    needs_host_lock: ClassVar[bool] = False
    unsupported: ClassVar[tuple[Unsupported, ...]] = ()

    def configure(self, **options: Any) -> "Engine":
        """This engine with options of its own (the VM engine's guest kernel, say); the
        base engine takes none. ScenarioError names the option as a flag."""
        for key in options:
            raise ScenarioError("--" + key.replace("_", "-"), f"is not an option of the {self.name} engine")
        return self

    def use_by_default(self, **options: Any) -> None:
        """Options a command that runs many scenarios (a sweep, a replication) gives once
        (``--guest-kernel``): checked now, then the default of every run of this engine
        in this process and in the workers it starts. The base engine takes none."""
        for key in options:
            raise ScenarioError("--" + key.replace("_", "-"), f"is not an option of --engine {self.name}")

    def load(self, scenario: ScenarioLike) -> "Scenario":
        """A scenario (a Scenario, a TOML-shaped mapping or a TOML file) validated as this
        engine accepts it. Raises ScenarioError."""
        from ..scenario import Scenario

        return Scenario.load(scenario)

    def from_flags(self, **flags: Any) -> "Scenario":
        """:meth:`Scenario.from_flags`, validated as this engine accepts it."""
        from ..scenario import Scenario

        return Scenario.from_flags(**flags)

    def check(self, scenario: "Scenario") -> "Scenario":
        """Refuse (ScenarioError) what this engine cannot run on this machine; return
        the scenario as it will run (an engine may fill in host facts)."""
        refuse_unsupported(self, scenario)
        return scenario

    @abstractmethod
    def run(self, scenario: ScenarioLike, capture_to: Optional[PathLike] = None) -> "Result":
        """Run a scenario; with a ``[capture]`` table, pcap files go to its ``dir`` or else
        to ``capture_to``. Raises ScenarioError for what cannot run."""

    @abstractmethod
    def code_version(self) -> str:
        """What, besides the scenario and seed, this engine's results depend on here."""

    def __repr__(self) -> str:
        return f"<engine {self.name}>"


def refuse_unsupported(engine: Engine, scenario: "Scenario") -> None:
    """ScenarioError naming the first field ``scenario`` sets that ``engine`` cannot honour."""
    for item in engine.unsupported:
        for field in _set_fields(scenario, item.path):
            raise ScenarioError(scenario.user_field(field), item.reason)


def _set_fields(scenario: "Scenario", path: str) -> Iterator[str]:
    """The scenario's fields at ``path`` that differ from their defaults, named as a
    scenario file names them (``flows[2].fixed_pacing_rate``, ``host.cpu_share``)."""
    head, _, rest = path.partition(".")
    if head.endswith("[]"):
        for i, item in enumerate(getattr(scenario, head[:-2])):
            for field in _differing(item, rest):
                yield f"{head[:-2]}[{i}].{field}"
        return
    for field in _differing(scenario, path):
        yield field


def _differing(model: "BaseModel", path: str) -> Iterator[str]:
    head, _, rest = path.partition(".")
    info = type(model).model_fields[head]
    value = getattr(model, head)
    shown = info.alias or head
    if rest:
        if value is None:  # an optional table left out: nothing in it is set
            return
        yield from (f"{shown}.{f}" for f in _differing(value, rest))
        return
    from pydantic import BaseModel, ValidationError

    try:  # a table: the default as validation resolves it from the table's other fields
        # (`host.cpu` and `host.cost` follow `host.cpu_share`)
        type(model).model_validate({})
        others = {k: v for k, v in model.model_dump(mode="json", by_alias=True).items() if k != shown}
        default = getattr(type(model).model_validate(others), head)
    except ValidationError:  # a model with required fields: its declared default
        default = info.get_default(call_default_factory=True)
    if value == default:
        return

    if default is None and isinstance(value, BaseModel):
        # An optional table: set, but maybe only to its defaults.
        for name in type(value).model_fields:
            for field in _differing(value, name):
                yield f"{shown}.{field}"
                return
        return
    yield shown


def capture_dir(scenario: "Scenario", default: Optional[PathLike]) -> Optional[str]:
    """Where a scenario's ``[capture]`` files go: its ``dir``, else ``default`` (the run's
    output directory); None without a ``[capture]`` table. ScenarioError when neither
    names a directory."""
    if scenario.capture is None:
        return None
    where = scenario.capture.dir if scenario.capture.dir is not None else default
    if where is None:
        raise ScenarioError(
            "capture.dir",
            "packet capture needs a directory: set [capture] dir, or give --out DIR "
            "(the files are DIR/capture-<point>.pcap)",
        )
    return os.fspath(where)
