"""``ccbench analyze``: a capture measured as a run, checked against the run that made it."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import ccbench
from ccbench.capture import analyze_file
from ccbench.capture.reader import read_capture
from ccbench.kernel import host
from ccbench.plots import load_run

from conftest import run_cli

KERNEL = host.tun_usable()


def scenario(tmp: Path, points: list[str], **flow: Any) -> dict[str, Any]:
    return {
        "seed": 2,
        "duration": "10s",
        "link": {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp", "loss": "0.5%"},
        "flows": [{"cca": "cubic", **flow}],
        "capture": {"points": points, "dir": str(tmp)},
    }


def close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * abs(b)


def test_duplicate_acks_are_the_senders_own_count(tmp_path: Path) -> None:
    # The simulator counts its duplicate ACKs per download; a first download that outlasts
    # the run is the bulk flow's connection, ACK for ACK. An ACK that moves snd_una is
    # no duplicate, and one that only SACKs is (tcp_ack: no flag set, data out).
    doc = scenario(tmp_path, ["sender"])
    ccbench.run(doc)
    g = analyze_file(tmp_path / "capture-sender.pcap").summary["flows"][0]
    del doc["capture"]
    doc["flows"][0] |= {"size": "100MB", "repeat": 2}
    first = ccbench.run(doc).summary["flows"][0]["downloads"][0]
    assert first["retransmits"] == g["retransmits"] > 0
    assert g["dupacks"] == first["dupacks"] > 0, (g["dupacks"], first["dupacks"])


def test_sender_side_capture_reproduces_the_run(tmp_path: Path) -> None:
    res = ccbench.run(scenario(tmp_path, ["sender", "receiver"]))
    f = res.summary["flows"][0]
    got = analyze_file(tmp_path / "capture-sender.pcap")
    g = got.summary["flows"][0]
    assert g["capture_side"] == "sender" and g["rtt_method"] == "ack"
    assert (g["src"], g["dst"]) == ("10.1.0.1:40000", "10.2.0.1:20000")
    assert g["sent_bytes"] == f["sent_bytes"]
    assert g["retransmits"] == f["retransmits"]
    assert close(g["goodput_bps"], f["goodput_bps"], 0.01)
    for stat in ("min", "mean", "p50"):
        assert close(g["rtt_ms"][stat], f["rtt_ms"][stat], 0.02), stat
    assert g["dupacks"] > 0 and g["ecn"] == "off" and g["handshake_captured"]
    # The time series: same columns as a run where they exist, plus the capture's own.
    flows = got.flows
    for col in (
        "time_s",
        "flow",
        "goodput_bps",
        "throughput_bps",
        "inflight",
        "inflight_bytes",
        "srtt_ms",
        "min_rtt_ms",
        "retransmits",
        "rwnd_bytes",
        "dupacks",
    ):
        assert col in flows.columns, col
    assert set(flows.columns) - {"rwnd_bytes", "dupacks"} <= set(res.flows.columns)
    assert (flows["rwnd_bytes"].dropna() == 6 * 2**20).all()
    assert flows["retransmits"].iloc[-1] == f["retransmits"]
    # Goodput per interval follows the run's (ACKs arrive half an RTT after delivery).
    mine = flows.set_index("time_s")["goodput_bps"]
    theirs = res.flows.set_index("time_s")["goodput_bps"]
    common = mine.index.intersection(theirs.index)
    assert len(common) >= 90
    assert close(mine[common].sum(), theirs[common].sum(), 0.01)


def test_receiver_side_capture_uses_timestamps(tmp_path: Path) -> None:
    res = ccbench.run(scenario(tmp_path, ["receiver"], size="3MB"))
    f = res.summary["flows"][0]
    g = analyze_file(tmp_path / "capture-receiver.pcap").summary["flows"][0]
    assert g["capture_side"] == "receiver" and g["rtt_method"] == "timestamps"
    assert g["delivered_bytes"] == f["delivered_bytes"] == 3_000_000
    assert g["size_bytes"] == 3_000_000
    # The receiver sees the transfer start when the first segment arrives, one way
    # (20 ms) after the sender started it.
    assert 0.019 < f["completion_s"] - g["completion_s"] < 0.022
    assert close(g["goodput_bps"], f["goodput_bps"], 0.01)
    # The receiver sees the RTT to within the timestamps' millisecond clock.
    assert abs(g["rtt_ms"]["p50"] - f["rtt_ms"]["p50"]) < 2.0


def test_analyze_cli_writes_a_plottable_run(tmp_path: Path) -> None:
    ccbench.run(scenario(tmp_path, ["sender"], count=2))
    out = tmp_path / "analyzed"
    r = run_cli("analyze", str(tmp_path / "capture-sender.pcap"), "--out", str(out), "--plot", "--interval", "200ms")
    assert r.returncode == 0, r.stderr
    for name in ("summary.json", "flows.parquet", "link.parquet", "packets.parquet"):
        assert (out / name).is_file(), name
    names = sorted(p.name for p in (out / "plots").iterdir())
    for stem in ("flow0", "flow1", "seq0", "seq1", "retrans0", "retrans1", "link"):
        assert f"{stem}.png" in names and f"{stem}.svg" in names, stem
    run = load_run(out)
    assert run.flow_count == 2 and run.interval_s == 0.2
    packets = pd.read_parquet(out / "packets.parquet")
    assert set(packets["kind"]) == {0, 1}
    assert packets["retransmission"].sum() == sum(f["retransmitted_packets"] for f in run.summary["flows"])
    # ccbench plot works on it as on any run.
    r = run_cli("plot", str(out), "--flow", "1", "--out", str(tmp_path / "figs"), "--format", "png")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == [
        "flow1.png",
        "link.png",
        "retrans1.png",
        "seq1.png",
    ]
    # Selecting one connection, by index or by port.
    one = json.loads(run_cli("analyze", str(tmp_path / "capture-sender.pcap"), "--flow", "1", "--json").stdout)
    assert [f["dst"] for f in one["flows"]] == ["10.2.0.2:20001"]
    by_port = json.loads(run_cli("analyze", str(tmp_path / "capture-sender.pcap"), "--port", "20001", "--json").stdout)
    assert by_port["flows"][0]["goodput_bps"] == one["flows"][0]["goodput_bps"]


def test_analyze_errors(tmp_path: Path) -> None:
    ccbench.run(scenario(tmp_path, ["sender"]))
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all")
    for args, field in ((["--flow", "3"], "--flow"), (["--port", "1"], "--port"), (["--side", "middle"], "--side")):
        r = run_cli("analyze", str(tmp_path / "capture-sender.pcap"), *args)
        assert r.returncode == 2 and r.stderr.startswith(f"error: {field}"), r.stderr
    for path in (junk, tmp_path / "missing.pcap"):
        r = run_cli("analyze", str(path))
        assert r.returncode == 2 and r.stderr.startswith("error: CAPTURE: "), r.stderr


def _ethernet_pcapng(raw: Path, out: Path) -> None:
    """Rewrite a raw-IP pcap as pcapng with Ethernet framing (and one VLAN tag)."""
    import dpkt

    with open(raw, "rb") as f, open(out, "wb") as g:
        w = dpkt.pcapng.Writer(g, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, buf in dpkt.pcap.Reader(f):
            eth = b"\x02" * 6 + b"\x04" * 6 + struct.pack("!HHH", 0x8100, 7, 0x0800)
            w.writepkt(eth + buf, ts=float(ts))


def _ipv6_sll2_pcap(raw: Path, out: Path) -> None:
    """Rewrite IPv4/TCP packets as IPv6/TCP in Linux cooked (SLL2) framing."""
    import dpkt

    with open(raw, "rb") as f, open(out, "wb") as g:
        w = dpkt.pcap.Writer(g, linktype=276, nano=True)
        for ts, buf in dpkt.pcap.Reader(f):
            ihl = (buf[0] & 15) * 4
            total = struct.unpack("!H", buf[2:4])[0]
            tcp = buf[ihl:]
            src = b"\xfd" + b"\0" * 11 + buf[12:16]
            dst = b"\xfd" + b"\0" * 11 + buf[16:20]
            v6 = struct.pack("!IHBB", 0x60000000, total - ihl, 6, 64) + src + dst + tcp
            sll2 = struct.pack("!HHIHBB", 0x86DD, 0, 1, 1, 0, 6) + b"\0" * 8
            w.writepkt(sll2 + v6, ts=float(ts))


def test_link_layers_and_formats_give_the_same_answer(tmp_path: Path) -> None:
    ccbench.run(scenario(tmp_path, ["sender"]))
    raw = tmp_path / "capture-sender.pcap"
    eth, v6 = tmp_path / "eth.pcapng", tmp_path / "v6.pcap"
    _ethernet_pcapng(raw, eth)
    _ipv6_sll2_pcap(raw, v6)
    base = analyze_file(raw).summary["flows"][0]
    assert read_capture(eth).format == "pcapng"
    for path in (eth, v6):
        got = analyze_file(path).summary["flows"][0]
        for key in ("sent_bytes", "delivered_bytes", "retransmits", "dupacks", "rtt_samples"):
            assert got[key] == base[key], (path.name, key)
        assert close(got["goodput_bps"], base["goodput_bps"], 1e-6)
        assert abs(got["rtt_ms"]["mean"] - base["rtt_ms"]["mean"]) < 0.01  # pcapng here: µs stamps
    assert analyze_file(v6).summary["flows"][0]["src"].startswith("fd00::")


@pytest.mark.host
@pytest.mark.skipif(KERNEL is not None, reason=f"kernel engine unavailable: {KERNEL}")
def test_analyze_agrees_with_a_kernel_run(tmp_path: Path) -> None:
    """The emulator captures the real packets at the sender's side; analysing them gives
    the run's own goodput (receiving application) and RTT (the emulator's samples)."""
    doc = {
        "duration": "8s",
        "link": {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp"},
        "flows": [{"cca": "cubic"}],
        "capture": {"points": ["sender", "receiver"], "dir": str(tmp_path)},
    }
    from ccbench.engines import kernel as kernel_engine

    res = kernel_engine.run(doc)
    f = res.summary["flows"][0]
    got = analyze_file(tmp_path / "capture-sender.pcap")
    g = got.summary["flows"][0]
    assert g["capture_side"] == "sender"
    assert g["dst"].endswith(":20000")
    assert close(g["goodput_bps"], f["goodput_bps"], 0.02), (g["goodput_bps"], f["goodput_bps"])
    assert close(g["rtt_ms"]["mean"], f["rtt_ms"]["mean"], 0.10), (g["rtt_ms"], f["rtt_ms"])
    assert abs(g["retransmits"] - f["retransmits"]) <= max(2, 0.05 * f["retransmits"])
    rx = analyze_file(tmp_path / "capture-receiver.pcap").summary["flows"][0]
    assert rx["capture_side"] == "receiver"
    assert close(rx["goodput_bps"], f["goodput_bps"], 0.02)
