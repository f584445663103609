"""Debian's packages, chosen by what they must match rather than by an exact revision.

Debian's security archive keeps only the newest revision of each package, so a pinned
``PACKAGE=VERSION`` stops downloading at the next upload. Packages are therefore found in
the archive's index as this host's apt sees it (``apt-cache``, which reads apt's lists
and needs no network; ``$APT_CONFIG`` points it at another archive) and chosen by rule:
the newest of a name pattern, the same upstream version as a kernel, or whatever
satisfies a package's ``Depends``. Downloads use ``apt-get download`` (nothing is
installed on the host).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional

from ..errors import ScenarioError

FIELD = "--guest-kernel"
APT_TIMEOUT_S = 120
DOWNLOAD_TIMEOUT_S = 300
# How many of the archive's versions an error lists, newest first.
SHOWN = 6


@dataclass(frozen=True, order=True)
class Package:
    """One version of one package, as ``apt-get download`` takes it."""

    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name}={self.version}"


def version_key(version: str) -> object:
    """Debian's version order (epoch, upstream, revision; ``~`` sorts first)."""
    from debian.debian_support import Version

    return Version(version)


def upstream(version: str) -> str:
    """``6.1.192-2`` -> ``6.1.192``; ``6.12.107-1~deb12u1`` -> ``6.12.107``."""
    from debian.debian_support import Version

    return Version(version).upstream_version or version


def available() -> Optional[str]:
    """None if this host can look packages up and download them, else why not."""
    for tool in ("apt-cache", "apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            return f"downloading Debian packages needs {tool}"
    return None


def _apt(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["apt-cache", *args], capture_output=True, text=True, timeout=APT_TIMEOUT_S)


def names(prefix: str) -> list[str]:
    """Every package name apt knows that starts with ``prefix`` (some may have no version
    the archive still serves: see :func:`versions`)."""
    got = _apt(["pkgnames", prefix])
    return sorted(line.strip() for line in got.stdout.splitlines() if line.strip())


def versions(packages: Iterable[str]) -> dict[str, list[str]]:
    """The versions the archive serves of each package, newest first; a package it does
    not serve is absent."""
    packages = list(dict.fromkeys(packages))
    if not packages:
        return {}
    got = _apt(["madison", *packages])
    found: dict[str, set[str]] = {}
    for line in got.stdout.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3 and parts[0] in packages:
            found.setdefault(parts[0], set()).add(parts[1])
    return {name: sorted(v, key=version_key, reverse=True) for name, v in found.items()}


def depends(package: Package) -> list[list[dict]]:
    """``package``'s ``Depends`` as python-debian parses it: a list of alternatives,
    each a list of ``{"name", "version": (op, version) or None, ...}``."""
    from debian.deb822 import Deb822, PkgRelation

    got = _apt(["show", str(package)])
    if got.returncode != 0:
        raise ScenarioError(FIELD, f"the archive has no {package}: {_last_line(got.stderr)}")
    stanza = Deb822(got.stdout.split("\n\n")[0])
    return PkgRelation.parse_relations(stanza.get("Depends", ""))


def newest(pattern: str, prefix: str) -> Optional[Package]:
    """The newest version of the newest package whose whole name matches ``pattern``
    (found among the names starting with ``prefix``), or None."""
    regex = re.compile(pattern)
    offered = versions(n for n in names(prefix) if regex.fullmatch(n))
    if not offered:
        return None
    return max((Package(name, v[0]) for name, v in offered.items()), key=lambda p: version_key(p.version))


def matching(name: str, like: str, relation: Optional[tuple[str, str]] = None, why: str = "") -> Package:
    """The version of ``name`` that goes with version ``like``: ``like`` itself if the
    archive serves it, else the newest of the same upstream version (Debian's revision
    may have moved on); and satisfying ``relation`` (``(">=", "6.1.192-2")``) if given.
    ScenarioError naming what was looked for and what the archive serves."""
    served = versions([name]).get(name, [])
    fits = [v for v in served if upstream(v) == upstream(like) and (relation is None or satisfies(v, relation))]
    chosen = like if like in fits else (fits[0] if fits else None)
    if chosen is None:
        wanted = f"{name} ({' '.join(relation)})" if relation else name
        offers = ", ".join(served[:SHOWN]) + (", ..." if len(served) > SHOWN else "") if served else "no version"
        raise ScenarioError(
            FIELD,
            f"no {wanted} of upstream version {upstream(like)}{why}: the archive serves "
            f"{offers} (apt-get update refreshes this host's index)",
        )
    return Package(name, chosen)


def satisfies(version: str, relation: tuple[str, str]) -> bool:
    """Whether ``version`` meets a Depends relation such as ``(">=", "6.1.192-2")``."""
    op, other = relation
    a, b = version_key(version), version_key(other)
    checks: dict[str, Callable[[], bool]] = {
        "=": lambda: a == b,
        ">=": lambda: a >= b,
        "<=": lambda: a <= b,
        ">>": lambda: a > b,
        "<<": lambda: a < b,
    }
    return checks[op]()


def download(packages: list[Package], into: Path) -> list[Path]:
    """``apt-get download`` each package into ``into``; the .deb files, in the order
    asked."""
    if (missing := available()) is not None:
        raise ScenarioError(FIELD, missing)
    debs = []
    for package in packages:
        before = set(into.glob("*.deb"))
        # Run as the invoking user; apt only warns that it cannot sandbox the download.
        got = subprocess.run(
            ["apt-get", "download", "-q", str(package)],
            cwd=into,
            capture_output=True,
            text=True,
            timeout=DOWNLOAD_TIMEOUT_S,
        )
        new = sorted(set(into.glob("*.deb")) - before)
        if got.returncode != 0 or len(new) != 1:
            raise ScenarioError(FIELD, f"cannot download {package}: {_last_line(got.stderr) or 'no package file'}")
        debs.append(new[0])
    return debs


def extract(deb: Path, into: Path, timeout_s: float = DOWNLOAD_TIMEOUT_S) -> None:
    subprocess.run(["dpkg-deb", "-x", str(deb), str(into)], check=True, timeout=timeout_s)


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[-1]
