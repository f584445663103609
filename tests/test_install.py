"""What ``pip install .`` gives: a wheel whose ccbench finds every engine's parts, the VM
engine's static guest agent among them (``install/build_backend.py``)."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ccbench.vm import initramfs

from conftest import ROOT

sys.path.insert(0, str(ROOT / "install"))
import build_backend  # noqa: E402


def test_a_file_added_to_a_wheel_is_recorded_and_the_record_stays_last(tmp_path: Path) -> None:
    wheel = tmp_path / "x-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("x/__init__.py", "")
        z.writestr(zipfile.ZipInfo("x-1.dist-info/RECORD", date_time=(2020, 1, 2, 3, 4, 6)), "x/__init__.py,,\n")
    build_backend.add_file(wheel, "x/bin/tool", b"\x7fELF tool")
    with zipfile.ZipFile(wheel) as z:
        assert z.namelist() == ["x/__init__.py", "x/bin/tool", "x-1.dist-info/RECORD"]
        tool = z.getinfo("x/bin/tool")
        assert tool.external_attr >> 16 == 0o100755 and tool.date_time == (2020, 1, 2, 3, 4, 6)
        digest = base64.urlsafe_b64encode(hashlib.sha256(b"\x7fELF tool").digest()).rstrip(b"=").decode()
        assert z.read("x-1.dist-info/RECORD").decode() == f"x/__init__.py,,\nx/bin/tool,sha256={digest},9\n"


@pytest.mark.skipif(shutil.which("cargo") is None, reason="building a wheel needs cargo")
def test_the_wheel_carries_the_static_guest_agent(tmp_path: Path) -> None:
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            str(ROOT),
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert got.returncode == 0, got.stderr[-2000:]
    (wheel,) = tmp_path.glob("ccbench-*.whl")
    with zipfile.ZipFile(wheel) as z:
        agent = z.read(build_backend.IN_WHEEL)
        assert z.getinfo(build_backend.IN_WHEEL).external_attr >> 16 == 0o100755
        assert not initramfs.is_dynamic(agent)  # the guest has no dynamic loader
        assert f"{build_backend.IN_WHEEL},sha256=" in z.read(z.namelist()[-1]).decode()
