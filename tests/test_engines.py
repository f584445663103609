"""The engine interface: one registry, one check of unsupported fields for every way a
scenario arrives (flags, TOML, sweep plans), and a third engine that is one module."""

from __future__ import annotations

from pathlib import Path

import pytest

import ccbench
from ccbench import ScenarioError, engines
from ccbench.scenario import Scenario
from ccbench.store import open_store
from ccbench.sweep import plan_from_dict, run_sweep

from conftest import run_cli


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(engines.ENGINES, "replay", ("engine_plugins.replay", "the simulator, replayed"))
    return "replay"


def test_an_unknown_engine_is_refused_with_the_names() -> None:
    with pytest.raises(ScenarioError) as e:
        engines.get("ns3")
    assert e.value.field == "--engine" and "allowed: sim, kernel, vm" in e.value.message


@pytest.mark.parametrize(
    "flags, field",
    [
        ({"cpu_share": "25%"}, "host.cpu_share"),
        ({"cpu": "phone-lowend"}, "host.cpu"),
        ({"pacing_stride": 4}, "flows[0].pacing_stride"),
        ({"fixed_pacing_rate": "20Mbit"}, "flows[0].fixed_pacing_rate"),
    ],
)
def test_the_kernel_engine_refuses_simulator_options_before_needing_root(flags: dict[str, object], field: str) -> None:
    kernel = engines.get("kernel")
    with pytest.raises(ScenarioError) as e:
        kernel.check(kernel.from_flags(**flags))
    assert e.value.field == field and "simulator option" in e.value.message


def test_a_host_table_with_only_defaults_is_no_option() -> None:
    kernel = engines.get("kernel")
    sc = Scenario.from_dict(
        {
            "duration": "1s",
            "link": {"rate": "10Mbit", "rtt": "20ms"},
            "host": {"cpu": "server"},
            "flows": [{"cca": "cubic"}],
        }
    )
    from ccbench.engines.base import refuse_unsupported

    refuse_unsupported(kernel, sc)  # nothing to refuse


def test_a_scenario_file_with_a_host_table_is_refused_on_the_kernel(tmp_path: Path) -> None:
    path = tmp_path / "vm.toml"
    path.write_text(
        'duration = "1s"\n[link]\nrate = "10Mbit"\nrtt = "20ms"\n[host]\ncpu_share = "25%"\n[[flows]]\ncca = "bbr"\n'
    )
    res = run_cli("run", "--engine", "kernel", str(path))
    assert res.returncode == 2 and res.stderr.startswith("error: host.cpu_share: is a simulator option")
    assert res.stderr.count("\n") == 1


def test_a_third_engine_runs_through_run_sweeps_and_the_store(replay: str, tmp_path: Path) -> None:
    plain = ccbench.run({"duration": "1s", "link": {"rate": "10Mbit", "rtt": "20ms"}, "flows": [{"cca": "cubic"}]})
    replayed = ccbench.run(
        {"duration": "1s", "link": {"rate": "10Mbit", "rtt": "20ms"}, "flows": [{"cca": "cubic"}]}, engine=replay
    )
    assert replayed.summary["engine"] == "replay"
    assert {**replayed.summary, "engine": None} == {**plain.summary, "engine": None}

    plan = plan_from_dict(
        {
            "duration": "1s",
            "link": {"rate": ["10Mbit", "20Mbit"], "rtt": "20ms"},
            "flows": [{"cca": "cubic"}],
            "sweep": {"name": "r"},
        },
        engine=replay,
    )
    report = run_sweep(plan, tmp_path / "store", engine=replay, workers=1, progress=False)
    assert (report.ran, report.failures) == (2, [])
    records = open_store(tmp_path / "store").records("r")
    assert {r.engine for r in records} == {"replay"}
    assert {r.code_version for r in records} == {engines.get(replay).code_version()}

    with pytest.raises(ScenarioError) as e:
        plan_with_host = plan_from_dict(
            {
                "duration": "1s",
                "link": {"rate": "10Mbit", "rtt": "20ms"},
                "host": {"cpu_share": ["25%", "50%"]},
                "flows": [{"cca": "cubic"}],
            },
            engine=replay,
        )
        run_sweep(plan_with_host, tmp_path / "store", engine=replay, workers=1, progress=False)
    assert e.value.field == "host.cpu_share" and e.value.message == "has no CPU model"


def test_engine_options_belong_to_their_engine() -> None:
    with pytest.raises(ScenarioError) as e:
        engines.get("sim", vcpus=2)
    assert (e.value.field, e.value.message) == ("--vcpus", "is not an option of the sim engine")
    vm = engines.get("vm", guest_kernel="debian:6.12", vcpus=2)
    assert (vm.guest_kernel, vm.vcpus) == ("debian:6.12", 2)  # type: ignore[attr-defined]
    assert engines.get("vm") is not vm and engines.get("vm", vcpus=None) is engines.get("vm")
    with pytest.raises(ScenarioError) as e:
        engines.get("vm", vcpus=0)
    assert e.value.field == "--vcpus"


@pytest.mark.parametrize("opener", ["sender", "receiver"])
def test_the_vm_engine_refuses_connections_opened_when_due(opener: str) -> None:
    # Its guest agent connects every flow ahead of its data (refused before QEMU or root
    # matter).
    flow = {"cca": "cubic", "size": "20KB", "connect": opener}
    sc = ccbench.Scenario.from_dict({"duration": "5s", "link": {"rate": "10Mbit", "rtt": "20ms"}, "flows": [flow]})
    with pytest.raises(ScenarioError) as e:
        engines.get("vm").check(sc)
    assert e.value.field == "flows[0].connect" and "connects ahead of the data" in e.value.message


def test_the_vm_engine_refuses_a_path_mtu() -> None:
    link = {"rate": "10Mbit", "rtt": "20ms", "mtu": 1400}
    sc = ccbench.Scenario.from_dict({"duration": "5s", "link": link, "flows": [{"cca": "cubic"}]})
    with pytest.raises(ScenarioError) as e:
        engines.get("vm").check(sc)
    assert e.value.field == "link.mtu" and "use the simulator or the kernel engine" in e.value.message


def test_the_vm_engine_refuses_a_flow_going_up() -> None:
    # Every sender runs in its guest (refused before QEMU or root matter).
    link = {"rate": "10Mbit", "rtt": "20ms", "reverse": {"rate": "5Mbit"}}
    flows = [{"cca": "cubic"}, {"cca": "cubic", "direction": "up"}]
    sc = ccbench.Scenario.from_dict({"duration": "5s", "link": link, "flows": flows})
    with pytest.raises(ScenarioError) as e:
        engines.get("vm").check(sc)
    assert e.value.field == "flows[1].direction" and "the simulator or the kernel engine" in e.value.message
