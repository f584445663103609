"""A guest kernel of one's own (``ccbench.vm.kernel_build``): the BBRv3 tree's renaming
and its 2BRobust twin, the guest's module list, Debian's configuration cut down, and
the command's refusals. The whole build (half an hour) is not run here; docs/vm-engine.md
gives the kernel it built and what ran on it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ccbench import ScenarioError
from ccbench.vm import guest, kernel_build, patched
from ccbench.vm.initramfs import NETWORK_MODULES

from conftest import run_cli

RULE = "obj-$(CONFIG_TCP_CONG_BBR) += tcp_bbr.o\n"


def _bbrv3_like(patch: Path) -> str:
    """A file the patch applies to: each hunk's old lines, in order, apart, under
    BBRv3's version line (BBRv3's own source is not in Debian's archive)."""
    hunks = re.split(r"^@@[^\n]*\n", patch.read_text(), flags=re.M)[1:]
    old = ["".join(line[1:] + "\n" for line in h.splitlines() if line[:1] in (" ", "-")) for h in hunks]
    return "#define BBR_VERSION\t\t3\n" + "/* ... */\n".join(old)


def _tree(tmp_path: Path, bbr: str) -> Path:
    tree = tmp_path / "linux"
    (tree / "net" / "ipv4").mkdir(parents=True)
    (tree / kernel_build.BBR).write_text(bbr)
    (tree / "net" / "ipv4" / "Makefile").write_text("obj-y += tcp.o\n" + RULE)
    return tree


def test_a_bbrv3_tree_offers_bbr3_and_its_2brobust_twin(tmp_path: Path) -> None:
    v3 = next(p for p in patched.PATCHES if p.base == "bbr3")
    tree = _tree(tmp_path, _bbrv3_like(patched.PATCHES_DIR / v3.patch))
    prepared = kernel_build.prepare(tree, [])
    ipv4 = tree / "net" / "ipv4"
    assert prepared.bbr3 and not (ipv4 / "tcp_bbr.c").exists()
    assert re.search(r'\.name\s*=\s*"bbr3",', (ipv4 / "tcp_bbr3.c").read_text())
    twin = (ipv4 / "tcp_bbr3_2brobust.c").read_text()
    assert re.search(r'\.name\s*=\s*"bbr3_2brobust",', twin) and "bbr_inflight_deficit(sk, bw);" in twin
    assert "obj-$(CONFIG_TCP_CONG_BBR) += tcp_bbr3.o tcp_bbr3_2brobust.o" in (ipv4 / "Makefile").read_text()


def test_a_tree_without_bbrv3_is_left_as_it_is(tmp_path: Path) -> None:
    tree = _tree(tmp_path, '#define BBR_VERSION\t\t1\nstatic struct tcp_congestion_ops o = { .name = "bbr", };\n')
    assert not kernel_build.prepare(tree, []).bbr3
    assert (tree / kernel_build.BBR).is_file() and RULE in (tree / "net" / "ipv4" / "Makefile").read_text()


def test_the_users_patches_apply_first_and_one_that_does_not_is_one_line(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "int a;\n")
    good = tmp_path / "good.patch"
    good.write_text("--- a/net/ipv4/tcp_bbr.c\n+++ b/net/ipv4/tcp_bbr.c\n@@ -1 +1 @@\n-int a;\n+int b;\n")
    assert not kernel_build.prepare(tree, [good]).bbr3
    assert (tree / kernel_build.BBR).read_text() == "int b;\n"
    with pytest.raises(ScenarioError) as e:
        kernel_build.prepare(tree, [good])  # int a; is gone
    assert e.value.field == "--patch" and e.value.message.startswith("good.patch does not apply to linux:")


def test_the_guest_keeps_its_network_modules_and_every_congestion_control(tmp_path: Path) -> None:
    modules = tmp_path / "lib" / "modules" / "6.12.0-test"
    (modules / "kernel").mkdir(parents=True)
    for name in ("tcp_bbr", "tcp_vegas", "virtio_net"):
        (modules / "kernel" / f"{name}.ko").write_bytes(b"")
    debian = guest.GuestKernel(tmp_path / "vmlinuz", modules, "debian:test")
    v3 = kernel_build.guest_modules(debian, kernel_build.Tree(tmp_path, bbr3=True))
    assert v3[: len(NETWORK_MODULES)] == list(NETWORK_MODULES)
    assert "tcp_bbr3" in v3 and "tcp_bbr" not in v3 and "tcp_vegas" in v3 and "sch_fq" in v3
    assert "tcp_bbr" in kernel_build.guest_modules(debian, kernel_build.Tree(tmp_path, bbr3=False))


def test_refusals_are_one_line(tmp_path: Path) -> None:
    got = run_cli("vm", "build-kernel", "--patch", str(tmp_path / "none.patch"), "--out", str(tmp_path / "k"))
    assert got.returncode == 2 and got.stderr.strip() == f"error: --patch: {tmp_path / 'none.patch'}: no such file"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    got = run_cli("vm", "build-kernel", "--out", str(tmp_path / "full"))
    assert (
        got.returncode == 2
        and got.stderr.strip() == f"error: --out: {tmp_path / 'full'} exists and is not an empty directory"
    )


def _config_reason() -> str | None:
    missing = [tool for tool in ("apt-get", "dpkg-deb", *kernel_build.TOOLS) if shutil.which(tool) is None]
    missing += [path for path in kernel_build.HEADERS if not Path(path).is_file()]
    return f"needs {', '.join(missing)} (make vm-test-deps installs them)" if missing else None


@pytest.mark.skipif(_config_reason() is not None, reason=str(_config_reason()))
def test_the_configuration_is_debians_without_unused_modules_or_debug_information(tmp_path: Path) -> None:
    debian = guest.resolve("debian:6.12")
    tree = kernel_build.unpack_source(kernel_build.source_package("6.12", debian), tmp_path)
    prepared = kernel_build.prepare(tree, [])
    config_path = debian.modules.parent.parent.parent / "boot" / f"config-{debian.release}"
    kernel_build.configure(tree, config_path, kernel_build.guest_modules(debian, prepared))

    def read(path: Path) -> dict[str, str]:
        return dict(line.split("=", 1) for line in path.read_text().splitlines() if line.startswith("CONFIG_"))

    mine, theirs = read(tree / ".config"), read(config_path)
    for key in (
        "CONFIG_HZ",
        "CONFIG_TCP_CONG_CUBIC",
        "CONFIG_DEFAULT_TCP_CONG",
        "CONFIG_NO_HZ_IDLE",
        "CONFIG_HIGH_RES_TIMERS",
        "CONFIG_PREEMPT_VOLUNTARY",
        "CONFIG_NET_SCH_DEFAULT",
    ):
        assert mine.get(key) == theirs.get(key), key
    assert mine["CONFIG_TCP_CONG_BBR"] == mine["CONFIG_VIRTIO_NET"] == mine["CONFIG_TCP_CONG_VEGAS"] == "m"
    assert mine["CONFIG_DEBUG_INFO_NONE"] == "y" and "CONFIG_DEBUG_INFO_BTF" not in mine
    assert mine["CONFIG_LOCALVERSION"] == f'"{kernel_build.LOCALVERSION}"'
    modules = sum(v == "m" for v in mine.values())
    assert modules < 60 < sum(v == "m" for v in theirs.values())
