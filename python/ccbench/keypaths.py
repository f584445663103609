"""Dotted keys of scenario values: ``link.rate``, ``flows[0].cca``,
``flows[1].params.beta``; and which places of a scenario hold tables rather than values."""

from __future__ import annotations

import re
from typing import Any, Union

from .errors import ScenarioError

Part = Union[str, int]
Path = tuple[Part, ...]

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|(\.)")


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def parse(field: str, key: str) -> Path:
    """``flows[0].params.beta`` -> ``("flows", 0, "params", "beta")``."""
    parts: list[Part] = []
    pos = 0
    expect_name = True
    while pos < len(key):
        m = _TOKEN.match(key, pos)
        if m is None:
            break
        name, index, dot = m.groups()
        if name is not None and expect_name:
            parts.append(name)
            expect_name = False
        elif index is not None and not expect_name:
            parts.append(int(index))
        elif dot is not None and not expect_name:
            expect_name = True
        else:
            break
        pos = m.end()
    if pos != len(key) or expect_name or not parts:
        raise ScenarioError(field, f"{key!r} is not a dotted key such as link.rate or flows[0].cca")
    return tuple(parts)


def is_table(path: Path) -> bool:
    """Whether the scenario schema puts a table (not a value) at ``path``."""
    shapes = {
        (),
        ("link",),
        ("tcp",),
        ("host",),
        ("host", "cost"),
        ("link", "aqm_params"),
        ("link", "loss_model"),
        ("link", "reverse"),
        ("link", "reverse", "aqm_params"),
        ("link", "reverse", "loss_model"),
        ("capture",),
        ("flows", int),
        ("flows", int, "params"),
        ("arrivals", int),
        ("arrivals", int, "params"),
    }
    return tuple(int if isinstance(p, int) else p for p in path) in shapes


# The arrays of tables whose entries hold values ([[flows]], [[arrivals]]).
ENTRY_ARRAYS = ("flows", "arrivals")


def check_value_path(field: str, path: Path, entries: Union[int, dict[str, int]]) -> None:
    """Refuse a key that names a table, an array, or an entry the plan lacks;
    ``entries``: how many entries each array has (an int: [[flows]]'s)."""
    counts = entries if isinstance(entries, dict) else {"flows": entries}
    shape = tuple(int if isinstance(p, int) else p for p in path)
    if is_table(path) or shape in ((a,) for a in ENTRY_ARRAYS):
        raise ScenarioError(field, "names a table; name one of its values, e.g. link.rate, flows[0].cca")
    head = path[0]
    if head in ENTRY_ARRAYS:
        if len(path) < 3 or not isinstance(path[1], int) or not isinstance(path[2], str):
            raise ScenarioError(field, f"name a value of an entry, e.g. {head}[0].cca")
        have_n = counts.get(str(head), 0)
        if path[1] >= have_n:
            have = {0: f"no [[{head}]] entry", 1: f"1 [[{head}]] entry ({head}[0])"}.get(
                have_n, f"{have_n} [[{head}]] entries ({head}[0] to {head}[{have_n - 1}])"
            )
            raise ScenarioError(field, f"the plan has {have}")
        deepest = 4 if path[2] == "params" else 3
    elif head in ("link", "tcp"):
        deepest = 3 if path[:2] == ("link", "reverse") else 2
    else:
        deepest = 1
    if len(path) != deepest or any(isinstance(p, int) for p in path[2 if head in ENTRY_ARRAYS else 0 :]):
        raise ScenarioError(
            field, "is not a scenario value; e.g. link.rate, tcp.mss, flows[0].cca, flows[0].params.beta"
        )


def get(doc: Any, path: Path) -> Any:
    node = doc
    for part in path:
        node = node[part]
    return node


def has(doc: Any, path: Path) -> bool:
    try:
        get(doc, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


def put(doc: dict[str, Any], path: Path, value: Any) -> None:
    """Set ``path`` in ``doc``, creating the tables on the way (``[tcp]``, ``params``)."""
    node: Any = doc
    for i, part in enumerate(path[:-1]):
        if isinstance(part, int):
            node = node[part]
            continue
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, (dict, list)):
            raise ScenarioError(dotted(path[: i + 1]), "must be a table")
        node = child
    node[path[-1]] = value
