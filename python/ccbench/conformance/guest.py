"""packetdrill scripts on the VM engine's guest kernel: the scripts this host's kernel
cannot run (a qdisc it lacks, such as ``fq``), or another kernel's verdicts.

One boot runs every script. The guest image is the VM engine's (busybox, Debian's
kernel and its modules) plus the ``tun`` and ``sch_fq`` modules, the packetdrill binary,
this host's ``bash`` and ``tc`` (the scripts' shell lines need both) with the shared
libraries they load, and the scripts with the files their shell lines run. In the guest
each script runs as on the host: ``unshare -n sh -c "ip link set lo up; exec packetdrill
ARGS SCRIPT"`` from its directory, bounded in time; packetdrill's status and messages go
to the serial console between markers, and are read as ``--kernel`` reads them. A
timing-only failure is run again in a later boot, up to three times; under TCG the guest
is slower than the host, which such failures show first.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ..errors import ScenarioError
from ..lifecycle import signals_interrupt
from . import packetdrill as pd
from .kernel import (
    SCRIPT_TIMEOUT_S,
    TIMING_RERUNS,
    check_tolerance,
    collect,
    packetdrill_args,
    referenced_files,
    stand_in_target,
)
from .packetdrill_output import Reading, read_output
from .verdict import Verdict

if TYPE_CHECKING:
    from ..vm.guest import GuestKernel

GUEST_MODULES = ("tun", "sch_fq")
# This host's programs the scripts run: the shell of common/defaults.sh, tc for qdiscs
# (busybox has neither a bash nor a tc that knows fq) and python3 for the ``%{ }%``
# assertions. bash is /bin/sh too: busybox's shell runs its own applets before PATH, so
# the scripts' ``tc`` would be busybox's.
HOST_PROGRAMS = {"/bin/bash": "bash", "/bin/sh": "bash", "/sbin/tc": "tc", "/usr/bin/python3": "python3"}
# What of Python's standard library the guest leaves out (packetdrill's code needs sys
# and traceback).
PYTHON_SKIP = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "pydoc_data",
    "distutils",
    "site-packages",
    "dist-packages",
    "unittest",
    "asyncio",
    "email",
    "xml",
    "http",
    "urllib",
    "sqlite3",
    "multiprocessing",
    "concurrent",
    "venv",
    "wsgiref",
    "xmlrpc",
    "curses",
    "dbm",
}
SCRIPTS = "scripts"
TOO_OLD = (
    "packetdrill reads a longer TCP_INFO than this guest kernel fills (its struct is Linux 6.18's): "
    "give a newer --guest-kernel"
)
_MARK = re.compile(r"^CCBENCH (SCRIPT|STATUS|STDERR|END) ?(.*)$")


def run_guest(
    paths: list[Path],
    packetdrill: Optional[Path],
    tolerance_usecs: Optional[int],
    progress: Callable[[Verdict], None],
    guest_kernel: str = "debian:sid",
) -> list[Verdict]:
    """Every script in ``paths`` on ``guest_kernel`` in a QEMU guest, in sorted order;
    ``progress`` sees each verdict as it is reached."""
    from ..vm import guest
    from ..vm.qemu import require_qemu

    check_tolerance(tolerance_usecs)
    scripts = collect(paths)
    require_qemu()
    binary = pd.binary(packetdrill, [s for _, s in scripts])
    kernel = guest.resolve(guest_kernel)
    stack = f"linux {kernel.release} (VM guest)"
    attempts = {name: 0 for name, _ in scripts}
    verdicts: dict[str, Verdict] = {}
    pending = list(scripts)
    with signals_interrupt():
        for boot in range(1 + TIMING_RERUNS):
            if not pending:
                break
            readings = boot_and_run(kernel, binary, pending, tolerance_usecs)
            again = []
            for name, script in pending:
                attempts[name] += 1
                r = readings[name]
                if r.outcome == "fail" and r.mismatch is not None and r.mismatch.timing_only and boot < TIMING_RERUNS:
                    again.append((name, script))
                    continue
                verdicts[name] = Verdict(name, stack, r.outcome, r.mismatch, r.reason, attempts[name])
                progress(verdicts[name])
            pending = again
    return [verdicts[name] for name, _ in scripts]


def boot_and_run(
    kernel: "GuestKernel", binary: Path, scripts: Sequence[tuple[str, Path]], tolerance_usecs: Optional[int]
) -> dict[str, Reading]:
    """One boot that runs ``scripts``: each one's reading, from the console."""
    from ..vm.qemu import Vm, accelerator

    with tempfile.TemporaryDirectory(prefix="ccbench-conformance-") as tmp:
        where = Path(tmp)
        initrd = guest_image(kernel, binary, scripts, tolerance_usecs, where / "initrd.gz")
        accel = accelerator(kernel, initrd, where)
        with Vm(kernel, initrd, where / "vm", append="ccbench.mode=run", accel=accel) as vm:
            vm.start()
            limit = SCRIPT_TIMEOUT_S * len(scripts) + 30
            done = vm.wait_for("CCBENCH DONE", limit)
            console = vm.console_text()
    texts = {name: script.read_text(errors="replace") for name, script in scripts}
    found = parse_console(console)
    readings = {}
    for name, script in scripts:
        if name in found:
            status, stderr = found[name]
            readings[name] = read_output(script.name, texts[name], status, "", stderr)
            if "sizeof(struct _tcp_info)" in stderr:
                readings[name] = Reading("unsupported", reason=TOO_OLD)
        else:
            why = "the guest stopped before it" if done else f"no verdict within {limit} s in the guest"
            readings[name] = Reading("unsupported", reason=why)
    return readings


