"""The workflows the VM engine registers (``ccbench.engines.workflow``): which sender
costs ``validate --cpu`` compares the engines with when given no costs file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ccbench import engines
from ccbench.engines.vm import calibrate, validate_cpu

COSTS = '[host]\ntx_completion = "137us"\n[host.cost]\nack = "15us"\nburst = "21us"\n'


class Guest:
    guest_kernel, vcpus = "debian:6.1", 1


def test_the_engine_registers_its_workflows() -> None:
    assert engines.workflow("validate-cpu") is validate_cpu and engines.workflow("calibrate-host") is calibrate


def test_validate_cpu_uses_the_calibration_kept_for_this_host_and_guest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tmp_path / "kept.toml"
    kept.write_text(COSTS)
    monkeypatch.setattr(calibrate, "kept_path", lambda engine: kept)
    monkeypatch.setattr(calibrate, "calibrate", lambda *a, **k: pytest.fail("calibrated although one is kept"))
    said: list[str] = []
    costs, source = validate_cpu.kept_or_calibrated(Guest(), said.append)
    assert costs == {"tx_completion": "137us", "cost": {"ack": "15us", "burst": "21us"}} and source == str(kept)
    assert said == [f"sender costs: the calibration kept for this host and guest, {kept}"]


def test_validate_cpu_calibrates_first_when_none_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = tmp_path / "calibrations" / "key.toml"
    monkeypatch.setattr(calibrate, "kept_path", lambda engine: kept)
    runs: list[Any] = []

    class Made:
        def toml(self) -> str:
            return COSTS

    def fake(guest_kernel: str, vcpus: int, points: Any, duration: str, progress: Any) -> Made:
        runs.append((guest_kernel, vcpus, len(points), duration))
        return Made()

    monkeypatch.setattr(calibrate, "calibrate", fake)
    said: list[str] = []
    costs, source = validate_cpu.kept_or_calibrated(Guest(), said.append)
    assert runs == [("debian:6.1", 1, len(calibrate.QUICK_POINTS), calibrate.QUICK_DURATION)]
    assert kept.read_text() == COSTS and source == str(kept) and costs["cost"]["ack"] == "15us"
    assert said[0].startswith("no calibration is kept for this host and guest (debian:6.1): calibrating first")
    assert said[-1] == f"sender costs: this calibration, kept as {kept}"
