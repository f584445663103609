"""Human units for scenario values: parsing to base units and formatting back.

Base units are integers where the simulator wants integers: nanoseconds, bit/s and
bytes. Parsing uses exact decimal arithmetic, so ``"0.1ms"`` is exactly 100000 ns and
formatting a parsed value gives a string that parses back to the same value.

* Durations: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``, ``min``. A unit is required.
* Rates (bit/s, SI prefixes, k = 1000): ``bit``, ``kbit``, ``Mbit``, ``Gbit``, ``Tbit``;
  ``Mbps`` and ``Mbit/s`` mean the same as ``Mbit``. A plain number is bit/s.
  Byte rates (``MB/s``, ``MBps``) are rejected rather than guessed.
* Sizes (bytes): ``B``; decimal ``KB`` = 1000, ``MB``, ``GB``, ``TB``; binary ``KiB`` =
  1024, ``MiB``, ``GiB``, ``TiB``. Case-insensitive. A plain number is bytes.
* Buffers: a size, ``<x>bdp`` (a multiple of the bandwidth-delay product) or
  ``<n>pkt`` / ``<n>packets``.
* Loss: a percentage string (``"0.5%"``) or a fraction (``0.005``).
* Probabilities (loss-model parameters): the same forms, from 0 to 100%.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal, Union

from .facts import MAX_BDP_MULTIPLE

Number = Union[int, float]

_QUANTITY = re.compile(r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>[^\s\d.+-][^\s]*)?\s*$")

NS_PER_UNIT: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "min": 60_000_000_000,
}
DURATION_UNITS = "ns, us, ms, s, min"

_RATE_PREFIX: dict[str, int] = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "m": 10**6,
    "M": 10**6,
    "g": 10**9,
    "G": 10**9,
    "t": 10**12,
    "T": 10**12,
}
_RATE_BASE = ("bit", "bps", "bit/s", "b/s")
RATE_UNITS = "bit, kbit, Mbit, Gbit, Tbit (also written Mbps or Mbit/s), or a plain number of bit/s"

BYTES_PER_UNIT: dict[str, int] = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
SIZE_UNITS = "B, KB, MB, GB (x1000), KiB, MiB, GiB (x1024), or a plain number of bytes"

_PACKET_UNITS = ("pkt", "pkts", "packet", "packets")
BUFFER_FORMS = "a BDP multiple ('1bdp', '0.5bdp'), packets ('100pkt') or a size ('256KB', '64KiB')"


@dataclass(frozen=True)
class Buffer:
    """Drop-tail limit of the bottleneck queue."""

    kind: Literal["bytes", "packets", "bdp"]
    amount: Number

    def to_core(self) -> dict[str, Number]:
        return {self.kind: self.amount}

    @classmethod
    def from_core(cls, core: dict[str, Number]) -> "Buffer":
        """The buffer of the simulator's ``{kind: amount}``."""
        ((kind, amount),) = core.items()
        return cls(kind, amount)  # type: ignore[arg-type]


def _split(value: object, what: str, example: str) -> tuple[Decimal, str]:
    """Split ``"12.5 ms"`` into (Decimal('12.5'), 'ms'); numbers give an empty unit."""
    if isinstance(value, bool):
        raise ValueError(f"expected {what} such as {example!r}, got {value!r}")
    if isinstance(value, int):
        return Decimal(value), ""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"expected {what} such as {example!r}, got {value!r}")
        return Decimal(repr(value)), ""
    if not isinstance(value, str):
        raise ValueError(f"expected {what} such as {example!r}, got {type(value).__name__}")
    m = _QUANTITY.match(value)
    if m is None:
        raise ValueError(f"{value!r} is not {what}; expected a number and a unit, e.g. {example!r}")
    try:
        number = Decimal(m.group("num"))
    except InvalidOperation:  # pragma: no cover - the regex admits only valid numbers
        raise ValueError(f"{value!r} is not {what}; e.g. {example!r}") from None
    return number, m.group("unit") or ""


_LARGEST = 2**63 - 1


def _whole(number: Decimal, value: object, unit_name: str) -> int:
    if number != number.to_integral_value():
        raise ValueError(f"{value!r} is not a whole number of {unit_name}")
    if number > _LARGEST:
        raise ValueError(f"{value!r} is too large")
    return int(number)


def parse_duration(value: object) -> int:
    """A duration string to nanoseconds (never negative)."""
    number, unit = _split(value, "a duration", "40ms")
    if not unit:
        raise ValueError(f"{value!r} needs a unit: one of {DURATION_UNITS} (e.g. '40ms')")
    factor = NS_PER_UNIT.get(unit)
    if factor is None:
        raise ValueError(f"unknown duration unit {unit!r} in {value!r}; allowed units: {DURATION_UNITS}")
    if number < 0:
        raise ValueError(f"{value!r} must not be negative")
    return _whole(number * factor, value, "nanoseconds")


def parse_rate(value: object) -> int:
    """A bit rate to bit/s (always positive)."""
    number, unit = _split(value, "a rate", "100Mbit")
    if unit:
        if "B" in unit:
            raise ValueError(f"byte rates such as {value!r} are not accepted; give bits per second, e.g. '100Mbit'")
        prefix, base = _split_rate_unit(unit)
        if base is None:
            raise ValueError(f"unknown rate unit {unit!r} in {value!r}; allowed: {RATE_UNITS}")
        number *= _RATE_PREFIX[prefix]
    if number <= 0:
        raise ValueError(f"{value!r} must be positive")
    return _whole(number, value, "bit/s")


