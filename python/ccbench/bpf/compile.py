"""Compiling a congestion control's BPF C source (``bpf:PATH.c``) into an object.

clang compiles for the BPF target with three include directories, searched in this
order: the one holding a ``vmlinux.h`` made from this host's kernel BTF (made once, only
where bpftool and the BTF exist), the project's own ``include/`` (``<ccbench/tcp_ca.h>``,
which needs no vmlinux.h), and the source's own directory. Objects are kept in the cache
(``$CCBENCH_CACHE/bpf``, else ``$XDG_CACHE_HOME/ccbench/bpf``, else
``~/.cache/ccbench/bpf``), keyed by the bytes of every file the compile read (clang's
``-MD`` list), the flags and the clang binary: a second call with nothing changed runs
no clang at all. Every failure is one line, a :class:`ScenarioError` on ``bpf:PATH``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import ScenarioError

FLAGS = ("-O2", "-g", "-target", "bpf")
# clang 14 only warns, and the object then calls a function that exists nowhere.
STRICT = ("-Werror=implicit-function-declaration",)
INCLUDE = Path(__file__).resolve().parent / "include"
BTF = Path("/sys/kernel/btf/vmlinux")
INSTALL = "apt-get install clang llvm libbpf-dev bpftool"
TIMEOUT_S = 300.0
# bpf_tracing.h's name for the host's architecture.
ARCH = {"x86_64": "x86", "aarch64": "arm64"}
CLANG_ERROR = re.compile(r"^(?P<where>\S[^\n]*?:\d+:\d+): (?:fatal )?error: (?P<what>.*)$", re.M)


@dataclass(frozen=True)
class _Vmlinux:
    """This host's vmlinux.h, or why there is none (said only if a source needs it)."""

    header: Optional[Path]
    why_not: str


@dataclass(frozen=True)
class Compiled:
    """An object in the cache, and one line saying what made it."""

    path: Path
    description: str


def cache_dir() -> Path:
    """Where compiled objects and this kernel's vmlinux.h are kept."""
    if os.environ.get("CCBENCH_CACHE"):
        return Path(os.environ["CCBENCH_CACHE"]) / "bpf"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ccbench" / "bpf"


def compile_source(src: Path) -> Compiled:
    """The object compiled from ``src``, from the cache when nothing it reads changed."""
    field = f"bpf:{src}"
    if not src.is_file():
        raise ScenarioError(field, "no such file")
    clang = shutil.which("clang")
    if clang is None:
        raise ScenarioError(field, f"needs clang with its BPF target: {INSTALL}")
    try:
        vmlinux = _Vmlinux(vmlinux_header(), "")
    except ScenarioError as e:
        vmlinux = _Vmlinux(None, e.message)
    dirs = [d for d in (vmlinux.header.parent if vmlinux.header else None, INCLUDE, src.resolve().parent) if d]
    args = [*FLAGS, f"-D__TARGET_ARCH_{ARCH.get(platform.machine(), platform.machine())}", *STRICT]
    args += [f"-I{d}" for d in dirs]
    recipe = _digest([os.path.realpath(clang), *_stat(clang), str(src.resolve()), *args])
    return _cached(recipe) or _compile(clang, src, args, recipe, field, vmlinux)


def vmlinux_header() -> Path:
    """This kernel's types as C (``bpftool btf dump file BTF format c``), made once per
    kernel into the cache; a ScenarioError says why when it cannot be made."""
    if not BTF.is_file():
        raise ScenarioError("vmlinux.h", f"{BTF} does not exist (a kernel built without CONFIG_DEBUG_INFO_BTF)")
    release = os.uname().release
    data = BTF.read_bytes()
    key = _digest([release, str(len(data)), hashlib.sha256(data).hexdigest()])[:16]
    header = cache_dir() / "vmlinux" / f"{release}-{key}" / "vmlinux.h"
    if header.is_file():
        return header
    bpftool = shutil.which("bpftool") or shutil.which("bpftool", path="/usr/sbin:/sbin")
    if bpftool is None:
        raise ScenarioError("vmlinux.h", f"bpftool is not installed: {INSTALL}")
    header.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=header.parent, delete=False) as out:
        proc = subprocess.run(
            [bpftool, "btf", "dump", "file", str(BTF), "format", "c"],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT_S,
        )
    if proc.returncode != 0:
        os.unlink(out.name)
        raise ScenarioError("vmlinux.h", f"bpftool btf dump failed: {_last_line(proc.stderr)}")
    os.chmod(out.name, 0o644)  # a temporary file is private; the cache is not
    os.replace(out.name, header)
    return header


