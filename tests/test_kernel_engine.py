"""The kernel engine end to end: real TCP in network namespaces through the emulator.

Needs root and /dev/net/tun; skipped otherwise. Every test is bounded in time (runs of
a few seconds, subprocess timeouts), and after every test no namespace, device or
process of a finished run remains.
"""

from __future__ import annotations

import json
import math
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import ccbench
from ccbench.engines import kernel as kernel_engine
from ccbench.kernel import host, state
from ccbench.validate import run_cell
from ccbench.validate.cells import base

from conftest import (
    THREE_DOWNLOADS,
    assert_nothing_left_behind,
    assert_three_downloads_one_after_another,
    run_cli,
    timing_check,
)

REASON = host.tun_usable()
pytestmark = [pytest.mark.host, pytest.mark.skipif(REASON is not None, reason=f"kernel engine unavailable: {REASON}")]

PAYLOAD_SHARE = 1448 / 1500


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    assert_nothing_left_behind(3)


def run(doc: dict[str, Any]) -> ccbench.Result:
    return kernel_engine.run(doc)


def link(rate: str, rtt: str = "20ms", buffer: str = "1bdp") -> dict[str, str]:
    return {"rate": rate, "rtt": rtt, "buffer": buffer}


def test_cubic_through_the_emulator_matches_the_configured_link(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_cli(
        "run",
        "--engine",
        "kernel",
        "--cca",
        "cubic",
        "--rate",
        "20Mbit",
        "--rtt",
        "20ms",
        "--duration",
        "5s",
        "--out",
        str(out),
        "--json",
    )
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout)
    assert sorted(p.name for p in out.iterdir()) == ["flows.parquet", "link.parquet", "scenario.toml", "summary.json"]
    assert s["engine"] == "kernel" and s["kernel"] == platform.release()
    assert "cubic" in s["available_congestion_control"]
    f = s["flows"][0]
    expected = 20e6 * PAYLOAD_SHARE
    assert abs(f["goodput_bps"] - expected) / expected < 0.10, f["goodput_bps"]
    assert f["rtt_ms"]["min"] >= 20.0 and f["rtt_ms"]["mean"] >= 20.0
    assert f["rtt_samples"] > 1000 and f["retransmits"] >= 0
    timing_check(s["emulator"]["delivered_rate_ratio"] >= 0.97, "the emulator's capacity", s["emulator"])
    assert not s["emulator"]["flag_short"]
    assert 0.9 < s["link"]["utilization"] <= 1.01

    # Same schema as the simulator: every key and column it has, the kernel has too.
    sim = ccbench.run(ccbench.Scenario.from_file(out / "scenario.toml"))
    assert set(sim.summary) <= set(s)
    assert set(sim.summary["flows"][0]) <= set(f) and set(sim.summary["link"]) <= set(s["link"])
    import pandas as pd

    flows, links = pd.read_parquet(out / "flows.parquet"), pd.read_parquet(out / "link.parquet")
    core = [c for c in sim.flows.columns if not c.startswith("cc_")]
    assert set(core) <= set(flows.columns) and list(sim.link.columns) == list(links.columns)
    assert len(flows) == len(sim.flows) > 40 and flows["flow"].dtype == sim.flows["flow"].dtype
    assert flows["cwnd"].notna().all() and flows["lost"].isna().all()
    assert abs(flows["goodput_bps"].iloc[10:].mean() - expected) / expected < 0.10


TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_a_trace_link_delivers_the_traces_capacity(capsys: pytest.CaptureFixture[str]) -> None:
    # The T-Mobile uplink trace, restarted at the run's epoch: what its first 5 s offer.
    trace = TRACES / "TMobile-LTE-short.up"
    r = run(
        {
            "duration": "5s",
            "link": {"trace": str(trace), "rtt": "20ms", "buffer": "300pkt"},
            "flows": [{"cca": "cubic"}],
        }
    )
    link, check = r.summary["link"], r.summary["emulator"]
    ms = [int(x) for x in trace.read_text().split()]
    offered = sum(1 for m in ms if m < 5000) * 1500 * 8 / 5.0
    with capsys.disabled():
        print(
            f"\n[benchmark] emulator on {trace.name}: offered {offered / 1e6:.2f} Mbit/s in the first 5 s, "
            f"reported {link['rate_bps'] / 1e6:.2f}, used {100 * link['utilization']:.1f}%, delivered "
            f"{100 * check['delivered_rate_ratio']:.2f}% of the capacity while busy"
        )
    assert abs(link["rate_bps"] / offered - 1) < 0.01
    assert link["trace_mean_bps"] == len(ms) * 12000 * 1000 // ms[-1]
    assert link["utilization"] > 0.85
    timing_check(check["delivered_rate_ratio"] >= 0.97, "the emulator's capacity", check)
    assert check["write_errors"] == 0 and r.link["capacity_bps"].notna().all()


def test_fq_codel_in_the_emulator_keeps_the_queue_short() -> None:
    r = run(
        {"duration": "6s", "link": {"rate": "10Mbit", "rtt": "20ms", "aqm": "fq_codel"}, "flows": [{"cca": "cubic"}]}
    )
    link = r.summary["link"]
    assert link["aqm"]["name"] == "fq_codel" and link["buffer_packets"] == 10240
    assert link["queue_delay_ms"]["p50"] < 30.0, link["queue_delay_ms"]
    assert link["drops_aqm"] + link["ecn_marks"] > 0
    assert link["utilization"] > 0.8


@pytest.mark.parametrize("rate", ["20Mbit", "100Mbit"])
def test_emulator_delivers_the_configured_capacity(rate: str, capsys: pytest.CaptureFixture[str]) -> None:
    r = run({"duration": "3s", "link": link(rate, buffer="2bdp"), "flows": [{"cca": "cubic"}]})
    check = r.summary["emulator"]
    with capsys.disabled():
        print(
            f"\n[benchmark] emulator at {rate}: delivered {100 * check['delivered_rate_ratio']:.2f}% of the "
            f"configured rate over {check['busy_s']:.2f} s busy; lateness p50 "
            f"{check['lateness_forward_us']['p50']:.0f} µs, p99 {check['lateness_forward_us']['p99']:.0f} µs"
        )
    timing_check(check["delivered_rate_ratio"] >= 0.97, "the emulator's capacity", check)
    assert check["busy_s"] > 1.0 and check["write_errors"] == 0


def test_bbr_runs_and_reports_its_model() -> None:
    r = run({"duration": "3s", "link": link("20Mbit"), "flows": [{"cca": "bbr"}]})
    f = r.summary["flows"][0]
    assert f["cca"] == "bbr" and f["paced"]
    assert f["goodput_bps"] > 0.8 * 20e6 * PAYLOAD_SHARE
    bw = r.flows["cc_bw_bps"].iloc[5:]
    assert bw.notna().all() and (bw > 10e6).all() and (bw < 25e6).all()
    assert r.flows["cc_min_rtt_ms"].iloc[-1] >= 20.0
    assert r.flows["pacing_rate_bps"].iloc[-1] > 0


def test_sized_flows_and_start_times() -> None:
    r = run(
        {
            "duration": "10s",
            "link": link("20Mbit"),
            "flows": [{"cca": "cubic", "size": "2MB"}, {"cca": "cubic", "size": "1MB", "start": "0.5s"}],
        }
    )
    s = r.summary
    a, b = s["flows"]
    assert a["delivered_bytes"] == 2_000_000 and b["delivered_bytes"] == 1_000_000
    assert b["start_s"] == 0.5
    assert 0.8 < a["completion_s"] < 5 and 0.4 < b["completion_s"] < 5
    # The run ends when the last sized flow completes.
    assert math.isclose(s["duration_s"], max(a["completion_s"], b["completion_s"] + 0.5), rel_tol=1e-6)
    assert s["duration_s"] < 10
    # The series end with a sample at the end of the run, as the simulator's do.
    for table in (r.flows, r.link):
        times = table["time_s"].drop_duplicates().tolist()
        assert times == sorted(times) and math.isclose(times[-1], s["duration_s"])