def _split_rate_unit(unit: str) -> tuple[str, str | None]:
    for base in _RATE_BASE:
        if unit.endswith(base):
            prefix = unit[: -len(base)]
            if prefix in _RATE_PREFIX:
                return prefix, base
    return "", None


def parse_size(value: object) -> int:
    """A size to bytes (never negative)."""
    number, unit = _split(value, "a size", "20MB")
    if unit:
        factor = BYTES_PER_UNIT.get(unit.lower())
        if factor is None:
            raise ValueError(f"unknown size unit {unit!r} in {value!r}; allowed: {SIZE_UNITS}")
        number *= factor
    if number < 0:
        raise ValueError(f"{value!r} must not be negative")
    return _whole(number, value, "bytes")


def parse_buffer(value: object) -> Buffer:
    """A bottleneck buffer: BDP multiple, packet count or size."""
    if isinstance(value, Buffer):
        return value
    number, unit = _split(value, "a buffer size", "1bdp")
    lowered = unit.lower()
    if lowered == "bdp":
        if number < 0:
            raise ValueError(f"{value!r} must not be negative; use {BUFFER_FORMS}")
        if number > MAX_BDP_MULTIPLE:
            raise ValueError(f"{value!r} is too large; at most {_fmt_decimal(Decimal(repr(MAX_BDP_MULTIPLE)))}bdp")
        return Buffer("bdp", float(number))
    if lowered in _PACKET_UNITS:
        if number < 0:
            raise ValueError(f"{value!r} must not be negative; use {BUFFER_FORMS}")
        return Buffer("packets", _whole(number, value, "packets"))
    if unit and lowered not in BYTES_PER_UNIT:
        raise ValueError(f"unknown buffer unit {unit!r} in {value!r}; use {BUFFER_FORMS}")
    try:
        return Buffer("bytes", parse_size(value))
    except ValueError as e:
        raise ValueError(f"{e}; use {BUFFER_FORMS}") from None


def parse_loss(value: object) -> float:
    """A loss probability: ``"0.5%"`` or a fraction; in [0, 1)."""
    number, unit = _split(value, "a loss rate", "0.5%")
    if unit == "%":
        number /= 100
    elif unit:
        raise ValueError(f"unknown loss unit {unit!r} in {value!r}; give a percentage ('0.5%') or a fraction (0.005)")
    if not (0 <= number < 1):
        raise ValueError(f"{value!r} is out of range; loss must be at least 0% and below 100% (e.g. '0.5%' or 0.005)")
    return float(number)


def parse_probability(value: object) -> float:
    """A probability: ``"30%"`` or a fraction; in [0, 1]."""
    number, unit = _split(value, "a probability", "30%")
    if unit == "%":
        number /= 100
    elif unit:
        raise ValueError(f"unknown unit {unit!r} in {value!r}; give a percentage ('30%') or a fraction (0.3)")
    if not (0 <= number <= 1):
        raise ValueError(f"{value!r} is out of range; a probability is from 0% to 100% (e.g. '30%' or 0.3)")
    return float(number)


# Formatting: the shortest exact spelling in the largest unit that fits.


def _fmt_decimal(d: Decimal) -> str:
    return format(d.normalize(), "f")


def format_duration(ns: int) -> str:
    for unit in ("s", "ms", "us"):
        factor = NS_PER_UNIT[unit]
        if ns % factor == 0 and ns != 0:
            return f"{ns // factor}{unit}"
    return f"{ns}ns" if ns else "0s"


def format_rate(bps: int) -> str:
    for unit, factor in (("Tbit", 10**12), ("Gbit", 10**9), ("Mbit", 10**6), ("kbit", 10**3)):
        if bps % factor == 0:
            return f"{bps // factor}{unit}"
    return f"{bps}bit"


_SIZE_SPELLING = {
    "b": "B",
    "kb": "KB",
    "mb": "MB",
    "gb": "GB",
    "tb": "TB",
    "kib": "KiB",
    "mib": "MiB",
    "gib": "GiB",
    "tib": "TiB",
}


def format_size(nbytes: int) -> str:
    """Largest exact decimal or binary unit; the shorter number wins, decimal on a tie."""
    if nbytes == 0:
        return "0B"
    candidates = []
    for family in (("tb", "gb", "mb", "kb", "b"), ("tib", "gib", "mib", "kib", "b")):
        key = next(k for k in family if nbytes % BYTES_PER_UNIT[k] == 0)
        candidates.append((len(str(nbytes // BYTES_PER_UNIT[key])), key))
    digits, key = min(candidates, key=lambda c: c[0])
    return f"{nbytes // BYTES_PER_UNIT[key]}{_SIZE_SPELLING[key]}"


def format_buffer(buffer: Buffer) -> str:
    if buffer.kind == "bdp":
        return f"{_fmt_decimal(Decimal(repr(float(buffer.amount))))}bdp"
    if buffer.kind == "packets":
        return f"{buffer.amount}pkt"
    return format_size(int(buffer.amount))


def format_loss(fraction: float) -> str:
    return f"{_fmt_decimal(Decimal(repr(fraction)) * 100)}%"
