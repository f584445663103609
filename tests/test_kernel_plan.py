"""The kernel engine's parts that need neither root nor a TUN device: scenario loading
with kernel-only algorithms, planning and refusals, TCP_INFO parsing, run state, and
the validation table."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ccbench import ScenarioError
from ccbench.kernel import state, tcpinfo
from ccbench.kernel.host import HostFacts, KernelEngineError
from ccbench.kernel.plan import BASE_PORT, Plan, emulator_config, make_plan
from ccbench.kernel.scenario import from_dict, from_flags

from conftest import offline_run

HOST = HostFacts(kernel="6.x-test", kernel_hz=250, available_congestion_control=["reno", "cubic", "bbr"])


def scenario(**over: object) -> dict[str, object]:
    doc: dict[str, object] = {"duration": "5s", "link": {"rate": "20Mbit", "rtt": "20ms"}, "flows": [{"cca": "cubic"}]}
    doc.update(over)
    return doc


class TestKernelOnlyAlgorithms:
    def test_a_name_only_the_kernel_knows_loads_and_hashes(self) -> None:
        sc = from_dict(scenario(flows=[{"cca": "prague", "count": 2}, {"cca": "cubic"}]))
        assert [f.cca for f in sc.flows] == ["prague", "cubic"]
        assert '"cca":"prague"' in sc.to_json()
        assert (
            sc.scenario_hash != from_dict(scenario(flows=[{"cca": "reno", "count": 2}, {"cca": "cubic"}])).scenario_hash
        )

    def test_flags_keep_the_kernel_names_in_order(self) -> None:
        sc = from_flags(cca="prague,cubic", rate="10Mbit", duration="3s")
        assert [f.cca for f in sc.flows] == ["prague", "cubic"]
        base = {"duration": "3s", "link": {"rate": "10Mbit", "rtt": "10ms"}, "flows": [{"cca": "prague"}]}
        assert [(f.cca, f.count) for f in from_flags(base=base, flows=3).flows] == [("prague", 3)]

    def test_other_values_are_still_validated(self) -> None:
        with pytest.raises(ScenarioError) as e:
            from_dict(scenario(link={"rate": "fast", "rtt": "20ms"}))
        assert e.value.field == "link.rate"
        with pytest.raises(ScenarioError) as e:
            from_dict(scenario(flows=[{"cca": "prague", "params": {"beta": 0.5}}]))
        assert e.value.field == "flows[0].params"


class TestPlan:
    def test_defaults_map_to_the_kernel(self) -> None:
        plan = make_plan(from_dict(scenario()), HOST)
        assert plan.mtu == 1500
        assert plan.route_options == []
        assert plan.scenario.tcp.hz == 250 and plan.notes
        assert plan.sender_sysctls["net.ipv4.tcp_limit_output_bytes"] == str(4 * 2**20)
        # Every [tcp] sysctl is set, at Linux's defaults, in both namespaces.
        for sysctls in (plan.sender_sysctls, plan.receiver_sysctls):
            assert {
                k: sysctls[k]
                for k in (
                    "net.ipv4.tcp_frto",
                    "net.ipv4.tcp_sack",
                    "net.ipv4.tcp_tso_rtt_log",
                    "net.ipv4.tcp_slow_start_after_idle",
                )
            } == {
                "net.ipv4.tcp_frto": "2",
                "net.ipv4.tcp_sack": "1",
                "net.ipv4.tcp_tso_rtt_log": "9",
                "net.ipv4.tcp_slow_start_after_idle": "1",
            }
        f = plan.flows[0]
        assert (f.cca, f.paced, f.force_pacing) == ("cubic", False, False)

    def test_stack_knobs_the_kernel_can_set(self) -> None:
        sc = from_dict(scenario(tcp={"mss": 1000, "init_cwnd": 4, "rto_min": "50ms", "hz": 250}))
        plan = make_plan(sc, HOST)
        assert plan.mtu == 1052
        assert plan.route_options == ["initcwnd", "4", "rto_min", "50ms"]
        assert not plan.notes
        plan = make_plan(from_dict(scenario(tcp={"frto": 0, "hz": 250})), HOST)
        assert plan.sender_sysctls["net.ipv4.tcp_frto"] == "0"
        plan = make_plan(from_dict(scenario(tcp={"sack": False, "hz": 250})), HOST)
        assert plan.sender_sysctls["net.ipv4.tcp_sack"] == plan.receiver_sysctls["net.ipv4.tcp_sack"] == "0"
        knobs = {"tso_rtt_log": 0, "tso_win_divisor": 0, "min_tso_segs": 4, "slow_start_after_idle": False}
        plan = make_plan(from_dict(scenario(tcp={**knobs, "hz": 250})), HOST)
        assert [plan.sender_sysctls[f"net.ipv4.tcp_{k}"] for k in knobs] == ["0", "0", "4", "0"]

    def test_the_mtu_probing_sysctls_reach_both_namespaces(self) -> None:
        probing = {"mtu_probing": 1, "base_mss": 512, "probe_threshold": 16, "mtu_probe_floor": 256}
        doc = scenario(
            link={"rate": "20Mbit", "rtt": "20ms", "mtu": 1400},
            tcp={**probing, "probe_interval": "2min", "hz": 250},
        )
        plan = make_plan(from_dict(doc), HOST)
        for sysctls in (plan.sender_sysctls, plan.receiver_sysctls):
            assert [sysctls[f"net.ipv4.tcp_{k}"] for k in probing] == ["1", "512", "16", "256"]
            assert sysctls["net.ipv4.tcp_probe_interval"] == "120"
        # The devices keep the hosts' MTU; the emulator has the path's.
        assert plan.mtu == 1500
        assert emulator_config(plan, "s", "r", 1)["scenario"]["link"]["mtu_bytes"] == 1400
        with pytest.raises(KernelEngineError) as e:
            make_plan(from_dict(scenario(tcp={"probe_interval": "1500ms", "hz": 250})), HOST)
        assert e.value.field == "tcp.probe_interval" and "whole seconds" in e.value.message

    def test_tcp_rmem_is_the_receivers_tcp_rmem_only_when_set(self) -> None:
        # Left at Linux's default: the receiver keeps room for rwnd to grow (max(4 rwnd,
        # 6 MiB)), as before the setting; the sender's namespace is not touched.
        plan = make_plan(from_dict(scenario(flows=[{"cca": "cubic", "rwnd": "4MiB", "rwnd_autotune": True}])), HOST)
        assert plan.receiver_sysctls["net.ipv4.tcp_rmem"] == f"4096 131072 {16 * 2**20}"
        assert "net.ipv4.tcp_rmem" not in plan.sender_sysctls
        tuned = scenario(tcp={"hz": 250, "rmem": ["4KiB", "128KiB", "256KiB"]})
        plan = make_plan(from_dict(tuned), HOST)
        assert plan.receiver_sysctls["net.ipv4.tcp_rmem"] == "4096 131072 262144"
        assert "net.ipv4.tcp_rmem" not in plan.sender_sysctls

    def test_a_sysctl_the_kernel_lacks_must_keep_its_default(self) -> None:
        old = HostFacts(
            kernel="5.10-test",
            kernel_hz=250,
            available_congestion_control=["cubic"],
            ipv4_sysctls=frozenset(
                {
                    "tcp_limit_output_bytes",
                    "tcp_frto",
                    "tcp_sack",
                    "tcp_tso_win_divisor",
                    "tcp_min_tso_segs",
                    "tcp_slow_start_after_idle",
                }
            ),
        )
        plan = make_plan(from_dict(scenario()), old)
        assert "net.ipv4.tcp_tso_rtt_log" not in plan.sender_sysctls
        with pytest.raises(KernelEngineError) as e:
            make_plan(from_dict(scenario(tcp={"tso_rtt_log": 0})), old)
        assert e.value.field == "tcp.tso_rtt_log" and "has no net.ipv4.tcp_tso_rtt_log" in e.value.message

    def test_fast_open_is_on_in_both_namespaces_only_when_a_flow_uses_it(self) -> None:
        plain = make_plan(from_dict(scenario()), HOST)
        assert "net.ipv4.tcp_fastopen" not in plain.sender_sysctls
        flows = [{"cca": "cubic", "size": "20KB", "repeat": 3, "connect": "sender", "fastopen": True}]
        plan = make_plan(from_dict(scenario(flows=flows)), HOST)
        assert plan.sender_sysctls["net.ipv4.tcp_fastopen"] == plan.receiver_sysctls["net.ipv4.tcp_fastopen"] == "3"
        assert (plan.flows[0].connect, plan.flows[0].fastopen) == ("sender", True)

    def test_pacing_and_counts(self) -> None:
        sc = from_dict(scenario(flows=[{"cca": "cubic", "pacing": True, "count": 2}, {"cca": "bbr", "start": "1s"}]))
        flows = make_plan(sc, HOST).flows
        assert [(f.index, f.entry, f.paced, f.force_pacing) for f in flows] == [
            (0, 0, True, True),
            (1, 0, True, True),
            (2, 1, True, False),
        ]
        assert flows[2].start_ns == 1_000_000_000

    @pytest.mark.parametrize(
        "over, field",
        [
            ({"tcp": {"hz": 100}}, "tcp.hz"),
            ({"tcp": {"rto_init": "3s"}}, "tcp.rto_init"),
            ({"tcp": {"delack_min": "10ms"}}, "tcp.delack_min"),
            ({"tcp": {"pacing_shift": 8}}, "tcp.pacing_shift"),
            ({"tcp": {"rto_min": "10500us"}}, "tcp.rto_min"),
            ({"flows": [{"cca": "cubic", "params": {"beta": 800}}]}, "flows[0].params"),
            ({"flows": [{"cca": "cubic"}, {"cca": "bbr", "pacing": False}]}, "flows[1].pacing"),
        ],
    )
    def test_refuses_what_the_kernel_cannot_express(self, over: dict[str, object], field: str) -> None:
        with pytest.raises(KernelEngineError) as e:
            make_plan(from_dict(scenario(**over)), HOST)
        assert e.value.field == field and e.value.message

    def test_refuses_an_algorithm_the_kernel_lacks(self) -> None:
        with pytest.raises(KernelEngineError) as e:
            make_plan(from_dict(scenario(flows=[{"cca": "cubic"}, {"cca": "nosuchcc"}])), HOST)
        assert e.value.field == "flows[1].cca" and "not available in this kernel" in e.value.message

    def test_emulator_gets_the_simulators_scenario(self) -> None:
        plan = make_plan(from_dict(scenario(link={"rate": "20Mbit", "rtt": "20ms", "buffer": "2bdp"})), HOST)
        cfg = emulator_config(plan, "ccb-x-s", "ccb-x-r", 10**9)
        assert cfg["scenario"] == json.loads(plan.scenario.to_json())
        assert cfg["scenario"]["link"]["buffer"] == {"bdp": 2.0}
        assert cfg["base_port"] == BASE_PORT


class TestTcpInfo:
    def test_layout_matches_the_kernel_header(self) -> None:
        ends = dict(zip((n for n, _ in tcpinfo._FIELDS), tcpinfo._ENDS))
        assert ends["total_retrans"] == 104  # 8 bytes + 24 u32
        assert ends["pacing_rate"] == 112
        assert ends["delivery_rate"] == 168
        assert ends["snd_wnd"] == 232

    def test_reads_a_live_socket(self) -> None:
        with socket.create_server(("127.0.0.1", 0)) as srv:
            with socket.create_connection(srv.getsockname()) as c:
                info = tcpinfo.tcp_info(c)
        assert info["state"] == 1  # ESTABLISHED
        assert info["snd_cwnd"] > 0 and info["snd_mss"] > 0
        assert info["snd_ssthresh"] >= tcpinfo.TCP_INFINITE_SSTHRESH

    def test_short_answers_give_fewer_fields(self) -> None:
        info = tcpinfo.parse_tcp_info(bytes(104))
        assert "total_retrans" in info and "pacing_rate" not in info

    def test_bbr_info(self) -> None:
        import struct

        raw = struct.pack("@5I", 1_250_000, 0, 20_000, 256 * 5 // 4, 512)
        bbr = tcpinfo.parse_bbr_info(raw)
        assert bbr == {"bw_bytes_per_s": 1_250_000.0, "min_rtt_us": 20_000.0, "pacing_gain": 1.25, "cwnd_gain": 2.0}

    def test_vegas_and_dctcp_info_and_which_algorithms_sample_them(self) -> None:
        import struct

        vegas = tcpinfo.parse_vegas_info(struct.pack("@4I", 1, 12, 40_000, 41_000))
        assert vegas == {"enabled": 1, "rttcnt": 12, "rtt_us": 40_000, "minrtt_us": 41_000}
        dctcp = tcpinfo.parse_dctcp_info(struct.pack("@2H3I", 1, 0, 256, 2896, 28960))
        assert dctcp == {"enabled": 1, "ce_state": 0, "alpha": 256, "ab_ecn": 2896, "ab_tot": 28960}
        assert tcpinfo.parse_dctcp_info(bytes(15)) is None
        kinds = {c: tcpinfo.cc_info_kind(c) for c in ("bbr", "bbr3", "vegas", "dctcp", "cubic", "veno")}
        assert kinds == {"bbr": "bbr", "bbr3": "bbr", "vegas": "vegas", "dctcp": "dctcp", "cubic": None, "veno": None}

    def test_each_structure_becomes_the_simulators_columns(self) -> None:
        from ccbench.kernel.results import _cc_row

        row = _cc_row({"vegas": {"enabled": 1, "rttcnt": 12, "rtt_us": 40_000, "minrtt_us": 41_000}})
        assert row == {
            "cc_doing_vegas_now": 1.0,
            "cc_cnt_rtt": 12.0,
            "cc_base_rtt_us": 40_000.0,
            "cc_min_rtt_us": 41_000.0,
        }
        assert _cc_row({"dctcp": {"enabled": 1, "ce_state": 0, "alpha": 512, "ab_ecn": 0, "ab_tot": 0}}) == {
            "cc_dctcp_alpha": 0.5
        }
        assert all(v != v for v in _cc_row({"bbr": None}).values())  # NaN: the kernel gave none
        assert _cc_row({}) == {} and _cc_row(None) == {}


class TestState:
    @pytest.fixture(autouse=True)
    def state_dir(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        monkeypatch.setattr(state, "STATE_DIR", tmp_path / "state")
        return tmp_path / "state"

    def dead_pid(self) -> int:
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait()
        return proc.pid

    def test_a_live_owner_is_left_alone(self, state_dir: Path) -> None:
        st = state.RunState.create()
        assert st.path.exists() and st.workdir.is_dir()
        assert len(st.names_for()["tun_sender"]) <= 15 and len(st.names_for()["ns_receiver"]) <= 15
        assert state.stale_runs() == [] and [r.id for r in state.live_runs()] == [st.id]
        state.remove_run(st)
        assert not st.path.exists() and not st.workdir.exists()

    def test_a_dead_owner_is_cleaned_up_and_only_its_records(self, state_dir: Path) -> None:
        st = state.RunState.create()
        st.owner_pid, st.owner_start = self.dead_pid(), None
        st.add_namespace("not-ours-ns")  # no ccb- prefix: never touched
        st.add_process(self.dead_pid(), "sender")
        assert [r.id for r in state.stale_runs()] == [st.id]
        removed = state.cleanup_stale()
        assert removed == [f"run {st.id}: state file"]
        assert not st.path.exists() and not st.workdir.exists()

    def test_a_reused_pid_is_not_signalled(self) -> None:
        me = os.getpid()
        assert state.is_alive(me, state.process_start_time(me))
        assert not state.is_alive(me, (state.process_start_time(me) or 0) + 1)
        assert not state.kill_process(me, (state.process_start_time(me) or 0) + 1)


def test_without_root_the_kernel_engine_refuses_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccbench.cli import main

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for argv in (["run", "--engine", "kernel", "--duration", "1s"], ["kernel", "cleanup"], ["validate", "--quick"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: engine: the kernel engine needs root") and len(err.splitlines()) == 1


def test_an_outage_in_the_emulators_series_reads_as_nan() -> None:
    """The emulator reports the utilization of an interval with no capacity (a trace's
    outage) as NaN, which its JSON carries as null; the link table keeps it as NaN."""
    import math

    from ccbench.kernel.results import _link_table
    from ccbench.kernel.session import RawRun

    series = {
        "time_s": [0.1, 0.2, 0.3],
        "queue_bytes": [0, 0, 0],
        "queue_packets": [0, 0, 0],
        "utilization": [0.5, None, 0.9],
        "throughput_bps": [1e6, 0, 2e6],
        "drops": [0, 0, 0],
        "capacity_bps": [2e6, 0, 2.2e6],
    }
    raw = RawRun(run_id="t", t0_ns=0, emulator={"series": {"link": series}}, receiver={}, sender={}, notes=[])
    table = _link_table(raw, 0.3)
    assert math.isnan(table["utilization"][1]) and table["utilization"][2] == 0.9


def test_a_kernel_runs_summary_is_built_by_the_simulators_code() -> None:
    """The agents' and the emulator's reports of a two-flow run become the summary through
    ``_core.summarize``: rates over each flow's life, delay above its base RTT,
    utilization and fairness as the simulator derives them, plus the kernel's own facts."""
    from ccbench.kernel.results import assemble
    from ccbench.kernel.session import RawRun

    sc = from_dict(
        scenario(
            duration="4s",
            flows=[{"cca": "cubic"}, {"cca": "cubic", "start": "1s", "size": "1MB", "access_delay": "5ms"}],
        )
    )
    plan = make_plan(sc, HOST)
    rtt = {"min": 30.0, "mean": 30.0, "p50": 30.0, "p95": 30.0, "p99": 30.0, "max": 30.0}
    queue = {k: 1.0 for k in rtt}
    info = {
        "total_retrans": 2,
        "bytes_sent": 3_100_000,
        "total_rto": 0,
        "snd_cwnd": 40,
        "rwnd_limited": 5_000,
        "sndbuf_limited": 7_000,
    }
    raw = RawRun(
        run_id="t",
        t0_ns=0,
        notes=[],
        emulator={
            "flows": [
                {"bottleneck_bytes": 3_001_000, "dropped": 1, "rtt_ms": rtt, "rtt_samples": 10},
                {"bottleneck_bytes": 1_000_000, "dropped": 0, "rtt_ms": rtt, "rtt_samples": 0},
            ],
            # A constant rate: the summary takes it over the run.
            "link": {
                "offered": None,
                "wire_bytes_out": 4_200_000,
                "drops_overflow": 1,
                "drops_random": 0,
                "drops_aqm": 0,
                "ecn_marks": 0,
                "queue_delay_ms": queue,
                "queue_bytes": queue,
                "queue_packets": queue,
                "packets_forwarded": 2_800,
            },
            "check": {"ok": True},
            "series": {"link": {"time_s": []}, "flow_throughput_bps": [[], []]},
        },
        receiver={"bytes": [3_000_000, 1_000_000], "completed_ns": [None, 3_000_000_000], "samples": []},
        sender={"final": [info, info], "samples": []},
    )
    summary, _, _, _ = assemble(plan, raw, HOST, "kernel")
    a, b = summary["flows"]
    assert a["goodput_bps"] == 3e6 * 8 / 4 and b["goodput_bps"] == 1e6 * 8 / 2
    assert (b["start_s"], b["completion_s"], b["base_rtt_ms"]) == (1.0, 2.0, 30.0)
    assert (a["self_inflicted_delay_ms"], b["self_inflicted_delay_ms"]) == (10.0, 0.0)
    assert summary["link"]["utilization"] == 4.2e6 * 8 / (20e6 * 4)
    assert summary["jain_index"] == pytest.approx(100 / 104)
    assert (a["lost"], a["undos"], summary["events"]) == (None, None, None)
    assert (a["rwnd_limited_ms"], a["sndbuf_limited_ms"], a["rtt_samples"]) == (5.0, 7.0, 10)
    assert summary["engine"] == "kernel" and summary["kernel"] == HOST.kernel
    assert summary["scenario_hash"] == plan.scenario.scenario_hash and summary["emulator"] == {"ok": True}


