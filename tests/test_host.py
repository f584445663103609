"""The [host] table, the phone study's per-flow knobs, their flags and their errors."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

import ccbench
from ccbench import Scenario, ScenarioError
from ccbench.scenario.host import presets, read_cpu_trace

BASE = """
duration = "2s"
[link]
rate = "100Mbit"
rtt = "10ms"
[[flows]]
cca = "bbr"
"""


def scenario(extra: str) -> Scenario:
    return Scenario.from_toml(BASE + extra)


def test_presets_come_from_the_simulator():
    p = presets()
    assert set(p) == {"server", "vm", "phone-lowend", "phone-midend", "phone-highend"}
    assert all(v == 0 for v in p["server"].values())
    # A KVM guest: the server's work, and costs for each return of its vCPU.
    returns = {"per_idle_exit_ns", "per_idle_refill_ns", "per_resume_ns", "cache_decay_ns"}
    assert {k for k, v in p["vm"].items() if v != p["server"][k]} == returns
    low, mid, high = p["phone-lowend"], p["phone-midend"], p["phone-highend"]
    for key, cost in low.items():
        assert cost >= mid[key] >= high[key], key


def test_the_host_tables_facts_are_the_simulators():
    from ccbench import facts
    from ccbench.scenario.host import COST_FIELDS, Host, HostCost

    assert list(HostCost.model_fields) == list(COST_FIELDS) == [c["key"] for c in facts.CPU_COSTS]
    assert list(presets()) == ["server", "vm", "phone-lowend", "phone-midend", "phone-highend"]
    host = Host.model_validate({})
    defaults = facts.FACTS["defaults"]["host"]
    assert (host.preset, host.rx_ring, host.tx_completion_ns) == (
        defaults["cpu"],
        defaults["rx_ring"],
        defaults["tx_completion_ns"],
    )
    assert (host.cpu_slice_ns, host.cpu_tick_ns) == (defaults["cpu_slice_ns"], defaults["cpu_tick_ns"])
    # The simulator's own check refuses what the front end lets through, in the same words.
    costs = {c["field"]: 0 for c in facts.CPU_COSTS} | {"per_ack_ns": 2_000_000_000}
    core = scenario("[host]\n").to_core() | {"host": {"cpu": "always", "cost": costs, "rx_ring": 256}}
    with pytest.raises(ScenarioError) as e:
        ccbench._core.validate(json.dumps(core))
    assert (e.value.field, e.value.message) == ("host.cost.ack", "must be at most 1 s")


def test_a_calibrations_cost_table_is_one_the_scenario_takes():
    from ccbench.engines.vm.calibrate import Calibration

    quantiles = {"skbs": 10, "p10": 100.0, "p50": 150.0, "p90": 300.0}
    fitted = {"ack_ns": 3000.4, "packet_ns": 9000, "burst_ns": 2000, "idle_exit_ns": 90_000}
    fitted |= {"idle_refill_ns": 10, "resume_ns": 20}
    cal = Calibration(
        guest_kernel="debian:6.1",
        release="6.1.0",
        accelerator="tcg",
        qemu="qemu 8",
        vcpus=1,
        idle_cpu_per_s=0.01,
        cache_decay_ns=3_000_000,
        r_squared=0.99,
        samples=[],
        tx_completion={"all_us": quantiles, "idle_us": quantiles, "busy_us": quantiles},
        **fitted,
    )
    host = scenario(cal.toml()).to_core()["host"]
    assert host["tx_completion_ns"] == 150_000 and host["cost"]["per_ack_ns"] == 3000
    assert {k: host["cost"][f"per_{k}"] for k in fitted} == {k: round(v) for k, v in fitted.items()}
    assert host["cost"]["cache_decay_ns"] == 3_000_000


def test_share_and_slice_become_a_deadline_reservation():
    s = scenario('[host]\ncpu_share = "25%"\ncpu_slice = "10ms"\n')
    core = s.to_core()["host"]
    # The 2BRobust set-up by default: deadline = runtime; the host tick of CONFIG_HZ=250.
    assert core["cpu"] == {
        "deadline": {"runtime_ns": 2_500_000, "deadline_ns": 2_500_000, "period_ns": 10_000_000, "tick_ns": 4_000_000}
    }
    slice_ = scenario('[host]\ncpu_share = "25%"\ncpu_deadline = "slice"\ncpu_tick = "1ms"\n').to_core()["host"]
    assert slice_["cpu"]["deadline"]["deadline_ns"] == 10_000_000 and slice_["cpu"]["deadline"]["tick_ns"] == 1_000_000
    # A reserved share without a preset is a KVM guest's vCPU; naming one keeps it.
    assert core["cost"] == presets()["vm"] and core["rx_ring"] == 256
    named = scenario('[host]\ncpu = "server"\ncpu_share = "25%"\n').to_core()["host"]
    assert named["cost"] == presets()["server"]
    assert scenario("[host]\n").to_core()["host"]["cpu"] == "always"
    assert scenario("[host]\n").host.preset == "server" and s.host.preset == "vm"


def test_cost_overrides_and_effective_toml_round_trip():
    s = scenario('[host]\ncpu = "phone-lowend"\ncpu_share = 0.5\n[host.cost]\nack = "10us"\nbyte = "2.5ns"\n')
    costs = s.to_core()["host"]["cost"]
    assert costs["per_ack_ns"] == 10_000 and costs["per_byte_ps"] == 2_500
    assert costs["per_timer_ns"] == presets()["phone-lowend"]["per_timer_ns"]
    doc = tomllib.loads(s.effective_toml())
    assert doc["host"]["cpu_share"] == "50%" and doc["host"]["cost"]["byte"] == "2.5ns"
    again = Scenario.from_toml(s.effective_toml())
    assert again.scenario_hash == s.scenario_hash


def test_scenarios_without_the_new_keys_keep_their_hash():
    plain = scenario("")
    assert "host" not in plain.to_core()
    assert "tso_rtt_log" not in plain.to_core()["tcp"]
    assert all(k not in plain.to_core()["flows"][0] for k in ("pacing_stride", "fixed_cwnd", "freeze_cc"))
    # Writing the defaults out changes nothing either.
    same = scenario("pacing_stride = 1\nfreeze_cc = false\n[tcp]\ntso_rtt_log = 9\n")
    assert same.scenario_hash == plain.scenario_hash


def test_the_server_preset_changes_no_result():
    plain = ccbench.run(scenario(""))
    server = ccbench.run(scenario('[host]\ncpu = "server"\n'))
    assert "host" not in plain.summary and "host" not in server.summary
    strip = lambda s: {k: v for k, v in s.items() if k != "scenario_hash"}  # noqa: E731
    assert strip(plain.summary) == strip(server.summary)
    assert plain.flows.equals(server.flows)


def test_a_sliced_cpu_reports_itself_and_caps_bbr():
    r = ccbench.run(Scenario.from_toml(BASE.replace('"2s"', '"10s"') + '[host]\ncpu_share = "25%"\n'))
    host = r.summary["host"]
    assert host["cpu_share"] == pytest.approx(0.25)
    assert host["work"]["acks"] > 0 and host["work"]["timers"] > 0
    assert r.summary["flows"][0]["goodput_bps"] < 20e6


def test_a_reserved_share_without_a_preset_is_a_kvm_guest(tmp_path):
    """The 2BRobust question on the default: 25% of 1 ms slices hurt BBR (the study: at
    most 11 Mbit/s) because the vm preset charges each return of the vCPU; naming the
    server preset gets free work back."""
    link = BASE.replace('"2s"', '"10s"')
    guest = ccbench.run(Scenario.from_toml(link + '[host]\ncpu_share = "25%"\ncpu_slice = "1ms"\n'))
    server = ccbench.run(Scenario.from_toml(link + '[host]\ncpu = "server"\ncpu_share = "25%"\ncpu_slice = "1ms"\n'))
    assert guest.summary["flows"][0]["goodput_bps"] < 20e6 < 90e6 < server.summary["flows"][0]["goodput_bps"]
    assert (guest.summary["host"]["preset"], guest.summary["host"]["cost_overrides"]) == ("vm", [])
    assert "vm preset" in guest.summary["notes"][0] and "notes" not in server.summary
    assert server.summary["host"]["preset"] == "server"
    # An on/off trace reserves the CPU too; a named preset and overrides are said as such.
    trace = tmp_path / "vcpu.txt"
    trace.write_text("1ms 3ms\n")
    assert scenario(f'[host]\ncpu_trace = "{trace}"\n').host.preset == "vm"
    phone = scenario('[host]\ncpu = "phone-lowend"\ncpu_share = "50%"\n[host.cost]\nack = "9us"\n').host
    assert (phone.preset, phone.overridden_costs(), phone.notes()) == ("phone-lowend", ["ack"], [])
    # Naming the implied preset changes nothing, not even the effective scenario.
    named = scenario('[host]\ncpu = "vm"\ncpu_share = "25%"\ncpu_slice = "1ms"\n')
    assert named == scenario('[host]\ncpu_share = "25%"\ncpu_slice = "1ms"\n') and named.host.cpu is None


def test_the_terminal_report_names_the_presets_costs():
    p = cli("run", "--cca", "bbr", "--cpu-share", "25%", "--cpu-slice", "1ms", "--duration", "2s")
    assert p.returncode == 0, p.stderr
    assert "CPU costs: those of the vm preset" in p.stdout and "note: The sender's costs" in p.stdout
    p = cli("run", "--cca", "bbr", "--cpu", "phone-lowend", "--duration", "1s")
    assert "CPU costs: those of the phone-lowend preset\n" in p.stdout and "note:" not in p.stdout


def test_measured_costs_go_over_the_server_preset_not_the_vm_one():
    """A calibration measures a host: where it is silent, nothing of the vm preset (which a
    reserved share implies) fills in, so ccbench validate --cpu's cells run as they did."""
    from ccbench import host_costs
    from ccbench.engines.vm.cpu_grid import CpuCell

    measured = {"cost": {"ack": "15us", "burst": "21us"}, "tx_completion": "137us"}
    doc = host_costs.laid_over(
        {
            "duration": "1s",
            "link": {"rate": "10Mbit", "rtt": "10ms"},
            "host": {"cpu_share": "25%"},
            "flows": [{"cca": "bbr"}],
        },
        measured,
    )
    host = Scenario.from_dict(doc).host
    assert host.preset == "server" and host.costs()["per_idle_refill_ns"] == 0
    cell = CpuCell(cca="bbr", share=0.25, slice="1ms", rate="100Mbit", rtt="10ms")
    sim = Scenario.from_dict(cell.scenario("2s", measured, 4_000_000))
    assert sim.host.preset == "server" and sim.host.overridden_costs() == ["ack", "burst"]
    assert "cpu" not in cell.scenario("2s", None).get("host", {})  # the VM engine's: no preset


