"""Congestion controls given as BPF objects (``cca = "bpf:PATH"``) on the kernel engine,
and one run in the VM engine's guest.

A Reno written in BPF C is built here with clang against this kernel's BTF. Each run
registers it under a name of its own (``ccb`` + a token + an index), its flows use that
name, and it is unregistered however the run ends; ``ccbench kernel cleanup`` removes
only what a run recorded.

Needs root, /dev/net/tun, the kernel's BTF, bpftool, clang and libbpf's headers, and
``ccbench._core``'s BPF functions; skipped with the reason otherwise. Runs are a few
seconds each, every subprocess has a timeout, and what a test registers itself it
unregisters in a ``finally``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import click
import pytest

from ccbench import ScenarioError
from ccbench.cli import exits
from ccbench.engines import kernel as kernel_engine
from ccbench.bpf.name import BpfName, parse
from ccbench.kernel import bpf_ca, bpftool, host, state
from ccbench.kernel.plan import make_plan

from conftest import assert_nothing_left_behind, run_cli

BPF_HEADERS = Path("/usr/include/bpf/bpf_helpers.h")
BUILD_TIMEOUT_S = 120
NAME = re.compile(rf"{bpf_ca.NAME_PREFIX}[0-9a-f]{{8}}\d+")


def _reason() -> Optional[str]:
    for why in (host.tun_usable(), host.bpf_unavailable()):
        if why is not None:
            return why
    if shutil.which("clang") is None:
        return "no clang (Debian: apt-get install clang)"
    if not BPF_HEADERS.is_file():
        return f"no {BPF_HEADERS} (Debian: apt-get install libbpf-dev)"
    return None


REASON = _reason()
pytestmark = [pytest.mark.host, pytest.mark.skipif(REASON is not None, reason=f"BPF congestion control: {REASON}")]

# Reno: slow start to ssthresh, then one segment per window; half the window on loss.
# ``ai_step`` (a global) scales the additive increase; ``-DTWO_MAPS`` adds a second
# struct_ops map and a third that is no complete tcp_congestion_ops (as bpf_dctcp.c's
# ``dctcp_nouse``, which the kernel does not register), ``-DREFUSED`` a read of an argument cong_avoid does not have, which
# the verifier refuses (and ``_core``, which checks what it can of an object without a
# kernel, does not).
RENO = r"""
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

const volatile __u32 min_ssthresh = 2;
__u32 ai_step = 1;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

SEC("struct_ops")
void BPF_PROG(reno_init, struct sock *sk)
{
}

SEC("struct_ops")
__u32 BPF_PROG(reno_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u32 half = tp->snd_cwnd >> 1;

	return half > min_ssthresh ? half : min_ssthresh;
}

SEC("struct_ops")
void BPF_PROG(reno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd;

	if (cwnd < tp->snd_ssthresh) {
		cwnd += acked;
		if (cwnd > tp->snd_ssthresh)
			cwnd = tp->snd_ssthresh;
	} else {
		tp->snd_cwnd_cnt += acked * ai_step;
		if (tp->snd_cwnd_cnt >= cwnd) {
			tp->snd_cwnd_cnt -= cwnd;
			cwnd++;
		}
	}
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	tp->snd_cwnd = cwnd;
#ifdef REFUSED
	tp->snd_cwnd += (__u32)ctx[7];
#endif
}