def test_the_receive_window_holds_where_autotuning_would_open_it() -> None:
    # 400 KB binds at 100 Mbit/s and 40 ms (BDP 500 KB); Linux recomputes the clamp from
    # the buffer as it autotunes or measures a new truesize ratio, so the receiver keeps
    # setting it (and locks the buffer for a fixed window).
    r = run({"duration": "5s", "link": link("100Mbit", "40ms", "8bdp"), "flows": [{"cca": "cubic", "rwnd": "400KB"}]})
    window = r.flows["rwnd_bytes"].dropna()
    assert window.max() <= 400_000 + 512  # the window scale's granularity
    f = r.summary["flows"][0]
    assert f["retransmits"] == 0
    assert f["goodput_bps"] < 1.05 * 400_000 * 8 / 0.040


def test_repeated_downloads_each_on_a_new_connection() -> None:
    s = run(THREE_DOWNLOADS).summary
    downloads = assert_three_downloads_one_after_another(s, max_gap_s=0.52)
    assert all(d["rtt_ms"]["min"] >= 20.0 for d in downloads)
    last = downloads[-1]
    assert math.isclose(s["flows"][0]["completion_s"], last["start_s"] + last["completion_s"], rel_tol=1e-6)


def test_downloads_that_connect_when_due_count_the_handshake_and_fast_open_takes_it_back() -> None:
    """1 KB downloads at 20 ms: a handshake the sender makes when due adds a round trip;
    with Fast Open, from the second connection on, the data goes in the SYN and that
    round trip goes away again."""

    def medians(**flow: object) -> list[float]:
        doc = {
            "duration": "10s",
            "link": {"rate": "20Mbit", "rtt": "20ms", "buffer": "1bdp"},
            "flows": [{"cca": "cubic", "size": "1KB", "repeat": 5, "pause": "100ms", **flow}],
        }
        downloads = run(doc).summary["flows"][0]["downloads"]
        assert len(downloads) == 5 and all(d["delivered_bytes"] == 1000 for d in downloads)
        return [d["completion_s"] for d in downloads]

    ahead = medians()
    due = medians(connect="sender")
    tfo = medians(connect="sender", fastopen=True)
    mid = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    assert 0.016 < mid(due) - mid(ahead) < 0.026, (ahead, due)
    assert tfo[0] > 0.025 and mid(tfo[1:]) < mid(ahead) + 0.003, (tfo, ahead)
    # Opened by the receiver, which asks with a request: a round trip and a half, and
    # with Fast Open (the request in the SYN) half of one.
    asked = medians(connect="receiver")
    asked_tfo = medians(connect="receiver", fastopen=True)
    assert 0.026 < mid(asked) - mid(ahead) < 0.036, (ahead, asked)
    assert 0.006 < mid(asked_tfo[1:]) - mid(ahead) < 0.016, (ahead, asked_tfo)


@pytest.mark.parametrize("mtu, mss", [(1500, 1448), (1400, 1348)])
def test_path_mtu_discovery_lowers_the_senders_mss(mtu: int, mss: int) -> None:
    # The hosts' MTU is 1500 (tcp.mss 1448 + 52): a path MTU of 1500 changes nothing; at
    # 1400 the emulator drops the first window's full-sized packets and answers each
    # with ICMP fragmentation needed, and the sender's kernel takes the MTU
    # (tcp_v4_err -> tcp_v4_mtu_reduced): 1400 - 40 - 12 bytes of timestamps.
    r = run({"duration": "4s", "link": {**link("20Mbit", "40ms"), "mtu": mtu}, "flows": [{"cca": "cubic"}]})
    f = r.summary["flows"][0]
    assert (f["final_snd_mss"], f["final_pmtu"]) == (mss, mtu)
    assert f["icmp_sent"] == f["mtu_dropped"] and (f["mtu_dropped"] > 0) == (mtu < 1500)
    assert f["goodput_bps"] > 0.7 * 20e6


