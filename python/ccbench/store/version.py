"""The parts of a code version that engines share: a run is keyed by whatever, besides
the scenario and seed, changes its results (``Engine.code_version``).

The simulator's version string alone does not change when the simulator is rebuilt
from changed sources, so the version also carries a digest of the compiled core.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

DIGEST_CHARS = 12


def _digest_files(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:DIGEST_CHARS]


@functools.cache
def core_version() -> str:
    """``<simulator version>+<digest of the compiled core>``."""
    from .. import _core

    library = Path(_core.__file__ or "")
    digest = _digest_files([library]) if library.is_file() else "unknown"
    return f"{_core.version()}+{digest}"


@functools.cache
def package_digest(name: str) -> str:
    """A digest of the Python sources of ``ccbench.<name>`` (an engine's own parts)."""
    package = Path(__file__).resolve().parent.parent / name
    return _digest_files(sorted(package.glob("*.py")))
