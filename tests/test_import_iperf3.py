"""``ccbench import-iperf3`` on real iperf3 reports, taken on the loopback interface.

Each test starts its own ``iperf3 -s -1`` (one test, then it exits) on a free loopback
port and a client bounded in time; the server is killed by pid if it is still there.
Skipped where iperf3 is missing (``make test`` installs it when run as root).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from ccbench.importers.iperf3 import import_file
from ccbench.plots import load_run

from conftest import run_cli

IPERF3 = shutil.which("iperf3")
needs_iperf3 = pytest.mark.skipif(IPERF3 is None, reason="iperf3 is not installed")
RATE = "50M"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server() -> Iterator[int]:
    """An iperf3 server for one test on a free loopback port."""
    assert IPERF3 is not None
    port = free_port()
    proc = subprocess.Popen(
        [IPERF3, "-s", "-1", "-B", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield port
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def client(port: int, out: Path, *args: str) -> Path:
    assert IPERF3 is not None
    for _ in range(50):  # until the server listens (it says nothing we could wait for)
        proc = subprocess.run(
            [IPERF3, "-c", "127.0.0.1", "-p", str(port), "-t", "2", "-i", "0.5", "-b", RATE, "-J", *args],
            capture_output=True,
            text=True,
            timeout=30,
        )
        # With -J a refused connection may still exit 0, with an "error" in the report.
        if "unable to connect" not in proc.stdout:
            break
        time.sleep(0.1)
    assert proc.returncode == 0 and '"error"' not in proc.stdout, proc.stdout[-500:] + proc.stderr
    out.write_text(proc.stdout)
    return out


@pytest.mark.host  # a real transfer on loopback
@needs_iperf3
def test_a_sending_client(tmp_path: Path, server: int) -> None:
    report = client(server, tmp_path / "iperf3.json")
    doc = json.loads(report.read_text())
    out = tmp_path / "run"
    r = run_cli("import-iperf3", str(report), "--out", str(out), "--plot")
    assert r.returncode == 0, r.stderr
    run = load_run(out)
    s = run.summary
    assert s["engine"] == "iperf3" and s["iperf3"]["reverse"] is False
    (f,) = s["flows"]
    sent = doc["end"]["streams"][0]["sender"]
    assert f["sent_bytes"] == sent["bytes"] and f["retransmits"] == sent["retransmits"]
    assert f["throughput_bps"] == pytest.approx(50e6, rel=0.05)
    assert f["goodput_bps"] == pytest.approx(doc["end"]["streams"][0]["receiver"]["bits_per_second"])
    assert f["cca"] == doc["end"]["sender_tcp_congestion"]
    assert f["rtt_ms"]["min"] > 0 and f["measured_at"] == "sender"
    flows = run.flows
    for col in ("throughput_bps", "cwnd", "cwnd_bytes", "srtt_ms", "rttvar_ms", "pmtu", "retransmits"):
        assert col in flows.columns and flows[col].notna().all(), col
    assert len(flows) == 4 and flows["time_s"].iloc[-1] == pytest.approx(2.0, abs=0.05)
    assert flows["throughput_bps"].mean() == pytest.approx(50e6, rel=0.1)
    assert flows["retransmits"].iloc[-1] == sent["retransmits"]
    assert {"flow0.png", "link.png"} <= {p.name for p in (out / "plots").iterdir()}


@pytest.mark.host  # a real transfer on loopback
@needs_iperf3
def test_reverse_with_two_streams(tmp_path: Path, server: int) -> None:
    report = client(server, tmp_path / "iperf3.json", "-R", "-P", "2")
    doc = json.loads(report.read_text())
    run = import_file(report)
    s = run.summary
    assert s["iperf3"]["reverse"] is True and len(s["flows"]) == 2
    for f, es in zip(s["flows"], doc["end"]["streams"]):
        assert f["measured_at"] == "receiver"
        assert f["delivered_bytes"] == es["receiver"]["bytes"]
        assert f["goodput_bps"] == pytest.approx(50e6, rel=0.05)
        assert f["src"].endswith(f":{doc['start']['connecting_to']['port']}")
    flows = run.flows
    assert sorted(set(flows["flow"])) == [0, 1]
    assert "goodput_bps" in flows.columns and "throughput_bps" not in flows.columns
    assert flows.groupby("flow")["goodput_bps"].mean().between(40e6, 60e6).all()
    out = tmp_path / "run"
    run.save(out)
    r = run_cli("plot", str(out), "--flow", "1", "--format", "png")
    assert r.returncode == 0, r.stderr


def _report(**start: Any) -> dict[str, Any]:
    return {
        "start": {"test_start": {"protocol": "TCP", "num_streams": 1, "reverse": 0}, **start},
        "intervals": [],
        "end": {},
    }


def test_import_errors(tmp_path: Path) -> None:
    cases = {
        "notjson.json": "{oops",
        "other.json": json.dumps({"hello": 1}),
        "udp.json": json.dumps(_report(test_start={"protocol": "UDP"})),
        "failed.json": json.dumps({"start": {}, "intervals": [], "error": "unable to connect to server"}),
        "empty.json": json.dumps(_report()),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        r = run_cli("import-iperf3", str(tmp_path / name))
        assert r.returncode == 2 and r.stderr.startswith("error: FILE: "), (name, r.stderr)
    assert "UDP" in run_cli("import-iperf3", str(tmp_path / "udp.json")).stderr
    assert "unable to connect" in run_cli("import-iperf3", str(tmp_path / "failed.json")).stderr
    r = run_cli("import-iperf3", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "no such file" in r.stderr
