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
    """The static guest agent: ``$CCBENCH_AGENT``, else the workspace's static release
    build, else ``ccbench-agent`` on PATH; the first that exists and needs no dynamic
    loader (the guest has none)."""
    target = Path(__file__).resolve().parents[3] / "target"
    candidates = [os.environ.get("CCBENCH_AGENT"),
                  str(target / "x86_64-unknown-linux-gnu" / "release" / "ccbench-agent"),
                  str(target / "release" / "ccbench-agent"),
                  shutil.which("ccbench-agent")]
    for c in candidates:
        if c and Path(c).is_file() and not initramfs.is_dynamic(Path(c).read_bytes()):
            return Path(c)
    raise ScenarioError("engine", "the VM engine needs the statically linked guest agent: build it with "
                        "'make agent' (or set CCBENCH_AGENT to one)")
