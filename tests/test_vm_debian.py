"""Guest kernels resolved by what they must match (``ccbench.vm.debian``), against a fake
Debian archive that real apt reads through ``$APT_CONFIG``: the newest image of a series,
headers and kbuild of the image's upstream version whose own revision is gone, an error
naming what the archive serves, and a cache that serves offline."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from ccbench import ScenarioError
from ccbench.vm import debian, guest, patched

from conftest import run_cli

pytestmark = pytest.mark.skipif(debian.available() is not None, reason=str(debian.available()))

RELEASE = "6.1.0-57-cloud-amd64"


def _deb(repo: Path, name: str, version: str, depends: str = "", files: dict[str, bytes] | None = None) -> str:
    """Build one package into ``repo``; its stanza for the index."""
    root = repo / "build" / f"{name}_{version}"
    (root / "DEBIAN").mkdir(parents=True)
    control = f"Package: {name}\nVersion: {version}\nArchitecture: amd64\nMaintainer: t <t@example.org>\n"
    control += (f"Depends: {depends}\n" if depends else "") + "Description: fake\n"
    (root / "DEBIAN" / "control").write_text(control)
    for path, data in (files or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    deb = repo / f"{name}_{version}_amd64.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-b", str(root), str(deb)], check=True, capture_output=True, timeout=60
    )
    data = deb.read_bytes()
    return (
        control.replace("Description: fake\n", "") + f"Filename: ./{deb.name}\nSize: {len(data)}\n"
        f"SHA256: {hashlib.sha256(data).hexdigest()}\nDescription: fake\n"
    )


def _image(release: str) -> dict[str, bytes]:
    return {
        f"boot/vmlinuz-{release}": b"kernel",
        f"boot/config-{release}": b"CONFIG_HZ=250\n",
        f"lib/modules/{release}/kernel/net/ipv4/tcp_bbr.ko": b"module",
    }


class Archive:
    """A flat apt repository and an apt configuration that reads only it."""

    def __init__(self, where: Path) -> None:
        self.where, self.repo, self.stanzas = where, where / "repo", []
        self.repo.mkdir(parents=True)

    def add(self, name: str, version: str, depends: str = "", files: dict[str, bytes] | None = None) -> None:
        self.stanzas.append(_deb(self.repo, name, version, depends, files))

    def publish(self) -> str:
        """Write the index and let apt read it; the ``APT_CONFIG`` that points at it (a new
        file each time, as a process resolves a kernel once per archive)."""
        (self.repo / "Packages").write_text("\n".join(self.stanzas))
        w = self.where
        for d in ("etc/sources.list.d", "etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
            (w / d).mkdir(parents=True, exist_ok=True)
        (w / "etc/sources.list").write_text(f"deb [trusted=yes] file:{self.repo} ./\n")
        conf = w / f"apt-{len(list(w.glob('apt-*.conf')))}.conf"
        conf.write_text(
            "".join(
                f'{k} "{v}";\n'
                for k, v in {
                    "Dir::Etc::SourceList": w / "etc/sources.list",
                    "Dir::Etc::SourceParts": w / "etc/sources.list.d",
                    "Dir::Etc::Preferences": w / "etc/preferences",
                    "Dir::Etc::PreferencesParts": w / "etc/preferences.d",
                    "Dir::State": w / "state",
                    "Dir::State::status": "/dev/null",
                    "Dir::Cache": w / "cache",
                    "Debug::NoLocking": "true",
                    "APT::Architecture": "amd64",
                }.items()
            )
        )
        got = subprocess.run(
            ["apt-get", "update", "-q"],
            env=dict(os.environ, APT_CONFIG=str(conf)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert got.returncode == 0, got.stderr
        return str(conf)


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Archive]:
    """Debian after the archive moved on: the old image is still served, a newer one has
    come, and the newer image's kbuild is served only at a later revision than its own."""
    a = Archive(tmp_path / "archive")
    a.add("linux-image-6.1.0-56-cloud-amd64", "6.1.192-2", files=_image("6.1.0-56-cloud-amd64"))
    a.add(f"linux-image-{RELEASE}", "6.1.200-1", files=_image(RELEASE))
    a.add(f"linux-image-{RELEASE}-unsigned", "6.1.201-1")  # not the cloud image: never chosen
    a.add(
        f"linux-headers-{RELEASE}",
        "6.1.200-1",
        depends="linux-headers-6.1.0-57-common (= 6.1.200-1), linux-kbuild-6.1 (>= 6.1.200-1), linux-compiler-x",
    )
    a.add("linux-headers-6.1.0-57-common", "6.1.200-1")
    a.add("linux-kbuild-6.1", "6.1.192-3")
    a.add("linux-kbuild-6.1", "6.1.200-2")
    a.add("linux-source-6.1", "6.1.200-3")
    monkeypatch.setenv("CCBENCH_CACHE", str(tmp_path / "cache"))
    yield a


