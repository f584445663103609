"""``--set PATH=VALUE``: any scenario value, named as a scenario file names it.

``link.rate=50Mbit``, ``tcp.mss=1400``, ``flows[1].cca=bbr``, ``flows.rwnd=1MB`` (every
flow), ``host.cpu_share=30%``. The value is read as a TOML value would be (``1400`` a
number, ``true`` a boolean, ``"a b"`` a string), and anything that is not a TOML value
is taken as a string, so units need no quotes. Overrides are applied in order to the
scenario's TOML form; the scenario is then validated as a file would be, so a wrong key
or value is reported by its path with what is allowed.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from .errors import ScenarioError

_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")


def parse_value(text: str) -> Any:
    """``text`` as a TOML value, or as a plain string if it is not one."""
    import tomllib

    from . import toml_input

    try:
        return toml_input.parse(f"v = {text}", "--set")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply(doc: dict[str, Any], assignments: Sequence[str]) -> None:
    """Apply each ``PATH=VALUE`` to ``doc`` (a scenario in TOML form) in place."""
    for item in assignments:
        path, sep, text = item.partition("=")
        path = path.strip()
        if not sep or not path:
            raise ScenarioError("--set", f"expected PATH=VALUE such as link.rate=50Mbit, got {item!r}")
        _assign(doc, path, parse_value(text.strip()))


def _assign(doc: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    targets: list[dict[str, Any]] = [doc]
    where = ""
    for depth, part in enumerate(parts):
        m = _SEGMENT.match(part)
        if m is None:
            raise ScenarioError("--set", f"{path!r}: {part!r} is not a key or key[index]")
        key, index = m.group(1), m.group(2)
        name = f"{where}.{key}" if where else key
        last = depth == len(parts) - 1
        if last and index is None:
            for t in targets:
                t[key] = value
            return
        following: list[dict[str, Any]] = []
        for t in targets:
            child = t.get(key)
            if child is None and not last:
                child = t[key] = {} if index is None else []
            if isinstance(child, list):
                picked = child if index is None else _pick(child, int(index), name)
                if last:  # key[i]=value replaces that element
                    child[int(index)] = value  # type: ignore[arg-type]
                    continue
                following.extend(e for e in picked if isinstance(e, dict))
            elif isinstance(child, dict) and index is None:
                following.append(child)
            else:
                raise ScenarioError(
                    name, f"is not a table{' of entries' if index is not None else ''}; --set cannot go below it"
                )
        if last:
            return
        targets = following
        where = name if index is None else f"{name}[{index}]"


def _pick(entries: list[Any], index: int, name: str) -> list[Any]:
    if index >= len(entries):
        count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
        raise ScenarioError(f"{name}[{index}]", f"{name} has {count}, indices 0 to {len(entries) - 1}")
    return [entries[index]]
