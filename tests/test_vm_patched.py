"""Patched congestion controls for the VM's guest (``ccbench.vm.patched``): which flows
ask for one, what they run as, and the guest kernel that carries the built module. The
build and a run in the guest are in test_vm_engine.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccbench import ScenarioError
from ccbench.engines import get
from ccbench.vm import guest, patched
from ccbench.vm import validate as vc


def _scenario(*flows: dict) -> object:
    return get("vm").load({"duration": "2s", "link": {"rate": "10Mbit", "rtt": "10ms"}, "flows": list(flows)})


def test_a_bbr_flow_with_the_patch_parameter_runs_the_patched_module() -> None:
    sc, needed, notes = patched.substitute(_scenario({"cca": "cubic"},
                                                     {"cca": "bbr", "params": {"inflight_deficit": 1}},
                                                     {"cca": "bbr", "params": {"inflight_deficit": 0}}))
    assert [(f.cca, f.params) for f in sc.flows] == [("cubic", {}), ("bbr_2brobust", {}), ("bbr", {})]
    assert [p.module for p in needed] == ["tcp_bbr_2brobust"]
    assert notes == ["flows[1]: bbr with params.inflight_deficit = 1 ran as the guest's bbr_2brobust "
                     "(net/ipv4/tcp_bbr.c of the guest kernel with python/ccbench/vm/patches/tcp_bbr-2brobust.patch)"]


def test_a_flow_may_name_the_patched_algorithm_and_a_changed_scenario_stays_as_it_is() -> None:
    sc, needed, notes = patched.substitute(_scenario({"cca": "bbr_2brobust"}))
    assert sc.flows[0].cca == "bbr_2brobust" and [p.module for p in needed] == ["tcp_bbr_2brobust"] and not notes
    changed, _, _ = patched.substitute(_scenario({"cca": "bbr", "params": {"inflight_deficit": 1}}))
    again, needed, notes = patched.substitute(changed)
    assert again == changed and [p.module for p in needed] == ["tcp_bbr_2brobust"] and not notes


def test_a_bbr3_flow_with_the_patch_parameter_runs_bbrv3s_patched_module() -> None:
    sc, needed, notes = patched.substitute(_scenario({"cca": "bbr3", "params": {"inflight_deficit": 1}},
                                                     {"cca": "bbr", "params": {"inflight_deficit": 1}}))
    assert [f.cca for f in sc.flows] == ["bbr3_2brobust", "bbr_2brobust"]
    assert [p.module for p in needed] == ["tcp_bbr3_2brobust", "tcp_bbr_2brobust"]
    assert "tcp_bbr3-2brobust.patch" in notes[0]


def test_the_patch_parameter_on_an_algorithm_without_a_patched_module_is_refused() -> None:
    with pytest.raises(ScenarioError) as e:
        patched.substitute(_scenario({"cca": "bbr"}, {"cca": "bbr2", "params": {"inflight_deficit": 1}}))
    assert e.value.field == "flows[1].params.inflight_deficit" and "for bbr, bbr3 only" in e.value.message


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
    v1, v3 = patched.PATCHES
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
    assert vc.flow("cubic") == {"cca": "cubic"}
    cell = vc.CpuCell(0.25, "10ms", "bbr_2brobust", "100Mbit", "10ms")
    assert cell.scenario("5s", None)["flows"] == [{"cca": "bbr", "params": {"inflight_deficit": 1}}]
