"""TOML as ccbench reads it from users: the standard library's parser, bounded in size
and nesting, so that any malformed input is one ScenarioError rather than a crash.

``tomllib`` recurses once per nesting level and Python's stack holds a few hundred, so a
deeper array or inline table raises RecursionError; a scenario, a sweep plan or a
``--set`` value nests a few levels, so anything deeper than ``MAX_DEPTH`` is refused
before other code walks it.
"""

from __future__ import annotations

import tomllib
from typing import Any

from .errors import ScenarioError

MAX_BYTES = 16 * 2**20
MAX_DEPTH = 32


def loads(text: str, source: str) -> dict[str, Any]:
    """``text`` parsed; ScenarioError(``source``, what is wrong) for anything else."""
    try:
        return parse(text, source)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(source, f"invalid TOML: {e}") from None


def parse(text: str, source: str) -> dict[str, Any]:
    """As :func:`loads`, but TOML's own syntax errors pass as ``tomllib.TOMLDecodeError``."""
    if len(text) > MAX_BYTES:
        raise ScenarioError(source, too_large(len(text)))
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise ScenarioError(source, f"invalid TOML: nested deeper than {MAX_DEPTH} levels") from None
    if (depth := nesting(doc)) > MAX_DEPTH:
        raise ScenarioError(source, f"invalid TOML: nested {depth} levels deep; at most {MAX_DEPTH}")
    return doc


def too_large(size: int) -> str:
    return f"is {size:,} bytes; a scenario or sweep plan is at most {MAX_BYTES // 2**20} MiB of TOML"


def nesting(value: Any) -> int:
    """How many arrays and tables deep ``value`` goes (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            deepest = max(deepest, depth + 1)
            stack.extend((item, depth + 1) for item in v)
    return deepest
