"""One QEMU guest: started with ``-kernel``/``-initrd`` (no disk), its serial console
in a file, QMP on a unix socket (to find the vCPU threads), stopped and reaped on exit.

Acceleration: KVM where it actually boots a stock kernel (probed once per host, QEMU and
guest kernel, and remembered), else TCG with one host thread per vCPU. Under TCG every
guest instruction is translated, so guest work costs several times what it costs under
KVM: results say which accelerator ran.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ..errors import ScenarioError
from ..lifecycle import die_with_parent
from .guest import GuestKernel, cache_dir

QEMU = "qemu-system-x86_64"
CONTROL_PORT = "ccbench.control"
READY = re.compile(r"CCBENCH READY ([^\r\n]*)\r?\n")  # a whole line, not one still being written
BOOT_TIMEOUT_S = 60.0
KVM_PROBE_TIMEOUT_S = 30.0
QMP_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0


class VmError(RuntimeError):
    """The guest did not boot or QEMU failed; the message ends with the console's tail."""


def require_qemu() -> str:
    path = shutil.which(QEMU)
    if path is None:
        raise ScenarioError("engine", f"the VM engine needs {QEMU} (Debian: apt-get install qemu-system-x86)")
    return path


def qemu_version() -> str:
    out = subprocess.run([require_qemu(), "--version"], capture_output=True, text=True, timeout=10).stdout
    return out.splitlines()[0].strip() if out else "unknown"


