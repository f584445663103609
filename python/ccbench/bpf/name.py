"""``cca = "bpf:PATH"``: what such a name points at, resolved to an object the simulator
has read (``bpf:PATH.c`` compiled first), so every engine gets ``bpf:/abs/x.bpf.o`` or,
for an object with several ``tcp_congestion_ops``, ``bpf:/abs/x.bpf.o:MAP``."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from .. import _core
from ..errors import ScenarioError

PREFIX = "bpf:"
_MAP = re.compile(r"^(?P<path>.+\.[oc]):(?P<map>[A-Za-z0-9_]+)$")


@dataclass(frozen=True)
class BpfName:
    """A parsed ``bpf:`` name: the object (or source) and the struct_ops map it names."""

    path: str
    map: Optional[str] = None

    def __str__(self) -> str:
        return PREFIX + self.path + (f":{self.map}" if self.map else "")


def is_bpf(cca: str) -> bool:
    return cca.startswith(PREFIX)


def parse(cca: str) -> BpfName:
    rest = cca[len(PREFIX) :]
    m = _MAP.match(rest)
    return BpfName(m["path"], m["map"]) if m else BpfName(rest)


def resolve(cca: str) -> str:
    """The canonical name for ``cca``: an absolute object path the simulator accepts.
    Raises ValueError (one line) for a missing file, a failed compile or a refused object."""
    name = parse(cca.strip())
    path = Path(name.path).expanduser()
    if not name.path:
        raise ValueError("bpf: needs a path to a BPF object (.bpf.o) or its C source (.c)")
    if not path.is_file():
        raise ValueError(f"{name.path}: no such BPF object or source file")
    if path.suffix == ".c":
        from .compile import compile_source

        try:
            path = compile_source(path).path
        except ScenarioError as e:
            raise ValueError(e.message) from None
    path = path.resolve()
    try:
        info = describe(str(path))
    except ScenarioError as e:
        raise ValueError(f"{name.path}: {e.message}") from None
    maps = [m["symbol"] for m in info["maps"]]
    if name.map is None and len(maps) > 1:
        raise ValueError(
            f"{name.path} holds {len(maps)} struct_ops maps ({', '.join(maps)}): name one as bpf:{name.path}:MAP"
        )
    if name.map is not None and name.map not in maps:
        raise ValueError(f"{name.path} has no struct_ops map {name.map}; it has {', '.join(maps)}")
    return str(BpfName(str(path), name.map))


def describe(path: str) -> dict[str, Any]:
    """What the object holds (``_core.bpf_object``), cached by the file's bytes."""
    return _describe(path, _sha256(path))


@lru_cache(maxsize=64)
def _describe(path: str, sha: str) -> dict[str, Any]:
    info: dict[str, Any] = json.loads(_core.bpf_object(path))
    info["sha256"] = sha
    return info


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def provenance(cca: str) -> dict[str, Any]:
    """What a resolved ``bpf:`` name ran, for a run's summary: the object, its sha256,
    the struct_ops map and the name it gives itself, and, for an object compiled from
    C, the source and what compiled it."""
    from .compile import compiled_from

    name = parse(cca)
    info = describe(name.path)
    ops = next(m for m in info["maps"] if name.map in (None, m["symbol"]))
    built = compiled_from(Path(name.path))
    return {
        "object": name.path,
        "sha256": info["sha256"],
        "map": ops["symbol"],
        "name": ops["name"],
        "source": built["source"] if built else None,
        "compiled": built["description"] if built else None,
    }
