"""``[[arrivals]]``: connections of one algorithm arriving open-loop (a Poisson process at
a rate or a load, or at times from a file), each carrying a transfer whose size is drawn
from a distribution; judged by flow completion time (FCT) and slowdown. The simulator's
``arrivals[k]`` (crates/ccbench-sim/src/arrivals/config.rs); see docs/traffic.md.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BeforeValidator, Field, field_validator, model_validator

from ..units import format_loss, format_size, parse_size
from .fields import Duration, _Table, _unit
from .flow import finite_params, known_cca
from .traffic_files import ArrivalTimes, SizeCdf, read_arrival_times, read_size_cdf

# The simulator's CDFs from the literature (crates/ccbench-sim/src/arrivals/sizes.rs).
BUILTIN_SIZES = ("web-search", "data-mining")
SIZES_FORMS = f"a built-in distribution ({', '.join(BUILTIN_SIZES)}), a size ('10KB') or a CDF file"


@dataclass(frozen=True)
class Sizes:
    """Where transfer sizes come from: a built-in CDF by name, one fixed size, or a CDF
    read from a file."""

    builtin: Optional[str] = None
    fixed_bytes: Optional[int] = None
    cdf: Optional[SizeCdf] = None

    def to_core(self) -> dict[str, Any]:
        if self.builtin is not None:
            return {"builtin": self.builtin}
        if self.cdf is not None:
            return {"cdf": [[size, p] for size, p in self.cdf.points]}
        return {"fixed": self.fixed_bytes}

    def spelled(self) -> Union[str, int]:
        """As the TOML form writes it."""
        if self.builtin is not None:
            return self.builtin
        if self.cdf is not None:
            return self.cdf.path
        assert self.fixed_bytes is not None
        return format_size(self.fixed_bytes)


def parse_sizes(value: object) -> Sizes:
    """A built-in name, a size (bytes or with a unit) or the path of a CDF file."""
    if isinstance(value, Sizes):
        return value
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return _fixed(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected {SIZES_FORMS}")
    text = value.strip()
    if text.lower() in BUILTIN_SIZES:
        return Sizes(builtin=text.lower())
    try:
        return _fixed(parse_size(text))
    except ValueError:
        if is_size_file(text):
            return Sizes(cdf=read_size_cdf(text))
        raise ValueError(f"{text!r} is not {SIZES_FORMS}") from None


def is_size_file(text: str, base: str = "") -> bool:
    """Whether ``sizes`` names a CDF file: not a built-in name, not a size, and a file
    that exists (in ``base``) or a name that looks like a path."""
    text = text.strip()
    if text.lower() in BUILTIN_SIZES:
        return False
    try:
        parse_size(text)
        return False
    except ValueError:
        return os.path.exists(os.path.join(base, text)) or os.sep in text or "." in os.path.basename(text)


def _fixed(n: int) -> Sizes:
    if n <= 0:
        raise ValueError("a fixed size must be positive, e.g. '10KB'")
    return Sizes(fixed_bytes=n)


def parse_load(value: object) -> float:
    """A fraction of the link's rate: 0.5 or '50%' (or '0.5', from a flag)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            load = float(Decimal(text[:-1]) / 100) if text.endswith("%") else float(Decimal(text))
        except InvalidOperation:
            raise ValueError(f"{value!r} is not a load; give a fraction (0.5) or a percentage ('50%')") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        load = float(value)
    else:
        raise ValueError(f"expected a fraction of the link's rate, e.g. 0.5 or '50%', got {value!r}")
    if not (math.isfinite(load) and 0 < load <= 1):
        raise ValueError(f"must be above 0 and at most 1 (a fraction of the link's rate), got {value!r}")
    return load


def parse_per_second(value: object) -> float:
    """Connections a second: a number, or text such as '20' or '20/s' (from a flag)."""
    if isinstance(value, str):
        text = value.strip().removesuffix("/s").strip()
        try:
            return float(Decimal(text))
        except InvalidOperation:
            raise ValueError(f"{value!r} is not a rate of connections; give a number a second, e.g. 20") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected connections a second, e.g. 20, got {value!r}")
    return float(value)


