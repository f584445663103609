"""UDP flows and arrivals on the kernel engine, without root: the plan (the simulator's
schedules, each end in its namespace on its lane's port, refusals of what the kernel
engine cannot run or keep up with), the summary built from what the agents and the
emulator report, and the VM engine's refusal. The scenarios hold them as a scenario
file does: ``[[flows]]`` entries with ``kind = "udp"``, and ``[[arrivals]]``."""

from __future__ import annotations

import math

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from ccbench import ScenarioError, _core, engines
from ccbench.kernel.host import HostFacts, KernelEngineError
from ccbench.kernel.plan import BASE_PORT, Plan, emulator_config, make_plan
from ccbench.kernel.scenario import from_dict

from conftest import offline_run
from test_bpf_compile import BPF, needs_clang

HOST = HostFacts(kernel="6.x-test", kernel_hz=250, available_congestion_control=["reno", "cubic", "bbr"])
MBIT = 1_000_000


def doc(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"duration": "5s", "link": {"rate": "20Mbit", "rtt": "20ms"}, "flows": [{"cca": "cubic"}]}
    d.update(over)
    return d


def traffic_doc(
    udp: Optional[list[dict[str, Any]]] = None, arrivals: Optional[list[dict[str, Any]]] = None, **over: Any
) -> dict[str, Any]:
    """``doc(**over)`` with the UDP flows after its TCP flows, and the groups of arrivals."""
    d = doc(**over)
    d["flows"] = [*d["flows"], *({"kind": "udp", **u} for u in udp or [])]
    if arrivals:
        d["arrivals"] = arrivals
    return d


def plan(
    udp: Optional[list[dict[str, Any]]] = None, arrivals: Optional[list[dict[str, Any]]] = None, **over: Any
) -> Plan:
    return make_plan(from_dict(traffic_doc(udp, arrivals, **over)), HOST)


def poisson(rate: float, sizes: str = "10KB", **over: Any) -> dict[str, Any]:
    return {"cca": "cubic", "rate": rate, "sizes": sizes, **over}


def times_file(where: Path, seconds: list[str]) -> str:
    """A file of arrival times, one a line in seconds."""
    path = where / "times.txt"
    path.write_text("".join(f"{t}\n" for t in seconds))
    return str(path)


class TestSchedules:
    def test_a_udp_flow_sends_at_the_simulators_instants(self) -> None:
        # 12 Mbit/s of 1500-byte packets for 5 s: one a millisecond.
        p = plan(udp=[{"rate": "12Mbit"}])
        u = p.traffic.udp[0]
        assert (u.runs, u.wire_bytes, u.peak_datagrams_per_s) == ([(0, 1_000_000, 5000)], 1500, 1000)
        # The emulator reads the same core JSON, its tick rate the kernel's.
        emu = emulator_config(p, "s", "r", 1)["scenario"]
        assert emu["udp"] == p.core["udp"] and emu["udp"][0]["rate_bps"] == 12 * MBIT and emu["tcp"]["hz"] == 250

    def test_arrivals_open_at_the_simulators_instants_with_its_sizes(self) -> None:
        group = {"cca": "bbr", "load": "40%", "sizes": "web-search", "connect": "receiver"}
        p = plan(arrivals=[group])
        a = p.traffic.arrivals[0]
        # Drawn by the simulator from the same seed, whatever the algorithm.
        core = json.dumps(dict(p.core, arrivals=[dict(g, cca="cubic") for g in p.core["arrivals"]]))
        assert a.schedule == _core.arrival_schedule(core, 0) and len(a.schedule) > 0
        assert (a.cca, a.connect, a.up, a.field) == ("bbr", "receiver", False, "arrivals[0]")
        # A different seed, different arrivals.
        assert plan(arrivals=[group], seed=2).traffic.arrivals[0].schedule != a.schedule

    def test_the_busiest_second_counts_the_arrivals_in_any_window_of_a_second(self, tmp_path: Path) -> None:
        times = times_file(tmp_path, ["0", "0.1", "0.9", "1.5", "1.6", "1.7", "3"])
        a = plan(arrivals=[{"cca": "cubic", "times": times, "sizes": "1KB"}]).traffic.arrivals[0]
        assert a.busiest_second() == 4  # 0.9 to 1.7 s