def test_the_emulators_link_totals_reach_the_summary_as_they_are(tmp_path: Path) -> None:
    """A trace's capacity over the emulator's window gives the rate and utilization; the
    ACK link's figures (with a reverse buffer, its drops) pass through to the summary."""
    from ccbench.kernel.results import assemble
    from ccbench.kernel.session import RawRun

    (tmp_path / "down.trace").write_text("1\n")
    (tmp_path / "up.trace").write_text("10\n")
    link = {"trace": str(tmp_path / "down.trace"), "ack_trace": str(tmp_path / "up.trace"), "rtt": "20ms"}
    sc = from_dict(scenario(duration="4s", link=dict(link, reverse_buffer="8pkt")))
    stats = {k: 1.0 for k in ("min", "mean", "p50", "p95", "p99", "max")}
    ack_link = {"trace_mean_bps": 1_200_000, "utilization": 0.25, "packets_forwarded": 900, "queue_delay_ms": stats}
    raw = RawRun(
        run_id="t",
        t0_ns=0,
        notes=[],
        emulator={
            "flows": [{"bottleneck_bytes": 3_000_000, "dropped": 0, "rtt_ms": stats, "rtt_samples": 10}],
            "link": {
                "offered": {"capacity_bits": 40e6, "window_ns": 4_000_000_000},
                "wire_bytes_out": 4_000_000,
                **{k: 0 for k in ("drops_overflow", "drops_random", "drops_aqm", "ecn_marks")},
                **{k: stats for k in ("queue_delay_ms", "queue_bytes", "queue_packets")},
                "packets_forwarded": 2_700,
                "ack_link": dict(ack_link, drops=3),
            },
            "check": {},
            "series": {"link": {"time_s": []}, "flow_throughput_bps": [[]]},
        },
        receiver={"bytes": [3_000_000], "completed_ns": [None], "samples": []},
        sender={"final": [{"total_retrans": 0, "snd_cwnd": 10}], "samples": []},
    )
    summary, _, _, _ = assemble(make_plan(sc, HOST), raw, HOST, "kernel")
    assert (summary["link"]["rate_bps"], summary["link"]["utilization"]) == (10_000_000, 0.8)
    assert summary["link"]["ack_link"] == dict(ack_link, drops=3)