def test_a_late_tx_completion_holds_back_a_tsq_bound_sender():
    """TCP Small Queues lets a socket have about 1 ms of its pacing rate (at least two
    skbs) below it; the NIC's TX completion returns that budget. Completions as late as
    the RTT keep Cubic far below the link (with so little in flight its window does not
    grow); 10 us late change next to nothing."""

    def goodput(delay: str) -> float:
        doc = BASE.replace('"bbr"', '"cubic"').replace('"2s"', '"3s"').replace('"10ms"', '"20ms"')
        s = Scenario.from_toml(doc + f'[host]\ntx_completion = "{delay}"\n')
        return ccbench.run(s).summary["flows"][0]["goodput_bps"]

    prompt, slight, late = goodput("0s"), goodput("10us"), goodput("20ms")
    assert slight == pytest.approx(prompt, rel=0.02)
    assert late < 0.2 * prompt, (late, prompt)
    with pytest.raises(ScenarioError) as e:
        ccbench.run(scenario('[host]\ntx_completion = "2s"\n'))
    assert e.value.field == "host.tx_completion" and "at most 1 s" in e.value.message


def test_cpu_trace_file(tmp_path):
    trace = tmp_path / "vcpu.txt"
    trace.write_text("# on off\n2.5ms 7.5ms\n\n1ms 9ms  # a short slice\n")
    assert read_cpu_trace(trace) == [2_500_000, 7_500_000, 1_000_000, 9_000_000]
    toml = tmp_path / "s.toml"
    toml.write_text(BASE + '[host]\ncpu_trace = "vcpu.txt"\n')
    s = Scenario.from_file(toml)  # relative to the scenario file
    assert s.to_core()["host"]["cpu"] == {"trace": {"intervals_ns": [2_500_000, 7_500_000, 1_000_000, 9_000_000]}}