def _cached(recipe: str) -> Optional[Compiled]:
    """The object of an earlier compile with this recipe, if no file it read has changed."""
    try:
        manifest = json.loads((cache_dir() / f"{recipe}.json").read_text())
    except (OSError, ValueError):
        return None
    hashes = _hashes(manifest["deps"])
    obj = _object_path(recipe, hashes, manifest["source"]) if "source" in manifest else Path()
    if None in hashes or not obj.is_file():
        return None
    return Compiled(obj, manifest["description"])


def _compile(clang: str, src: Path, args: list[str], recipe: str, field: str, vmlinux: _Vmlinux) -> Compiled:
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        out, dep = Path(tmp) / "out.bpf.o", Path(tmp) / "out.d"
        try:
            proc = subprocess.run(
                [clang, *args, "-MD", "-MF", str(dep), "-MT", "obj", "-c", str(src), "-o", str(out)],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                env=dict(os.environ, LC_ALL="C"),
            )
        except subprocess.TimeoutExpired:
            raise ScenarioError(field, f"clang did not finish within {TIMEOUT_S:g} s") from None
        if proc.returncode != 0:
            raise ScenarioError(field, _compile_error(proc.stderr, vmlinux.why_not))
        deps = _deps(dep.read_text())
        obj = _object_path(recipe, _hashes(deps), src.name)
        obj.parent.mkdir(parents=True, exist_ok=True)
        os.replace(out, obj)
    used = vmlinux.header is not None and str(vmlinux.header.resolve()) in deps
    headers = f"vmlinux.h from this host's BTF (kernel {os.uname().release})" if used else "without vmlinux.h"
    description = f"clang {_clang_version(clang)}, {' '.join(FLAGS)}, {headers}"
    _write_json(cache / f"{recipe}.json", {"deps": deps, "description": description, "source": src.name})
    _write_json(obj.with_suffix(".json"), {"source": str(src.resolve()), "description": description})
    return Compiled(obj, description)


def compiled_from(obj: Path) -> Optional[dict[str, str]]:
    """For an object this cache compiled: its source and what compiled it."""
    try:
        return dict(json.loads(obj.with_suffix(".json").read_text()))
    except (OSError, ValueError):
        return None


def _object_path(recipe: str, hashes: list[Optional[str]], source: str) -> Path:
    """Where an object is kept: a folder per exact input, the file named after its
    source (``reno.bpf.c`` -> ``reno.bpf.o``), so that tables and plots can name it."""
    stem = source[: -len(".c")] if source.endswith(".c") else source
    name = stem if stem.endswith(".bpf") else f"{stem}.bpf"
    return cache_dir() / _digest([recipe, *hashes])[:32] / f"{name}.o"


def _compile_error(stderr: str, no_vmlinux: str) -> str:
    """clang's first error, as file:line:column: message."""
    m = CLANG_ERROR.search(stderr)
    if m is None:
        return f"does not compile: {_last_line(stderr)}"
    if no_vmlinux and "'vmlinux.h' file not found" in m["what"]:
        return f"{m['where']}: includes vmlinux.h, which needs this kernel's BTF and bpftool: {no_vmlinux}"
    return f"does not compile: {m['where']}: {m['what']}"


def _deps(make_rule: str) -> list[str]:
    """The files of clang's ``-MD`` rule (``obj: a.c b.h \\``), as absolute paths."""
    body = make_rule.removeprefix("obj:").replace("\\\n", " ")
    names = re.split(r"(?<!\\)\s+", body.strip())
    return sorted({str(Path(n.replace("\\ ", " ")).resolve()) for n in names if n})


def _hashes(paths: list[str]) -> list[Optional[str]]:
    out: list[Optional[str]] = []
    for p in paths:
        try:
            out.append(hashlib.sha256(Path(p).read_bytes()).hexdigest())
        except OSError:
            out.append(None)
    return out


def _clang_version(clang: str) -> str:
    text = subprocess.run([clang, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"clang version (\S+)", text)
    return m.group(1) if m else _last_line(text)


def _stat(path: str) -> list[str]:
    st = os.stat(path)
    return [str(st.st_size), str(st.st_mtime_ns)]


def _digest(parts: list[Optional[str]]) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def _write_json(path: Path, value: dict[str, object]) -> None:
    """Written whole or not at all: another process may read it at any time."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as f:
        json.dump(value, f)
    os.chmod(f.name, 0o644)
    os.replace(f.name, path)
