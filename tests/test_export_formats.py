"""``ccbench run --format flent,iperf3``: files flent opens and plots, and iperf3 reports
that ``ccbench import-iperf3`` reads back to the run's own values."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

from ccbench.importers.iperf3 import import_file
from ccbench.plots import load_run

from conftest import run_cli
from test_import_iperf3 import IPERF3, client, needs_iperf3, server  # noqa: F401  (server is a fixture)

try:
    from flent import resultset as flent_resultset
except ImportError:  # flent is in the test extras
    flent_resultset = None
needs_flent = pytest.mark.skipif(flent_resultset is None, reason="flent is not installed (pip install -e .[test])")

# Two algorithms, so per-flow names and fairness are exercised; short, to stay quick.
FLAGS = ("--cca", "cubic,bbr", "--rate", "20Mbit", "--rtt", "30ms", "--duration", "3s")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exported") / "run"
    done = run_cli("run", *FLAGS, "--out", str(out), "--format", "flent,iperf3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"wrote {out}: run.flent.gz, iperf3.json"
    return out


@needs_flent
def test_flent_loads_the_file_as_a_tcp_upload_test(exported: Path) -> None:
    assert flent_resultset is not None
    rs = flent_resultset.load(str(exported / "run.flent.gz"))
    run = load_run(exported)
    assert rs.meta("NAME") == "tcp_nup" and rs.meta("TEST_PARAMETERS") == {"upload_streams": 2}
    assert rs.meta("STEP_SIZE") == 0.1 and rs.meta("LENGTH") == 3.0
    times = sorted(set(run.flows["time_s"]))
    assert rs.x_values == times
    for i in range(2):
        goodput = run.flows[run.flows["flow"] == i]["goodput_bps"].to_numpy() / 1e6
        assert rs.series(f"TCP upload::{i + 1}") == pytest.approx(goodput.tolist())
        raw = list(rs.raw_series(f"TCP upload::{i + 1}", raw_key="tcp_rtt"))
        assert [x for x, _ in raw] == pytest.approx(times)
        assert [v for _, v in raw] == pytest.approx(run.flows[run.flows["flow"] == i]["srtt_ms"].tolist())
    total = rs.series("TCP upload sum")
    assert total[-1] == pytest.approx(sum(rs.series(f"TCP upload::{i}")[-1] for i in (1, 2)))
    ping = [p for p in rs.series("Ping (ms) ICMP") if p is not None]
    assert ping and min(ping) >= 30.0


@needs_flent
def test_flent_plots_the_file(exported: Path, tmp_path: Path) -> None:
    flent = shutil.which("flent", path=str(Path(sys.executable).parent)) or shutil.which("flent")
    assert flent is not None
    for plot in ("totals", "tcp_delivery_with_rtt"):
        png = tmp_path / f"{plot}.png"
        done = subprocess.run(
            [flent, "-i", str(exported / "run.flent.gz"), "-p", plot, "-o", str(png)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_the_flent_file_depends_on_the_run_alone(exported: Path, tmp_path: Path) -> None:
    done = run_cli("run", *FLAGS, "--out", str(tmp_path), "--format", "flent")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run.flent.gz").read_bytes() == (exported / "run.flent.gz").read_bytes()
    doc = json.loads(gzip.decompress((exported / "run.flent.gz").read_bytes()))
    assert set(doc) == {"metadata", "version", "x_values", "results", "raw_values"} and doc["version"] == 4


def test_import_iperf3_reads_the_report_back_equal(exported: Path) -> None:
    imported, run = import_file(exported / "iperf3.json"), load_run(exported)
    a = imported.flows.reset_index(drop=True)
    b = run.flows.reset_index(drop=True)
    for mine, theirs in (
        ("time_s", "time_s"),
        ("flow", "flow"),
        ("throughput_bps", "throughput_bps"),
        ("cwnd", "cwnd"),
        ("srtt_ms", "srtt_ms"),
        ("retransmits", "retransmits"),
        ("snd_wnd_bytes", "rwnd_bytes"),
    ):
        np.testing.assert_array_equal(a[mine].to_numpy(), b[theirs].to_numpy(), err_msg=mine)
    assert imported.summary["duration_s"] == run.summary["duration_s"]
    assert imported.summary["jain_index"] == pytest.approx(run.summary["jain_index"])
    for got, want in zip(imported.summary["flows"], run.summary["flows"], strict=True):
        for key in (
            "cca",
            "goodput_bps",
            "throughput_bps",
            "delivered_bytes",
            "sent_bytes",
            "retransmits",
            "final_cwnd",
        ):
            assert got[key] == want[key], key


def test_a_sized_transfer_keeps_its_size_and_completion_time(tmp_path: Path) -> None:
    done = run_cli(
        "run",
        "--cca",
        "cubic",
        "--rate",
        "20Mbit",
        "--size",
        "1MB",
        "--duration",
        "5s",
        "--out",
        str(tmp_path),
        "--format",
        "iperf3",
    )
    assert done.returncode == 0, done.stderr
    (got,), (want,) = import_file(tmp_path / "iperf3.json").summary["flows"], load_run(tmp_path).summary["flows"]
    assert got["size_bytes"] == want["size_bytes"] == 1_000_000
    assert got["completion_s"] == want["completion_s"] is not None


def keys(doc: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON document, lists' items merged."""
    if isinstance(doc, dict):
        return {p for k, v in doc.items() for p in {prefix + k} | keys(v, prefix + k + ".")}
    if isinstance(doc, list):
        return {p for v in doc for p in keys(v, prefix)}
    return set()


