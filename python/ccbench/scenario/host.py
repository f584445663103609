"""The ``[host]`` table: the sender host's CPU.

A preset names a host whose per-task CPU costs are documented in docs/model.md
("Sender CPU"); ``[host.cost]`` overrides single costs. Availability is either always,
a SCHED_DEADLINE reservation (``cpu_share`` of every ``cpu_slice``, as the host gives a
VM's vCPU thread; ``cpu_deadline`` and the host's ``cpu_tick`` shape when it runs) or an
on/off trace file. Every sender of the scenario shares this CPU.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, create_model, field_validator, model_validator

from .. import facts
from ..errors import ScenarioError
from ..units import _split, parse_duration
from .fields import Duration, _Table, _unit, core_default, core_range, positive


def presets() -> dict[str, dict[str, int]]:
    """The simulator's named hosts: {name: {cost field: value}}."""
    return facts.CPU_PRESETS


def _host(name: str) -> Any:
    return core_default("host", name)


# The preset of a [host] that names none: the ideal server, or a VM's vCPU when the CPU is
# reserved in part.
DEFAULT_PRESET: str = _host("cpu")
RESERVED_PRESET: str = facts.CPU_PRESET_WHEN_RESERVED


def parse_share(value: object) -> float:
    """A CPU share: ``"25%"`` or a fraction, above 0 and at most 1."""
    number, unit = _split(value, "a CPU share", "25%")
    if unit == "%":
        number /= 100
    elif unit:
        raise ValueError(f"unknown share unit {unit!r} in {value!r}; give a percentage ('25%') or a fraction (0.25)")
    if not (0 < number <= 1):
        raise ValueError(f"{value!r} is out of range; the CPU share must be above 0% and at most 100%")
    return float(number)


def format_share(share: float) -> str:
    # Scaled as a decimal: 0.55 * 100 is 55.00000000000001 in binary floating point.
    return f"{(Decimal(repr(share)) * 100).normalize():f}%"


def parse_byte_cost(value: object) -> int:
    """CPU time per byte, e.g. ``"7.3ns"``, to whole picoseconds."""
    ns = parse_duration_fraction(value)
    ps = ns * 1000
    if ps != ps.to_integral_value():
        raise ValueError(f"{value!r} is finer than a picosecond")
    return int(ps)


def parse_duration_fraction(value: object) -> Decimal:
    """A duration in ns that may have a fraction (``"7.3ns"``)."""
    number, unit = _split(value, "a duration", "7.3ns")
    factors = {"ns": 1, "us": 1000, "µs": 1000, "ms": 10**6, "s": 10**9}
    if unit not in factors:
        raise ValueError(f"{value!r} needs a unit: one of ns, us, ms, s (e.g. '7.3ns')")
    if number < 0:
        raise ValueError(f"{value!r} must not be negative")
    return number * factors[unit]


def format_byte_cost(ps: int) -> str:
    return f"{(Decimal(ps) / 1000).normalize():f}ns"


Share = Annotated[float, *_unit(parse_share, format_share)]
ByteCost = Annotated[int, *_unit(parse_byte_cost, format_byte_cost)]


def read_cpu_trace(path: Union[str, os.PathLike[str]]) -> list[int]:
    """An on/off trace: one ``<on> <off>`` pair of durations per line (``#`` starts a
    comment), starting on at time 0 and repeating. Returns [on, off, ...] in ns."""
    name = os.fspath(path)
    try:
        lines = Path(name).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ScenarioError("host.cpu_trace", f"cannot read {name}: {e.strerror or e}") from None
    intervals: list[int] = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split()
        if len(parts) != 2:
            raise ScenarioError(
                "host.cpu_trace", f"{name}:{number}: expected '<on> <off>', e.g. '2.5ms 7.5ms', got {text!r}"
            )
        try:
            intervals += [parse_duration(p) for p in parts]
        except ValueError as e:
            raise ScenarioError("host.cpu_trace", f"{name}:{number}: {e}") from None
    if not intervals:
        raise ScenarioError("host.cpu_trace", f"{name}: no '<on> <off>' lines")
    if not any(intervals[0::2]):
        raise ScenarioError("host.cpu_trace", f"{name}: the CPU is never on")
    return intervals


# The [host.cost] keys and the simulator's fields they set, in the simulator's order.
COST_FIELDS = tuple(c["key"] for c in facts.CPU_COSTS)
_CORE_FIELD = {c["key"]: c["field"] for c in facts.CPU_COSTS}


def _cost_field(cost: dict[str, str]) -> tuple[Any, Any]:
    """A ``[host.cost]`` field as the simulator declares it: unset, the preset's."""
    unit = ByteCost if cost["unit"] == "ps" else Duration
    ranged = Annotated[unit, core_range(f"host.cost.{cost['field']}")]
    return Optional[ranged], Field(None, description=cost["about"], examples=[cost["example"]])


HostCost = create_model(
    "HostCost",
    __base__=_Table,
    __doc__="``[host.cost]``: overrides of the preset's CPU time per unit of work.",
    **{c["key"]: _cost_field(c) for c in facts.CPU_COSTS},
)


