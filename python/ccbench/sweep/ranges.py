"""Range tables of a sweep plan: ``{ from = 10, to = 100, step = 10, unit = "Mbit" }``.

Exactly one of ``step`` (arithmetic, exact), ``count`` (evenly spaced, ``scale =
"linear"`` or ``"log"``) or ``factor`` (geometric) says how to get from ``from`` to
``to``; both ends are included when the steps land on them. Arithmetic is decimal, so
``0.1`` steps give ``0.3``, not ``0.30000000000000004``. Without a unit, integers in
(``from``, ``to`` and ``step`` or ``factor``) give integers out; otherwise ``count`` and
``factor`` values are rounded to ``digits`` significant digits (default 4). With ``unit``
each value is a string, the number followed by the unit (``"50Mbit"``).
"""

from __future__ import annotations

import decimal
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Mapping, Union

from ..errors import ScenarioError

RANGE_KEYS = ("from", "to", "step", "count", "factor", "scale", "unit", "digits")
SHAPE_KEYS = ("step", "count", "factor")
DEFAULT_DIGITS = 4
MAX_VALUES = 100_000
EXAMPLE = '{ from = 10, to = 100, step = 10, unit = "Mbit" }'

Value = Union[int, float, str]


def is_range(table: Mapping[str, Any]) -> bool:
    """A table in a value's place is a range when it uses any range key."""
    return any(k in table for k in RANGE_KEYS)


def _number(field: str, name: str, value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ' (put the unit in unit = "...")' if isinstance(value, str) else ""
        raise ScenarioError(field, f"range {name} must be a number, got {value!r}{hint}")
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise ScenarioError(field, f"range {name} must be a finite number")
    return Decimal(value) if isinstance(value, int) else Decimal(repr(value))


def _round_significant(d: Decimal, digits: int) -> Decimal:
    if d == 0:
        return d
    quantum = Decimal(1).scaleb(d.adjusted() - digits + 1)
    return d.quantize(quantum, rounding=ROUND_HALF_EVEN)


def _too_many(field: str) -> ScenarioError:
    return ScenarioError(field, f"the range gives more than {MAX_VALUES} values; use a larger step")


def expand_range(field: str, spec: Mapping[str, Any]) -> list[Value]:
    """The values of a range table; ScenarioError naming ``field`` if it is malformed."""
    unknown = [k for k in spec if k not in RANGE_KEYS]
    if unknown:
        raise ScenarioError(field, f"unknown range key {unknown[0]!r}; allowed: {', '.join(RANGE_KEYS)}")
    if "from" not in spec or "to" not in spec:
        raise ScenarioError(field, f"a range needs from and to, e.g. {EXAMPLE}")
    shapes = [k for k in SHAPE_KEYS if k in spec]
    if len(shapes) != 1:
        raise ScenarioError(
            field,
            "a range needs exactly one of step, count or factor"
            + (f"; got {' and '.join(shapes)}" if shapes else f", e.g. {EXAMPLE}"),
        )
    shape = shapes[0]
    lo, hi = _number(field, "from", spec["from"]), _number(field, "to", spec["to"])
    unit = spec.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise ScenarioError(field, f'range unit must be a string such as "Mbit", got {unit!r}')
    if "scale" in spec and shape != "count":
        raise ScenarioError(
            field, 'range scale goes with count, e.g. { from = 10, to = 1000, count = 5, scale = "log" }'
        )
    if "digits" in spec:
        digits = spec["digits"]
        if shape == "step":
            raise ScenarioError(field, "range digits goes with count or factor; step values are exact")
        if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 15:
            raise ScenarioError(field, f"range digits must be an integer from 1 to 15, got {digits!r}")
    else:
        digits = DEFAULT_DIGITS
    # Bare integers may be what the schema needs (tcp.mss, count); with a unit the
    # values are strings and keep their digits.
    integral = unit is None and all(
        isinstance(spec[k], int) and not isinstance(spec[k], bool)
        for k in ("from", "to") + ((shape,) if shape != "count" else ())
    )

    with decimal.localcontext() as ctx:
        ctx.prec = 34
        if shape == "step":
            numbers = _by_step(field, lo, hi, _number(field, "step", spec["step"]))
        elif shape == "count":
            numbers = _by_count(field, lo, hi, spec["count"], spec.get("scale", "linear"))
        else:
            numbers = _by_factor(field, lo, hi, _number(field, "factor", spec["factor"]))
        if integral:
            numbers = [n.to_integral_value(rounding=ROUND_HALF_EVEN) for n in numbers]
        elif shape != "step":
            numbers = [_round_significant(n, digits) for n in numbers]
    seen: set[Decimal] = set()
    for n in numbers:
        if n in seen:
            hint = " or write from = 0.0 style numbers for non-integer values" if integral else " or more digits"
            raise ScenarioError(field, f"the range gives {_text(n)} twice after rounding; use fewer values{hint}")
        seen.add(n)
    return [_value(n, integral, unit) for n in numbers]


def _by_step(field: str, lo: Decimal, hi: Decimal, step: Decimal) -> list[Decimal]:
    if step == 0:
        raise ScenarioError(field, "range step must not be 0")
    if (hi - lo) * step < 0:
        raise ScenarioError(
            field,
            f"range step {_text(step)} goes away from to = {_text(hi)} (from = {_text(lo)}); use step = {_text(-step)}",
        )
    n = int((hi - lo) / step)
    if n >= MAX_VALUES:
        raise _too_many(field)
    return [lo + i * step for i in range(n + 1)]


def _by_count(field: str, lo: Decimal, hi: Decimal, count: Any, scale: Any) -> list[Decimal]:
    if isinstance(count, bool) or not isinstance(count, int) or count < 2:
        raise ScenarioError(field, f"range count must be an integer of at least 2, got {count!r}")
    if count > MAX_VALUES:
        raise _too_many(field)
    if scale == "linear":
        inner = [lo + (hi - lo) * i / (count - 1) for i in range(1, count - 1)]
    elif scale == "log":
        if lo <= 0 or hi <= 0:
            raise ScenarioError(field, "a log-spaced range needs from and to above 0")
        a, b = lo.ln(), hi.ln()
        inner = [(a + (b - a) * i / (count - 1)).exp() for i in range(1, count - 1)]
    else:
        raise ScenarioError(field, f'range scale must be "linear" or "log", got {scale!r}')
    return [lo, *inner, hi]


def _by_factor(field: str, lo: Decimal, hi: Decimal, factor: Decimal) -> list[Decimal]:
    if factor <= 0 or factor == 1:
        raise ScenarioError(field, f"range factor must be above 0 and not 1, got {_text(factor)}")
    if lo <= 0 or hi <= 0:
        raise ScenarioError(field, "a range with factor needs from and to above 0")
    if (hi - lo) * (factor - 1) < 0:
        raise ScenarioError(
            field,
            f"range factor {_text(factor)} goes away from to = {_text(hi)} "
            f"(from = {_text(lo)}); use factor = {_text(1 / factor)}",
        )
    out = []
    v = lo
    while (v <= hi) if factor > 1 else (v >= hi):
        out.append(v)
        if len(out) > MAX_VALUES:
            raise _too_many(field)
        v *= factor
    return out


def _text(d: Decimal) -> str:
    text = format(d.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def _value(n: Decimal, integral: bool, unit: str | None) -> Value:
    if unit is not None:
        return f"{_text(n)}{unit}"
    if integral:
        return int(n)
    return float(n)
