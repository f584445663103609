"""A small TOML writer for scenario dictionaries (the standard library only reads TOML).

Handles what a scenario holds: strings, booleans, integers, finite floats, tables of
those (written inline when nested inside a table) and arrays of tables. ``None`` values
are left out, with a comment saying why when one is given.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"cannot write non-finite float {v!r} to TOML")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, Mapping):
        inner = ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items() if x is not None)
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _pairs(table: Mapping[str, Any], notes: Mapping[str, str], top: bool = False) -> list[str]:
    """Key/value lines of one table; at the top level, tables come later as sections."""
    lines = []
    for k, v in table.items():
        if v is None:
            if k in notes:
                lines.append(f"# {k}: {notes[k]}")
            continue
        if top and (_is_table(v) or _is_table_array(v)):
            continue
        lines.append(f"{_key(k)} = {_value(v)}")
    return lines


def _is_table(v: Any) -> bool:
    return isinstance(v, Mapping)


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)


def dumps(doc: Mapping[str, Any], header: str = "", notes: Mapping[str, str] | None = None) -> str:
    """Serialise a two-level document: top-level keys, tables and arrays of tables.

    ``notes`` maps a key to a comment written in place of a ``None`` value.
    """
    notes = notes or {}
    out: list[str] = [f"# {line}" if line else "#" for line in header.splitlines()]
    top = _pairs(doc, notes, top=True)
    if out and top:
        out.append("")
    out.extend(top)
    for k, v in doc.items():
        if _is_table(v):
            out += ["", f"[{_key(k)}]", *_pairs(v, notes)]
        elif _is_table_array(v):
            for item in v:
                out += ["", f"[[{_key(k)}]]", *_pairs(item, notes)]
    return "\n".join(out) + "\n"