def load_times(value: object) -> ArrivalTimes:
    if isinstance(value, ArrivalTimes):
        return value
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected the path of a file of arrival times (one instant in seconds per line)")
    return read_arrival_times(value)


SizesField = Annotated[Sizes, *_unit(parse_sizes, Sizes.spelled)]
Load = Annotated[float, *_unit(parse_load, format_loss)]
TimesFile = Annotated[ArrivalTimes, *_unit(load_times, lambda t: t.path)]


class Arrivals(_Table):
    """One ``[[arrivals]]`` entry: a group of connections of one algorithm."""

    cca: str = Field(description="the connections' algorithm, as flows[].cca", examples=["cubic"])
    params: dict[str, float] = Field(
        default_factory=dict, description="algorithm parameter overrides by name (numbers)", examples=[{}]
    )
    direction: Literal["down", "up"] = Field(
        "down", description="down through [link], or up through [link.reverse]", examples=["down"]
    )
    rate_per_s: Optional[Annotated[float, BeforeValidator(parse_per_second)]] = Field(
        None, alias="rate", description="Poisson arrivals, connections a second (or give load or times)"
    )
    load: Optional[Load] = Field(
        None,
        description="Poisson arrivals at the rate whose transfers offer this fraction of the link's rate "
        "(its direction's) in payload; give one of load, rate (connections a second) and times (a file)",
        examples=["50%"],
    )
    times: Optional[TimesFile] = Field(
        None, description="arrivals at these instants instead: a file, one time in seconds per line"
    )
    sizes: SizesField = Field(
        description=f"transfer sizes: {SIZES_FORMS} (lines of 'bytes probability')", examples=["web-search"]
    )
    start_ns: Duration = Field(0, alias="start", description="Poisson arrivals begin here", examples=["0s"])
    stop_ns: Optional[Duration] = Field(
        None, alias="stop", description="none arrive from here on; omit for the run's end", examples=["25s"]
    )
    connect: Literal["sender", "receiver"] = Field(
        "sender",
        description="who opens each connection: the sender (connects, then writes) or the receiver (sends a "
        "100-byte request, answered with the transfer); the handshake counts in the FCT",
        examples=["sender"],
    )
    access_delay_ns: Duration = Field(
        0, alias="access_delay", description="extra one-way delay each way for these connections", examples=["0ms"]
    )

    @field_validator("cca")
    @classmethod
    def _known_cca(cls, v: str) -> str:
        return known_cca(v)

    @field_validator("params")
    @classmethod
    def _finite_params(cls, v: dict[str, float]) -> dict[str, float]:
        return finite_params(v)

    @field_validator("rate_per_s")
    @classmethod
    def _positive_rate(cls, v: Optional[float]) -> Optional[float]:
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ValueError("must be above 0 connections a second, e.g. 20")
        return v

    @model_validator(mode="after")
    def _one_process(self) -> "Arrivals":
        given = [k for k, v in (("rate", self.rate_per_s), ("load", self.load), ("times", self.times)) if v is not None]
        if len(given) != 1:
            got = f"; got {' and '.join(given)}" if given else ""
            raise ValueError(
                "give one of rate (connections a second), load (a fraction of the link) or times (a file)" + got
            )
        return self

    def to_core(self) -> dict[str, Any]:
        """The simulator's ``ArrivalsConfig``."""
        core: dict[str, Any] = {
            "cca": self.cca,
            "sizes": self.sizes.to_core(),
            "start_ns": self.start_ns,
            "connect": self.connect,
            "access_delay_ns": self.access_delay_ns,
        }
        if self.params:
            core["params"] = dict(self.params)
        if self.direction != "down":
            core["direction"] = self.direction
        if self.rate_per_s is not None:
            core["rate_per_s"] = self.rate_per_s
        if self.load is not None:
            core["load"] = self.load
        if self.times is not None:
            core["times_ns"] = list(self.times.times_ns)
        if self.stop_ns is not None:
            core["stop_ns"] = self.stop_ns
        return core
