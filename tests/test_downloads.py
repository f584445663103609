"""Repeated downloads (--size, --repeat, --pause), the receive window in the time
series, and the bundled cellular examples."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ccbench
from ccbench import Scenario, ScenarioError

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ccbench", *args], capture_output=True, text=True, timeout=120)


def test_repeated_downloads_are_listed_one_by_one(tmp_path):
    p = cli(
        "run",
        "--cca",
        "cubic",
        "--rate",
        "20Mbit",
        "--rtt",
        "20ms",
        "--size",
        "500KB",
        "--repeat",
        "4",
        "--pause",
        "1s",
        "--duration",
        "30s",
        "--out",
        str(tmp_path / "run"),
        "--plot",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    f = summary["flows"][0]
    d = f["downloads"]
    assert [x["index"] for x in d] == [0, 1, 2, 3]
    assert all(x["delivered_bytes"] == 500_000 and x["completion_s"] > 0 for x in d)
    for prev, x in zip(d, d[1:]):
        assert x["start_s"] == pytest.approx(prev["start_s"] + prev["completion_s"] + 1.0)
    assert f["delivered_bytes"] == 2_000_000
    assert f["completion_s"] == pytest.approx(d[-1]["start_s"] + d[-1]["completion_s"])
    assert summary["duration_s"] == pytest.approx(f["completion_s"])
    assert (tmp_path / "run" / "plots" / "downloads.png").stat().st_size > 1000
    toml = tomllib.loads((tmp_path / "run" / "scenario.toml").read_text())
    assert toml["flows"][0]["repeat"] == 4 and toml["flows"][0]["pause"] == "1s"


def test_the_terminal_report_has_a_downloads_table():
    p = cli("run", "--cca", "bbr", "--size", "200KB", "--repeat", "3", "--duration", "20s")
    assert p.returncode == 0, p.stderr
    assert "Downloads" in p.stdout and "3/3" in p.stdout


def test_repeat_needs_a_size():
    p = cli("run", "--repeat", "2")
    assert p.returncode == 2 and p.stderr.startswith("error: flows[0].repeat: repeats a download: give the flow a size")
    with pytest.raises(ScenarioError) as e:
        Scenario.from_flags(size="1MB", repeat=0)
    assert e.value.field == "flows[0].repeat"


def test_one_download_keeps_the_old_summary_and_hash():
    plain = Scenario.from_flags(size="1MB")
    once = Scenario.from_flags(size="1MB", repeat=1, pause="0s")
    assert plain.scenario_hash == once.scenario_hash
    assert "downloads" not in ccbench.run(plain).summary["flows"][0]


def test_bufferbloat_example_tells_its_story():
    base = tomllib.loads((SCENARIOS / "uplink-bufferbloat.toml").read_text())
    cubic = ccbench.run(Scenario.from_flags(base=base, duration="40s"))
    bbr = ccbench.run(Scenario.from_flags(base=base, cca="bbr", rwnd="3MB", duration="40s"))
    c, b = cubic.summary["flows"][0], bbr.summary["flows"][0]
    assert c["rtt_ms"]["p95"] > 1000 and b["rtt_ms"]["p95"] < 200
    assert min(c["goodput_bps"], b["goodput_bps"]) > 3.0e6
    # The receive window is in the time series, and Cubic runs into it; the 4 MB send
    # buffer, refilled when a third is free, pulls the flight back below it between
    # refills. The kernel engine on the same scenario: late flight 2.17 to 3.00 MB.
    late = cubic.flows[cubic.flows["time_s"] > 30]
    assert (late["rwnd_bytes"] == 3_000_000).all()
    flight = late["inflight_bytes"]
    assert flight.max() > 0.95 * 3_000_000 and flight.min() > 0.6 * 3_000_000


def test_lte_repeated_downloads_example():
    base = tomllib.loads((SCENARIOS / "lte-repeated-downloads.toml").read_text())
    s = Scenario.from_file(SCENARIOS / "lte-repeated-downloads.toml")
    assert s.flows[0].repeat == 30 and base["flows"][0]["pause"] == "3s"
    r = ccbench.run(Scenario.from_flags(base=s, flows=1, repeat=5, duration="60s"))
    d = r.summary["flows"][0]["downloads"]
    assert len(d) == 5 and all(x["completion_s"] is not None for x in d)


def test_an_autotuned_receive_window_grows_ahead_of_the_sender():
    s = Scenario.from_flags(cca="cubic", rate="100Mbit", rtt="40ms", rwnd="auto", duration="10s", interval="10ms")
    assert s.flows[0].rwnd_autotune and s.to_core()["flows"][0]["rwnd_autotune"] is True
    assert Scenario.from_toml(s.effective_toml()) == s
    r = ccbench.run(s)
    w = r.flows["rwnd_bytes"].to_numpy()
    # From the sender's initial 64 KB view to more than BDP + buffer (1 MB), within the limit.
    assert w[0] < 200_000 and 1_000_000 < w.max() <= 6 * 2**20
    # Once the first ACK has replaced the sender's initial 64 KB guess, the advertised
    # window only grows through slow start (data held out of order after a loss later
    # takes room from it).
    early = r.flows[(r.flows["time_s"] > 0.05) & (r.flows["time_s"] < 0.7)]["rwnd_bytes"].to_numpy()
    assert (early[1:] >= early[:-1]).all() and early[-1] > 10 * early[0]
    fixed = ccbench.run(Scenario.from_flags(cca="cubic", rate="100Mbit", rtt="40ms", duration="10s"))
    # Dynamic right-sizing keeps ahead of slow start: the same goodput as a fixed window.
    assert r.summary["flows"][0]["goodput_bps"] == pytest.approx(fixed.summary["flows"][0]["goodput_bps"], rel=0.02)
