"""The VM engine's guest: the initramfs, the Debian guest kernel booted in QEMU, the
SCHED_DEADLINE policy on its vCPU threads, and nothing left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccbench.kernel import state
from ccbench.vm import initramfs

from conftest import run_cli

REASON = None
if sys.platform != "linux":
    REASON = "Linux only"
elif shutil.which("qemu-system-x86_64") is None:
    REASON = "no qemu-system-x86_64 (Debian: qemu-system-x86)"
elif not initramfs.BUSYBOX.is_file():
    REASON = "no static busybox (Debian: busybox-static)"
elif shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
    REASON = "no apt-get/dpkg-deb to fetch the guest kernel"
needs_vm = pytest.mark.skipif(REASON is not None, reason=f"VM guest unavailable: {REASON}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_DEADLINE needs root")
pytestmark = pytest.mark.host


def test_newc_archives_list_back_with_busybox_cpio(tmp_path: Path) -> None:
    if not initramfs.BUSYBOX.is_file():
        pytest.skip("no busybox")
    archive = initramfs.newc(
        sorted(
            [
                ("bin", 0o040755, b""),
                ("bin/sh", 0o120777, b"busybox"),
                ("init", 0o100755, b"#!/bin/sh\necho hi\n"),
                ("odd", 0o100644, b"x" * 5),
            ]
        )
    )
    assert initramfs.newc([]) == initramfs.newc([])  # deterministic
    listed = subprocess.run([str(initramfs.BUSYBOX), "cpio", "-t"], input=archive, capture_output=True, timeout=10)
    assert listed.stdout.decode().split() == ["bin", "bin/sh", "init", "odd"]
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run([str(initramfs.BUSYBOX), "cpio", "-i"], input=archive, cwd=out, check=True, timeout=10)
    assert (out / "init").read_text() == "#!/bin/sh\necho hi\n" and os.readlink(out / "bin" / "sh") == "busybox"


@needs_vm
def test_modules_load_after_what_they_depend_on() -> None:
    from ccbench.vm.guest import resolve

    kernel = resolve()
    order = initramfs.load_order(kernel, [*initramfs.NETWORK_MODULES, "tcp_bbr", "tcp_yeah"])
    for i, name in enumerate(order):
        for dep in initramfs.module_dependencies(kernel.module_path(name)):
            assert dep in order[:i], f"{name} needs {dep} first"
    assert {"virtio_net", "virtio_pci", "tcp_bbr", "tcp_vegas", "tcp_yeah"} <= set(order)


@needs_vm
def test_the_guest_boots_in_seconds_and_offers_every_congestion_control() -> None:
    from ccbench.vm.probe import probe

    report = probe()
    assert report.release.startswith("6.1.0-") and report.accelerator in ("kvm", "tcg")
    assert {"reno", "cubic", "bbr", "vegas", "dctcp"} <= set(report.congestion_control)
    assert report.boot_s < 30 and len(report.vcpu_threads) == 1 and report.policy == ["SCHED_OTHER"]


@needs_vm
@needs_root
def test_a_vcpu_under_a_deadline_share_gets_that_share() -> None:
    from ccbench.vm.probe import probe

    report = probe(vcpus=1, share=0.25, period_ns=10_000_000, busy_s=4.0)
    assert report.policy == ["SCHED_DEADLINE 2500000/10000000/10000000 ns"]
    [use] = report.vcpu_cpu_use
    assert abs(use - 0.25) <= 0.03, use


@needs_vm
def test_killing_ccbench_leaves_no_qemu(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ccbench", "vm", "probe", "--busy", "60s"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    qemu = None
    deadline = time.monotonic() + 120
    while qemu is None and time.monotonic() < deadline and proc.poll() is None:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        pids = children.read_text().split() if children.exists() else []
        qemu = next((int(p) for p in pids if "qemu" in Path(f"/proc/{p}/comm").read_text()), None)
        time.sleep(0.1)
    assert qemu is not None, "QEMU never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    for _ in range(100):
        if not Path(f"/proc/{qemu}").exists() or "Z" in Path(f"/proc/{qemu}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"QEMU {qemu} outlived ccbench")
    if os.geteuid() == 0:  # a recorded run: cleanup removes its working directory too
        runs = [r for r in state.stale_runs() if r.owner_pid == proc.pid]
        assert len(runs) == 1 and runs[0].workdir.is_dir()
        assert run_cli("kernel", "cleanup").returncode == 0
        assert not runs[0].workdir.exists() and not runs[0].path.exists()


@pytest.mark.parametrize(
    "args, line",
    [
        (["vm", "probe", "--cpu-share", "140%"], "error: --cpu-share: '140%' is out of range"),
        (["vm", "probe", "--cpu-slice", "100us"], "error: --cpu-slice: must be from 1ms to 1s"),
        (["vm", "probe", "--guest-kernel", "nope"], "error: --guest-kernel: 'nope': allowed: debian:6.1"),
        (["vm", "probe", "--guest-kernel", "debian:7.0"], "error: --guest-kernel: 'debian:7.0': allowed: debian:6.1"),
    ],
)
def test_refusals_are_one_line(args: list[str], line: str) -> None:
    res = run_cli(*args)
    assert res.returncode == 2 and res.stderr.startswith(line) and res.stderr.count("\n") == 1, res.stderr


def test_the_cost_fit_recovers_known_costs() -> None:
    from ccbench.engines.vm.calibrate import Sample, fit

    idle, ack, seg, skb, wake = 0.05, 3000e-9, 1200e-9, 20e-6, 90e-6
    points = (
        (4.0, 1000, 3000, 1500, 2000),
        (4.5, 8000, 9000, 800, 500),
        (5.0, 3000, 20000, 2000, 6000),
        (4.2, 12000, 40000, 3000, 100),
        (4.8, 5000, 10000, 5000, 9000),
        (5.1, 2000, 4000, 1000, 300),
    )
    # Preemptions (the 9999) are recorded but do not enter the fit.
    samples = [
        Sample("x", 1, wall, idle * wall + ack * a + seg * s + skb * k + wake * z, a, s, 0.0, z, 9999, k)
        for wall, a, s, k, z in points
    ]
    got = fit(samples)
    want = (idle, 3000, 1200, 20_000, 90_000)
    have = (got.idle, got.ack_ns, got.packet_ns, got.burst_ns, got.idle_exit_ns)
    assert all(abs(g - w) < 1e-2 * max(1e-6, w) for g, w in zip(have, want)), got
    # Untraced samples fit no refills.
    assert got.idle_refill_ns == got.resume_ns == got.cache_decay_ns == 0 and got.r_squared > 0.999999
    # With the idle guest's CPU measured, only the per-unit costs are fitted.
    given = fit(samples, idle)
    assert given.idle == idle and abs(given.ack_ns - 3000) < 30 and abs(given.idle_exit_ns - 90_000) < 900, given


def test_the_cost_fit_finds_what_coming_back_costs_and_how_fast_caches_cool() -> None:
    import math

    from ccbench.engines.vm.calibrate import Sample, fit
    from ccbench.vm.switches import bin_centre_ns

    # Absences of 0.1, 1 and 10 ms (histogram bins 10, 20 and 30), and a cache decay of
    # 2 ms: a sleep's refill 400 us, a hold's 700 us, on top of 50 us per ACK and 60 us
    # per wake.
    decay, refill, resume = 2e6, 400e-6, 700e-6
    cold = {b: 1 - math.exp(-bin_centre_ns(b) / decay) for b in (10, 20, 30)}
    mixes = (
        (3000, {10: 2000, 20: 500}, {}),
        (1500, {20: 1500}, {30: 50}),
        (800, {30: 300}, {30: 100}),
        (4000, {10: 4000}, {20: 200}),
        (2500, {20: 900, 30: 100}, {10: 300}),
        (1200, {10: 100}, {30: 90}),
    )
    samples = []
    for acks, slept, held in mixes:
        sleeps = sum(slept.values())
        cpu = (
            50e-6 * acks
            + 60e-6 * sleeps
            + sum(n * cold[b] for b, n in slept.items()) * refill
            + sum(n * cold[b] for b, n in held.items()) * resume
        )
        absences = {
            "bins_per_decade": 10,
            "slept": [[b, n] for b, n in slept.items()],
            "held": [[b, n] for b, n in held.items()],
            "slept_only": [[b, n] for b, n in slept.items()],
        }
        samples.append(Sample("x", 1, 5.0, cpu, acks, 0, 0.0, sleeps, 0, 0, absences))
    got = fit(samples, 0.0)
    assert got.cache_decay_ns == decay and got.r_squared > 0.999999, got
    assert abs(got.ack_ns - 50_000) < 500 and abs(got.idle_exit_ns - 60_000) < 600
    assert abs(got.idle_refill_ns - 400_000) < 4000 and abs(got.resume_ns - 700_000) < 7000, got


def test_without_root_or_qemu_the_vm_engine_refuses_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccbench.cli import main
    from ccbench.vm import qemu

    argv = ["run", "--engine", "vm", "--duration", "1s"]
    with monkeypatch.context() as m:
        m.setattr(os, "geteuid", lambda: 1000)
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: engine: the VM engine needs root") and len(err.splitlines()) == 1
    if os.geteuid() != 0:
        return
    monkeypatch.setattr(qemu, "QEMU", "qemu-system-none")
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: engine: the VM engine needs qemu-system-none") and len(err.splitlines()) == 1


@needs_root
def test_validate_cpu_refuses_a_bad_cell_before_running_any(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_cli("validate", "--cpu", "--quick", "--cca", "nosuch", "--out", str(out))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and not out.exists()
    assert res.stderr.startswith("error: flows[0].cca: unknown algorithm 'nosuch'") and "(cell nosuch 15%" in res.stderr


@needs_root
@pytest.mark.parametrize(
    "args, line",
    [
        (["--rate", "5Mbit"], "error: --rate: '5Mbit' is not in the grid; allowed: 10Mbit, 100Mbit, 1Gbit"),
        (["--rtt", "10ms,7ms"], "error: --rtt: '7ms' is not in the grid; allowed: 10ms, 40ms"),
    ],
)
def test_validate_cpu_picks_rates_and_rtts_only_from_its_grid(args: list[str], line: str) -> None:
    res = run_cli("validate", "--cpu", *args)
    assert res.returncode == 2 and res.stderr == line + "\n", res.stderr


def test_rate_and_rtt_filters_are_only_for_the_cpu_grid() -> None:
    res = run_cli("validate", "--rate", "10Mbit")
    assert res.returncode == 2 and res.stderr.startswith("error: "), res.stderr
    res = run_cli("validate", "--pacing")
    assert res.returncode == 2 and res.stderr.startswith("error: --pacing: only with --cpu"), res.stderr
    res = run_cli("validate", "--cpu", "--pacing", "--cca", ",")
    assert res.returncode == 2 and res.stderr.startswith("error: --cca: ',' names no algorithm"), res.stderr


def test_a_cpu_cell_passes_inside_the_vms_range_or_near_its_median() -> None:
    from ccbench.engines.vm.cpu_grid import CpuCell, CpuRow

    cell = CpuCell(0.15, "10ms", "cubic", "100Mbit", "20ms")
    row = lambda sim, runs: CpuRow(cell, 100.0, sim, runs, 0.13)  # noqa: E731
    assert row(11.0, [10.0]).passed and not row(12.0, [10.0]).passed  # 15% of the one run
    assert row(40.0, [10.0, 12.0, 51.0]).passed  # inside the range
    assert not row(60.0, [10.0, 12.0, 51.0]).passed  # beyond it, and 5x the median
    assert row(4.0, [1.0, 2.0, 3.0]).passed  # all under 5% of the link
    assert row(40.0, [10.0, 12.0, 51.0]).vm_shown == "12.0 [10.0–51.0]"


def test_the_simulator_standing_in_for_the_vm_holds_as_many_acks_as_its_receive_path() -> None:
    from ccbench.scenario import Scenario
    from ccbench.vm.sender import RECEIVE_PATH_PACKETS, TAP_QUEUE, VIRTIO_RX_QUEUE
    from ccbench.engines.vm.cpu_grid import CpuCell

    assert RECEIVE_PATH_PACKETS == VIRTIO_RX_QUEUE + TAP_QUEUE == 1256
    held = CpuCell(0.15, "10ms", "cubic", "100Mbit", "20ms").scenario("5s", None, 4_000_000, 250, 1256)
    assert held["host"]["rx_ring"] == 1256
    Scenario.from_dict(held)  # a valid scenario
    # A cell without a host stays without one: the ring is the host model's.
    assert "host" not in CpuCell(1.0, "1ms", "cubic", "100Mbit", "20ms").scenario("5s", None, None, 250, 1256)
    # The VM's own scenario carries no ring (the VM engine refuses one).
    assert "rx_ring" not in CpuCell(0.15, "10ms", "cubic", "100Mbit", "20ms").scenario("5s", None)["host"]


def test_a_cpu_cell_shows_how_each_engine_sent() -> None:
    from ccbench.engines.vm.cpu_grid import CpuCell, CpuRow, TxShape, markdown

    # 2,750 skbs of 16,500 segments in 5 s of 10 ms slices: 5.5 skbs per slice, 6 segments each.
    vm = TxShape.of(2750, 16500, "5s", "10ms")
    assert (vm.skbs_per_slice, vm.segs_per_skb) == (5.5, 6.0)
    assert TxShape.median([vm, TxShape(4.0, 2.0), TxShape(6.0, 7.0)]) == TxShape(5.5, 6.0)
    cell = CpuCell(0.15, "10ms", "cubic", "100Mbit", "20ms")
    row = CpuRow(cell, 100.0, 59.0, [31.6], 0.13, TxShape(11.7, 4.37), vm)
    assert "| 11.7 (4.4) / 5.5 (6.0) |" in markdown([row], [], {})
    assert "| - / - |" in markdown([CpuRow(cell, 100.0, 59.0, [31.6], 0.13)], [], {})


def test_a_cell_the_testbeds_io_path_held_is_told_apart() -> None:
    from ccbench.engines.vm.cpu_grid import CpuCell, CpuRow, agreement, markdown

    cell = CpuCell(1.0, "1ms", "cubic", "1Gbit", "1ms", 5, pacing=True)
    row = lambda sim, io: CpuRow(cell, 1000.0, sim, [440.0], 0.9, vm_io_waiting=io)  # noqa: E731
    assert row(450.0, 0.8).verdict == "ok"  # agreeing cells stay ok, however held
    assert row(950.0, 0.8).verdict == "testbed"  # QEMU's main thread waited 80% of the run
    assert row(950.0, 0.3).verdict == "differs"
    assert row(950.0, None).verdict == "differs"  # a run kept from before it was measured
    rows = [row(450.0, 0.8), row(950.0, 0.8), row(950.0, 0.3)]
    assert agreement(rows).startswith("1 of 3 cells agree; 1 more differ where QEMU's main thread")
    assert agreement(rows[:1]) == "1 of 1 cells agree."
    table = markdown(rows, [], {})
    assert "| 80% |" in table and "| 30% |" in table and table.index("| differs |") < table.index("| testbed |")


def test_a_threshold_over_cells_the_testbed_held_is_told_apart() -> None:
    from ccbench.engines.vm.cpu_grid import CpuCell, CpuRow, thresholds

    def rows(io: float) -> list[CpuRow]:
        # BBR under half of Cubic at 10% on the simulator, at 10% and 50% on the VM.
        return [
            CpuRow(CpuCell(share, "10ms", cca, "1Gbit", "10ms"), 1000.0, sim, [vm], 0.1, vm_io_waiting=io)
            for share, cca, sim, vm in (
                (0.1, "bbr", 10.0, 10.0),
                (0.1, "cubic", 400.0, 300.0),
                (0.5, "bbr", 390.0, 100.0),
                (0.5, "cubic", 400.0, 300.0),
            )
        ]

    [held] = thresholds(rows(0.8))
    assert (held.sim_share, held.vm_share, held.verdict) == (0.1, 0.5, "testbed")
    assert [t.verdict for t in thresholds(rows(0.2))] == ["differs"]


def test_the_cpu_table_names_the_testbed_its_vm_runs_had() -> None:
    from ccbench.engines.vm.cpu_grid import CpuCell, CpuRow, _testbed, markdown

    cell = CpuCell(0.15, "10ms", "cubic", "100Mbit", "20ms")
    placed = _testbed(
        {"accelerator": "tcg", "placement": "the vCPUs (SCHED_DEADLINE) on any CPU; the rest on CPU(s) 1"}
    )
    assert placed == "TCG, the vCPUs (SCHED_DEADLINE) on any CPU; the rest on CPU(s) 1"
    assert _testbed({}) == "?, the host's threads not placed"  # a run recorded before either was kept
    row = CpuRow(cell, 100.0, 59.0, [31.6], 0.13, vm_testbed=(placed,))
    head = markdown([row], [], {"guest": "debian:6.1"}).splitlines()[0]
    assert head.startswith(f"Simulator vs VM (debian:6.1; {placed}); ")
    assert head.endswith("the simulator's receive ring is the VM's receive path, 1256 packets")


def _own_kernel(root: Path, image: bytes = b"bzImage") -> Path:
    (root / "boot").mkdir(parents=True)
    (root / "boot" / "vmlinuz-6.12.0-own").write_bytes(image)
    (root / "lib" / "modules" / "6.12.0-own").mkdir(parents=True)
    return root


def test_sweeps_and_replications_take_a_guest_kernel_for_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ccbench import ScenarioError, engines
    from ccbench.engines.vm import GUEST_KERNEL_ENV

    # use_by_default sets the variable itself: set it here first, so that the test's end
    # restores it (monkeypatch restores only what it saw set or deleted).
    monkeypatch.setenv(GUEST_KERNEL_ENV, "debian:6.1")
    monkeypatch.delenv(GUEST_KERNEL_ENV)
    own = _own_kernel(tmp_path / "k")
    with pytest.raises(ScenarioError, match="is not an option of --engine sim"):
        engines.use_by_default("sim", guest_kernel=str(own))
    assert engines.get("vm").guest_kernel == "debian:6.1"
    engines.use_by_default("vm", guest_kernel=str(own))
    # The default of every VM run of this process, and of the workers it starts.
    assert os.environ[GUEST_KERNEL_ENV] == str(own) and engines.get("vm").guest_kernel == str(own)
    assert engines.get("vm", guest_kernel="debian:6.12").guest_kernel == "debian:6.12"
    # Results of a rebuilt kernel at the same path are not those of the old one.
    from ccbench.vm import guest

    first = guest.resolve(str(own)).identity
    (own / "boot" / "vmlinuz-6.12.0-own").write_bytes(b"rebuilt")
    assert first.startswith(f"{own}@") and guest.resolve(str(own)).identity != first


def test_calibration_paces_with_the_bbr_the_guest_kernel_has() -> None:
    from ccbench.engines.vm.calibrate import DEFAULT_POINTS, with_paced_bbr
    from ccbench.vm.qemu import VmError

    assert with_paced_bbr(DEFAULT_POINTS, ["reno", "cubic", "bbr"]) == list(DEFAULT_POINTS)
    v3 = with_paced_bbr(DEFAULT_POINTS, ["reno", "cubic", "bbr3", "bbr3_2brobust"])
    assert {p.cca for p in v3} == {"cubic", "bbr3"} and len(v3) == len(DEFAULT_POINTS)
    with pytest.raises(VmError, match="offers no BBR"):
        with_paced_bbr(DEFAULT_POINTS, ["reno", "cubic"])