def parse_console(text: str) -> dict[str, tuple[int, str]]:
    """(packetdrill's status, its messages) per script name, from the guest's console."""
    found: dict[str, tuple[int, str]] = {}
    name: Optional[str] = None
    status = -1
    stderr: list[str] = []
    collecting = False
    for raw in text.replace("\r", "").splitlines():
        m = _MARK.match(raw)
        if m is None:
            if collecting:
                stderr.append(raw)
            continue
        kind, value = m.groups()
        if kind == "SCRIPT":
            name, status, stderr, collecting = value, -1, [], False
        elif kind == "STATUS":
            status = int(value) if value.lstrip("-").isdigit() else -1
        elif kind == "STDERR":
            collecting = True
        elif kind == "END" and name is not None:
            found[name] = (status, "\n".join(stderr) + "\n")
            name, collecting = None, False
    return found


def guest_image(
    kernel: "GuestKernel", binary: Path, scripts: Sequence[tuple[str, Path]], tolerance_usecs: Optional[int], out: Path
) -> Path:
    """The VM engine's guest image with packetdrill, the host programs and the scripts."""
    from ..vm import initramfs

    files: dict[str, tuple[int, bytes]] = {}
    for where, program in (("/bin/packetdrill", str(binary)), *HOST_PROGRAMS.items()):
        path = _which(program)
        files[where.lstrip("/")] = (0o100755, path.resolve().read_bytes())
        for lib in shared_libraries(path):
            files[lib.lstrip("/")] = (0o100755, Path(lib).resolve().read_bytes())
    files.update(python_library(_which("python3")))
    texts = {name: script.read_text(errors="replace") for name, script in scripts}
    refs = {name: referenced_files(script, texts[name]) for name, script in scripts}
    # The scripts and the files they run keep their relative places under /scripts.
    places = [p for name, script in scripts for p in (script, *refs[name])]
    root = Path(os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in places]))
    steps = []
    for name, script in scripts:
        files[f"{SCRIPTS}/{_relative(script, root)}"] = (0o100644, script.read_bytes())
        for ref in refs[name]:
            target = stand_in_target(ref) or ref
            files[f"{SCRIPTS}/{_relative(ref, root)}"] = (0o100755, target.read_bytes())
        argv = ["packetdrill", *packetdrill_args(texts[name], script.name, tolerance_usecs), script.name]
        inner = "ip link set lo up && exec " + " ".join(shlex.quote(a) for a in argv)
        steps.append(
            f"echo {shlex.quote('CCBENCH SCRIPT ' + name)}\n"
            f"cd /{SCRIPTS}/{shlex.quote(_relative(script.parent, root))}\n"
            f"timeout {SCRIPT_TIMEOUT_S} unshare -n sh -c {shlex.quote(inner)} > /tmp/out 2> /tmp/err\n"
            "echo \"CCBENCH STATUS $?\"\necho 'CCBENCH STDERR'\ncat /tmp/err\necho\necho 'CCBENCH END'\n"
        )
    files["run.sh"] = (0o100755, ("export PATH=/sbin:/bin:/usr/bin\n" + "".join(steps)).encode())
    return initramfs.build(
        kernel, out, modules=GUEST_MODULES, files=[(p, mode, data) for p, (mode, data) in sorted(files.items())]
    )


def python_library(python: Path) -> dict[str, tuple[int, bytes]]:
    """The standard library of ``python`` (compiled files included, so that a slow guest
    need not compile them), less the packages in PYTHON_SKIP."""
    version = subprocess.run(
        [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()
    root = python.resolve().parent.parent / "lib" / f"python{version}"
    if not (root / "os.py").is_file():
        raise ScenarioError("--vm", f"cannot find the standard library of {python} at {root}")
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] not in PYTHON_SKIP and not path.is_symlink():
            out[f"usr/lib/python{version}/{rel.as_posix()}"] = (0o100644, path.read_bytes())
    return out


def shared_libraries(program: Path) -> list[str]:
    """The shared libraries ``program`` loads and its loader, as ``ldd`` resolves them."""
    try:
        out = subprocess.run(["ldd", str(program)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ScenarioError("--vm", f"cannot list the libraries of {program} with ldd: {e}") from None
    return sorted(set(re.findall(r"(/\S+\.so[\w.]*)\s+\(0x", out)))


def _which(program: str) -> Path:
    import shutil

    found = shutil.which(program, path="/usr/sbin:/usr/bin:/sbin:/bin") if "/" not in program else program
    if not found or not Path(found).is_file():
        raise ScenarioError(
            "--vm", f"running scripts in the guest needs {program} on this host (Debian: bash, iproute2)"
        )
    return Path(found)


def _relative(path: Path, root: Path) -> str:
    """``path`` below ``root`` (which holds every script and the files they run)."""
    return os.path.relpath(os.path.abspath(path), root)
