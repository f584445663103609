"""The guest's Linux kernel: a Debian package, downloaded and extracted into a cache
(never installed on the host), or a kernel of the user's own.

``--guest-kernel`` takes:

* ``debian:6.1`` (the default) or ``debian:6.12``: the newest Debian cloud kernel of that
  series the archive serves (``SERIES``; results name the package and version used);
* ``debian:PACKAGE=VERSION``: exactly that Debian kernel package;
* ``debian:sid``: Debian unstable's current cloud kernel, fetched from the Debian
  archive (checked against the archive's SHA-256 sums);
* a directory holding ``boot/vmlinuz-*`` and ``lib/modules/<release>/`` (what a Debian
  package or ``make install modules_install INSTALL_MOD_PATH=DIR`` lays out), or
  ``usr/lib/modules/<release>/vmlinuz`` as Debian's newer packages do;
* ``BZIMAGE:MODULES_DIR``: a kernel image and its ``lib/modules/<release>`` directory.

A series is resolved from apt's index, which needs no network; a kernel once downloaded
stays in the cache, and is used when the archive's newer one cannot be downloaded.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import ScenarioError
from . import debian
from .debian import Package


@dataclass(frozen=True)
class Series:
    """Debian's cloud flavour of one kernel series: virtio drivers and every TCP
    congestion control as modules, and small (27 MB)."""

    prefix: str  # what every image name of the series starts with
    pattern: str  # an image's whole name
    shown: str  # the pattern as an error names it


SERIES = {
    "6.1": Series("linux-image-6.1.0-", r"linux-image-6\.1\.0-\d+-cloud-amd64", "linux-image-6.1.0-*-cloud-amd64"),
    "6.12": Series(
        "linux-image-6.12.", r"linux-image-6\.12\.\d+\+deb12-cloud-amd64", "linux-image-6.12.*+deb12-cloud-amd64"
    ),
}
DEFAULT = "debian:6.1"
SID = "debian:sid"
ARCHIVE = "http://deb.debian.org/debian"
DOWNLOAD_TIMEOUT_S = 300


@dataclass(frozen=True)
class GuestKernel:
    """A kernel image and the modules directory of the same release."""

    image: Path
    modules: Path  # .../lib/modules/<release>
    source: str  # how it was named: "debian:linux-image-...=6.1.192-2", or a path
    # Modules built for it by the project (ccbench.vm.patched), beside its own.
    extra: tuple[Path, ...] = ()
    # The Debian packages (``name=version``) it and its extra modules were made from.
    packages: tuple[str, ...] = ()
    # What a run on it should say of how it was chosen (a cached kernel used offline).
    notes: tuple[str, ...] = ()

    @property
    def release(self) -> str:
        return self.modules.name

    @property
    def base_source(self) -> str:
        """How the kernel itself was named, without the modules added to it."""
        return self.source.split(" + ")[0]

    @property
    def identity(self) -> str:
        """What results should be keyed by: a Debian package's name and version, or for
        a kernel of one's own its path and its image's digest (a rebuild is another
        kernel)."""
        if self.source.startswith("debian:"):
            return self.base_source
        import hashlib

        return f"{self.base_source}@{hashlib.sha256(self.image.read_bytes()).hexdigest()[:12]}"

    def with_modules(self, paths: "list[Path]", packages: "list[str]" = ()) -> "GuestKernel":
        """This kernel with the module files ``paths`` added to its own, built from the
        Debian ``packages``."""
        extra = tuple(sorted({*self.extra, *paths}))
        names = "+".join(p.name.split(".ko")[0] for p in extra)
        return GuestKernel(
            self.image,
            self.modules,
            f"{self.base_source} + {names}" if extra else self.base_source,
            extra,
            tuple(dict.fromkeys([*self.packages, *packages])),
            self.notes,
        )

    def module_path(self, name: str) -> Path:
        """The file of module ``name`` (``virtio_net``, ``tcp_bbr``); ScenarioError if the
        kernel has none (it may be built in: see :meth:`builtin`)."""
        found = self._index().get(name.replace("-", "_"))
        if found is None:
            raise ScenarioError("--guest-kernel", f"{self.source} has no module {name}")
        return found

    def has_module(self, name: str) -> bool:
        return name.replace("-", "_") in self._index()

    def builtin(self, name: str) -> bool:
        path = self.modules / "modules.builtin"
        if not path.is_file():
            return False
        wanted = name.replace("-", "_")
        return any(
            Path(line.strip()).name.split(".ko")[0].replace("-", "_") == wanted
            for line in path.read_text().splitlines()
        )

    def config(self) -> dict[str, str]:
        """The kernel's build configuration (``boot/config-<release>`` of the tree the
        modules are in, or beside the image, or ``config`` in the modules directory);
        empty if there is none."""
        for path in (
            self.modules.parent.parent.parent / "boot" / f"config-{self.release}",
            self.image.parent / f"config-{self.release}",
            self.modules / "config",
        ):
            if path.is_file():
                pairs = (
                    line.split("=", 1)
                    for line in path.read_text(errors="replace").splitlines()
                    if line.startswith("CONFIG_") and "=" in line
                )
                return {k: v for k, v in pairs}
        return {}

    def hz(self) -> Optional[int]:
        value = self.config().get("CONFIG_HZ")
        return int(value) if value and value.isdigit() else None

    def congestion_control(self) -> list[str]:
        """What the guest offers once its modules are loaded: reno (always built in),
        the built-in ones, then every module."""
        config = self.config()
        builtin = [
            cc
            for cc, key in (("cubic", "CONFIG_TCP_CONG_CUBIC"), ("bbr", "CONFIG_TCP_CONG_BBR"))
            if config.get(key) == "y"
        ]
        return ["reno", *builtin, *(cc for cc in self.congestion_modules() if cc not in builtin)]

    def congestion_modules(self) -> list[str]:
        """Every ``tcp_<name>`` module, by algorithm name (``bbr``, ``vegas``, ...)."""
        return sorted(n[len("tcp_") :] for n in self._index() if n.startswith("tcp_") and n != "tcp_diag")

    def _index(self) -> dict[str, Path]:
        index: dict[str, Path] = {}
        for p in sorted(self.modules.rglob("*.ko*")):
            index.setdefault(p.name.split(".ko")[0].replace("-", "_"), p)
        for p in self.extra:
            index[p.name.split(".ko")[0].replace("-", "_")] = p
        return index


def cache_dir() -> Path:
    """Where downloaded kernels and built images are kept: ``$CCBENCH_CACHE``, else
    ``/var/cache/ccbench`` for root, else ``~/.cache/ccbench``."""
    if os.environ.get("CCBENCH_CACHE"):
        return Path(os.environ["CCBENCH_CACHE"])
    if os.geteuid() == 0:
        return Path("/var/cache/ccbench")
    return Path.home() / ".cache" / "ccbench"


def resolve(spec: str = DEFAULT) -> GuestKernel:
    """The guest kernel ``spec`` names, downloading a Debian package on first use (once
    per process, cache and archive)."""
    return _resolve(spec, cache_dir(), os.environ.get("APT_CONFIG"))


@functools.lru_cache(maxsize=None)
def _resolve(spec: str, cache: Path, apt_config: Optional[str]) -> GuestKernel:
    if spec == SID:
        return _sid()
    if spec.startswith("debian:"):
        return _debian(spec[len("debian:") :], spec)
    if ":" in spec and not Path(spec).exists():
        image, _, modules = spec.partition(":")
        return _own(Path(image), Path(modules), spec)
    root = Path(spec)
    if root.is_dir():
        # Debian's packages up to 6.x: boot/vmlinuz-<release> and lib/modules/<release>;
        # later ones (linux-binary-*, linux-modules-*, linux-base-*): usr/lib/modules/<release>
        # holding vmlinuz.
        images = sorted((root / "boot").glob("vmlinuz-*")) or sorted((root / "usr/lib/modules").glob("*/vmlinuz"))
        trees = sorted(
            p for p in [*(root / "lib" / "modules").glob("*"), *(root / "usr/lib/modules").glob("*")] if p.is_dir()
        )
        if len(images) != 1 or len(trees) != 1:
            raise ScenarioError(
                "--guest-kernel",
                f"{spec}: expected one boot/vmlinuz-* and one lib/modules/<release>, "
                f"found {len(images)} and {len(trees)}",
            )
        return _own(images[0], trees[0], spec)
    raise ScenarioError(
        "--guest-kernel",
        f"{spec!r}: allowed: {', '.join('debian:' + s for s in SERIES)}, "
        "debian:sid, debian:PACKAGE=VERSION, "
        "a directory with boot/vmlinuz-* and lib/modules/<release> (or usr/lib/modules/<release>/"
        "vmlinuz), or BZIMAGE:MODULES_DIR",
    )


def _own(image: Path, modules: Path, spec: str) -> GuestKernel:
    if not image.is_file():
        raise ScenarioError("--guest-kernel", f"{image}: no such kernel image")
    if not modules.is_dir():
        raise ScenarioError("--guest-kernel", f"{modules}: no such modules directory")
    return GuestKernel(image=image.resolve(), modules=modules.resolve(), source=spec)


def _debian(rest: str, spec: str) -> GuestKernel:
    if rest in SERIES:
        return _newest(rest)
    if "=" not in rest:
        raise ScenarioError(
            "--guest-kernel", f"{spec!r}: allowed: {', '.join('debian:' + s for s in SERIES)} or debian:PACKAGE=VERSION"
        )
    name, _, version = rest.partition("=")
    return _unpacked(Package(name, version))


def _newest(series: str) -> GuestKernel:
    """The newest cloud kernel of ``series`` the archive serves; the newest one in the
    cache if the archive cannot be asked or its newest cannot be downloaded."""
    s = SERIES[series]
    cached = _cached(s)
    unavailable = debian.available()
    found = None if unavailable else debian.newest(s.pattern, s.prefix)
    if found is None:
        if cached:
            return _unpacked(
                cached[0],
                (
                    f"debian:{series}: {unavailable or 'the archive serves no ' + s.shown}; "
                    f"used {cached[0]}, the newest in the cache",
                ),
            )
        offered = "" if unavailable else f"; it serves cloud kernels of {_cloud_images()}"
        raise ScenarioError(
            "--guest-kernel",
            f"debian:{series}: looked for the newest {s.shown}: "
            f"{unavailable or 'the archive serves none'}{offered}; the cache ({_kernels_dir()}) "
            "has none",
        )
    try:
        return _unpacked(found)
    except ScenarioError as e:
        if not cached or found in cached:
            raise
        return _unpacked(
            cached[0],
            (
                f"debian:{series}: the archive's {found} could not be downloaded "
                f"({e.message}); used {cached[0]}, the newest in the cache",
            ),
        )


def _cloud_images() -> str:
    """The cloud kernels the archive serves, by series, for an error message."""
    images = [n for n in debian.names("linux-image-") if re.fullmatch(r"linux-image-[\d.]+\S*-cloud-amd64", n)]
    series = sorted({".".join(re.findall(r"\d+", n)[:2]) for n in images}, key=debian.version_key)
    return ", ".join(f"{s}.*" for s in series) or "no cloud kernel"


def _kernels_dir() -> Path:
    return cache_dir() / "vm" / "kernels"


def _cached(series: Series) -> list[Package]:
    """The kernels of ``series`` complete in the cache, newest first."""
    found = []
    for d in _kernels_dir().glob(f"{series.prefix}*_*"):
        name, _, version = d.name.partition("_")
        if (d / ".complete").is_file() and re.fullmatch(series.pattern, name):
            found.append(Package(name, version))
    return sorted(found, key=lambda p: debian.version_key(p.version), reverse=True)


def _unpacked(package: Package, notes: tuple[str, ...] = ()) -> GuestKernel:
    """``package`` extracted in the cache (downloaded on first use)."""
    where = _kernels_dir() / f"{package.name}_{package.version}"
    if not (where / ".complete").is_file():
        _download(package, where)
    images = sorted((where / "boot").glob("vmlinuz-*"))
    trees = sorted(p for p in (where / "lib" / "modules").glob("*") if p.is_dir())
    if len(images) != 1 or len(trees) != 1:
        raise ScenarioError("--guest-kernel", f"{package} has no single kernel image and modules tree")
    return GuestKernel(
        image=images[0], modules=trees[0], source=f"debian:{package}", packages=(str(package),), notes=notes
    )


def _sid() -> GuestKernel:
    """Debian unstable's cloud kernel: the packages ``linux-image-cloud-amd64`` depends
    on, from the archive's index (kept for the day), each checked against its SHA-256
    and extracted into the cache."""
    import datetime
    import hashlib
    import lzma

    kernels = _kernels_dir()
    index_path = kernels / f"sid-Packages-{datetime.date.today():%Y%m%d}"
    if not index_path.is_file():
        kernels.mkdir(parents=True, exist_ok=True)
        data = lzma.decompress(_fetch(f"{ARCHIVE}/dists/sid/main/binary-amd64/Packages.xz"))
        index_path.write_bytes(data)
    stanzas = {}
    for block in index_path.read_text(errors="replace").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line[0].isspace())
        if "Package" in fields:
            stanzas[fields["Package"]] = fields

    def depends(package: str) -> list[str]:
        return [d.split()[0] for d in stanzas[package].get("Depends", "").split(",") if d.strip()]

    image = next((d for d in depends("linux-image-cloud-amd64") if d.startswith("linux-image-")), None)
    if image is None or image not in stanzas:
        raise ScenarioError("--guest-kernel", "debian:sid: the archive's index names no cloud kernel")
    parts = [image, *(d for d in depends(image) if d.startswith(("linux-binary-", "linux-modules-", "linux-base-")))]
    where = kernels / f"sid_{image}_{stanzas[image]['Version']}"
    if not (where / ".complete").is_file():
        with tempfile.TemporaryDirectory(dir=kernels) as tmp:
            tree = Path(tmp) / "tree"
            for package in parts:
                deb = _fetch(f"{ARCHIVE}/{stanzas[package]['Filename']}")
                if hashlib.sha256(deb).hexdigest() != stanzas[package]["SHA256"]:
                    raise ScenarioError("--guest-kernel", f"debian:sid: {package} does not match the archive's sum")
                (Path(tmp) / "p.deb").write_bytes(deb)
                debian.extract(Path(tmp) / "p.deb", tree)
            (tree / ".complete").write_text(" ".join(parts) + "\n")
            if where.exists():
                shutil.rmtree(where)
            tree.rename(where)
    kernel = resolve(str(where))
    return GuestKernel(
        kernel.image,
        kernel.modules,
        f"{SID} ({image}={stanzas[image]['Version']})",
        packages=tuple(f"{p}={stanzas[p]['Version']}" for p in parts),
    )


def _fetch(url: str) -> bytes:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as r:
            return bytes(r.read())
    except OSError as e:
        raise ScenarioError("--guest-kernel", f"cannot download {url}: {e}") from None


def _download(package: Package, where: Path) -> None:
    """Download the package and extract it with ``dpkg-deb -x``."""
    if debian.available() is not None:
        raise ScenarioError(
            "--guest-kernel",
            f"{debian.available()}; give a kernel of your own instead (a directory or BZIMAGE:MODULES_DIR)",
        )
    where.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=where.parent) as tmp:
        (deb,) = debian.download([package], Path(tmp))
        tree = Path(tmp) / "tree"
        debian.extract(deb, tree)
        (tree / ".complete").write_text(f"{package}\n")
        if where.exists():
            shutil.rmtree(where)
        tree.rename(where)
