"""Congestion controls a guest gets from the project's patches to its own kernel's code.

The simulator turns the 2BRobust patch on with ``params.inflight_deficit = 1`` on a BBR
flow. The VM engine runs such a flow with ``bbr_2brobust``: a module built from the
guest kernel's own ``net/ipv4/tcp_bbr.c`` (Debian's ``linux-source`` package of the
guest's version) with ``patches/tcp_bbr-2brobust.patch`` applied, against Debian's
headers of the same kernel, and put into the guest beside its own modules. A kernel of
one's own gets it by building the patched file into ``tcp_bbr_2brobust.ko`` in its
modules directory. The build takes a few seconds once per kernel; the module is kept in
the cache.

A BBR flow with ``pacing = false`` (the phone study's "pacing off") runs the same way
with ``bbr_unpaced``, from ``patches/tcp_bbr-unpaced.patch``: BBR that never asks for
the stack's internal pacing.

A ``bbr3`` flow runs with ``bbr3_2brobust``, which no Debian kernel has (nor BBRv3):
``ccbench vm build-kernel`` builds it, from ``patches/tcp_bbr3-2brobust.patch``, into
the kernel it builds from a BBRv3 patch (``ccbench.vm.kernel_build``).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..errors import ScenarioError
from ..bpf.name import is_bpf
from ..kernel.plan import UNPACED_SUFFIX
from . import debian, guest
from .debian import Package
from .initramfs import module_vermagic

if TYPE_CHECKING:
    from ..scenario import Flow, Scenario

PATCHES_DIR = Path(__file__).with_name("patches")
BUILD_TIMEOUT_S = 300
PACING = "pacing"


@dataclass(frozen=True)
class Patch:
    algorithm: str  # the guest's name for the patched algorithm
    base: str  # the flow's cca in a scenario
    switch: str  # the flow setting that asks for it: ``pacing`` (= false) or a parameter (= 1)
    source: str  # the patched file in the kernel's tree
    patch: str  # in PATCHES_DIR

    @property
    def module(self) -> str:
        return f"tcp_{self.algorithm}"

    @property
    def field(self) -> str:
        return self.switch if self.switch == PACING else f"params.{self.switch}"

    @property
    def asking(self) -> str:
        """The setting that asks for the patch, as a scenario writes it."""
        return f"{self.field} = {'false' if self.switch == PACING else 1}"

    def asked(self, f: "Flow") -> Optional[bool]:
        """Whether flow ``f`` asks for the patch (True), for mainline (False), or says
        nothing of it (None)."""
        if self.switch == PACING:
            return None if f.pacing is None else not f.pacing
        params = f.params or {}
        return bool(params[self.switch]) if self.switch in params else None

    def cleared(self, f: "Flow") -> "Flow":
        """``f`` without the setting."""
        if self.switch == PACING:
            return f.model_copy(update={"pacing": None})
        return f.model_copy(update={"params": {k: v for k, v in (f.params or {}).items() if k != self.switch}})

    def flow(self) -> dict[str, Any]:
        """A scenario flow that asks for it."""
        if self.switch == PACING:
            return {"cca": self.base, "pacing": False}
        return {"cca": self.base, "params": {self.switch: 1}}


PATCHES = (
    Patch("bbr_2brobust", "bbr", "inflight_deficit", "net/ipv4/tcp_bbr.c", "tcp_bbr-2brobust.patch"),
    # BBRv3's tcp_bbr.c; built with the kernel that has it (ccbench.vm.kernel_build).
    Patch("bbr3_2brobust", "bbr3", "inflight_deficit", "net/ipv4/tcp_bbr.c", "tcp_bbr3-2brobust.patch"),
    Patch(f"bbr{UNPACED_SUFFIX}", "bbr", PACING, "net/ipv4/tcp_bbr.c", "tcp_bbr-unpaced.patch"),
)


def substitute(sc: "Scenario") -> "tuple[Scenario, list[Patch], list[str]]":
    """``sc`` with every flow that asks for a patch (``params.<name> = 1`` or ``pacing =
    false`` on its base algorithm, and no other parameter) running the patched algorithm
    instead, and the setting dropped where it asks for mainline; the patches needed
    (also by flows that name a patched algorithm) and a note for each flow changed.
    ScenarioError for a parameter's patch asked of an algorithm without one, or for two
    patches asked of one flow."""
    flows, needed, notes = [], [], []
    for i, f in enumerate(sc.flows):
        if is_bpf(f.cca):  # an object of one's own: its params are its globals
            flows.append(f)
            continue
        mine = [p for p in PATCHES if p.base == f.cca and p.asked(f) is not None]
        asked = [p for p in PATCHES if p.switch != PACING and p.asked(f)]
        if asked and not any(p.switch == asked[0].switch for p in mine):
            bases = ", ".join(sorted({p.base for p in PATCHES if p.switch == asked[0].switch}))
            raise ScenarioError(
                f"flows[{i}].{asked[0].field}",
                f"the VM engine has this patch for {bases} "
                f"only (a module built from the guest kernel's own code), not for {f.cca}",
            )
        if not mine:
            flows.append(f)
            # Named directly (or by a scenario this function already changed).
            needed += [p for p in PATCHES if p.algorithm == f.cca]
            continue
        for p in mine:
            if not p.asked(f):
                f = p.cleared(f)  # mainline
        wanted = [p for p in mine if p.asked(f)]
        if len(wanted) > 1:
            raise ScenarioError(
                f"flows[{i}]",
                f"asks for {' and '.join(p.asking for p in wanted)}; the VM engine "
                f"has a patched {f.cca} for each ({', '.join(p.algorithm for p in wanted)}), "
                f"not for both",
            )
        patch = wanted[0] if wanted else None
        rest = patch.cleared(f) if patch else f
        if patch is None or rest.params:
            flows.append(rest)  # make_plan refuses the other parameters
            continue
        flows.append(rest.model_copy(update={"cca": patch.algorithm}))
        needed.append(patch)
        notes.append(
            f"flows[{i}]: {f.cca} with {patch.asking} ran as the guest's {patch.algorithm} "
            f"({patch.source} of the guest kernel with python/ccbench/vm/patches/{patch.patch})"
        )
    return sc.model_copy(update={"flows": flows}), list(dict.fromkeys(needed)), notes


def with_patches(kernel: guest.GuestKernel, patches: "list[Patch]") -> guest.GuestKernel:
    """``kernel`` with the modules of ``patches`` it lacks, built (or found in the cache)."""
    missing = [p for p in patches if not kernel.has_module(p.module)]
    if not missing:
        return kernel
    built = [build(kernel, p) for p in missing]
    return kernel.with_modules([b.module for b in built], [str(pkg) for b in built for pkg in b.packages])


@dataclass(frozen=True)
class Built:
    module: Path
    packages: tuple[Package, ...]  # the Debian packages it was built from


def build(kernel: guest.GuestKernel, patch: Patch) -> Built:
    """The module of ``patch`` for a Debian guest kernel, built on first use."""
    if patch.base not in kernel.congestion_control():
        raise ScenarioError(
            "--guest-kernel",
            f"{kernel.source} has no {patch.base}, so no {patch.algorithm}: "
            f"`ccbench vm build-kernel --patch FILE` builds a kernel with both from a patch "
            f"that brings {patch.base}",
        )
    found = re.fullmatch(r"debian:(linux-image-(\S+))=(\S+)", kernel.base_source)
    if found is None:
        raise ScenarioError(
            "--guest-kernel",
            f"{patch.algorithm} is built only for Debian's packaged kernels; for "
            f"{kernel.source}, build {patch.source} with python/ccbench/vm/patches/{patch.patch} "
            f"applied into {patch.module}.ko in its modules directory",
        )
    image, flavour, version = found.groups()
    digest = hashlib.sha256((PATCHES_DIR / patch.patch).read_bytes()).hexdigest()[:16]
    out = guest.cache_dir() / "vm" / "modules" / f"{image}_{version}" / digest / f"{patch.module}.ko"
    manifest = out.with_suffix(".packages")
    if not (out.is_file() and manifest.is_file()):
        packages = build_packages(kernel, flavour, version)
        _build(kernel, patch, flavour, packages, out)
        manifest.write_text("".join(f"{p}\n" for p in packages))
    return Built(out, tuple(Package(*line.split("=", 1)) for line in manifest.read_text().split()))


def build_packages(kernel: guest.GuestKernel, flavour: str, version: str) -> list[Package]:
    """What a module for Debian's ``linux-image-<flavour>`` ``version`` is built from: its
    headers, the headers and kbuild tools they depend on, and the kernel's source. Each
    is of the kernel's upstream version, its own revision where the archive still serves
    it, else the newest one it serves."""
    why = f" for {kernel.base_source[len('debian:') :]}"
    headers = debian.matching(f"linux-headers-{flavour}", version, why=why)
    needed = [headers]
    for alternatives in debian.depends(headers):
        first = alternatives[0]
        if first["name"].startswith(("linux-headers-", "linux-kbuild-")):
            needed.append(debian.matching(first["name"], version, first["version"], why=f" (needed by {headers})"))
    series = ".".join(kernel.release.split(".")[:2])  # 6.1.0-56-cloud-amd64 -> 6.1
    return [*needed, debian.matching(f"linux-source-{series}", version, why=why)]


def _build(kernel: guest.GuestKernel, patch: Patch, flavour: str, packages: list[Package], out: Path) -> None:
    for tool in ("make", "patch", "gcc-12", "strip"):
        if shutil.which(tool) is None:
            raise ScenarioError(
                "--guest-kernel",
                f"building {patch.module} needs {tool} (Debian: apt-get install "
                f"{'binutils' if tool == 'strip' else tool})",
            )
    series = ".".join(kernel.release.split(".")[:2])
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        work = Path(tmp)
        tree = work / "tree"
        for deb in debian.download(packages, work):
            debian.extract(deb, tree, BUILD_TIMEOUT_S)
            deb.unlink()
        build_dir = tree / "usr" / "src" / f"linux-headers-{flavour}"
        # Debian's flavour Makefile includes the common headers by absolute path.
        makefile = build_dir / "Makefile"
        makefile.write_text(makefile.read_text().replace("include /usr/src/", f"include {tree}/usr/src/"))
        src = work / "src"
        _extract(
            tree / "usr" / "src" / f"linux-source-{series}.tar.xz",
            f"linux-source-{series}/{patch.source}",
            src / patch.source,
        )
        apply_patch(
            src,
            PATCHES_DIR / patch.patch,
            "--guest-kernel",
            f"{patch.patch} does not apply to {kernel.source}'s {patch.source}",
        )
        module = work / "module"
        module.mkdir()
        shutil.copy(src / patch.source, module / f"{patch.module}.c")
        (module / "Kbuild").write_text(f"obj-m := {patch.module}.o\n")
        made = subprocess.run(
            ["make", "-C", str(build_dir), f"M={module}", "modules"],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        built = module / f"{patch.module}.ko"
        if made.returncode != 0 or not built.is_file():
            last = " ".join((made.stderr.strip() or made.stdout.strip()).splitlines()[-1:])
            raise ScenarioError("--guest-kernel", f"building {patch.module} for {kernel.source} failed: {last}")
        subprocess.run(["strip", "--strip-debug", str(built)], check=True, timeout=60)
        magic = module_vermagic(built)
        if not magic.startswith(kernel.release + " "):
            raise ScenarioError(
                "--guest-kernel", f"{patch.module} was built for another kernel than {kernel.release}: {magic!r}"
            )
        built.replace(out)  # the work directory is beside it: one rename, whole or not at all


def apply_patch(tree: Path, patch: Path, field: str, failure: str) -> None:
    """``patch -p1`` in ``tree``; ScenarioError(``field``, ``failure``: patch's last line)
    if it does not apply."""
    applied = subprocess.run(
        ["patch", "-d", str(tree), "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-i", str(patch)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    if applied.returncode != 0:
        raise ScenarioError(field, f"{failure}: {' '.join(applied.stdout.strip().splitlines()[-1:])}")


def _extract(archive: Path, member: str, to: Path) -> None:
    """One file of a .tar.xz, read as a stream (Debian's source tarball is 140 MB)."""
    with tarfile.open(archive, mode="r|xz") as tar:
        for entry in tar:
            if entry.name == member:
                data = tar.extractfile(entry)
                assert data is not None
                to.parent.mkdir(parents=True, exist_ok=True)
                to.write_bytes(data.read())
                return
    raise ScenarioError("--guest-kernel", f"{archive.name} has no {member}")
