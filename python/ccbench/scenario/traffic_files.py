"""The files a scenario's traffic may name, read and checked: a UDP flow's rate file
(``seconds rate`` per line), an arrivals group's size CDF (``bytes probability`` per
line) and its arrival times (one instant in seconds per line).

In each, ``#`` starts a comment and blank lines are skipped; times are seconds (``1.5``)
or durations (``1500ms``), rates bit/s or with a unit (``5Mbit``), sizes bytes or with a
unit (``10KB``). Every problem is one line naming the file and, where it has one, the
line. Relative paths are taken from the current directory (a scenario file's from the
file's directory: ``ccbench.scenario.read_toml``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Union

from ..units import format_duration, parse_duration, parse_rate, parse_size

# The largest file read: a million arrival times is about 10 MB.
MAX_FILE_BYTES = 64 * 2**20
NS_PER_S = 1_000_000_000


class TrafficFileError(ValueError):
    """A traffic file that cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class RateFile:
    """A UDP flow's rates over time: ``(at_ns, rate_bps)`` steps from the run's start,
    at strictly increasing times; a rate of 0 is silence."""

    path: str
    steps: tuple[tuple[int, int], ...] = field(repr=False)


@dataclass(frozen=True)
class SizeCdf:
    """``(bytes, cumulative probability)`` points, both non-decreasing, the last at 1."""

    path: str
    points: tuple[tuple[int, float], ...] = field(repr=False)


@dataclass(frozen=True)
class ArrivalTimes:
    """Arrival instants (ns from the run's start), non-decreasing."""

    path: str
    times_ns: tuple[int, ...] = field(repr=False)


Lines = list[tuple[int, list[str]]]


def _lines(path: Union[str, os.PathLike[str]], what: str) -> tuple[str, Lines]:
    """(the path as shown, [(line number, its fields)]) of the file's lines that hold
    something; TrafficFileError for a file that cannot be read as text."""
    shown = os.fspath(path)
    full = os.path.abspath(shown)
    try:
        if os.path.getsize(full) > MAX_FILE_BYTES:
            raise TrafficFileError(f"{shown}: larger than {MAX_FILE_BYTES // 2**20} MiB; {what} is a small text file")
        text = Path(full).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TrafficFileError(f"{shown}: no such file ({what})") from None
    except IsADirectoryError:
        raise TrafficFileError(f"{shown}: is a directory, not {what}") from None
    except UnicodeDecodeError:
        raise TrafficFileError(f"{shown}: is not UTF-8 text; {what} is a text file") from None
    except OSError as e:
        raise TrafficFileError(f"{shown}: cannot be read: {e.strerror or e}") from None
    out = []
    for n, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if fields:
            out.append((n, fields))
    return full, out


def _seconds(text: str) -> int:
    """A time: plain seconds (``1.5``) or a duration (``1500ms``), in ns."""
    try:
        seconds = Decimal(text)
    except InvalidOperation:
        return parse_duration(text)
    if not seconds.is_finite() or seconds < 0:
        raise ValueError(f"{text!r} is not a time; give seconds (1.5) or a duration ('1500ms')")
    return int(seconds * NS_PER_S)


def _rate_or_silence(text: str) -> int:
    """A rate in bit/s, where 0 means silent."""
    try:
        if Decimal(text) == 0:
            return 0
    except InvalidOperation:
        pass
    return parse_rate(text)


def _probability(text: str) -> float:
    try:
        p = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a probability (0 to 1, or a percentage)") from None
    if not (math.isfinite(p) and 0 <= p <= 1):
        raise ValueError(f"{text!r} is not a probability; it must be from 0 to 1")
    return p


def _pairs(path: Union[str, os.PathLike[str]], what: str, form: str) -> tuple[str, Lines]:
    full, lines = _lines(path, what)
    for n, fields in lines:
        if len(fields) != 2:
            raise TrafficFileError(f"{os.fspath(path)} line {n}: expected two values, {form}; got {' '.join(fields)!r}")
    return full, lines


def read_rate_file(path: Union[str, os.PathLike[str]]) -> RateFile:
    """A rate file: ``seconds rate`` per line, times strictly increasing."""
    shown = os.fspath(path)
    full, lines = _pairs(path, "a rate file", "'seconds rate' such as '10 2Mbit'")
    if not lines:
        raise TrafficFileError(f"{shown}: no rates; each line holds 'seconds rate', e.g. '0 5Mbit'")
    steps: list[tuple[int, int]] = []
    for n, (t, rate) in lines:
        try:
            step = (_seconds(t), _rate_or_silence(rate))
        except ValueError as e:
            raise TrafficFileError(f"{shown} line {n}: {e}") from None
        if steps and step[0] <= steps[-1][0]:
            raise TrafficFileError(
                f"{shown} line {n}: {format_duration(step[0])} is not after {format_duration(steps[-1][0])} "
                "on the line before; times must increase"
            )
        steps.append(step)
    return RateFile(full, tuple(steps))


def read_size_cdf(path: Union[str, os.PathLike[str]]) -> SizeCdf:
    """A size CDF: ``bytes probability`` per line, both non-decreasing, the last at 1."""
    shown = os.fspath(path)
    full, lines = _pairs(path, "a size CDF", "'bytes probability' such as '10KB 0.5'")
    if not lines:
        raise TrafficFileError(
            f"{shown}: the CDF is empty; each line holds 'bytes probability', the last at probability 1"
        )
    points: list[tuple[int, float]] = []
    previous = ""
    for n, (size, p) in lines:
        try:
            point = (parse_size(size), _probability(p))
        except ValueError as e:
            raise TrafficFileError(f"{shown} line {n}: {e}") from None
        if point[0] == 0:
            raise TrafficFileError(f"{shown} line {n}: a size of 0 bytes; sizes must be positive")
        if points and (point[0] < points[-1][0] or point[1] < points[-1][1]):
            raise TrafficFileError(
                f"{shown} line {n}: '{size} {p}' is below the line before ('{previous}'); the CDF must not "
                "decrease (sizes and probabilities in non-decreasing order)"
            )
        previous = f"{size} {p}"
        points.append(point)
    last = lines[-1][0]
    if points[-1][1] != 1.0:
        raise TrafficFileError(f"{shown} line {last}: the CDF ends at probability {points[-1][1]:g}; it must end at 1")
    return SizeCdf(full, tuple(points))


def read_arrival_times(path: Union[str, os.PathLike[str]]) -> ArrivalTimes:
    """Arrival times: one instant per line, from the run's start, never going backwards."""
    shown = os.fspath(path)
    full, lines = _lines(path, "a file of arrival times")
    if not lines:
        raise TrafficFileError(f"{shown}: no arrival times; each line holds one instant in seconds, e.g. '1.25'")
    times: list[int] = []
    for n, fields in lines:
        if len(fields) != 1:
            raise TrafficFileError(f"{shown} line {n}: expected one time in seconds, got {' '.join(fields)!r}")
        try:
            t = _seconds(fields[0])
        except ValueError as e:
            raise TrafficFileError(f"{shown} line {n}: {e}") from None
        if times and t < times[-1]:
            raise TrafficFileError(
                f"{shown} line {n}: {format_duration(t)} is before {format_duration(times[-1])} on the line "
                "before; arrival times must not go backwards"
            )
        times.append(t)
    return ArrivalTimes(full, tuple(times))