def test_a_series_is_the_newest_cloud_image_the_archive_serves(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APT_CONFIG", archive.publish())
    kernel = guest.resolve("debian:6.1")
    assert kernel.source == f"debian:linux-image-{RELEASE}=6.1.200-1" and kernel.release == RELEASE
    assert kernel.packages == (f"linux-image-{RELEASE}=6.1.200-1",) and kernel.notes == ()
    assert kernel.identity == kernel.source and kernel.hz() == 250
    # An exact package is taken as asked.
    older = guest.resolve("debian:linux-image-6.1.0-56-cloud-amd64=6.1.192-2")
    assert older.release == "6.1.0-56-cloud-amd64" and older.packages == ("linux-image-6.1.0-56-cloud-amd64=6.1.192-2",)


def test_headers_and_kbuild_match_the_images_upstream_version_when_its_revision_is_gone(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APT_CONFIG", archive.publish())
    kernel = guest.resolve("debian:6.1")
    packages = [str(p) for p in patched.build_packages(kernel, RELEASE, "6.1.200-1")]
    # The headers' own revision where served; kbuild 6.1.200-1 is gone, so the newest
    # 6.1.200 (not 6.1.192-3, another upstream version); the source likewise.
    assert packages == [
        f"linux-headers-{RELEASE}=6.1.200-1",
        "linux-headers-6.1.0-57-common=6.1.200-1",
        "linux-kbuild-6.1=6.1.200-2",
        "linux-source-6.1=6.1.200-3",
    ]


def test_when_nothing_matches_the_error_says_what_was_looked_for_and_what_is_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = Archive(tmp_path / "archive")
    a.add(f"linux-image-{RELEASE}", "6.1.200-1", files=_image(RELEASE))
    a.add(f"linux-headers-{RELEASE}", "6.1.200-1", depends="linux-kbuild-6.1 (>= 6.1.200-1)")
    a.add("linux-kbuild-6.1", "6.1.192-3")
    a.add("linux-image-6.12.117+deb12-cloud-amd64", "6.12.117-1~deb12u1")
    monkeypatch.setenv("APT_CONFIG", a.publish())
    monkeypatch.setenv("CCBENCH_CACHE", str(tmp_path / "cache"))
    kernel = guest.resolve("debian:6.1")
    with pytest.raises(ScenarioError) as e:
        patched.build_packages(kernel, RELEASE, "6.1.200-1")
    assert e.value.field == "--guest-kernel" and e.value.message.startswith(
        f"no linux-kbuild-6.1 (>= 6.1.200-1) of upstream version 6.1.200 (needed by linux-headers-{RELEASE}=6.1.200-1)"
        ": the archive serves 6.1.192-3"
    )
    # A series the archive serves no image of, with nothing cached: one line from the CLI.
    shutil.rmtree(tmp_path / "cache")
    b = Archive(tmp_path / "other")
    b.add("linux-image-6.12.117+deb12-cloud-amd64", "6.12.117-1~deb12u1")
    monkeypatch.setenv("APT_CONFIG", b.publish())
    got = run_cli("replicate", "elmenhorst2026", "--engine", "vm", "--guest-kernel", "debian:6.1")
    assert got.returncode == 2 and got.stderr.count("\n") == 1, got.stderr
    assert got.stderr.startswith(
        "error: --guest-kernel: debian:6.1: looked for the newest "
        "linux-image-6.1.0-*-cloud-amd64: the archive serves none; it serves cloud kernels of "
        "6.12.*; the cache ("
    ), got.stderr


def test_a_filled_cache_serves_when_the_archive_cannot(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APT_CONFIG", archive.publish())
    first = guest.resolve("debian:6.1")
    # The archive moves on, but its newer image cannot be downloaded (offline here).
    archive.add("linux-image-6.1.0-58-cloud-amd64", "6.1.210-1", files=_image("6.1.0-58-cloud-amd64"))
    monkeypatch.setenv("APT_CONFIG", archive.publish())
    (archive.repo / "linux-image-6.1.0-58-cloud-amd64_6.1.210-1_amd64.deb").unlink()
    cached = guest.resolve("debian:6.1")
    assert cached.packages == first.packages and cached.image == first.image
    assert cached.notes and cached.notes[0].startswith(
        "debian:6.1: the archive's linux-image-6.1.0-58-cloud-amd64=6.1.210-1 could not be downloaded (cannot "
        "download linux-image-6.1.0-58-cloud-amd64=6.1.210-1"
    ), cached.notes
    assert cached.notes[0].endswith(f"used linux-image-{RELEASE}=6.1.200-1, the newest in the cache")
    # No apt index at all: the cache still answers.
    empty = Archive(tmp_path / "empty")
    monkeypatch.setenv("APT_CONFIG", empty.publish())
    assert guest.resolve("debian:6.1").packages == first.packages


def test_debian_versions_order_and_relations() -> None:
    assert debian.upstream("6.1.192-2") == "6.1.192" and debian.upstream("6.12.107-1~deb12u1") == "6.12.107"
    assert debian.version_key("6.12.107-1~deb12u1") < debian.version_key("6.12.107-1")
    assert debian.version_key("6.1.192-10") > debian.version_key("6.1.192-9")
    assert debian.satisfies("6.1.192-3", (">=", "6.1.192-2")) and not debian.satisfies("6.1.192-3", ("=", "6.1.192-2"))
    assert debian.satisfies("6.1.192-1", ("<<", "6.1.192-2"))