def test_a_path_mtu_black_hole_is_recovered_by_mtu_probing() -> None:
    # No ICMP: nothing gets through until the retransmit timer has fired for about 3.6 s
    # (tcp_write_timeout -> tcp_mtu_probing lowers the MSS to tcp_base_mss), then the
    # flow runs and probing climbs to within tcp_probe_threshold of the path's MTU.
    doc = {
        "duration": "10s",
        "interval": "1s",
        "link": {**link("20Mbit", "40ms"), "mtu": 1400, "mtu_black_hole": True},
        "tcp": {"mtu_probing": 1},
        "flows": [{"cca": "cubic"}],
    }
    r = run(doc)
    f = r.summary["flows"][0]
    assert f["icmp_sent"] == 0 and f["mtu_dropped"] > 0 and f["final_pmtu"] == 1500
    assert 1024 <= f["final_snd_mss"] <= 1348
    goodput = r.flows.set_index("time_s")["goodput_bps"]
    assert goodput.iloc[0] == 0
    assert goodput.iloc[-2:].min() > 0.8 * 20e6


def test_a_killed_run_leaves_state_that_cleanup_removes(tmp_path: Path) -> None:
    env = dict(os.environ, NO_COLOR="1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ccbench",
            "run",
            "--engine",
            "kernel",
            "--rate",
            "10Mbit",
            "--duration",
            "20s",
            "--json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 30
    st = None
    while time.monotonic() < deadline and proc.poll() is None:
        runs = [r for r in state.live_runs() if r.owner_pid == proc.pid]
        if runs and len(runs[0].processes) == 3:
            st = runs[0]
            break
        time.sleep(0.1)
    assert st is not None, "the run did not start"
    time.sleep(1.0)  # traffic is flowing
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    # The children die with their parent; the namespaces and the record remain.
    time.sleep(0.5)
    assert not any(state.is_alive(p.pid, p.start) for p in st.processes)
    assert set(st.namespaces) <= set(state.list_namespaces())
    assert st.path.exists() and st.id in {r.id for r in state.stale_runs()}

    res = run_cli("kernel", "cleanup")
    assert res.returncode == 0, res.stderr
    for ns in st.namespaces:
        assert f"namespace {ns}" in res.stdout
    assert not set(st.namespaces) & set(state.list_namespaces())
    assert not st.path.exists()


def test_the_next_run_removes_stale_leftovers_and_nothing_else() -> None:
    # A stale record (its owner is dead) naming a namespace that exists, and a ccb-
    # namespace nobody recorded: the next run removes the first and leaves the second.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    st = state.RunState.create()
    st.owner_pid, st.owner_start = dead.pid, None
    stale_ns = st.names_for()["ns_sender"]
    st.add_namespace(stale_ns)
    subprocess.run(["ip", "netns", "add", stale_ns], check=True)
    foreign = f"ccb-t{os.getpid() % 100000}-x"
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    try:
        r = run({"duration": "2s", "link": link("10Mbit"), "flows": [{"cca": "cubic"}]})
        assert r.summary["flows"][0]["goodput_bps"] > 0
        names = state.list_namespaces()
        assert stale_ns not in names and not st.path.exists()
        assert foreign in names
        res = run_cli("kernel", "cleanup")
        assert res.returncode == 0 and foreign in state.list_namespaces()
    finally:
        subprocess.run(["ip", "netns", "delete", foreign], capture_output=True)
        state.remove_run(st)


def test_two_runs_at_once_do_not_collide(tmp_path: Path) -> None:
    env = dict(os.environ, NO_COLOR="1")
    argv = [
        sys.executable,
        "-m",
        "ccbench",
        "run",
        "--engine",
        "kernel",
        "--rate",
        "10Mbit",
        "--duration",
        "3s",
        "--json",
    ]
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        s = json.loads(out)
        g = s["flows"][0]["goodput_bps"]
        assert abs(g - 10e6 * PAYLOAD_SHARE) / (10e6 * PAYLOAD_SHARE) < 0.15, g


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cca", "vegas"], "error: flows[0].cca: 'vegas' is not available in this kernel"),
        (["--cca", "bbr", "--pacing", "off"], "error: flows[0].pacing: bbr always paces in the kernel"),
    ],
)
def test_refusals_are_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_cli("run", "--engine", "kernel", *args, "--out", str(out))
    assert res.returncode == 2
    assert res.stderr.strip().startswith(message) and len(res.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_refuses_a_tick_rate_the_kernel_does_not_have(tmp_path: Path) -> None:
    hz = host.kernel_hz()
    if hz is None:
        pytest.skip("the kernel's CONFIG_HZ is unknown")
    other = 100 if hz != 100 else 300
    path = tmp_path / "s.toml"
    path.write_text(
        f'duration = "1s"\n[link]\nrate = "10Mbit"\nrtt = "10ms"\n[tcp]\nhz = {other}\n[[flows]]\ncca = "cubic"\n'
    )
    res = run_cli("run", "--engine", "kernel", str(path))
    assert res.returncode == 2 and res.stderr.startswith("error: tcp.hz:")


def test_validate_compares_the_engines_for_cubic(tmp_path: Path) -> None:
    res = run_cell(base(("20Mbit",), ("20ms",), (1.0,), ("cubic",))[0], "3s", 1, progress=lambda _: None)
    assert res.sim.available and res.kernel.available
    goodput = next(c for c in res.checks if c.figure == "goodput")
    assert goodput.ok, goodput
    assert res.emulator_ratio is not None and res.emulator_ratio >= 0.97
    out = tmp_path / "v"
    cli = run_cli(
        "validate",
        "--quick",
        "--family",
        "base",
        "--cca",
        "cubic",
        "--duration",
        "2s",
        "--no-bench",
        "--out",
        str(out),
        "--report",
    )
    assert cli.returncode == 0, cli.stderr
    assert "cubic 20Mbit 20ms 0.5bdp" in cli.stdout
    rows = (out / "validate.csv").read_text().splitlines()
    assert rows[0].startswith("family,cell,verdict,figure") and len(rows) == 1 + 2 * 3  # 2 cells x 3 checks
    doc = json.loads((out / "validate.json").read_text())
    assert doc["tolerances"]["goodput"] == 0.10 and len(doc["cells"]) == 2
    assert (out / "report" / "index.html").is_file()


def test_rtt_tells_one_story_emulator_tcp_info_and_capture(tmp_path: Path) -> None:
    """The kernel run's RTT (the emulator's per-ACK samples), the kernel's own smoothed
    RTT (tcpi_rtt, the srtt_ms column) and the RTT 'ccbench analyze' measures in a capture
    of the same run use one definition (docs/figures.md) and must agree. With 1% loss,
    SACKed segments give samples too."""
    import pandas as pd

    out = tmp_path / "run"
    res = run_cli(
        "run",
        "--engine",
        "kernel",
        "--cca",
        "bbr",
        "--rate",
        "20Mbit",
        "--rtt",
        "20ms",
        "--buffer",
        "2bdp",
        "--loss",
        "1%",
        "--duration",
        "3s",
        "--out",
        str(out),
        "--pcap",
        "sender",
        "--json",
    )
    assert res.returncode == 0, res.stderr
    emulator = json.loads(res.stdout)["flows"][0]["rtt_ms"]["mean"]
    srtt = float(pd.read_parquet(out / "flows.parquet")["srtt_ms"].mean())
    analyzed = run_cli("analyze", str(out / "capture-sender.pcap"), "--side", "sender", "--json")
    assert analyzed.returncode == 0, analyzed.stderr
    capture = json.loads(analyzed.stdout)["flows"][0]["rtt_ms"]["mean"]
    assert capture == pytest.approx(emulator, rel=0.02)
    assert srtt == pytest.approx(emulator, rel=0.15)  # smoothed, sampled every 100 ms
