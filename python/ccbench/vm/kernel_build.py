"""A guest kernel of one's own: Debian's source of a series' guest kernel, the user's
patches (BBRv3's, say, which no Debian kernel carries), Debian's own configuration of
that kernel cut down to what a guest loads, built into a directory that
``--guest-kernel DIR`` takes.

Debian's source and configuration keep the kernel as close as a build can be to
``debian:<series>``: the same version, HZ, TCP defaults and built-in code; only unused
modules, debug information and module signing are left out. A tree whose
``net/ipv4/tcp_bbr.c`` is BBRv3 (``BBR_VERSION 3``, as google/bbr's v3 branch and the
distributions that carry it have it) registers it as ``bbr3``, the project's name for
it, in ``tcp_bbr3.ko``, and adds ``tcp_bbr3_2brobust.ko``: the same file with
``patches/tcp_bbr3-2brobust.patch`` (``ccbench.vm.patched``). On two cores the build
takes about a quarter of an hour.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import ScenarioError
from . import debian, guest, patched
from .debian import Package
from .initramfs import NETWORK_MODULES

BUILD_TIMEOUT_S = 4 * 3600
STEP_TIMEOUT_S = 600
LOCALVERSION = "-ccbench"
MANIFEST = "ccbench-kernel.json"
BBR = "net/ipv4/tcp_bbr.c"
# Debian package of each tool (libelf for objtool, OpenSSL for the certificate tools).
TOOLS = {
    "make": "make",
    "gcc-12": "gcc-12",
    "flex": "flex",
    "bison": "bison",
    "bc": "bc",
    "perl": "perl",
    "patch": "patch",
    "strip": "binutils",
}
HEADERS = {"/usr/include/libelf.h": "libelf-dev", "/usr/include/openssl/opensslv.h": "libssl-dev"}
# Besides what the guest loads: the qdiscs a user may want on the guest's interface.
QDISCS = ("sch_fq", "sch_fq_codel", "sch_netem", "sch_tbf")


@dataclass(frozen=True)
class Tree:
    """A patched source tree, before its configuration."""

    path: Path
    bbr3: bool  # tcp_bbr.c was BBRv3 and is now tcp_bbr3.c (+ tcp_bbr3_2brobust.c)


def build(
    series: str, patches: Sequence[Path], out: Path, jobs: int = 0, say: Callable[[str], None] = lambda _: None
) -> guest.GuestKernel:
    """Build Debian's ``series`` (``6.1``, ``6.12``) with ``patches`` into ``out``
    (``boot/vmlinuz-<release>``, ``boot/config-<release>``, ``lib/modules/<release>``
    and a manifest naming the source and the patches' SHA-256)."""
    if series not in guest.SERIES:
        raise ScenarioError("--series", f"{series!r}: allowed: {', '.join(guest.SERIES)}")
    for p in patches:
        if not p.is_file():
            raise ScenarioError("--patch", f"{p}: no such file")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ScenarioError("--out", f"{out} exists and is not an empty directory")
    _check_tools()
    stock = guest.resolve(f"debian:{series}")
    image = stock.packages[0]
    source = source_package(series, stock)
    config = stock.modules.parent.parent.parent / "boot" / f"config-{stock.release}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".ccbench-kernel-", dir=out.parent) as tmp:
        work = Path(tmp)
        say(f"downloading {source}")
        tree = unpack_source(source, work)
        say(f"applying {len(patches)} patch(es)")
        prepared = prepare(tree, patches)
        say("configuring (Debian's configuration, cut down to a guest's modules)")
        configure(prepared.path, config, guest_modules(stock, prepared))
        say(f"building with {jobs or os.cpu_count()} jobs (about a quarter of an hour on two cores)")
        _make(prepared.path, ["bzImage", "modules"], jobs, BUILD_TIMEOUT_S)
        staged = work / "out"
        install(prepared.path, staged)
        release = next((staged / "lib" / "modules").iterdir()).name
        manifest = {
            "release": release,
            "source": str(source),
            "config": f"{image}, cut down (ccbench.vm.kernel_build)",
            "patches": [{"file": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in patches],
            "bbr3": prepared.bbr3,
        }
        (staged / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        if out.exists():
            out.rmdir()
        staged.rename(out)
    return guest.resolve(str(out))


def source_package(series: str, kernel: guest.GuestKernel) -> Package:
    """Debian's ``linux-source-<series>`` of the Debian ``kernel``'s upstream version."""
    image = Package(*kernel.packages[0].split("=", 1))
    return debian.matching(f"linux-source-{series}", image.version, why=f" for {image}")


def unpack_source(source: Package, work: Path) -> Path:
    """Debian's kernel source package ``source`` (``linux-source-<series>``), unpacked
    under ``work``."""
    series = source.name[len("linux-source-") :]
    (deb,) = debian.download([source], work)
    pkg = work / "pkg"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(pkg)], check=True, timeout=STEP_TIMEOUT_S)
    deb.unlink()
    subprocess.run(
        ["tar", "-xJf", str(pkg / "usr" / "src" / f"linux-source-{series}.tar.xz"), "-C", str(work)],
        check=True,
        timeout=STEP_TIMEOUT_S,
    )
    shutil.rmtree(pkg)
    return work / f"linux-source-{series}"


def prepare(tree: Path, patches: Sequence[Path]) -> Tree:
    """Apply ``patches``; a BBRv3 ``tcp_bbr.c`` becomes ``bbr3`` (``tcp_bbr3.c``) with
    its 2BRobust twin beside it."""
    for p in patches:
        patched.apply_patch(tree, p.resolve(), "--patch", f"{p.name} does not apply to {tree.name}")
    bbr = tree / BBR
    if not re.search(r"#define\s+BBR_VERSION\s+3\b", bbr.read_text()):
        return Tree(tree, bbr3=False)
    twin = next(p for p in patched.PATCHES if p.base == "bbr3")
    shadow = tree.parent / "bbr3-2brobust"
    (shadow / BBR).parent.mkdir(parents=True)
    shutil.copy(bbr, shadow / BBR)
    patched.apply_patch(
        shadow, patched.PATCHES_DIR / twin.patch, "--patch", f"{twin.patch} does not apply to this BBRv3's {BBR}"
    )
    ipv4 = bbr.parent
    (shadow / BBR).rename(ipv4 / f"{twin.module}.c")
    text, renamed = re.subn(r'(\.name\s*=\s*)"bbr",', r'\1"bbr3",', bbr.read_text())
    if renamed != 1:
        raise ScenarioError("--patch", f'{BBR} is BBRv3 but does not register as "bbr"')
    (ipv4 / "tcp_bbr3.c").write_text(text)
    bbr.unlink()
    makefile = ipv4 / "Makefile"
    rule = "obj-$(CONFIG_TCP_CONG_BBR) += tcp_bbr.o"
    if rule not in makefile.read_text():
        raise ScenarioError("--patch", f"{makefile.relative_to(tree)} has no line {rule!r}")
    makefile.write_text(makefile.read_text().replace(rule, f"obj-$(CONFIG_TCP_CONG_BBR) += tcp_bbr3.o {twin.module}.o"))
    return Tree(tree, bbr3=True)


def guest_modules(stock: guest.GuestKernel, tree: Tree) -> list[str]:
    """What the guest loads (``ccbench.vm.initramfs``), every congestion control
    Debian ships as a module, and a few qdiscs."""
    ccas = [f"tcp_{cc}" for cc in stock.congestion_modules()]
    if tree.bbr3:
        ccas = [("tcp_bbr3" if m == "tcp_bbr" else m) for m in ccas]
    return [*NETWORK_MODULES, *ccas, *QDISCS]


def configure(tree: Path, debian_config: Path, modules: Sequence[str]) -> None:
    """Debian's ``.config`` without debug information or module signing, keeping as
    modules only ``modules`` (``make localmodconfig``); built-in code is unchanged."""
    shutil.copy(debian_config, tree / ".config")
    subprocess.run(
        [
            "scripts/config",
            "--disable",
            "DEBUG_INFO",
            "--disable",
            "DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT",
            "--enable",
            "DEBUG_INFO_NONE",
            "--disable",
            "DEBUG_INFO_BTF",
            "--disable",
            "DEBUG_INFO_BTF_MODULES",
            "--disable",
            "MODULE_SIG_ALL",
            "--set-str",
            "SYSTEM_TRUSTED_KEYS",
            "",
            "--set-str",
            "SYSTEM_REVOCATION_KEYS",
            "",
            "--set-str",
            "LOCALVERSION",
            LOCALVERSION,
            "--disable",
            "LOCALVERSION_AUTO",
            "--module",
            "TCP_CONG_BBR",
        ],
        cwd=tree,
        check=True,
        timeout=60,
    )
    lsmod = tree / "ccbench-lsmod"
    lsmod.write_text("Module Size Used by\n" + "".join(f"{m} 0 0\n" for m in modules))
    _make(tree, ["localmodconfig", f"LSMOD={lsmod}"], 1, STEP_TIMEOUT_S)


def install(tree: Path, staged: Path) -> None:
    """``make modules_install`` (stripped) and the image and configuration in ``boot/``."""
    _make(tree, ["modules_install", f"INSTALL_MOD_PATH={staged}", "INSTALL_MOD_STRIP=1"], 1, STEP_TIMEOUT_S)
    release = subprocess.run(
        ["make", "-s", "kernelrelease"], cwd=tree, capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    modules = staged / "lib" / "modules" / release
    for link in ("build", "source"):  # they point into the build tree, which is deleted
        (modules / link).unlink(missing_ok=True)
    boot = staged / "boot"
    boot.mkdir()
    shutil.copy(tree / "arch" / "x86" / "boot" / "bzImage", boot / f"vmlinuz-{release}")
    shutil.copy(tree / ".config", boot / f"config-{release}")


def _make(tree: Path, args: Sequence[str], jobs: int, timeout: int) -> None:
    made = subprocess.run(
        ["make", f"-j{jobs or os.cpu_count() or 1}", "CC=gcc-12", "HOSTCC=gcc-12", *args],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if made.returncode != 0:
        errors = [line for line in made.stderr.splitlines() if "error" in line.lower()] or made.stderr.splitlines()
        raise ScenarioError("vm build-kernel", f"make {args[0]} failed: {' '.join(errors[:1])}")


def _check_tools() -> None:
    missing = [pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None]
    missing += [pkg for path, pkg in HEADERS.items() if not Path(path).is_file()]
    if missing:
        raise ScenarioError("vm build-kernel", f"building a kernel needs: apt-get install {' '.join(missing)}")