@dataclass
class Vm:
    """A guest booted with ``kernel``/``initrd`` and the extra kernel command line
    ``append``. Use as a context manager: the QEMU process is gone after the block."""

    kernel: GuestKernel
    initrd: Path
    workdir: Path
    append: str = ""
    vcpus: int = 1
    memory_mb: int = 512
    accel: str = "tcg"
    extra_args: Sequence[str] = ()
    netns: Optional[str] = None  # run QEMU inside this network namespace (its TAP lives there)
    on_spawn: Optional[Callable[[int], None]] = None  # told QEMU's pid at once (to record it for cleanup)
    proc: Optional[subprocess.Popen[bytes]] = field(default=None, repr=False)
    ready: dict[str, str] = field(default_factory=dict)
    boot_s: float = 0.0
    _control: Optional[socket.socket] = field(default=None, repr=False)

    @property
    def console(self) -> Path:
        return self.workdir / "console.log"

    @property
    def qmp_path(self) -> Path:
        return self.workdir / "qmp.sock"

    @property
    def control_path(self) -> Path:
        """The host end of the guest's control port (a unix socket QEMU listens on)."""
        return self.workdir / "control.sock"

    def command(self) -> list[str]:
        accel = (
            ["-accel", "kvm", "-cpu", "host"] if self.accel == "kvm" else ["-accel", "tcg,thread=multi", "-cpu", "max"]
        )
        argv = [
            require_qemu(),
            *accel,
            "-m",
            str(self.memory_mb),
            "-smp",
            str(self.vcpus),
            "-name",
            "ccbench,debug-threads=on",
            "-display",
            "none",
            "-no-reboot",
            "-nodefaults",
            "-serial",
            f"file:{self.console}",
            # The control channel: a virtio serial port, which delivers a run's results
            # (megabytes for long runs) in a blink where a 16550 UART takes seconds.
            "-device",
            "virtio-serial-pci",
            "-chardev",
            f"socket,id=control,path={self.control_path},server=on,wait=off",
            "-device",
            f"virtserialport,chardev=control,name={CONTROL_PORT}",
            "-qmp",
            f"unix:{self.qmp_path},server=on,wait=off",
            "-kernel",
            str(self.kernel.image),
            "-initrd",
            str(self.initrd),
            "-append",
            f"console=ttyS0 panic=-1 quiet {self.append}".strip(),
            *self.extra_args,
        ]
        return ["ip", "netns", "exec", self.netns, *argv] if self.netns else argv

    def start(self, timeout: float = BOOT_TIMEOUT_S) -> "Vm":
        """Start QEMU and wait for the guest's READY line (ScenarioError-free: VmError if
        it does not come)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.console.write_bytes(b"")
        started = time.monotonic()
        # Its own process group, so that a Ctrl-C meant for ccbench reaches QEMU only
        # through stop(); it dies with ccbench even on SIGKILL.
        with open(self.workdir / "qemu.stderr", "wb") as err:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
                preexec_fn=die_with_parent(os.getpid()),
            )
        if self.on_spawn is not None:
            self.on_spawn(self.proc.pid)
        self._connect_control(started + timeout)
        while time.monotonic() - started < timeout:
            match = READY.search(self.console_text())
            if match:
                self.boot_s = time.monotonic() - started
                self.ready = dict(kv.split("=", 1) for kv in match.group(1).split() if "=" in kv)
                return self
            if self.proc.poll() is not None:
                raise VmError(
                    f"QEMU exited with status {self.proc.returncode} before the guest was ready{self._tail()}"
                )
            time.sleep(0.05)
        raise VmError(f"the guest was not ready within {timeout:.0f} s{self._tail()}")

    def console_text(self) -> str:
        try:
            return self.console.read_bytes().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_for(self, marker: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.console_text():
                return True
            if self.proc is not None and self.proc.poll() is not None:
                return marker in self.console_text()
            time.sleep(0.02)
        return False

    def control(self) -> socket.socket:
        """The connection to the guest's control channel (its /dev/vport0p1), made while
        the guest boots: a virtio port reads as closed (EOF) until the host is connected."""
        if self._control is None:
            raise VmError("the control channel is not connected")
        return self._control

    def _connect_control(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(self.control_path))
            except (FileNotFoundError, ConnectionRefusedError):
                s.close()
                if self.proc is not None and self.proc.poll() is not None:
                    break
                time.sleep(0.01)
                continue
            s.settimeout(QMP_TIMEOUT_S)
            self._control = s
            return
        raise VmError(f"QEMU did not open the control channel{self._tail()}")

    def qmp(self, command: str, **arguments: Any) -> Any:
        """One QMP command's ``return`` value."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(QMP_TIMEOUT_S)
            s.connect(str(self.qmp_path))
            stream = s.makefile("rwb")
            json.loads(stream.readline())  # greeting
            for request in ({"execute": "qmp_capabilities"}, {"execute": command, "arguments": arguments}):
                stream.write(json.dumps(request).encode() + b"\n")
                stream.flush()
                while True:
                    reply = json.loads(stream.readline())
                    if "event" in reply:
                        continue
                    if "error" in reply:
                        raise VmError(f"QMP {request['execute']}: {reply['error'].get('desc', reply['error'])}")
                    break
            return reply["return"]

    def vcpu_threads(self) -> list[int]:
        """Host thread ids of the vCPUs, in vCPU order (QMP ``query-cpus-fast``)."""
        cpus = self.qmp("query-cpus-fast")
        return [int(c["thread-id"]) for c in sorted(cpus, key=lambda c: c["cpu-index"])]

    @property
    def pid(self) -> int:
        """QEMU's process id (under ``ip netns exec`` too, which execs it)."""
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        """End QEMU (SIGTERM, then SIGKILL) and reap it. Its exit also releases the
        SCHED_DEADLINE bandwidth of its threads."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> "Vm":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _tail(self, lines: int = 6) -> str:
        text = self.console_text().strip().splitlines()
        err = self.workdir / "qemu.stderr"
        errors = err.read_text(errors="replace").strip().splitlines() if err.is_file() else []
        tail = (errors[-2:] if errors else []) + text[-lines:]
        return (": " + " | ".join(tail)) if tail else ""


def accelerator(kernel: GuestKernel, initrd: Path, workdir: Path) -> str:
    """``kvm`` if a stock guest kernel boots under KVM on this host, else ``tcg``. Probed
    once with a short boot and remembered per host kernel, QEMU and guest kernel."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    key = hashlib.sha256(f"{os.uname().release}|{qemu_version()}|{kernel.source}".encode()).hexdigest()[:16]
    memo = cache_dir() / "vm" / f"accel-{key}.json"
    if memo.is_file():
        return str(json.loads(memo.read_text())["accel"])
    probe = Vm(kernel, initrd, workdir / "kvm-probe", accel="kvm", append="ccbench.mode=probe")
    try:
        with probe:
            probe.start(KVM_PROBE_TIMEOUT_S)
        accel, why = "kvm", f"booted in {probe.boot_s:.1f} s"
    except VmError as e:
        accel, why = "tcg", f"KVM did not boot a stock kernel: {e}"
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(json.dumps({"accel": accel, "why": why[:500]}) + "\n")
    return accel
