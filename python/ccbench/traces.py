"""Mahimahi packet-delivery-opportunity traces: reading and checking trace files.

A trace file holds one non-negative integer per line, a time in milliseconds from the
start of the trace; each line is an opportunity to send one 1500-byte packet. Times
never decrease, and the last one (the trace's period: it repeats shifted by it) must be
positive. Every problem is reported on one line naming the file and the line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

OPPORTUNITY_BYTES = 1500
# Longest accepted timestamp (about 115 days), as the simulator's MAX_TIMESTAMP_MS.
MAX_TIMESTAMP_MS = 10_000_000_000


@dataclass(frozen=True)
class Trace:
    """A validated trace: where it was read from and its opportunities (ms)."""

    path: str
    opportunities_ms: tuple[int, ...] = field(repr=False)

    @property
    def period_ms(self) -> int:
        return self.opportunities_ms[-1]

    @property
    def mean_bps(self) -> int:
        """Mean capacity, bit/s (rounded down): one period's bytes over its length."""
        return len(self.opportunities_ms) * OPPORTUNITY_BYTES * 8 * 1000 // self.period_ms

    def to_core(self) -> dict[str, list[int]]:
        return {"opportunities_ms": list(self.opportunities_ms)}


class TraceError(ValueError):
    """A trace file that cannot be used; the message names the file and the line."""


def parse_trace(text: str, name: str) -> tuple[int, ...]:
    """The timestamps of a trace file's text; ``name`` is used in error messages."""
    lines = text.splitlines()
    if not lines or all(not line.strip() for line in lines):
        raise TraceError(f"{name} line 1: the file is empty; a trace needs at least one timestamp (ms)")
    out: list[int] = []
    for n, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            raise TraceError(f"{name} line {n}: empty line; each line holds one timestamp in milliseconds")
        if not line.isascii() or not line.isdigit():
            shown = line if len(line) <= 30 else line[:27] + "..."
            raise TraceError(f"{name} line {n}: {shown!r} is not a whole, non-negative number of milliseconds")
        ms = int(line)
        if ms > MAX_TIMESTAMP_MS:
            raise TraceError(f"{name} line {n}: {ms} ms is too large (at most {MAX_TIMESTAMP_MS})")
        if out and ms < out[-1]:
            raise TraceError(f"{name} line {n}: {ms} comes after {out[-1]}; timestamps must not decrease")
        out.append(ms)
    if out[-1] == 0:
        raise TraceError(f"{name} line {len(out)}: every timestamp is 0; the trace must last a nonzero time")
    return tuple(out)


_CACHE: dict[tuple[str, int, int], tuple[int, ...]] = {}


def read_trace(path: Union[str, os.PathLike[str]]) -> Trace:
    """Read and check a trace file (relative paths are taken from the current directory)."""
    full = os.path.abspath(os.fspath(path))
    shown = os.fspath(path)
    try:
        st = os.stat(full)
    except FileNotFoundError:
        raise TraceError(f"{shown}: no such trace file") from None
    except OSError as e:
        raise TraceError(f"{shown}: cannot be read: {e.strerror or e}") from None
    if not os.path.isfile(full):
        raise TraceError(f"{shown}: is not a file; a trace is a text file of millisecond timestamps")
    key = (full, st.st_mtime_ns, st.st_size)
    cached = _CACHE.get(key)
    if cached is None:
        try:
            text = Path(full).read_text(encoding="ascii")
        except UnicodeDecodeError as e:
            line = Path(full).read_bytes()[: e.start].count(b"\n") + 1
            raise TraceError(f"{shown} line {line}: not text; a trace holds one timestamp (ms) per line") from None
        except OSError as e:
            raise TraceError(f"{shown}: cannot be read: {e.strerror or e}") from None
        cached = parse_trace(text, shown)
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[key] = cached
    return Trace(full, cached)


def load_trace(value: object) -> Trace:
    """Pydantic before-validator: a path string to a checked :class:`Trace`."""
    if isinstance(value, Trace):
        return value
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected the path of a trace file, e.g. 'traces/TMobile-LTE-short.down'")
    return read_trace(value)