class TestFlowsGoingUp:
    """A flow going up has its sender in the receiver's namespace and its receiver in the
    sender's."""

    @staticmethod
    def plan(*flows: dict[str, object], up: list[int], **over: object) -> Plan:
        going = [dict(f, direction="up") if i in up else f for i, f in enumerate(flows)]
        link = {"rate": "20Mbit", "rtt": "20ms", "reverse": {"rate": "5Mbit"}}
        return make_plan(from_dict(scenario(flows=going, link=link, **over)), HOST)

    def test_each_namespace_has_tcp_rmem_for_the_flows_it_receives(self) -> None:
        plan = self.plan({"cca": "cubic", "rwnd": "1MiB"}, {"cca": "cubic", "rwnd": "4MiB"}, up=[1])
        assert [f.up for f in plan.flows] == [False, True]
        assert plan.receiver_sysctls["net.ipv4.tcp_rmem"] == f"4096 131072 {6 * 2**20}"
        assert plan.sender_sysctls["net.ipv4.tcp_rmem"] == f"4096 131072 {16 * 2**20}"
        # The [tcp] sysctls reach the senders of either direction.
        assert plan.receiver_sysctls["net.ipv4.tcp_limit_output_bytes"] == str(4 * 2**20)

    def test_a_run_without_flows_going_up_leaves_the_senders_tcp_rmem_alone(self) -> None:
        plan = make_plan(from_dict(scenario()), HOST)
        assert "net.ipv4.tcp_rmem" not in plan.sender_sysctls and not plan.flows[0].up

    def test_each_agent_creates_the_other_directions_ends_in_the_other_namespace(self) -> None:
        from ccbench.kernel.session import RunContext, _receiver_flows, _sender_flows, _up_senders_routes

        plan = self.plan(
            {"cca": "cubic"},
            {"cca": "cubic", "ecn": "classic"},
            {"cca": "cubic", "size": "100KB", "connect": "receiver"},
            up=[1, 2],
            tcp={"init_cwnd": 4},
        )
        run = offline_run(plan)
        sent, received = _sender_flows(run), _receiver_flows(run, bpf_here=True)
        # (where the receiver listens, where the sender listens, the socket's namespace)
        assert [(f["addr"], f["listen_addr"], f.get("netns")) for f in sent] == [
            ("10.1.2.2", "10.1.2.1", None),
            ("10.1.2.8", "10.1.2.2", "/var/run/netns/ccb-t-rcv"),
            ("10.1.2.1", "10.1.2.2", "/var/run/netns/ccb-t-rcv"),
        ]
        assert [(f["addr"], f["peer"], f.get("netns")) for f in received] == [
            ("10.1.2.2", "10.1.2.1", None),
            ("10.1.2.8", "10.1.2.2", "/var/run/netns/ccb-t-snd"),
            ("10.1.2.1", "10.1.2.2", "/var/run/netns/ccb-t-snd"),
        ]
        # The receiver's namespace routes to the up flows' receivers as the sender's does
        # to the down flows': the route options, and ECN on the second address.
        assert _up_senders_routes(run) == [
            "route replace 10.1.2.1/32 dev ccb-t-r src 10.1.2.2 initcwnd 4",
            "route replace 10.1.2.8/32 dev ccb-t-r src 10.1.2.2 features ecn initcwnd 4",
        ]
        assert _up_senders_routes(RunContext(**{**vars(run), "plan": make_plan(from_dict(scenario()), HOST)})) == []