SEC("struct_ops")
__u32 BPF_PROG(reno_undo_cwnd, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return tp->snd_cwnd > tp->prior_cwnd ? tp->snd_cwnd : tp->prior_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops reno = {
	.init = (void *)reno_init,
	.ssthresh = (void *)reno_ssthresh,
	.cong_avoid = (void *)reno_cong_avoid,
	.undo_cwnd = (void *)reno_undo_cwnd,
	.name = CCA_NAME,
};

#ifdef TWO_MAPS
SEC(".struct_ops")
struct tcp_congestion_ops reno_alt = {
	.ssthresh = (void *)reno_ssthresh,
	.cong_avoid = (void *)reno_cong_avoid,
	.undo_cwnd = (void *)reno_undo_cwnd,
	.name = CCA_NAME "2",
};

SEC(".struct_ops")
struct tcp_congestion_ops reno_nouse = {
	.init = (void *)reno_init,
	.name = CCA_NAME "3",
};
#endif
"""


def build(where: Path, name: str, *defines: str) -> Path:
    """The Reno object with ``.name = name`` (and ``defines``), built against this
    kernel's BTF (vmlinux.h generated once in ``where``)."""
    header = where / "vmlinux.h"
    if not header.is_file():
        with open(header, "w") as out:
            subprocess.run(
                ["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"],
                stdout=out,
                check=True,
                timeout=BUILD_TIMEOUT_S,
            )
    source = where / "reno.bpf.c"
    source.write_text(RENO)
    obj = where / f"{name}{''.join(d.lower() for d in defines)}.bpf.o"
    subprocess.run(
        ["clang", "-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86", f'-DCCA_NAME="{name}"']
        + [f"-D{d}" for d in defines]
        + ["-I", str(where), "-c", str(source), "-o", str(obj)],
        check=True,
        capture_output=True,
        timeout=BUILD_TIMEOUT_S,
    )
    return obj


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("bpf")
    return {
        "reno": build(where, "bpf_reno_t"),
        "two": build(where, "bpf_reno_t", "TWO_MAPS"),
        "refused": build(where, "bpf_reno_t", "REFUSED"),
    }


@pytest.fixture
def names() -> Iterator[list[str]]:
    """The algorithm names a test's runs registered: none may remain registered."""
    seen: list[str] = []
    yield seen
    assert_nothing_left_behind(3)
    assert not [m for m in bpftool.maps() if m.registered and m.name in seen]
    assert not set(seen) & set(host.available_congestion_control())


def scenario(*ccas: str, params: Optional[list[dict[str, float]]] = None, duration: str = "3s") -> Any:
    """Flows with these algorithms (and params) on a 20 Mbit/s, 20 ms path."""
    given = params or [{} for _ in ccas]
    return kernel_engine.ENGINE.load(
        {
            "duration": duration,
            "link": {"rate": "20Mbit", "rtt": "20ms", "buffer": "1bdp"},
            "flows": [{"cca": c, "params": p} for c, p in zip(ccas, given)],
        }
    )


def held(name: str) -> list[bpftool.StructOpsMap]:
    return [m for m in bpftool.maps() if m.registered and m.name == name]


def test_a_bpf_reno_runs_under_a_name_of_the_runs_own_and_is_gone_after(
    objects: dict[str, Path], names: list[str]
) -> None:
    obj = objects["reno"]
    r = kernel_engine.run(scenario(f"bpf:{obj}", "cubic", params=[{"ai_step": 1}, {}]))
    bpf_flow, cubic = r.summary["flows"]
    record = bpf_flow["bpf"]
    names.append(record["name"])
    assert NAME.fullmatch(record["name"]) and len(record["name"]) <= 15
    # The socket ran the algorithm under the run's name, not the object's own.
    assert record["tcp_congestion"] == record["name"] != "bpf_reno_t"
    assert record["sha256"] == hashlib.sha256(obj.read_bytes()).hexdigest()
    assert record["object"] == str(obj) and record["map"] == "reno" and isinstance(record["map_id"], int)
    assert bpf_flow["cca"] == f"bpf:{obj}" and bpf_flow["params"] == {"ai_step": 1}
    assert cubic["bpf"] is None and cubic["cca"] == "cubic"
    # Two loss-based flows share 20 Mbit/s.
    assert bpf_flow["goodput_bps"] > 4e6 and cubic["goodput_bps"] > 4e6
    assert bpf_flow["goodput_bps"] + cubic["goodput_bps"] > 15e6
    assert not held(record["name"])


def test_each_set_of_globals_is_a_copy_and_a_flow_picks_its_map_by_symbol(
    objects: dict[str, Path], names: list[str]
) -> None:
    obj = objects["two"]
    ccas = (f"bpf:{obj}:reno", f"bpf:{obj}:reno_alt", f"bpf:{obj}:reno")
    r = kernel_engine.run(scenario(*ccas, params=[{"ai_step": 1}, {"ai_step": 1}, {"ai_step": 2}], duration="2s"))
    records = [f["bpf"] for f in r.summary["flows"]]
    names += [rec["name"] for rec in records]
    assert [rec["map"] for rec in records] == ["reno", "reno_alt", "reno"]
    assert all(rec["tcp_congestion"] == rec["name"] for rec in records)
    # One copy per set of globals, each registering both of its maps under new names.
    assert len({rec["name"] for rec in records}) == 3
    assert len({rec["name"][:11] for rec in records}) == 1  # one run, one token
    assert [f["params"] for f in r.summary["flows"]] == [{"ai_step": 1}, {"ai_step": 1}, {"ai_step": 2}]
    assert all(f["goodput_bps"] > 1e6 for f in r.summary["flows"])
    # The incomplete map of each copy was refused, and no flow ran it.
    refused = [n for n in r.summary["notes"] if "struct_ops reno_nouse was not registered" in n]
    assert len(refused) == 2 and all(n.endswith("no flow runs it") for n in refused)


def _cli_line(capsys: pytest.CaptureFixture[str], run: Any) -> tuple[int, str]:
    """Exit status and stderr of ``run`` inside the command line's error handling."""

    @click.command()
    def go() -> None:
        run()

    with pytest.raises(SystemExit) as ended:
        exits.run(click.Group(commands={"go": go}), ["go"])
    return int(ended.value.code or 0), capsys.readouterr().err


def test_an_object_the_kernel_refuses_is_one_line_naming_what_it_said(
    objects: dict[str, Path], names: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    sc = scenario(f"bpf:{objects['refused']}")
    code, err = _cli_line(capsys, lambda: kernel_engine.run(sc))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: flows[0].cca: the kernel refused {objects['refused']}: prog 'reno_cong_avoid': ")
    assert "invalid bpf_context access" in err


def test_without_bpftool_or_root_the_refusal_is_one_line(
    objects: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A PATH with iproute2's ip but no bpftool.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ip").symlink_to(shutil.which("ip") or "/usr/sbin/ip")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    sc = scenario(f"bpf:{objects['reno']}")
    code, err = _cli_line(capsys, lambda: kernel_engine.run(sc))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: flows[0].cca: a BPF congestion control needs bpftool, which is not on PATH")
    monkeypatch.undo()

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    why = host.bpf_unavailable()
    assert why is not None and "needs root" in why
    with pytest.raises(ScenarioError) as refused:
        make_plan(sc, host.HostFacts("test", 250, ["reno", "cubic"], bpf_unavailable=why))
    assert refused.value.field == "flows[0].cca" and "\n" not in str(refused.value)


def test_a_killed_run_leaves_a_registration_that_cleanup_removes(objects: dict[str, Path], names: list[str]) -> None:
    argv = [sys.executable, "-m", "ccbench", "run", "--engine", "kernel", "--cca", f"bpf:{objects['reno']}"]
    proc = subprocess.Popen(
        [*argv, "--rate", "10Mbit", "--duration", "20s", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, NO_COLOR="1"),
    )
    try:
        deadline = time.monotonic() + 30
        st = None
        while time.monotonic() < deadline and proc.poll() is None:
            runs = [r for r in state.live_runs() if r.owner_pid == proc.pid]
            if runs and runs[0].struct_ops and all(s.id is not None for s in runs[0].struct_ops):
                st = runs[0]
                break
            time.sleep(0.1)
        assert st is not None, "the run did not register its object"
        name = st.struct_ops[0].name
        names.append(name)
        assert [m.id for m in held(name)] == [st.struct_ops[0].id]
        time.sleep(1.0)  # traffic is flowing
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    # The registration outlives its run; the record names it.
    assert held(name) and st.id in {r.id for r in state.stale_runs()}

    res = run_cli("kernel", "cleanup")
    assert res.returncode == 0, res.stderr
    assert f"BPF congestion control {name} (struct_ops map reno, id {st.struct_ops[0].id})" in res.stdout
    assert not held(name) and name not in host.available_congestion_control()
    assert not st.path.exists()


def test_cleanup_leaves_a_struct_ops_it_did_not_record(objects: dict[str, Path], tmp_path: Path) -> None:
    # Registered by this test, with the run's map name (reno) and a name of the run's
    # form; stale records that name it with another id, or another name with its id.
    name = f"ccb{os.getpid() % 0xFFFFFFFF:08x}9"
    obj = build(tmp_path, name)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    st = state.RunState.create()
    st.owner_pid, st.owner_start = dead.pid, None
    try:
        ids = bpftool.registered_ids(bpftool.register(str(obj)))
        (mine,) = [m for m in held(name)]
        assert ids == {"reno": mine.id}
        st.add_struct_ops(
            [
                state.StructOps(name, "reno", id=mine.id + 100_000),
                state.StructOps(name + "0", "reno", id=mine.id),
                state.StructOps(name, "reno2", id=mine.id),
                state.StructOps(name, "reno", id=None, after=mine.id),
            ]
        )
        res = run_cli("kernel", "cleanup")
        assert res.returncode == 0, res.stderr
        assert f"run {st.id}: state file" in res.stdout and "BPF congestion control" not in res.stdout
        assert [m.id for m in held(name)] == [mine.id]
    finally:
        for m in held(name):
            bpftool.unregister(m.id)
        state.remove_run(st)
    assert not held(name)


def test_the_command_line_runs_a_bpf_object_and_refuses_one_without_bpftool(
    objects: dict[str, Path], names: list[str], tmp_path: Path
) -> None:
    cca = f"bpf:{objects['reno']}"
    res = run_cli("run", "--engine", "kernel", "--cca", cca, "--rate", "10Mbit", "--duration", "2s", "--json")
    assert res.returncode == 0, res.stderr
    record = json.loads(res.stdout)["flows"][0]["bpf"]
    names.append(record["name"])
    assert NAME.fullmatch(record["name"]) and record["tcp_congestion"] == record["name"]

    # PATH with iproute2's ip and Python, but no bpftool.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ip").symlink_to(shutil.which("ip") or "/usr/sbin/ip")
    proc = subprocess.run(
        [sys.executable, "-m", "ccbench", "run", "--engine", "kernel", "--cca", cca, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", NO_COLOR="1"),
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("error: flows[0].cca: a BPF congestion control needs bpftool")
    assert not (tmp_path / "out").exists()


def test_a_cca_names_its_object_and_map_and_a_refusal_the_verifiers_reason(tmp_path: Path) -> None:
    obj = tmp_path / "x:y.bpf.o"
    obj.write_bytes(b"")
    assert parse(f"bpf:{obj}") == BpfName(str(obj), None)
    assert parse(f"bpf:{obj}:dctcp") == BpfName(str(obj), "dctcp")
    assert parse("bpf:/no/such.o") == BpfName("/no/such.o", None)
    log = (
        "libbpf: prog 'x_cong_avoid': BPF program load failed: Permission denied\n"
        "libbpf: prog 'x_cong_avoid': -- BEGIN PROG LOAD LOG --\n"
        "0: R1=ctx() R10=fp0\n"
        "; tp->srtt_us = 0; @ x.c:48\n"
        "34: (63) *(u32 *)(r1 +1680) = r2\n"
        "no write support to tcp_sock at off 1680\n"
        "processed 22 insns (limit 1000000) max_states_per_insn 0 total_states 1 peak_states 1 mark_read 0\n"
        "-- END PROG LOAD LOG --\n"
        "libbpf: prog 'x_cong_avoid': failed to load: -13\n"
        "libbpf: failed to load object 'x.o'\n"
    )
    assert bpftool.refusal(log) == "prog 'x_cong_avoid': no write support to tcp_sock at off 1680"
    missing = (
        "libbpf: extern (func ksym) 'tcp_foo': not found in kernel or module BTFs\n"
        "libbpf: failed to load object 'x.o'\n"
    )
    assert bpftool.refusal(missing) == "extern (func ksym) 'tcp_foo': not found in kernel or module BTFs"


def _vm_reason() -> Optional[str]:
    from ccbench.vm import initramfs

    if shutil.which("qemu-system-x86_64") is None:
        return "no qemu-system-x86_64 (Debian: qemu-system-x86)"
    if not initramfs.BUSYBOX.is_file():
        return "no static busybox (Debian: busybox-static)"
    try:
        from ccbench.vm.image import agent_binary

        agent_binary()
    except ScenarioError as e:
        return e.message
    return None


@pytest.mark.skipif(_vm_reason() is not None, reason=f"VM engine unavailable: {_vm_reason()}")
def test_the_guest_registers_the_object_and_says_what_its_kernel_refused(objects: dict[str, Path]) -> None:
    import ccbench

    r = ccbench.run(scenario(f"bpf:{objects['reno']}"), engine="vm")
    record = r.summary["flows"][0]["bpf"]
    assert NAME.fullmatch(record["name"]) and record["name"] in r.summary["available_congestion_control"]
    assert r.summary["flows"][0]["goodput_bps"] > 5e6
    with pytest.raises(ScenarioError) as refused:
        ccbench.run(scenario(f"bpf:{objects['refused']}"), engine="vm")
    assert refused.value.field == "flows[0].cca"
    assert "the guest kernel refused" in refused.value.message
    assert "invalid bpf_context access" in refused.value.message
    assert_nothing_left_behind(5)
