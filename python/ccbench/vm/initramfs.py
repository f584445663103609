"""The guest's root file system: an initramfs (gzip'd newc cpio) holding static busybox,
the kernel modules the guest needs in dependency order, the project's traffic agent and
an ``/init`` that configures the guest from the kernel command line. No disk image.

The archive is built in Python (the host need not have cpio), deterministically: sorted
entries, zero timestamps, so the same inputs give the same bytes.
"""

from __future__ import annotations

import gzip
import lzma
import shutil
import struct
from pathlib import Path
from typing import Iterable, Optional, Sequence

from ..errors import ScenarioError
from .guest import GuestKernel

# What a guest sender needs, as modules (each may instead be built in): the virtio PCI
# network device and serial port (the control channel), then every congestion control the kernel ships (loaded so that
# tcp_available_congestion_control lists them and sockets may pick any).
NETWORK_MODULES = (
    "virtio_ring",
    "virtio",
    "virtio_pci_modern_dev",
    "virtio_pci_legacy_dev",
    "virtio_pci",
    "failover",
    "net_failover",
    "virtio_net",
    "virtio_console",
)
BUSYBOX = Path("/bin/busybox")

INIT = r"""#!/bin/sh
# ccbench guest init: mount, load modules, configure from the kernel command line, run.
# /dev/vport0p1 (a virtio serial port, one opener at a time) is the control channel to
# the host: the agent's, or a "go" line in probe mode. The host connects before the guest
# boots, so nothing sent is lost and the port never reads as closed.
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
for m in $(cat /etc/modules.order); do insmod /lib/modules/$m.ko || echo "ccbench: insmod $m failed"; done
# A run's BPF congestion controls, from an archive appended for the run (ccbench.vm.bpf).
if [ -f /etc/ccbench-bpf.sh ]; then sh /etc/ccbench-bpf.sh; fi
MODE=probe; IP=; GW=; MTU=; BUSY=0
for a in $(cat /proc/cmdline); do
  case $a in
    ccbench.mode=*) MODE=${a#ccbench.mode=};; ccbench.ip=*) IP=${a#ccbench.ip=};;
    ccbench.gw=*) GW=${a#ccbench.gw=};; ccbench.busy=*) BUSY=${a#ccbench.busy=};;
    ccbench.mtu=*) MTU=${a#ccbench.mtu=};;
  esac
done
ip link set lo up
if [ -n "$MTU" ]; then ip link set eth0 mtu $MTU; fi
if [ -n "$IP" ]; then ip addr add $IP dev eth0; ip link set eth0 up; fi
if [ -n "$GW" ]; then ip route add default via $GW; fi
echo "CCBENCH READY uptime=$(cut -d' ' -f1 /proc/uptime) release=$(uname -r) nproc=$(nproc) cc=$(tr ' ' ',' < /proc/sys/net/ipv4/tcp_available_congestion_control)"
case $MODE in
  agent) /bin/ccbench-agent serve --control /dev/vport0p1 ;;
  probe) echo "CCBENCH WAITING"; read -r GO < /dev/vport0p1
         if [ "$BUSY" != 0 ]; then echo "CCBENCH BUSY"; timeout $BUSY sh -c 'while :; do :; done'; fi ;;
  run) sh /run.sh ;;
esac
echo "CCBENCH DONE"
poweroff -f
"""


def module_dependencies(path: Path) -> list[str]:
    """The ``depends=`` of a kernel module, from its ELF ``.modinfo`` section."""
    data = _module_bytes(path)
    for field in _modinfo(data):
        if field.startswith(b"depends="):
            return [d for d in field[len(b"depends=") :].decode().split(",") if d]
    return []


def module_vermagic(path: Path) -> str:
    """The ``vermagic=`` of a kernel module: the release and options it was built for."""
    data = _module_bytes(path)
    return next((f[len(b"vermagic=") :].decode() for f in _modinfo(data) if f.startswith(b"vermagic=")), "")