@pytest.mark.parametrize(
    "content, message",
    [
        ("2.5ms\n", "vcpu.txt:1: expected '<on> <off>'"),
        ("1ms 2ms\nfast 2ms\n", "vcpu.txt:2:"),
        ("# nothing\n", "no '<on> <off>' lines"),
        ("0ms 5ms\n", "the CPU is never on"),
    ],
)
def test_malformed_cpu_trace_names_file_and_line(tmp_path, content, message):
    (tmp_path / "vcpu.txt").write_text(content)
    with pytest.raises(ScenarioError) as e:
        read_cpu_trace(tmp_path / "vcpu.txt")
    assert e.value.field == "host.cpu_trace" and message in e.value.message


@pytest.mark.parametrize(
    "extra, field, message",
    [
        ('[host]\ncpu = "pentium"\n', "host.cpu", "unknown CPU preset 'pentium'; allowed:"),
        ('[host]\ncpu_share = "0%"\n', "host.cpu_share", "above 0%"),
        ('[host]\ncpu_share = "120%"\n', "host.cpu_share", "at most 100%"),
        ('[host]\ncpu_slice = "0ms"\n', "host.cpu_slice", "must be positive"),
        ("[host]\ncores = 4\n", "host.cores", "unknown key; allowed keys: cpu, cpu_share"),
        ('[host.cost]\nack = "fast"\n', "host.cost.ack", "not a duration"),
        ('[host.cost]\nflops = "1ns"\n', "host.cost.flops", "unknown key; allowed keys: ack, burst"),
        ('[host]\ncpu_share = "50%"\ncpu_trace = "x"\n', "host.cpu_trace", "not both"),
        ('[host]\ntx_completion = "soon"\n', "host.tx_completion", "not a duration"),
        # Ranges are the simulator's, refused in its words, by the TOML key.
        ('[host]\ntx_completion = "2s"\n', "host.tx_completion", "must be at most 1 s (later would be a stalled"),
        ("[host]\nrx_ring = 0\n", "host.rx_ring", "must be from 1 to 1000000 ACKs"),
        ("[host]\nrx_ring = 1000001\n", "host.rx_ring", "must be from 1 to 1000000 ACKs"),
        ('[host.cost]\nack = "2s"\n', "host.cost.ack", "must be at most 1 s"),
        ('[host.cost]\nbyte = "2ms"\n', "host.cost.byte", "must be at most 1000000000 ps"),
    ],
)
def test_bad_host_values_name_the_field(extra, field, message):
    with pytest.raises(ScenarioError) as e:
        scenario(extra)
    assert e.value.field == field and message in e.value.message


