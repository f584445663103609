"""A small sweep on the kernel engine (root and /dev/net/tun; skipped otherwise): runs
one at a time, keyed by the kernel's code version, resumed like simulator sweeps."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from ccbench.kernel import host
from ccbench.store import open_store

from conftest import run_cli

REASON = host.tun_usable()
pytestmark = [pytest.mark.host, pytest.mark.skipif(REASON is not None, reason=f"kernel engine unavailable: {REASON}")]

PLAN = """\
duration = "2s"

[link]
rate = ["10Mbit", "20Mbit"]
rtt = "20ms"

[[flows]]
cca = "cubic"

[sweep]
name = "kernel-small"
"""


def test_kernel_sweep_and_resume(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(PLAN)
    first = run_cli("sweep", "plan.toml", "--engine", "kernel", "--quiet", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "2 run now, 0 already in the store" in first.stdout
    records = open_store(tmp_path / "ccbench-results").records("kernel-small")
    assert [r.engine for r in records] == ["kernel", "kernel"]
    assert all(r.code_version.endswith(f"/linux-{platform.release()}") for r in records)
    assert [r.summary["engine"] for r in records] == ["kernel", "kernel"]
    rates = [r.summary["link"]["rate_bps"] for r in records]
    assert rates == [10_000_000, 20_000_000]
    for r in records:
        goodput = r.summary["flows"][0]["goodput_bps"]
        assert 0.5 * r.summary["link"]["rate_bps"] < goodput <= r.summary["link"]["rate_bps"]
    again = run_cli("sweep", "plan.toml", "--engine", "kernel", "--quiet", cwd=tmp_path)
    assert "0 run now, 2 already in the store" in again.stdout, again.stderr


def test_kernel_sweep_refuses_what_the_kernel_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(PLAN.replace('cca = "cubic"', 'cca = "cubic"\nparams = { beta = [600, 717] }'))
    result = run_cli("sweep", "plan.toml", "--engine", "kernel", cwd=tmp_path)
    assert result.returncode == 2, result
    assert result.stderr.startswith("error: flows[0].params: ")
    assert not (tmp_path / "ccbench-results").exists()
