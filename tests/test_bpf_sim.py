"""A congestion control as a BPF object on the simulator (``cca = "bpf:PATH"``): the
kernel's own bpf_cubic.c and bpf_dctcp.c agree with the built-in cubic and dctcp on
validate's quick cells, globals are parameters, runs are deterministic, the state is in
the series, and each object a loader must refuse gives one ``error:`` line and exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import ccbench
from ccbench.bpf.compile import compile_source
from ccbench.validate import cells
from conftest import ROOT, run_cli
from test_bpf_compile import needs_clang, needs_vmlinux
from test_cli_errors import assert_one_line_error

BPF = ROOT / "tests" / "bpf"
LINUX = BPF / "linux"
BAD = ROOT / "tests" / "bpf" / "bad"
RENO = ROOT / "scenarios" / "bpf" / "reno.bpf.c"
# The agreement the issue asks for.
TOLERANCE = 0.01


def _run(doc: dict) -> dict:
    return ccbench.run(doc).summary


def _quick_cells_of(cca: str) -> list[cells.Cell]:
    """validate's quick cells whose flows all run ``cca``; for an algorithm the quick
    grid does not use, its base and loss cells with ``cca`` put in."""
    quick = cells.quick_grid()
    own = [c for c in quick if {f["cca"] for f in c.doc["flows"]} == {cca}]
    return own or [*cells.base(("20Mbit",), ("20ms",), (0.5, 2.0), (cca,)), *cells.loss(("1%",), (cca,), gilbert=False)]


def _with_cca(doc: dict, cca: str) -> dict:
    return {**doc, "flows": [{**f, "cca": cca} for f in doc["flows"]]}


def _figures(summary: dict) -> dict[str, float]:
    """What the flows got together: where flows share the link, a few ACKs' difference
    decides which of them gets ahead, not what they get together."""
    flows = summary["flows"]
    return {
        "goodput": sum(f["goodput_bps"] for f in flows),
        "retransmits": sum(f["retransmits"] for f in flows),
        "rtt": sum(f["rtt_ms"]["mean"] for f in flows) / len(flows),
    }


def _agree(builtin: str, obj: str, ecn: bool = False, tolerance: float = TOLERANCE, uplink: bool = True) -> list[str]:
    """The quick cells where the object and the built-in differ by more than 1% (without
    ``uplink``, leaving out those whose ACKs cross a congested uplink)."""
    off = []
    for cell in _quick_cells_of(builtin):
        if not uplink and "reverse" in cell.doc["link"]:
            continue
        doc = cell.scenario_doc("5s", 1, None)
        if ecn:
            doc["link"] = {**doc["link"], "ecn_threshold": "0.2bdp"}
        want, got = _figures(_run(doc)), _figures(_run(_with_cca(doc, obj)))
        for key, a in want.items():
            # A count within one of the built-in's agrees, however small the count.
            slack = 1.0 if key == "retransmits" and tolerance > 0 else 0.0
            if abs(got[key] - a) > max(tolerance * abs(a), slack):
                off.append(f"{cell.name}: {key} {a} built-in, {got[key]} bpf")
    return off


@needs_vmlinux
def test_the_kernels_bpf_cubic_is_within_1_percent_of_the_built_in_cubic() -> None:
    obj = compile_source(LINUX / "bpf_cubic.c").path
    # Behind a congested uplink the ACKs come compressed, and bpf_cubic.c's departures from
    # tcp_cubic.c (the next test undoes them, and then the cell agrees exactly too) move
    # its window by some 3%: that cell is left out here.
    off = _agree("cubic", f"bpf:{obj}", uplink=False)
    # Where flows share the link, its departures from tcp_cubic.c (the next test) move
    # a few ACKs, and with them which flow loses which packet: retransmissions differ.
    assert [o for o in off if "retransmits" not in o] == []


@needs_vmlinux
def test_bpf_cubic_with_its_departures_undone_is_the_built_in_cubic_exactly(tmp_path: Path) -> None:
    for name in ("bpf_cubic.c", "bpf_tracing_net.h"):
        shutil.copy(LINUX / name, tmp_path / name)
    patch = (LINUX / "bpf_cubic-as-tcp_cubic.patch").read_text()
    subprocess.run(["patch", "-s", "-p1", "-d", str(tmp_path)], input=patch, text=True, check=True)
    obj = compile_source(tmp_path / "bpf_cubic.c").path
    assert _agree("cubic", f"bpf:{obj}", tolerance=0.0) == []


@needs_vmlinux
def test_the_kernels_bpf_dctcp_is_the_built_in_dctcp_exactly() -> None:
    # bpf_dctcp.c's sender side is tcp_dctcp.c's; its receiver side (the ECN events) is
    # the simulator's own receiver's, for both.
    obj = compile_source(LINUX / "bpf_dctcp.c").path
    assert _agree("dctcp", f"bpf:{obj}:dctcp", ecn=True, tolerance=0.0) == []


@needs_clang
def test_the_same_object_and_seed_give_the_same_bytes() -> None:
    doc = {
        "seed": 3,
        "duration": "3s",
        "link": {"rate": "20Mbit", "rtt": "20ms", "loss": "1%"},
        "flows": [{"cca": f"bpf:{RENO}", "count": 2}],
    }
    a, b = ccbench.run(doc), ccbench.run(doc)
    assert json.dumps(a.summary, sort_keys=True) == json.dumps(b.summary, sort_keys=True)
    assert a.flows.equals(b.flows)


@needs_clang
def test_a_global_is_a_parameter_and_the_run_records_it() -> None:
    base = {"duration": "5s", "link": {"rate": "20Mbit", "rtt": "20ms", "buffer": "2bdp"}}
    half = _run({**base, "flows": [{"cca": f"bpf:{RENO}"}]})
    gentle = _run({**base, "flows": [{"cca": f"bpf:{RENO}", "params": {"beta_percent": 80}}]})
    assert half["flows"][0]["params"]["beta_percent"] == 50
    assert gentle["flows"][0]["params"]["beta_percent"] == 80
    # A gentler decrease keeps more in flight: a longer queue.
    assert gentle["link"]["queue_delay_ms"]["mean"] > half["link"]["queue_delay_ms"]["mean"]


@needs_clang
def test_the_objects_state_is_in_the_series_and_the_flow_figure(tmp_path: Path) -> None:
    from ccbench.plots.rundir import load_run
    from ccbench.plots.timeseries import flow_figure

    doc = {
        "duration": "5s",
        "interval": "100ms",
        "link": {"rate": "20Mbit", "rtt": "20ms", "loss": "0.5%"},
        "flows": [{"cca": f"bpf:{RENO}"}],
    }
    r = ccbench.run(doc)
    # Reno's private struct is not in its BTF: the area's words, the first counting
    # the reductions.
    assert r.flows["cc_ca_priv_u32_00"].max() > 0
    r.save(tmp_path / "run")
    fig, _ = flow_figure(load_run(tmp_path / "run"), 0)
    titles = [ax.get_title() for ax in fig.axes]
    assert any("reno.bpf.o: its private state" in t for t in titles), titles
    assert "bpf:reno.bpf.o" in fig._suptitle.get_text()


@needs_clang
def test_the_reno_example_runs_from_the_command_line() -> None:
    out = run_cli("run", "--cca", f"bpf:{RENO}", "--rate", "20Mbit", "--rtt", "20ms", "--duration", "2s")
    assert out.returncode == 0, out.stderr
    assert "bpf:" in out.stdout and ".bpf.o" in out.stdout, out.stdout


@needs_clang
def test_maps_and_globals_are_shared_and_sk_storage_is_per_socket() -> None:
    # tests/bpf/maps.bpf.c counts Recovery entries in an array and a global, events in a
    # hash, and each socket's ACKs in its sk_storage, the largest in a global.
    doc = {
        "duration": "5s",
        "interval": "100ms",
        "link": {"rate": "20Mbit", "rtt": "20ms", "loss": "1%"},
        "flows": [{"cca": f"bpf:{BPF / 'maps.bpf.c'}", "count": 2}],
    }
    r = ccbench.run(doc)
    last = r.flows.groupby("flow").last()
    # One object, one set of globals: both flows read the same values.
    assert last["cc_global_losses"].nunique() == 1 and last["cc_global_losses"].iloc[0] > 0
    acks = last["cc_global_acks_seen"].iloc[0]
    assert 0 < acks < sum(f["delivered_bytes"] for f in r.summary["flows"]) / 1448


BAD_OBJECTS = {
    "unknown_kfunc.c": "calls the kfunc bpf_ccbench_no_such_kfunc, which the simulator does not provide",
    "unbounded_loop.c": "can run forever",
    "readonly_write.c": "writes tcp_sock.srtt_us, which the kernel lets no congestion control write",
    "no_struct_ops.c": "has no struct_ops map",
}


@needs_clang
@pytest.mark.parametrize("source", sorted(BAD_OBJECTS))
def test_an_object_the_kernel_would_refuse_is_one_error_line(source: str) -> None:
    out = run_cli("run", "--cca", f"bpf:{BAD / source}", "--duration", "1s")
    assert_one_line_error(out, "flows[0].cca", BAD_OBJECTS[source])


@needs_clang
def test_a_truncated_object_is_one_error_line(tmp_path: Path) -> None:
    whole = compile_source(RENO).path.read_bytes()
    cut = tmp_path / "cut.bpf.o"
    cut.write_bytes(whole[: len(whole) // 3])
    out = run_cli("run", "--cca", f"bpf:{cut}", "--duration", "1s")
    assert_one_line_error(out, "flows[0].cca", "is not a readable BPF ELF object")


@needs_clang
def test_bad_parameters_and_names_are_one_error_line(tmp_path: Path) -> None:
    out = run_cli("run", "--cca", f"bpf:{RENO}", "--set", "flows[0].params.nope=1", "--duration", "1s")
    assert_one_line_error(out, "flows[0].params.nope", "settable globals: beta_percent")
    out = run_cli("run", "--cca", f"bpf:{RENO}", "--set", "flows[0].params.beta_percent=1.5", "--duration", "1s")
    assert_one_line_error(out, "flows[0].params.beta_percent", "must be an integer")
    out = run_cli("run", "--cca", f"bpf:{tmp_path / 'none.bpf.o'}", "--duration", "1s")
    assert_one_line_error(out, "flows[0].cca", "no such BPF object")


@needs_vmlinux
def test_an_object_with_two_struct_ops_needs_one_named() -> None:
    obj = compile_source(LINUX / "bpf_dctcp.c").path
    out = run_cli("run", "--cca", f"bpf:{obj}", "--duration", "1s")
    assert_one_line_error(out, "flows[0].cca", "holds 2 struct_ops maps (dctcp_nouse, dctcp)")
    assert run_cli("run", "--cca", f"bpf:{LINUX / 'bpf_dctcp.c'}:dctcp", "--duration", "1s").returncode == 0
    # The kernel refuses dctcp_nouse too: it lacks ssthresh and undo_cwnd.
    out = run_cli("run", "--cca", f"bpf:{obj}:dctcp_nouse", "--duration", "1s")
    assert_one_line_error(out, "flows[0].cca", "lacks ssthresh, undo_cwnd")


def test_a_scenario_files_object_path_is_relative_to_the_file(tmp_path: Path) -> None:
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed")
    (tmp_path / "cc").mkdir()
    shutil.copy(RENO, tmp_path / "cc" / "reno.bpf.c")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'duration = "1s"\n[link]\nrate = "10Mbit"\nrtt = "10ms"\n[[flows]]\ncca = "bpf:cc/reno.bpf.c"\n'
    )
    out = run_cli("run", str(scenario), cwd=ROOT)
    assert out.returncode == 0, out.stderr