class Host(_Table):
    """``[host]``: the CPU every sender runs on."""

    # What the front end resolves into the simulator's ``cpu`` and ``cost``.
    not_in_core = frozenset({"cpu", "cpu_share", "cpu_slice_ns", "cpu_deadline", "cpu_tick_ns", "cpu_trace", "cost"})
    core_when_changed = ("tx_completion_ns",)

    # Unnamed, the rest of the table implies it (``preset``): a run that reserves a share of
    # the CPU is a VM's vCPU under a deadline reservation, as in the 2BRobust study.
    cpu: Optional[str] = Field(
        None,
        description=f"preset: {', '.join(presets())}; unnamed: {RESERVED_PRESET} when cpu_share < 100% or cpu_trace "
        f"is given, else {DEFAULT_PRESET}",
        examples=["phone-lowend"],
    )
    cpu_share: Share = Field(1.0, description="SCHED_DEADLINE runtime as a share of every cpu_slice", examples=["25%"])
    cpu_slice_ns: Annotated[Duration, positive("10ms")] = Field(
        _host("cpu_slice_ns"), alias="cpu_slice", description="the reservation's period", examples=["10ms"]
    )
    # "runtime": deadline = runtime, as 2BRobust set it (a busy vCPU gets one window at
    # the start of each slice); "slice": deadline = period (the budget may be spent at
    # any time of the slice).
    cpu_deadline: Literal["runtime", "slice"] = Field(
        "runtime",
        description="runtime (as 2BRobust): one window per slice; slice: budget spent any time",
        examples=["runtime"],
    )
    cpu_tick_ns: Duration = Field(
        _host("cpu_tick_ns"),
        alias="cpu_tick",
        description="the host's scheduler tick (1 / CONFIG_HZ), when an exhausted budget is noticed",
        examples=["4ms"],
    )
    cpu_trace: Optional[str] = Field(
        None, description="or on/off intervals from a file (not with cpu_share)", examples=["vcpu.txt"]
    )
    rx_ring: Annotated[int, core_range("host.rx_ring")] = Field(
        _host("rx_ring"), description="ACKs the NIC holds while the CPU is busy; more are dropped", examples=[256]
    )
    tx_completion_ns: Annotated[Duration, core_range("host.tx_completion_ns")] = Field(
        _host("tx_completion_ns"),
        alias="tx_completion",
        description="from the NIC's sending an skb to its TX completion freeing it (TSQ budget)",
        examples=["160us"],
    )
    cost: HostCost = Field(default_factory=lambda: HostCost.model_validate({}))

    @field_validator("cpu")
    @classmethod
    def _known_preset(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and v not in presets():
            raise ValueError(f"unknown CPU preset {v!r}; allowed: {', '.join(presets())}")
        return v

    @model_validator(mode="after")
    def _one_availability(self) -> "Host":
        if self.cpu_trace is not None and self.cpu_share < 1:
            raise ScenarioError("host.cpu_trace", "give either cpu_share (with cpu_slice) or cpu_trace, not both")
        runtime = round(self.cpu_share * self.cpu_slice_ns)
        if self.cpu_share < 1 and runtime < 1:
            raise ScenarioError("host.cpu_share", "leaves less than 1 ns of each slice")
        if self.cpu == self._implied_preset():
            # Naming the preset the table implies says nothing more: equal tables compare equal.
            object.__setattr__(self, "cpu", None)
        # Spell every cost out, so that a host and its effective TOML compare equal.
        resolved = {name: self._cost(name) for name in COST_FIELDS}
        object.__setattr__(self, "cost", HostCost.model_construct(**resolved))
        return self

    @property
    def reserves_share(self) -> bool:
        """The CPU is available only part of the time: a share of it, or an on/off trace."""
        return self.cpu_share < 1 or self.cpu_trace is not None

    @property
    def preset(self) -> str:
        """The preset whose costs the host starts from: the one ``cpu`` names, else the
        one the rest of the table implies."""
        return self._implied_preset() if self.cpu is None else self.cpu

    def _implied_preset(self) -> str:
        return RESERVED_PRESET if self.reserves_share else DEFAULT_PRESET

    def _cost(self, name: str) -> int:
        value = getattr(self.cost, name)
        return presets()[self.preset][_CORE_FIELD[name]] if value is None else value

    def overridden_costs(self) -> list[str]:
        """The ``[host.cost]`` keys whose value is not the preset's."""
        preset = presets()[self.preset]
        return [name for name in COST_FIELDS if getattr(self.cost, name) != preset[_CORE_FIELD[name]]]

    def notes(self) -> list[str]:
        """What a run's summary says of this host's costs."""
        if self.preset != RESERVED_PRESET:
            return []
        return [
            f"The sender's costs are the {RESERVED_PRESET} preset's, a KVM guest's vCPU: each wake from idle and each "
            "return after an absence costs CPU time (docs/host-cpu.md). A run that reserves a CPU share without naming "
            f'a preset gets it; [host] cpu = "{DEFAULT_PRESET}" gives free sender work instead.'
        ]

    def costs(self) -> dict[str, int]:
        """Effective costs in the core's units: the preset with overrides applied."""
        return {_CORE_FIELD[name]: self._cost(name) for name in COST_FIELDS}

    def to_core(self) -> dict[str, Any]:
        return {**super().to_core(), "cpu": self._core_cpu(), "cost": self.costs()}

    def _core_cpu(self) -> Any:
        """The simulator's ``cpu``: always, a SCHED_DEADLINE reservation or a trace."""
        if self.cpu_trace is not None:
            return {"trace": {"intervals_ns": read_cpu_trace(self.cpu_trace)}}
        if self.cpu_share == 1:
            return "always"
        runtime = round(self.cpu_share * self.cpu_slice_ns)
        return {
            "deadline": {
                "runtime_ns": runtime,
                "deadline_ns": runtime if self.cpu_deadline == "runtime" else self.cpu_slice_ns,
                "period_ns": self.cpu_slice_ns,
                "tick_ns": self.cpu_tick_ns,
            }
        }
