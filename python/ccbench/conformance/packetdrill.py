"""The packetdrill binary the kernel's side runs: the user's own (``--packetdrill PATH``), or
one built from packetdrill's source once per source content and kept in the cache, as the
VM engine keeps its guest images (``$CCBENCH_CACHE``, else ``/var/cache/ccbench`` for
root)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from ..errors import ScenarioError
from ..vm.guest import cache_dir

# Where packetdrill's source is when it is not beside the scripts (``gtests/net/packetdrill``
# in github.com/google/packetdrill).
SOURCE_ENV = "CCBENCH_PACKETDRILL_SRC"
# What packetdrill's Makefile runs: a C compiler, make, bison (parser.y), flex (lexer.l).
BUILD_TOOLS = ("make", "bison", "flex")
BUILD_TIMEOUT_S = 600
# The files that make up the source (configure writes Makefile, make writes the rest).
_SOURCE_SUFFIXES = (".c", ".h", ".y", ".l")


def binary(explicit: Optional[Path], scripts: Sequence[Path]) -> Path:
    """The packetdrill to run: ``explicit`` if given; else a build of the source in
    ``$CCBENCH_PACKETDRILL_SRC`` or of a packetdrill checkout that holds the scripts;
    else ``packetdrill`` on PATH. ScenarioError (``--packetdrill``) when there is none."""
    if explicit is not None:
        if not explicit.is_file() or not os.access(explicit, os.X_OK):
            raise ScenarioError(
                "--packetdrill", f"{str(explicit)!r} is not an executable file; give a built packetdrill"
            )
        return explicit.resolve()
    src = find_source(scripts)
    if src is not None:
        return build(src)
    on_path = shutil.which("packetdrill")
    if on_path:
        return Path(on_path)
    raise ScenarioError(
        "--packetdrill",
        "no packetdrill here: give --packetdrill PATH (a built binary), or set "
        f"{SOURCE_ENV} to packetdrill's source (gtests/net/packetdrill of github.com/google/packetdrill)",
    )


def is_source(path: Path) -> bool:
    return (path / "packetdrill.c").is_file() and (path / "parser.y").is_file()


def find_source(scripts: Sequence[Path]) -> Optional[Path]:
    """``$CCBENCH_PACKETDRILL_SRC``, else the source of the packetdrill checkout the scripts
    are in (``gtests/net/packetdrill`` beside ``gtests/net/tcp``, or ``src`` beside them)."""
    env = os.environ.get(SOURCE_ENV)
    if env:
        if not is_source(Path(env)):
            raise ScenarioError(SOURCE_ENV, f"{env!r} is not packetdrill's source (no packetdrill.c and parser.y)")
        return Path(env).resolve()
    for script in scripts:
        for ancestor in script.resolve().parents:
            for candidate in (ancestor / "packetdrill", ancestor / "src"):
                if is_source(candidate):
                    return candidate
    return None


def source_hash(src: Path) -> str:
    """A digest of the source files (not of what ``configure`` and ``make`` write)."""
    h = hashlib.sha256()
    for path in sorted(src.rglob("*")):
        if path.is_file() and (
            path.suffix in _SOURCE_SUFFIXES or path.name.startswith("Makefile.") or path.name == "configure"
        ):
            h.update(path.relative_to(src).as_posix().encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def missing_build_tools() -> list[str]:
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool) is None]
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        missing.insert(0, "gcc")
    return missing


def build(src: Path) -> Path:
    """packetdrill built from ``src`` in a copy under the cache, once per source digest."""
    digest = source_hash(src)[:16]
    out = cache_dir() / "packetdrill" / digest
    built = out / "packetdrill"
    if built.is_file():
        return built
    missing = missing_build_tools()
    if missing:
        raise ScenarioError(
            "--packetdrill",
            f"building packetdrill from {src} needs {', '.join(missing)}, which "
            "is not installed (as root: make conformance-test-deps, or apt-get install "
            f"{' '.join(missing)}); or give --packetdrill PATH",
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=out.parent))
    tmp.chmod(0o755)
    try:
        tree = tmp / "src"
        shutil.copytree(src, tree, symlinks=True)
        _make_writable(tree)  # a read-only checkout copies read-only; configure and make write here
        log = tmp / "build.log"
        jobs = str(max(1, min(4, os.cpu_count() or 1)))
        with log.open("w") as f:
            try:
                done = subprocess.run(
                    ["sh", "-c", f"./configure && make -j{jobs} packetdrill"],
                    cwd=tree,
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    timeout=BUILD_TIMEOUT_S,
                )
                status = f"status {done.returncode}" if done.returncode else ""
            except subprocess.TimeoutExpired:
                status = f"no result within {BUILD_TIMEOUT_S} s"
        if status or not (tree / "packetdrill").is_file():
            lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
            last = lines[-1].strip() if lines else "no output"
            raise ScenarioError(
                "--packetdrill", f"building packetdrill from {src} failed ({status or 'no binary'}): {last}"
            )
        (tree / "packetdrill").rename(tmp / "packetdrill")
        shutil.rmtree(tree)
        try:
            tmp.rename(out)
        except OSError:  # a concurrent build got there first; its binary is the same
            if not built.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return built


def _make_writable(tree: Path) -> None:
    for path in [tree, *tree.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
