"""Facts about this machine that the kernel engine needs, and the checks that refuse a
run when the machine cannot do it."""

from __future__ import annotations

import gzip
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

from ..errors import ScenarioError

AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
TUN_DEVICE = Path("/dev/net/tun")
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")


class KernelEngineError(ScenarioError):
    """The kernel engine cannot run this scenario here (not root, no TUN device, an
    algorithm the kernel lacks, or a scenario feature the kernel cannot express). The
    CLI prints it as ``error: <field>: <message>`` and exits with status 2."""


class KernelRunError(RuntimeError):
    """A kernel run failed while running (an agent or the emulator stopped with an
    error). Everything the run created has been removed when this is raised."""


def available_congestion_control() -> list[str]:
    try:
        return AVAILABLE_CC.read_text().split()
    except OSError:
        return []


def ensure_congestion_control(name: str, field: str) -> None:
    """Refuse unless ``name`` is available, trying ``modprobe tcp_<name>`` first."""
    if name in available_congestion_control():
        return
    if re.fullmatch(r"[a-z0-9_]+", name) and shutil.which("modprobe"):
        subprocess.run(["modprobe", "-q", f"tcp_{name}"], capture_output=True)
        if name in available_congestion_control():
            return
    have = ", ".join(available_congestion_control()) or "none"
    raise KernelEngineError(field, f"'{name}' is not available in this kernel; available: {have}")


def require_root(engine: str = "kernel") -> None:
    """Refuse, naming ``engine``, unless this process may create namespaces and TUN devices."""
    if os.geteuid() != 0:
        raise KernelEngineError(
            "engine",
            f"the {engine} engine needs root (network namespaces and TUN devices); run as root or use --engine sim",
        )
    if not TUN_DEVICE.exists():
        raise KernelEngineError("engine", f"the {engine} engine needs TUN devices; {TUN_DEVICE} is missing")
    if shutil.which("ip") is None:
        raise KernelEngineError("engine", f"the {engine} engine needs the 'ip' command (iproute2)")


def tun_usable() -> Optional[str]:
    """None if this process can create TUN devices and namespaces, else why not."""
    if os.geteuid() != 0:
        return "not root"
    if not TUN_DEVICE.exists():
        return f"{TUN_DEVICE} is missing"
    try:
        os.close(os.open(TUN_DEVICE, os.O_RDWR))
    except OSError as e:
        return f"cannot open {TUN_DEVICE}: {e.strerror}"
    if shutil.which("ip") is None:
        return "the 'ip' command is missing"
    return None


def bpf_unavailable() -> Optional[str]:
    """Why this host cannot register a congestion control given as a BPF object
    (``cca = "bpf:PATH"``, ``ccbench.kernel.bpf_ca``), or None if it can."""
    from . import bpftool

    if os.geteuid() != 0:
        return "a BPF congestion control needs root to register it; run as root"
    if not VMLINUX_BTF.is_file():
        return f"a BPF congestion control needs a kernel with BTF; {VMLINUX_BTF} is missing (CONFIG_DEBUG_INFO_BTF)"
    if bpftool.path() is None:
        return "a BPF congestion control needs bpftool, which is not on PATH (Debian: apt-get install bpftool)"
    return bpf_core_missing()


def bpf_core_missing() -> Optional[str]:
    """Why this build cannot prepare BPF objects, or None if it can."""
    from .. import _core

    missing = [fn for fn in ("bpf_object", "bpf_prepare") if not hasattr(_core, fn)]
    if missing:
        return (
            f"this build of ccbench cannot prepare BPF objects (ccbench._core lacks {', '.join(missing)}); "
            "install it again"
        )
    return None


@lru_cache(maxsize=1)
def kernel_hz() -> Optional[int]:
    """CONFIG_HZ of the running kernel, from /proc/config.gz or /boot; None if unknown."""
    texts = []
    try:
        texts.append(gzip.decompress(Path("/proc/config.gz").read_bytes()).decode(errors="replace"))
    except OSError:
        pass
    try:
        texts.append(Path(f"/boot/config-{platform.release()}").read_text(errors="replace"))
    except OSError:
        pass
    for text in texts:
        m = re.search(r"^CONFIG_HZ=(\d+)$", text, re.MULTILINE)
        if m:
            return int(m.group(1))
    return None


# Module parameters that are on/off flags (reported as booleans, as the simulator does).
_FLAG_PARAMS = {"fast_convergence", "hystart", "tcp_friendliness"}


def module_params(cca: str) -> dict[str, object]:
    """The parameters of the kernel module ``tcp_<cca>`` as /sys shows them (global to
    the machine); empty when the module exposes none (mainline BBR has only constants)."""
    d = Path(f"/sys/module/tcp_{cca}/parameters")
    params: dict[str, object] = {}
    if not re.fullmatch(r"[a-z0-9_]+", cca) or not d.is_dir():
        return params
    for p in sorted(d.iterdir()):
        try:
            text = p.read_text().strip()
        except OSError:
            continue
        value: object = int(text) if re.fullmatch(r"-?\d+", text) else text
        if p.name in _FLAG_PARAMS and value in (0, 1):
            value = bool(value)
        params[p.name] = value
    return params


@dataclass(frozen=True)
class HostFacts:
    kernel: str
    kernel_hz: Optional[int]
    available_congestion_control: list[str]
    # The kernel's net.ipv4 sysctls; None when not known (a guest's, checked as it boots).
    ipv4_sysctls: Optional[frozenset[str]] = None
    # Why a flow's ``bpf:`` algorithm cannot run on this kernel; None if it can.
    bpf_unavailable: Optional[str] = None

    def has_sysctl(self, key: str) -> bool:
        return self.ipv4_sysctls is None or key.removeprefix("net.ipv4.") in self.ipv4_sysctls

    def require_module_algorithm(self, cca: str, params: Mapping[str, object], where: str) -> None:
        """Refuse, naming ``where``, parameters for a kernel module's algorithm (module
        parameters are global) or an algorithm this kernel lacks."""
        if params:
            raise KernelEngineError(
                f"{where}.params",
                "the kernel engine cannot set per-flow algorithm parameters "
                "(kernel module parameters are global); remove params",
            )
        if cca not in self.available_congestion_control:
            ensure_congestion_control(cca, f"{where}.cca")


def facts() -> HostFacts:
    return HostFacts(
        platform.release(),
        kernel_hz(),
        available_congestion_control(),
        frozenset(p.name for p in Path("/proc/sys/net/ipv4").iterdir()),
        bpf_unavailable(),
    )