class TestRefusals:
    @pytest.mark.parametrize(
        "traffic, field, words",
        [
            # 200 Mbit/s of 1500-byte datagrams: 16,667 a second.
            ({"udp": [{"rate": "200Mbit"}]}, "flows[1]", "datagrams a second"),
            ({"udp": [{"rate": "1Mbit", "size": 8}]}, "flows[1].size", "first 16 bytes"),
            ({"udp": [{"rate": "1Mbit", "size": 1473}]}, "flows[1].size", "MTU (1500 bytes"),
            ({"arrivals": [poisson(2000.0)]}, "arrivals[0]", "busiest second"),
            ({"arrivals": [poisson(10.0, sizes="3B")]}, "arrivals[0].sizes", "at least 4 bytes"),
            ({"arrivals": [poisson(10.0, params={"beta": 717})]}, "arrivals[0].params", "module parameters"),
            pytest.param(
                {"arrivals": [poisson(10.0, cca=f"bpf:{BPF / 'maps.bpf.c'}")]},
                "arrivals[0].cca",
                "flows[] only",
                marks=needs_clang,
            ),
        ],
    )
    def test_what_the_kernel_engine_cannot_run_is_named(self, traffic: dict[str, Any], field: str, words: str) -> None:
        with pytest.raises(KernelEngineError) as e:
            plan(**traffic)
        assert e.value.field == field and words in e.value.message, e.value

    def test_an_algorithm_the_kernel_lacks_is_named_by_its_group(self) -> None:
        # The schema takes only the simulator's algorithms in [[arrivals]] (the kernel
        # engine's loader lets other names through in flows[] alone): the group is loaded
        # with one, and the name the kernel lacks put in its place.
        sc = from_dict(traffic_doc(arrivals=[poisson(10.0), poisson(10.0)]))
        groups = [sc.arrivals[0], sc.arrivals[1].model_copy(update={"cca": "nosuchcc"})]
        with pytest.raises(KernelEngineError) as e:
            make_plan(sc.model_copy(update={"arrivals": groups}), HOST)
        assert e.value.field == "arrivals[1].cca" and "not available" in e.value.message, e.value

    def test_the_emulator_keeps_up_with_a_full_gigabit_link_and_no_more(self) -> None:
        assert make_plan(from_dict(doc(link={"rate": "1Gbit", "rtt": "10ms"})), HOST).traffic.udp == []
        # TCP flows alone run as before: the emulator's self-check tells afterwards.
        fast = {"rate": "1Gbit", "rtt": "10ms", "reverse": {"rate": "100Mbit"}}
        assert make_plan(from_dict(doc(link=fast)), HOST).traffic.udp == []
        with pytest.raises(KernelEngineError) as e:
            plan(arrivals=[poisson(10.0)], link=fast)
        assert e.value.field == "link.rate" and "125,000" in e.value.message
        # A full link and 9,000 datagrams a second at its side: the UDP flows are named.
        with pytest.raises(KernelEngineError) as e:
            plan(udp=[{"rate": "108Mbit"}], link={"rate": "950Mbit", "rtt": "10ms"})
        assert e.value.field == "flows[1]" and "and the UDP flows" in e.value.message

    def test_the_vm_engine_refuses_udp_flows_and_arrivals_in_one_line(self) -> None:
        for traffic, field in (({"udp": [{"rate": "1Mbit"}]}, "udp"), ({"arrivals": [poisson(5.0)]}, "arrivals")):
            with pytest.raises(ScenarioError) as e:
                engines.get("vm").check(from_dict(traffic_doc(**traffic)))
            assert e.value.field == field and "the simulator or the kernel engine" in e.value.message