@pytest.mark.parametrize(
    "flow, field",
    [
        ("pacing_stride = 0", "flows[0].pacing_stride"),
        ("fixed_cwnd = 0", "flows[0].fixed_cwnd"),
        ('fixed_pacing_rate = "fast"', "flows[0].fixed_pacing_rate"),
        ('freeze_cc = "yes"', "flows[0].freeze_cc"),
    ],
)
def test_bad_flow_knobs_name_the_field(flow, field):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(BASE + flow + "\n")
    assert e.value.field == field


def test_flags_build_the_host_and_the_knobs():
    s = Scenario.from_flags(
        cca="bbr,cubic",
        cpu="phone-lowend",
        cpu_share="25%",
        cpu_slice="1ms",
        pacing_stride=5,
        fixed_cwnd=70,
        fixed_pacing_rate="140Mbit",
        freeze_cc=True,
        bbr_inflight_deficit=True,
        tso_rtt_log=0,
    )
    core = s.to_core()
    assert core["host"]["cpu"]["deadline"]["period_ns"] == 1_000_000
    assert core["tcp"]["tso_rtt_log"] == 0
    bbr, cubic = core["flows"]
    assert bbr["params"] == {"inflight_deficit": 1} and cubic["params"] == {}
    assert bbr["pacing_stride"] == 5 and bbr["fixed_cwnd"] == 70 and bbr["fixed_pacing_rate_bps"] == 140_000_000
    assert bbr["freeze_cc"] is True


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ccbench", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args, line",
    [
        (["run", "--cpu", "pentium"], "error: host.cpu: unknown CPU preset 'pentium'; allowed: "),
        (["run", "--cpu-share", "150%"], "error: host.cpu_share: "),
        (["run", "--cca", "cubic", "--bbr-inflight-deficit"], "error: bbr_inflight_deficit: needs a BBR flow"),
        (["run", "--pacing-stride", "0"], "error: flows[0].pacing_stride: must be from 1 to 1000"),
        (["run", "--engine", "kernel", "--cpu-share", "25%"], "error: host.cpu_share: is a simulator option"),
    ],
)
def test_cli_errors_are_one_line(args, line):
    p = cli(*args)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(line) and p.stderr.count("\n") == 1, p.stderr


def test_cli_runs_a_phone():
    p = cli(
        "run",
        "--cca",
        "bbr",
        "--flows",
        "5",
        "--rate",
        "1Gbit",
        "--rtt",
        "1ms",
        "--duration",
        "2s",
        "--cpu",
        "phone-lowend",
        "--tso-rtt-log",
        "0",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["host"]["busy_fraction"] > 0.9
    assert sum(f["goodput_bps"] for f in summary["flows"]) < 400e6


def test_recommend_weighs_the_host():
    from ccbench.advise.recommend import recommend

    rec = recommend(
        "100Mbit",
        "10ms",
        "1bdp",
        duration="5s",
        seeds=1,
        ccas=["cubic", "bbr"],
        neighbours=False,
        host={"cpu_share": "25%", "cpu_slice": "10ms"},
    )
    assert rec.choice == "cubic" and rec.point["cpu_share"] == "25%"
