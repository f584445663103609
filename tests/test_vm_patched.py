"""Patched congestion controls for the VM's guest (``ccbench.vm.patched``): which flows
ask for one, what they run as, and the guest kernel that carries the built module. The
build and a run in the guest are in test_vm_engine.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccbench import ScenarioError
from ccbench.engines import get
from ccbench.vm import guest, patched
from ccbench.engines.vm import cpu_grid as vc


def _scenario(*flows: dict) -> object:
    return get("vm").load({"duration": "2s", "link": {"rate": "10Mbit", "rtt": "10ms"}, "flows": list(flows)})


def test_a_bbr_flow_with_the_patch_parameter_runs_the_patched_module() -> None:
    sc, needed, notes = patched.substitute(
        _scenario(
            {"cca": "cubic"},
            {"cca": "bbr", "params": {"inflight_deficit": 1}},
            {"cca": "bbr", "params": {"inflight_deficit": 0}},
        )
    )
    assert [(f.cca, f.params) for f in sc.flows] == [("cubic", {}), ("bbr_2brobust", {}), ("bbr", {})]
    assert [p.module for p in needed] == ["tcp_bbr_2brobust"]
    assert notes == [
        "flows[1]: bbr with params.inflight_deficit = 1 ran as the guest's bbr_2brobust "
        "(net/ipv4/tcp_bbr.c of the guest kernel with python/ccbench/vm/patches/tcp_bbr-2brobust.patch)"
    ]


def test_a_flow_may_name_the_patched_algorithm_and_a_changed_scenario_stays_as_it_is() -> None:
    sc, needed, notes = patched.substitute(_scenario({"cca": "bbr_2brobust"}))
    assert sc.flows[0].cca == "bbr_2brobust" and [p.module for p in needed] == ["tcp_bbr_2brobust"] and not notes
    changed, _, _ = patched.substitute(_scenario({"cca": "bbr", "params": {"inflight_deficit": 1}}))
    again, needed, notes = patched.substitute(changed)
    assert again == changed and [p.module for p in needed] == ["tcp_bbr_2brobust"] and not notes


def test_a_bbr3_flow_with_the_patch_parameter_runs_bbrv3s_patched_module() -> None:
    sc, needed, notes = patched.substitute(
        _scenario({"cca": "bbr3", "params": {"inflight_deficit": 1}}, {"cca": "bbr", "params": {"inflight_deficit": 1}})
    )
    assert [f.cca for f in sc.flows] == ["bbr3_2brobust", "bbr_2brobust"]
    assert [p.module for p in needed] == ["tcp_bbr3_2brobust", "tcp_bbr_2brobust"]
    assert "tcp_bbr3-2brobust.patch" in notes[0]


def test_the_patch_parameter_on_an_algorithm_without_a_patched_module_is_refused() -> None:
    with pytest.raises(ScenarioError) as e:
        patched.substitute(_scenario({"cca": "bbr"}, {"cca": "bbr2", "params": {"inflight_deficit": 1}}))
    assert e.value.field == "flows[1].params.inflight_deficit" and "for bbr, bbr3 only" in e.value.message


def test_a_bbr_flow_without_pacing_runs_the_unpaced_module() -> None:
    sc, needed, notes = patched.substitute(
        _scenario({"cca": "bbr", "pacing": False}, {"cca": "bbr", "pacing": True}, {"cca": "cubic", "pacing": False})
    )
    assert [(f.cca, f.pacing) for f in sc.flows] == [("bbr_unpaced", None), ("bbr", None), ("cubic", False)]
    assert [p.module for p in needed] == ["tcp_bbr_unpaced"]
    assert notes == [
        "flows[0]: bbr with pacing = false ran as the guest's bbr_unpaced "
        "(net/ipv4/tcp_bbr.c of the guest kernel with python/ccbench/vm/patches/tcp_bbr-unpaced.patch)"
    ]
    # The plan knows that it does not pace, and still refuses pacing = false where no module is built.
    from ccbench.kernel.host import HostFacts, KernelEngineError
    from ccbench.kernel.plan import make_plan

    facts = HostFacts("6.1.0-test", 250, ["bbr", "bbr3", "bbr_unpaced", "cubic"])
    assert [f.paced for f in make_plan(sc, facts).flows] == [False, True, False]
    with pytest.raises(KernelEngineError, match="bbr3 always paces in the kernel"):
        make_plan(_scenario({"cca": "bbr3", "pacing": False}), facts)


def test_two_patches_asked_of_one_flow_are_refused() -> None:
    with pytest.raises(ScenarioError) as e:
        patched.substitute(_scenario({"cca": "bbr", "pacing": False, "params": {"inflight_deficit": 1}}))
    assert e.value.field == "flows[0]" and "bbr_2brobust, bbr_unpaced), not for both" in e.value.message
    # Mainline for one of them is no second patch.
    sc, needed, _ = patched.substitute(_scenario({"cca": "bbr", "pacing": False, "params": {"inflight_deficit": 0}}))
    assert sc.flows[0].cca == "bbr_unpaced" and [p.module for p in needed] == ["tcp_bbr_unpaced"]


def test_other_parameters_stay_for_the_plan_to_refuse() -> None:
    sc, needed, _ = patched.substitute(_scenario({"cca": "bbr", "params": {"inflight_deficit": 1, "lt_sampling": 0}}))
    assert needed == [] and sc.flows[0].cca == "bbr" and sc.flows[0].params == {"lt_sampling": 0}


def test_a_kernel_with_modules_of_the_project_offers_them(tmp_path: Path) -> None:
    tree = tmp_path / "lib" / "modules" / "6.1.0-test"
    (tree / "kernel" / "net" / "ipv4").mkdir(parents=True)
    (tree / "kernel" / "net" / "ipv4" / "tcp_bbr.ko").write_bytes(b"")
    built = tmp_path / "tcp_bbr_2brobust.ko"
    built.write_bytes(b"")
    image = tmp_path / "vmlinuz"
    image.write_bytes(b"")
    kernel = guest.GuestKernel(image, tree, "debian:linux-image-6.1.0-test=1")
    with_patch = kernel.with_modules([built])
    assert not kernel.has_module("tcp_bbr_2brobust") and with_patch.has_module("tcp_bbr_2brobust")
    assert with_patch.congestion_modules() == ["bbr", "bbr_2brobust"]
    assert with_patch.source == "debian:linux-image-6.1.0-test=1 + tcp_bbr_2brobust"
    assert with_patch.with_modules([built]) == with_patch
    v1, v3, _ = patched.PATCHES
    # A kernel that has the module already (one's own build) needs no build.
    assert patched.with_patches(with_patch, [v1]) is with_patch
    # A kernel that is not Debian's package is not built for.
    own = guest.GuestKernel(image, tree, str(tmp_path))
    with pytest.raises(ScenarioError, match="built only for Debian's packaged kernels"):
        patched.with_patches(own, [v1])
    # Nor is BBRv3's patch for a kernel without BBRv3.
    with pytest.raises(ScenarioError, match="has no bbr3, so no bbr3_2brobust: `ccbench vm build-kernel"):
        patched.with_patches(kernel, [v3])


def test_the_cpu_grid_names_the_patched_algorithm_as_the_guest_does() -> None:
    assert vc.flow("bbr_2brobust") == {"cca": "bbr", "params": {"inflight_deficit": 1}}
    assert vc.flow("bbr3_2brobust") == {"cca": "bbr3", "params": {"inflight_deficit": 1}}
    assert vc.flow("bbr_unpaced") == {"cca": "bbr", "pacing": False}
    assert vc.flow("cubic") == {"cca": "cubic"}
    cell = vc.CpuCell(0.25, "10ms", "bbr_2brobust", "100Mbit", "10ms")
    assert cell.scenario("5s", None)["flows"] == [{"cca": "bbr", "params": {"inflight_deficit": 1}}]


def test_the_pacing_grid_is_the_phone_studys_network_and_judges_the_rtt() -> None:
    cells = vc.pacing_grid(**{k: v for k, v in vc.PACING_QUICK.items() if k != "duration"})
    assert len(cells) == 6 and all(c.pacing and c.reserved for c in cells)
    held = next(c for c in cells if c.flows == 20 and c.cca == "bbr_unpaced")
    assert held.name == "20 x bbr_unpaced 25% of 1ms, 200Mbit, 1ms"
    doc = held.scenario("5s", {"cost": {"ack": "13us"}}, tick_ns=4_000_000, hz=250)
    assert doc["flows"] == [{"cca": "bbr", "pacing": False, "count": 20}]
    assert doc["link"]["buffer"] == "1000pkt" and doc["tcp"] == {"tso_rtt_log": 0, "hz": 250}
    # Measured costs go over the server preset, not the vm preset a reserved share implies.
    host = {"cpu": "server", "cpu_share": 0.25, "cpu_slice": "1ms", "cost": {"ack": "13us"}, "cpu_tick": "4000000ns"}
    assert doc["host"] == host
    free = vc.CpuCell(1.0, "1ms", "cubic_paced", "1Gbit", "1ms", 5, pacing=True)
    assert free.name == "5 x cubic_paced, 1Gbit, 1ms"
    assert "host" not in free.scenario("5s", None, tick_ns=4_000_000) and free.scenario("5s", None)["flows"] == [
        {"cca": "cubic", "pacing": True, "count": 5}
    ]
    # The 2BRobust grid's cells are as they were.
    old = vc.CpuCell(0.25, "10ms", "bbr", "100Mbit", "10ms")
    assert old.name == "bbr 25% of 10ms, 100Mbit, 10ms" and "tcp" not in old.scenario("5s", None)
    assert old.scenario("5s", None)["link"]["buffer"] == "1bdp"

    def row(cell: vc.CpuCell, sim: float, vm: float, sim_rtt: float, vm_rtts: list[float]) -> vc.CpuRow:
        return vc.CpuRow(cell, 200.0, sim, [vm] * len(vm_rtts), 0.25, sim_rtt_ms=sim_rtt, vm_rtts_ms=vm_rtts)

    assert row(held, 190.0, 192.0, 9.0, [7.4]).passed  # within 2 ms
    assert not row(held, 190.0, 192.0, 60.9, [32.0]).passed  # goodput agrees, the RTT does not
    assert row(held, 190.0, 192.0, 40.0, [30.0, 32.0, 45.0]).passed  # inside the VM's range
    assert row(old, 50.0, 50.0, 60.9, [32.0]).passed  # not judged on the 2BRobust grid
    # Paced against unpaced, on each engine; no threshold rows from this grid.
    bbr = vc.CpuCell(0.25, "1ms", "bbr", "200Mbit", "1ms", 20, pacing=True)
    rows = [row(bbr, 110.0, 145.0, 24.0, [2.3]), row(held, 118.0, 146.0, 65.0, [3.4])]
    (cost,) = vc.pacing_costs(rows)
    assert (cost.cca, cost.where, cost.sim, cost.vm) == ("bbr", "20, 200Mbit, 25% of 1ms", "0.93 (0.37)", "0.99 (0.68)")
    assert vc.thresholds(rows) == []
    table = vc.markdown(rows, [], {"guest": "debian:6.1"})
    assert (
        "| 24.0 / 2.3 | differs |" in table and "| bbr | 20, 200Mbit, 25% of 1ms | 0.93 (0.37) | 0.99 (0.68) |" in table
    )
