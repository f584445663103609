"""Packet captures of simulated flows, read back by tshark (Wireshark's dissectors).

Skipped where tshark is missing (``make test`` installs it when run as root).
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import ccbench
from ccbench.scenario import CAPTURE_POINTS

from conftest import run_cli

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")

MSS = 1448
HEADERS = 52  # IPv4 20 + TCP 20 + timestamps 12
SYN_BYTES = 60  # with MSS, SACK-permitted, timestamps and window-scale options
CHECKS = ("-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE")


def tshark(path: Path, *args: str) -> str:
    assert TSHARK is not None
    proc = subprocess.run([TSHARK, "-n", "-r", str(path), *CHECKS, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    noise = [line for line in proc.stderr.splitlines() if line.strip() and "Running as user" not in line]
    assert not noise, noise
    return proc.stdout


def fields(path: Path, *names: str, display: str = "") -> list[list[str]]:
    args = ["-T", "fields", "-E", "separator=\t", *[a for n in names for a in ("-e", n)]]
    if display:
        args += ["-Y", display]
    return [line.split("\t") for line in tshark(path, *args).splitlines()]


def lossy(tmp: Path, size: str | None = "2MB", ecn: bool = False, flows: int = 1) -> dict[str, Any]:
    flow: dict[str, Any] = {"cca": "cubic", "count": flows}
    if size:
        flow["size"] = size
    link: dict[str, Any] = {"rate": "20Mbit", "rtt": "40ms", "buffer": "0.5bdp", "loss": "1%"}
    if ecn:
        flow["ecn"] = "classic"
        link["ecn_threshold"] = "10pkt"
    return {
        "seed": 1,
        "duration": "8s",
        "link": link,
        "flows": [flow],
        "capture": {"points": list(CAPTURE_POINTS), "dir": str(tmp)},
    }


UNITS = {"bytes": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}


def conversations(path: Path) -> list[dict[str, Any]]:
    """``tshark -z conv,tcp``: per conversation, frames and bytes in each direction
    (``->`` is from the first address, here the sender)."""
    out = tshark(path, "-q", "-z", "conv,tcp")
    rows = []
    num = r"(\d+)\s+(\d+(?:\.\d+)?)\s*(bytes|kB|MB|GB)"
    for line in out.splitlines():
        m = re.match(r"^(\S+)\s+<->\s+(\S+)\s+" + num + r"\s+" + num + r"\s+" + num, line.strip())
        if m:
            g = m.groups()
            rows.append(
                {
                    "a": g[0],
                    "b": g[1],
                    "back_frames": int(g[2]),
                    "back_bytes": float(g[3]) * UNITS[g[4]],
                    "fwd_frames": int(g[5]),
                    "fwd_bytes": float(g[6]) * UNITS[g[7]],
                }
            )
    return rows


def test_capture_is_off_by_default_and_changes_nothing(tmp_path: Path) -> None:
    doc = lossy(tmp_path / "cap", size=None)
    with_capture = ccbench.run(doc)
    del doc["capture"]
    without = ccbench.run(doc)
    assert with_capture.summary == without.summary
    assert with_capture.flows.equals(without.flows)
    assert sorted(p.name for p in (tmp_path / "cap").iterdir()) == sorted(f"capture-{p}.pcap" for p in CAPTURE_POINTS)


def test_captures_are_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    ccbench.run(lossy(a))
    ccbench.run(lossy(b))
    for p in CAPTURE_POINTS:
        assert (a / f"capture-{p}.pcap").read_bytes() == (b / f"capture-{p}.pcap").read_bytes()


@needs_tshark
def test_tshark_reads_every_point_cleanly(tmp_path: Path) -> None:
    res = ccbench.run(lossy(tmp_path, ecn=True))
    for p in CAPTURE_POINTS:
        path = tmp_path / f"capture-{p}.pcap"
        bad = fields(
            path,
            "frame.number",
            display="_ws.malformed || ip.checksum.status == 0 || "
            "tcp.checksum.status == 0 || _ws.expert.severity == error",
        )
        assert bad == [], (p, bad[:5])
        # Pure ACKs and the handshake are whole packets: their checksums verify. Data
        # segments carry no payload bytes, so tshark leaves theirs unverified.
        status = collections.Counter((int(n) > 0, s) for n, s in fields(path, "tcp.len", "tcp.checksum.status"))
        assert status[(False, "1")] > 0 and status[(False, "0")] == 0
        assert status[(True, "1")] == 0 and status[(True, "0")] == 0
    assert res.summary["link"]["ecn_marks"] > 0


@needs_tshark
def test_conversation_statistics_agree_with_the_summary(tmp_path: Path) -> None:
    res = ccbench.run(lossy(tmp_path))
    f = res.summary["flows"][0]
    size = f["size_bytes"]
    assert f["completion_s"] is not None
    data_segments = -(-size // MSS) + f["retransmits"]
    path = tmp_path / "capture-sender.pcap"
    (conv,) = conversations(path)
    assert (conv["a"], conv["b"]) == ("10.1.0.1:40000", "10.2.0.1:20000")
    # Sender to receiver: the SYN and every data segment, retransmissions included.
    assert conv["fwd_frames"] == 1 + data_segments
    fwd_bytes = f["sent_bytes"] + data_segments * HEADERS + SYN_BYTES
    assert abs(conv["fwd_bytes"] - fwd_bytes) <= 0.0005 * fwd_bytes + 0.5e3  # printed rounded to kB
    lengths = [int(n) for (n,) in fields(path, "tcp.len", display="tcp.srcport == 40000")]
    assert sum(lengths) == f["sent_bytes"]
    assert sum(1 for n in lengths if n > 0) == data_segments
    frame_bytes = sum(int(b) for (b,) in fields(path, "frame.len", display="tcp.srcport == 40000"))
    assert frame_bytes == fwd_bytes


@needs_tshark
def test_tshark_counts_the_runs_retransmissions(tmp_path: Path) -> None:
    """tshark flags a retransmission as 'out-of-order' instead when it comes within a few
    ms of the previous new segment (its heuristic for reordering); together they are
    exactly the segments the sender retransmitted."""
    for size in ("2MB", None):
        d = tmp_path / str(size)
        res = ccbench.run(lossy(d, size=size))
        f = res.summary["flows"][0]
        rows = fields(
            d / "capture-sender.pcap",
            "tcp.len",
            "tcp.analysis.retransmission",
            "tcp.analysis.fast_retransmission",
            "tcp.analysis.out_of_order",
        )
        data = [r for r in rows if int(r[0]) > 0]
        retrans = sum(1 for r in data if r[1] or r[3])
        assert f["retransmits"] > 5
        assert retrans == f["retransmits"]
        assert sum(1 for r in data if r[2]) > 0  # fast retransmissions among them
        assert sum(int(r[0]) for r in data) == f["sent_bytes"]


@needs_tshark
def test_sack_window_and_ecn_fields(tmp_path: Path) -> None:
    res = ccbench.run(lossy(tmp_path, ecn=True))
    path = tmp_path / "capture-sender.pcap"
    acks = fields(
        path,
        "tcp.window_size",
        "tcp.options.sack_le",
        "tcp.options.sack_re",
        "tcp.ack",
        "tcp.flags.ece",
        display="tcp.srcport == 20000 && tcp.flags.syn == 0",
    )
    # The receive window as scaled by the handshake's window scale (6 MiB, scale 7).
    assert {w for w, *_ in acks} == {str(6 * 2**20)}
    sacked = [a for a in acks if a[1]]
    assert sacked, "no SACK blocks"
    for _, le, re_, ack, _ in sacked:
        for left, right in zip(le.split(","), re_.split(",")):
            assert int(left) < int(right)
    assert res.summary["flows"][0]["retransmits"] > 0
    # ECN: the bottleneck's CE marks leave it and reach the receiver; the receiver
    # echoes ECE and the sender answers with CWR.
    marks = res.summary["link"]["ecn_marks"]
    assert marks > 0
    ce_out = fields(tmp_path / "capture-bottleneck-out.pcap", "frame.number", display="ip.dsfield.ecn == 3")
    ce_in = fields(tmp_path / "capture-bottleneck-in.pcap", "frame.number", display="ip.dsfield.ecn == 3")
    assert (len(ce_out), len(ce_in)) == (marks, 0)
    assert fields(path, "frame.number", display="tcp.flags.ece == 1 && tcp.srcport == 20000 && tcp.flags.syn == 0")
    assert fields(path, "frame.number", display="tcp.flags.cwr == 1 && tcp.len > 0")
    assert fields(path, "frame.number", display="tcp.flags.syn == 1 && tcp.flags.ece == 1")


@needs_tshark
def test_handshake_fin_and_addresses(tmp_path: Path) -> None:
    doc = lossy(tmp_path, flows=2)
    doc["capture"]["flows"] = [1]
    ccbench.run(doc)
    path = tmp_path / "capture-receiver.pcap"
    streams = {
        tuple(r) for r in fields(path, "ip.src", "tcp.srcport", "ip.dst", "tcp.dstport", display="tcp.srcport == 40001")
    }
    assert streams == {("10.1.0.2", "40001", "10.2.0.2", "20001")}
    syn = fields(
        path,
        "tcp.options.mss_val",
        "tcp.options.wscale.shift",
        "tcp.options.sack_perm",
        "tcp.options.timestamp.tsval",
        display="tcp.flags.syn == 1",
    )
    assert [r[0] for r in syn] == ["1460", "1460"] and [r[1] for r in syn] == ["7", "7"]
    fin = fields(path, "tcp.len", display="tcp.flags.fin == 1")
    assert fin and all(int(n) > 0 for (n,) in fin)


def test_capture_options_and_errors(tmp_path: Path, short_scenario: Path) -> None:
    out = tmp_path / "out"
    r = run_cli("run", str(short_scenario), "--pcap", "sender,bottleneck-out", "--pcap-flows", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "capture-sender.pcap").stat().st_size > 1000
    assert (out / "capture-bottleneck-out.pcap").is_file()
    assert not (out / "capture-receiver.pcap").exists()
    assert "capture-sender.pcap" in r.stdout
    toml = (out / "scenario.toml").read_text()
    assert "[capture]" in toml and "bottleneck-out" in toml
    for args, field in (
        (["--pcap", "sender"], "--pcap"),
        (["--pcap", "middle", "--out", str(tmp_path / "x")], "capture.points"),
        (["--pcap", "sender", "--pcap-flows", "2", "--out", str(tmp_path / "x")], "capture.flows"),
        (["--pcap", "sender", "--pcap-flows", "a", "--out", str(tmp_path / "x")], "capture.flows"),
    ):
        r = run_cli("run", str(short_scenario), *args)
        assert r.returncode == 2 and r.stderr.startswith(f"error: {field}: "), (args, r.stderr)
    assert not (tmp_path / "x").exists()
    arrivals_only = tmp_path / "arrivals.toml"
    arrivals_only.write_text(
        'duration = "1s"\n[link]\nrate = "10Mbit"\nrtt = "20ms"\n[[arrivals]]\ncca = "cubic"\nrate = 5\nsizes = "10KB"\n'
    )
    r = run_cli("run", str(arrivals_only), "--pcap", "sender", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and r.stderr == (
        "error: capture.points: the scenario has no TCP flows to capture (UDP flows and arrivals are not captured)\n"
    ), r.stderr
    assert not (tmp_path / "x").exists()


def test_capture_table_is_not_part_of_the_experiment(short_scenario: Path) -> None:
    base = ccbench.Scenario.from_file(short_scenario)
    with_capture = ccbench.Scenario.from_flags(base=base, pcap="receiver")
    assert with_capture.capture is not None and with_capture.capture.points == ["receiver"]
    assert with_capture.scenario_hash == base.scenario_hash
    again = ccbench.Scenario.from_toml(with_capture.effective_toml())
    assert again == with_capture
    with pytest.raises(ccbench.ScenarioError) as e:
        ccbench.run(with_capture)
    assert e.value.field == "capture.dir"
