"""BPF congestion controls (``cca = "bpf:PATH"``) in the VM guest.

The run's prepared objects (``ccbench.kernel.bpf_ca.prepare``: globals set, every
algorithm renamed for the run) are registered by the guest's own ``bpftool`` as it boots,
before it reports ready. The guest has no package manager and no dynamic loader, so
this host's ``bpftool`` goes in with the shared libraries ``ldd`` names (the loader among
them) and the objects, in a second archive appended to the guest's initramfs: the
kernel unpacks concatenated archives one after the other, and the cached image stays as
it is. ``/init`` runs ``/etc/ccbench-bpf.sh`` when there is one; that script prints, for
each object, ``CCBENCH BPF <k> ok`` or ``failed`` and what bpftool said (its last lines),
each line prefixed ``CCBENCH BPF <k> |``. The registrations end with the guest.
"""

from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path
from typing import Optional

from ..kernel import bpftool
from ..kernel.bpf_ca import BpfSet
from ..kernel.host import KernelEngineError, bpf_core_missing
from .guest import GuestKernel
from .initramfs import newc

# What the guest kernel needs: the bpf() system call, the JIT (struct_ops callbacks are
# called through trampolines) and its own BTF (/sys/kernel/btf/vmlinux), which libbpf
# resolves the object's CO-RE relocations and struct_ops members against.
KERNEL_CONFIG = ("CONFIG_BPF_SYSCALL", "CONFIG_BPF_JIT", "CONFIG_DEBUG_INFO_BTF")
SCRIPT = "etc/ccbench-bpf.sh"
OBJECTS = "etc/ccbench-bpf"
# bpftool's output kept per object: a verifier log can run to thousands of lines, and
# the serial console is slow; its first line and its end say what the kernel refused.
LOG_LINES = 60
LDD_TIMEOUT_S = 10.0
_LINE = re.compile(r"CCBENCH BPF (\d+) (ok|failed|\| (.*))\r?$")


def unavailable(kernel: GuestKernel) -> Optional[str]:
    """Why a BPF congestion control cannot run in a guest on ``kernel`` from this host,
    or None if it can."""
    config = kernel.config()
    missing = [key for key in KERNEL_CONFIG if config and config.get(key) != "y"]
    if missing:
        return (
            f"a BPF congestion control needs a guest kernel with {', '.join(KERNEL_CONFIG)}; "
            f"{kernel.source} lacks {', '.join(missing)}"
        )
    tool = bpftool.path()
    if tool is None:
        return (
            "a BPF congestion control in the guest needs this host's bpftool, which is not on PATH "
            "(Debian: apt-get install bpftool)"
        )
    try:
        shared_libraries(tool)
    except ValueError as e:
        return f"a BPF congestion control in the guest needs bpftool and its libraries: {e}"
    return bpf_core_missing()


def shared_libraries(program: str) -> list[str]:
    """The shared libraries ``program`` loads, the dynamic loader among them, as ``ldd``
    names them (the paths the guest must have); ValueError if one is not found."""
    try:
        proc = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=LDD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ValueError(f"ldd {program} failed ({e})") from None
    if "not a dynamic executable" in proc.stdout + proc.stderr:
        return []
    if proc.returncode != 0:
        raise ValueError(f"ldd {program}: {bpftool.last_line(proc.stderr) or proc.returncode}")
    libraries = []
    for line in proc.stdout.splitlines():
        words = line.split()
        if "not found" in line:
            raise ValueError(f"{program} needs {words[0]}, which this host does not have")
        if "=>" in words:
            path = words[words.index("=>") + 1]
            if path.startswith("/"):
                libraries.append(path)
        elif words and words[0].startswith("/"):
            libraries.append(words[0])  # the loader
    return libraries


def script(count: int) -> str:
    """``/etc/ccbench-bpf.sh``: register each object, saying how it went."""
    log = "/tmp/ccbench-bpf.log"
    return f"""# ccbench: register the run's BPF congestion controls
k=0
while [ $k -lt {count} ]; do
  if /bin/bpftool struct_ops register /{OBJECTS}/$k.bpf.o > {log} 2>&1; then r=ok; else r=failed; fi
  if [ $(wc -l < {log}) -gt {LOG_LINES} ]; then
    {{ grep -m1 -e '-- BEGIN PROG LOAD LOG --' {log}; tail -n {LOG_LINES} {log}; }} > {log}.tail
  else
    cat {log} > {log}.tail
  fi
  sed "s/^/CCBENCH BPF $k | /" {log}.tail
  echo "CCBENCH BPF $k $r"
  k=$((k + 1))
done
"""


def archive(bpf: BpfSet, kernel: GuestKernel) -> bytes:
    """The gzip'd newc archive to append to the guest's initramfs: bpftool, its shared
    libraries, the run's objects, the script that registers them, and the kernel's
    configuration where libbpf looks for the values of ``__kconfig`` externs
    (``/boot/config-<release>``; ``bpf_cubic.c``'s ``CONFIG_HZ``)."""
    tool = bpftool.path()
    if tool is None:
        raise KernelEngineError(bpf.copies[0].field, "bpftool is not on PATH")
    try:
        libraries = shared_libraries(tool)
    except ValueError as e:
        raise KernelEngineError(bpf.copies[0].field, str(e)) from None
    files = [("bin/bpftool", 0o100755, Path(tool).read_bytes())]
    files += [(lib.lstrip("/"), 0o100755, Path(lib).resolve().read_bytes()) for lib in libraries]
    files += [(f"{OBJECTS}/{k}.bpf.o", 0o100644, c.path.read_bytes()) for k, c in enumerate(bpf.copies)]
    files.append((SCRIPT, 0o100644, script(len(bpf.copies)).encode()))
    config = kernel.config()
    if config:
        text = "".join(f"{key}={value}\n" for key, value in config.items())
        files.append((f"boot/config-{kernel.release}", 0o100644, text.encode()))
    dirs = sorted({str(p) for path, _, _ in files for p in Path(path).parents if str(p) != "."})
    entries = [(d, 0o040755, b"") for d in dirs] + files
    return gzip.compress(newc(entries), compresslevel=1, mtime=0)


def initrd(base: Path, bpf: BpfSet, kernel: GuestKernel, out: Path) -> Path:
    """``base`` with the archive for ``bpf`` on ``kernel`` appended, written to ``out``."""
    out.write_bytes(base.read_bytes() + archive(bpf, kernel))
    return out


def registered(console: str, bpf: BpfSet, available: list[str]) -> None:
    """Take the guest's account of its registrations from its console and the
    algorithms it offers: the map ids into ``bpf.ids``, or KernelEngineError with what
    the guest's kernel said of a map a flow runs that it did not register."""
    said: dict[int, list[str]] = {}
    outcome: dict[int, str] = {}
    for line in console.splitlines():
        m = _LINE.search(line)
        if m is None:
            continue
        k = int(m.group(1))
        if m.group(3) is not None:
            said.setdefault(k, []).append(m.group(3))
        else:
            outcome[k] = m.group(2)
    for k, copy in enumerate(bpf.copies):
        if k not in outcome:
            raise KernelEngineError(copy.field, f"the guest did not register {copy.source} (its console says nothing)")
        output = "\n".join(said.get(k, []))
        by_map = bpftool.registered_ids(output)
        names = {name for name in copy.names.values() if name in available}
        bpf.ids.update({name: by_map[m] for name, m in copy.map_names().items() if name in names and m in by_map})
        bpf.settle(k, names, output, "the guest kernel")