class TestAgents:
    @staticmethod
    def traffic(p: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
        from ccbench.kernel.session import _traffic

        return _traffic(offline_run(p))

    def test_each_end_is_in_its_namespace_on_its_lanes_port(self) -> None:
        up = {"direction": "up"}
        p = plan(
            udp=[{"rate": "1Mbit"}, {"rate": "1Mbit", "size": 200, **up}],
            arrivals=[poisson(5.0), poisson(5.0, connect="receiver", **up)],
            flows=[{"cca": "cubic"}, {"cca": "bbr"}],
            link={"rate": "20Mbit", "rtt": "20ms", "reverse": {"rate": "5Mbit"}},
        )
        sending, receiving = self.traffic(p)
        rcv_ns, snd_ns = "/var/run/netns/ccb-t-rcv", "/var/run/netns/ccb-t-snd"
        # Lanes: flows 0 and 1, UDP flows 2 and 3, groups 4 and 5.
        assert [(u["addr"], u["port"], u["payload"], u.get("netns")) for u in sending["udp"]] == [
            ("10.1.2.2", BASE_PORT + 2, 1472, None),
            ("10.1.2.1", BASE_PORT + 3, 200, rcv_ns),
        ]
        assert [(u["addr"], u["port"], u.get("netns")) for u in receiving["udp"]] == [
            ("10.1.2.2", BASE_PORT + 2, None),
            ("10.1.2.1", BASE_PORT + 3, snd_ns),
        ]
        assert sending["udp"][0]["runs"] == p.traffic.udp[0].runs
        # (where the receiver listens or connects to, where the sender is, the port, the namespace)
        assert [
            (a["addr"], a["listen_addr"], a["port"], a["connect"], a.get("netns")) for a in sending["arrivals"]
        ] == [
            ("10.1.2.2", "10.1.2.1", BASE_PORT + 4, "sender", None),
            ("10.1.2.1", "10.1.2.2", BASE_PORT + 5, "receiver", rcv_ns),
        ]
        assert [(a["addr"], a["peer"], a["port"], a.get("netns")) for a in receiving["arrivals"]] == [
            ("10.1.2.2", "10.1.2.1", BASE_PORT + 4, None),
            ("10.1.2.1", "10.1.2.2", BASE_PORT + 5, snd_ns),
        ]
        assert all(a["schedule"] == g.schedule for a, g in zip(sending["arrivals"], p.traffic.arrivals))
        # The up group's receivers are in the sender's namespace, which takes tcp.rmem.
        assert p.sender_sysctls["net.ipv4.tcp_rmem"] == f"4096 131072 {4 * 6 * 2**20}"

    def test_a_run_without_them_gives_the_agents_nothing_more(self) -> None:
        assert self.traffic(plan()) == ({}, {})


def test_the_summary_takes_the_agents_and_the_emulators_reports(tmp_path: Path) -> None:
    """UDP: sent from the source, delivered and delayed at the sink, dropped at the
    bottleneck, before the emulator and at the sink; arrivals: FCT from the arrival to
    the last byte, the ideal FCT the simulator's."""
    from ccbench.kernel.results import assemble
    from ccbench.kernel.session import RawRun

    times = times_file(tmp_path, ["0.1", "0.2", "4.9"])
    p = plan(udp=[{"rate": "12Mbit"}], arrivals=[{"cca": "cubic", "times": times, "sizes": "10KB"}])
    stats = {"min": 10.0, "mean": 11.0, "p50": 11.0, "p95": 12.0, "p99": 12.0, "max": 13.0}
    queue = {k: 1.0 for k in stats}
    link = {
        "offered": None,
        "wire_bytes_out": 10_000_000,
        "drops_overflow": 3,
        "drops_random": 0,
        "drops_aqm": 0,
        "ecn_marks": 0,
        "queue_delay_ms": queue,
        "queue_bytes": queue,
        "queue_packets": queue,
        "packets_forwarded": 7_000,
    }
    info = {"total_retrans": 0, "snd_cwnd": 10}
    raw = RawRun(
        run_id="t",
        t0_ns=0,
        notes=[],
        emulator={
            "flows": [{"bottleneck_bytes": 1_000, "dropped": 0, "rtt_ms": stats, "rtt_samples": 1}],
            "udp": [{"datagrams_in": 4_990, "dropped": 3}],
            "link": link,
            "check": {},
            "series": {"link": {"time_s": []}, "flow_throughput_bps": [[]]},
        },
        receiver={
            "bytes": [1_000],
            "completed_ns": [None],
            "samples": [],
            "udp": [
                {"delivered_packets": 4_980, "delivered_bytes": 4_980 * 1500, "one_way_delay_ms": stats, "overflow": 2}
            ],
            "arrivals": [{"done_ns": [130_000_000, 233_000_000, None], "skipped": 0}],
        },
        sender={
            "final": [info],
            "samples": [],
            "udp": [{"sent_packets": 5_000, "sent_bytes": 5_000 * 1500, "send_errors": 0}],
            "arrivals": [{"retransmits": [0, 2, None], "skipped": 0}],
        },
    )
    summary, _, _, connections = assemble(p, raw, HOST, "kernel")
    u = summary["udp"][0]
    # 3 at the bottleneck, 10 before the emulator, 2 at the sink.
    assert (u["sent_packets"], u["delivered_packets"], u["dropped"]) == (5_000, 4_980, 15)
    assert (u["dropped_bottleneck"], u["dropped_hosts"]) == (3, 12)
    assert u["offered_bps"] == 12 * MBIT and u["one_way_delay_ms"] == stats
    a = summary["arrivals"][0]
    assert (a["arrived"], a["completed"], a["unfinished"]) == (3, 2, 1)
    # FCTs of 30 and 33 ms; alone, 10 KB on 20 Mbit/s and 20 ms takes about 25 ms.
    assert (a["all"]["fct_p50_ms"], a["all"]["fct_p99_ms"]) == (30.0, 33.0)
    ideal = _core.alone_fcts(json.dumps(dict(p.core, flows=[], udp=[])), [(0, 10_000)])[0]
    assert ideal is not None and a["all"]["slowdown_p50"] == pytest.approx(30e6 / ideal)
    # The connections table, as the simulator's: unfinished ones NaN.
    assert connections["fct_ms"][:2] == [30.0, 33.0] and math.isnan(connections["fct_ms"][2])
    assert connections["ideal_fct_ms"][0] == pytest.approx(ideal / 1e6)
    assert summary["duration_s"] == 5.0


def test_a_kernel_only_algorithm_after_a_udp_entry_keeps_its_name() -> None:
    # UDP entries leave the scenario's TCP flows: names are restored by TCP entry.
    doc = {
        "duration": "1s",
        "link": {"rate": "10Mbit", "rtt": "20ms"},
        "flows": [{"kind": "udp", "rate": "1Mbit"}, {"cca": "tcp_foo"}, {"cca": "cubic"}, {"cca": "tcp_bar"}],
    }
    assert [f.cca for f in from_dict(doc).flows] == ["tcp_foo", "cubic", "tcp_bar"]