def load_order(kernel: GuestKernel, wanted: Iterable[str]) -> list[str]:
    """``wanted`` modules and their dependencies, each after what it depends on; modules
    built into the kernel are left out."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        name = name.replace("-", "_")
        if name in seen:
            return
        seen.add(name)
        if not kernel.has_module(name):
            if kernel.builtin(name):
                return
            raise ScenarioError("--guest-kernel", f"{kernel.source} has neither a module nor a built-in {name}")
        for dep in module_dependencies(kernel.module_path(name)):
            visit(dep)
        order.append(name)

    for name in wanted:
        visit(name)
    return order


def build(
    kernel: GuestKernel,
    out: Path,
    agent: Optional[Path] = None,
    modules: Sequence[str] = (),
    files: Sequence[tuple[str, int, bytes]] = (),
) -> Path:
    """Write the initramfs for ``kernel`` to ``out``: busybox, the network and congestion
    control modules (and ``modules``), ``/init``, the traffic agent as
    ``/bin/ccbench-agent`` if given, and ``files`` (path, mode, data), such as the
    ``/run.sh`` that ``ccbench.mode=run`` runs."""
    if not BUSYBOX.is_file() or is_dynamic(BUSYBOX.read_bytes()):
        raise ScenarioError(
            "engine", "the VM engine needs a static busybox at /bin/busybox (Debian: apt-get install busybox-static)"
        )
    wanted = [*NETWORK_MODULES, *(f"tcp_{cc}" for cc in kernel.congestion_modules()), *modules]
    order = load_order(kernel, wanted)
    entries: list[tuple[str, int, bytes]] = []  # (path, mode, data); directories have no data
    for d in ("bin", "dev", "etc", "lib", "lib/modules", "proc", "sys", "tmp"):
        entries.append((d, 0o040755, b""))
    entries.append(("bin/busybox", 0o100755, BUSYBOX.read_bytes()))
    for applet in _applets():
        entries.append((f"bin/{applet}", 0o120777, b"busybox"))
    for name in order:
        entries.append((f"lib/modules/{name}.ko", 0o100644, _module_bytes(kernel.module_path(name))))
    entries.append(("etc/modules.order", 0o100644, ("\n".join(order) + "\n").encode()))
    entries.append(("init", 0o100755, INIT.encode()))
    if agent is not None:
        entries.append(("bin/ccbench-agent", 0o100755, agent.read_bytes()))
    given = {path for path, _, _ in files}
    entries = [e for e in entries if e[0] not in given]  # a given file replaces a busybox link
    dirs = {e[0] for e in entries if e[1] == 0o040755}
    for parent in sorted({str(d) for path in given for d in Path(path).parents[:-1]} - dirs):
        entries.append((parent, 0o040755, b""))
    entries += list(files)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as gz:
        gz.write(newc(sorted(entries)))
    tmp.replace(out)
    return out


def newc(entries: Iterable[tuple[str, int, bytes]]) -> bytes:
    """A newc ("070701") cpio archive of (path, mode, data) entries; symlinks carry their
    target as data."""
    parts: list[bytes] = []
    ino = 1
    for path, mode, data in [*entries, ("TRAILER!!!", 0, b"")]:
        name = path.encode() + b"\0"
        nlink = 2 if mode & 0o170000 == 0o040000 else 1
        fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name), 0)
        header = b"070701" + b"".join(b"%08X" % f for f in fields)
        parts += [header, name, _pad(len(header) + len(name)), data, _pad(len(data))]
        ino += 1
    return b"".join(parts)


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 4)


def _applets() -> list[str]:
    import subprocess

    listing = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True, timeout=10)
    # Never a link named busybox onto itself: the kernel would fail to exec init (ELOOP).
    return sorted({a for a in listing.stdout.split() if a and a != "busybox"})


def _module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".ko.xz"):
        return lzma.decompress(data)
    if path.name.endswith(".ko.gz"):
        return gzip.decompress(data)
    if path.name.endswith(".ko.zst"):
        if shutil.which("zstd") is None:
            raise ScenarioError("--guest-kernel", f"{path.name} is zstd-compressed; install zstd")
        import subprocess

        return subprocess.run(["zstd", "-dc", str(path)], capture_output=True, check=True, timeout=60).stdout
    return data


def is_dynamic(elf: bytes) -> bool:
    """Whether a 64-bit ELF executable asks for a program interpreter (PT_INTERP)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return True
    (phoff,) = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    return any(struct.unpack_from("<I", elf, phoff + i * phentsize)[0] == 3 for i in range(phnum))


def _modinfo(elf: bytes) -> list[bytes]:
    """The NUL-separated strings of the ``.modinfo`` section of a 64-bit little-endian ELF."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ScenarioError("--guest-kernel", "a module is not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def section(i: int) -> tuple[int, int, int]:
        base = shoff + i * shentsize
        (name,) = struct.unpack_from("<I", elf, base)
        offset, size = struct.unpack_from("<QQ", elf, base + 24)
        return name, offset, size

    _, str_off, _ = section(shstrndx)
    for i in range(shnum):
        name, offset, size = section(i)
        end = elf.index(b"\0", str_off + name)
        if elf[str_off + name : end] == b".modinfo":
            return [s for s in elf[offset : offset + size].split(b"\0") if s]
    return []
