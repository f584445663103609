"""packetdrill scripts on the VM engine's guest kernel (``ccbench conformance --vm``): the
console read into verdicts, the image holding what the scripts run, and, where QEMU and
the scripts are present, the fq scripts this host's kernel cannot run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ccbench.conformance import guest
from ccbench.vm import initramfs

PACKETDRILL_DIR = Path(os.environ.get("CCBENCH_PACKETDRILL_DIR", "/work/shared/packetdrill"))
TCP = PACKETDRILL_DIR / "tcp"
FQ_SCRIPTS = (
    "cubic/cubic-bulk-166k.pkt",
    "cubic/cubic-bulk-166k-idle-restart.pkt",
    "slow_start/slow-start-fq-ack-per-2pkt.pkt",
)
pytestmark = pytest.mark.host


def test_the_console_is_read_per_script_whatever_the_kernel_prints_between() -> None:
    console = "\r\n".join(
        [
            "CCBENCH READY uptime=1.2",
            "CCBENCH SCRIPT a/x.pkt",
            "[    3.1] tun: Universal TUN/TAP device driver",
            "CCBENCH STATUS 0",
            "CCBENCH STDERR",
            "CCBENCH END",
            "CCBENCH SCRIPT b/y.pkt",
            "CCBENCH STATUS 1",
            "CCBENCH STDERR",
            "y.pkt:27: error handling packet: timing error: expected outbound packet at 0.240 sec but happened at "
            "0.231 sec; tolerance 0.004 sec",
            "CCBENCH END",
            "CCBENCH SCRIPT c/z.pkt",
            "CCBENCH STATUS 0",
        ]
    )  # the guest stopped before z ended
    found = guest.parse_console(console)
    assert set(found) == {"a/x.pkt", "b/y.pkt"}
    assert found["a/x.pkt"] == (0, "\n")
    status, stderr = found["b/y.pkt"]
    assert status == 1 and stderr.startswith("y.pkt:27: error handling packet: timing error")


needs_guest = pytest.mark.skipif(
    not (
        TCP.is_dir()
        and shutil.which("qemu-system-x86_64")
        and initramfs.BUSYBOX.is_file()
        and shutil.which("tc")
        and shutil.which("bash")
    ),
    reason="needs packetdrill's scripts, QEMU, static busybox, bash and tc",
)


@needs_guest
def test_the_image_holds_the_scripts_what_they_run_and_the_programs(tmp_path: Path) -> None:
    from ccbench.conformance.packetdrill import binary
    from ccbench.vm.guest import resolve

    scripts = [(name, TCP / name) for name in FQ_SCRIPTS[:1]]
    out = guest.guest_image(
        resolve("debian:6.1"), binary(None, [s for _, s in scripts]), scripts, None, tmp_path / "initrd.gz"
    )
    import gzip

    data = gzip.decompress(out.read_bytes())
    # The script and the file its shell line runs (../../common/defaults.sh) keep their
    # relative places; the programs and Python's library are there.
    for path in (
        b"scripts/tcp/cubic/cubic-bulk-166k.pkt",
        b"scripts/common/defaults.sh",
        b"bin/packetdrill",
        b"bin/bash",
        b"bin/sh",
        b"sbin/tc",
        b"usr/bin/python3",
        b"usr/lib/python3.11/traceback.py",
        b"run.sh",
    ):
        assert path + b"\0" in data, path
    assert b"cd /scripts/tcp/cubic" in data and b"sysctl -q net.ipv4.tcp_rmem" in data


@needs_guest
def test_an_older_guest_kernel_is_named_as_the_reason() -> None:
    # packetdrill's TCP_INFO is Linux 6.18's, and it stops at the script's first read of
    # it on an older kernel: here one second in (an fq script's comes 20 s in).
    [v] = guest.run_guest([TCP / "tcp_info/tcp-info-last_data_recv.pkt"], None, None, lambda v: None, "debian:6.1")
    assert v.outcome == "unsupported" and "TCP_INFO" in v.reason and "6.18" in v.reason, v


@needs_guest
def test_the_fq_scripts_run_on_the_guest_kernel_as_recorded() -> None:
    # Debian unstable's kernel (downloaded on first use), which the recorded verdicts
    # came from; a timing-only difference is allowed, as for the host's kernel.
    from ccbench.conformance import command

    recorded = command.load_expected(str(Path(__file__).parent / "conformance" / "linux-guest-verdicts.json"))
    seen = []
    verdicts = guest.run_guest([TCP / name for name in FQ_SCRIPTS], None, None, seen.append)
    # Each final verdict is reported once; a script run again (a timing-only failure)
    # reports after the others.
    by_script = lambda vs: sorted(vs, key=lambda v: v.script)  # noqa: E731
    assert by_script(seen) == by_script(verdicts) and all(v.stack.endswith("(VM guest)") for v in verdicts)
    assert not [(v.script, d) for v in verdicts if (d := command.disagreement(v, recorded[v.script]))]
