"""The guest's initramfs, built once per guest kernel, busybox, agent and init script and
kept in the cache (about a second to build, a megabyte or two gzip'd)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Optional

from . import initramfs
from .guest import GuestKernel, cache_dir


def guest_image(kernel: GuestKernel, agent: Optional[Path] = None) -> Path:
    """The initramfs for ``kernel`` (with the traffic agent ``agent`` if given)."""
    h = hashlib.sha256()
    h.update(kernel.source.encode())
    h.update(str(kernel.modules).encode())
    h.update(initramfs.INIT.encode())
    h.update(Path(initramfs.__file__).read_bytes())
    h.update(initramfs.BUSYBOX.read_bytes() if initramfs.BUSYBOX.is_file() else b"")
    if agent is not None:
        h.update(agent.read_bytes())
    out = cache_dir() / "vm" / "images" / f"initrd-{kernel.release}-{h.hexdigest()[:16]}.gz"
    if not out.is_file():
        initramfs.build(kernel, out, agent)
    return out