@needs_iperf3
def test_the_report_has_iperf3s_own_shape(exported: Path, tmp_path: Path, server: int) -> None:  # noqa: F811
    real = json.loads(client(server, tmp_path / "real.json", "-P", "2").read_text())
    ours = json.loads((exported / "iperf3.json").read_text())
    extra = keys(ours) - keys(real)
    assert not extra, f"keys iperf3 does not write: {sorted(extra)}"
    for section in ("start", "intervals", "end"):
        assert section in ours


def test_format_needs_out_and_a_known_name(tmp_path: Path) -> None:
    bad = run_cli("run", "--duration", "1s", "--format", "flent")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --format: needs --out DIR")
    bad = run_cli("run", "--duration", "1s", "--format", "csv", "--out", str(tmp_path / "x"))
    assert (
        bad.returncode == 2 and bad.stderr == "error: --format: expected flent or iperf3 (comma-separated), got 'csv'\n"
    )
    assert not (tmp_path / "x").exists()


def kernel_unavailable() -> Optional[str]:
    from ccbench.kernel import host

    return host.tun_usable()


@pytest.mark.host
@pytest.mark.skipif(kernel_unavailable() is not None, reason="kernel engine unavailable (needs root and /dev/net/tun)")
def test_a_kernel_run_exports_and_reads_back(tmp_path: Path) -> None:
    done = run_cli(
        "run",
        "--engine",
        "kernel",
        "--cca",
        "cubic",
        "--rate",
        "20Mbit",
        "--duration",
        "2s",
        "--out",
        str(tmp_path),
        "--format",
        "iperf3,flent",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "iperf3.json").read_text())
    assert report["start"]["system_info"].startswith("ccbench ") and " on the Linux " in report["start"]["system_info"]
    (got,), (want,) = import_file(tmp_path / "iperf3.json").summary["flows"], load_run(tmp_path).summary["flows"]
    for key in ("cca", "goodput_bps", "throughput_bps", "delivered_bytes", "sent_bytes", "retransmits"):
        assert got[key] == want[key], key
    if flent_resultset is not None:
        rs = flent_resultset.load(str(tmp_path / "run.flent.gz"))
        assert rs.meta("TEST_PARAMETERS") == {"upload_streams": 1} and len(rs.x_values) == 20
