"""The guest's initramfs, built once per guest kernel, busybox, agent and init script and
kept in the cache (about a second to build, a megabyte or two gzip'd)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Optional

from ..errors import ScenarioError
from . import initramfs
from .guest import GuestKernel, cache_dir


def guest_image(kernel: GuestKernel, agent: Optional[Path] = None) -> Path:
    """The initramfs for ``kernel`` (with the traffic agent ``agent`` if given)."""
    h = hashlib.sha256()
    h.update(kernel.source.encode())
    h.update(str(kernel.modules).encode())
    for module in kernel.extra:
        h.update(module.read_bytes())
    h.update(initramfs.INIT.encode())
    h.update(Path(initramfs.__file__).read_bytes())
    h.update(initramfs.BUSYBOX.read_bytes() if initramfs.BUSYBOX.is_file() else b"")
    if agent is not None:
        h.update(agent.read_bytes())
    out = cache_dir() / "vm" / "images" / f"initrd-{kernel.release}-{h.hexdigest()[:16]}.gz"
    if not out.is_file():
        initramfs.build(kernel, out, agent)
    return out


def agent_binary() -> Path:
    """The static guest agent: ``$CCBENCH_AGENT``, else the one installed with ccbench
    (its wheel carries it: ``install/build_backend.py``), else the source tree's static
    release build (an editable install), else ``ccbench-agent`` on PATH; the first that
    exists and needs no dynamic loader (the guest has none)."""
    target = Path(__file__).resolve().parents[3] / "target"
    candidates = [
        os.environ.get("CCBENCH_AGENT"),
        str(Path(__file__).with_name("bin") / "ccbench-agent"),
        str(target / "x86_64-unknown-linux-gnu" / "release" / "ccbench-agent"),
        str(target / "release" / "ccbench-agent"),
        shutil.which("ccbench-agent"),
    ]
    for c in candidates:
        if c and Path(c).is_file() and not initramfs.is_dynamic(Path(c).read_bytes()):
            return Path(c)
    raise ScenarioError(
        "engine",
        "the VM engine needs its statically linked guest agent, which this installation "
        "lacks: its install builds it where cargo and glibc's static library (Debian: libc6-dev) "
        "are at hand, so install again there (python3 -m pip install --force-reinstall --no-deps "
        "CCBENCH_SOURCE_DIR), or set CCBENCH_AGENT to a static ccbench-agent",
    )
