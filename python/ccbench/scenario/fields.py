"""Shared pieces of the scenario's tables: strict immutable tables whose TOML keys are
the field aliases, field types that parse human units and write them back, integer
ranges, and the constants the tables share.

A table's two forms come from its fields: ``to_dict`` (the TOML form, human units:
``model_dump(mode="json", by_alias=True)``, each unit type writing itself back) and
``to_core`` (the simulator's JSON, base units: ``model_dump()`` by attribute name).
"""

from __future__ import annotations


from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from .. import facts
from ..errors import ScenarioError
from ..traces import Trace, load_trace
from ..units import (
    Buffer,
    format_buffer,
    format_duration,
    format_loss,
    format_rate,
    format_size,
    parse_buffer,
    parse_duration,
    parse_loss,
    parse_probability,
    parse_rate,
    parse_size,
)


def _unit(parse: Any, write: Any) -> tuple[BeforeValidator, PlainSerializer]:
    """Parsed from human units; written back in them in the TOML form (``mode="json"``)."""
    return BeforeValidator(parse), PlainSerializer(write, when_used="json")


Duration = Annotated[int, *_unit(parse_duration, format_duration)]
Rate = Annotated[int, *_unit(parse_rate, format_rate)]
Size = Annotated[int, *_unit(parse_size, format_size)]
Loss = Annotated[float, *_unit(parse_loss, format_loss)]
Probability = Annotated[float, *_unit(parse_probability, format_loss)]
BufferLimit = Annotated[Buffer, *_unit(parse_buffer, format_buffer)]
TraceFile = Annotated[Trace, *_unit(load_trace, lambda t: t.path)]


def positive(example: str, hint: str = "") -> AfterValidator:
    """A quantity that must be above zero; the message shows ``example`` and ``hint``."""

    def check(v: Any) -> Any:
        if v <= 0:
            raise ValueError(f"must be positive, e.g. '{example}'{hint}")
        return v

    return AfterValidator(check)


def _int_range(lo: int, hi: int) -> AfterValidator:
    def check(v: int) -> int:
        if not lo <= v <= hi:
            raise ValueError(f"must be an integer from {lo} to {hi}, got {v}")
        return v

    return AfterValidator(check)


# The defaults and integer ranges of what the simulator takes are its own
# (`ccbench_sim::config::schema_facts`): the tables below refer to them by name.
core_default = facts.default


def core_range(key: str) -> AfterValidator:
    """The simulator's inclusive range of the integer ``key`` (``tcp.mss``), refused in
    the simulator's words."""
    lo, hi, allowed = facts.int_range(key)

    def check(v: int) -> int:
        if not lo <= v <= hi:
            raise ValueError(f"must be {allowed}")
        return v

    return AfterValidator(check)


class KeyProblem(ScenarioError):
    """A problem with one key of a table, found by the table's own checks: the scenario
    reports it under the table's place (``field`` "on" of ``flows[2]`` is ``flows[2].on``)."""


MS = 1_000_000
S = 1_000_000_000
MIN_INTERVAL_NS = 1 * MS
MAX_FLOWS_PER_ENTRY = 10_000


class _Table(BaseModel):
    """Strict, immutable, unknown keys rejected; TOML keys are the field aliases."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    # Attributes the simulator does not take, and knobs added after scenarios were first
    # hashed: written to the core only when changed, so that older scenarios keep their
    # canonical JSON (and scenario_hash).
    not_in_core: ClassVar[frozenset[str]] = frozenset()
    core_when_changed: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        """This table in TOML form (human units), every default filled in."""
        return self.model_dump(mode="json", by_alias=True)

    def to_core(self) -> dict[str, Any]:
        """This table as the simulator takes it: base units, attribute names."""
        core = self.model_dump(exclude=set(self.not_in_core))
        fields = type(self).model_fields
        for name in self.core_when_changed:
            if core[name] == fields[name].default:
                del core[name]
        return core
