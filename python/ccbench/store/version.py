"""The code version a run is keyed by: whatever, besides the scenario and seed, changes
its results.

The simulator's version string alone does not change when the simulator is rebuilt
from changed sources, so the version also carries a digest of the compiled core. Kernel
runs also depend on the Python side of the kernel engine and on the running kernel.
"""

from __future__ import annotations

import functools
import hashlib
import platform
from pathlib import Path

from .. import _core

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
    library = Path(_core.__file__ or "")
    digest = _digest_files([library]) if library.is_file() else "unknown"
    return f"{_core.version()}+{digest}"


@functools.cache
def _kernel_engine_digest() -> str:
    package = Path(__file__).resolve().parent.parent / "kernel"
    return _digest_files(sorted(package.glob("*.py")))


def code_version(engine: str) -> str:
    """The code version of runs of ``engine`` ("sim" or "kernel") made by this process."""
    if engine == "sim":
        return core_version()
    if engine == "kernel":
        return f"{core_version()}/py-{_kernel_engine_digest()}/linux-{platform.release()}"
    raise ValueError(f"unknown engine {engine!r}; allowed: sim, kernel")
