"""``ccbench validate``: the simulator against the kernel on a grid of scenarios (with
--cpu, the sender-CPU model against the VM engine: ``validate_cpu``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click

from .. import _core
from ..errors import ScenarioError
from ..lifecycle import signals_interrupt
from .common import duration_flag, out_dir
from .validate_cpu import validate_cpu

MAX_VALIDATE_REPS = 100


@click.command()
@click.option("--quick", is_flag=True, help="The quick grid: a cell or two of every family, 5 s, one repetition.")
@click.option(
    "--family",
    metavar="NAME[,NAME...]",
    help="Only these families of cells: base, loss, mix, fairness, rtt-unfairness, staggered, trace, aqm, ecn, "
    "rwnd, sndbuf, rmem, sized, connect (connections opened when due, with and without Fast Open), mtu (a path MTU below the hosts', with ICMP and as a black hole), bpf (the kernel's own BPF congestion controls as objects on both engines); and algorithms (Linux's other congestion controls against their own modules in a VM guest, "
    "and this host's kernel where it has them), which runs only when named.",
)
@click.option(
    "--cell",
    "cell_names",
    metavar="TEXT[,TEXT...]",
    help="Only cells whose name contains one of these, e.g. 'cubic 10Mbit 200ms'.",
)
@click.option(
    "--reps",
    type=int,
    metavar="N",
    help="Repetitions per cell on the kernel (default 3; 1 with --quick), or with --cpu on the VM (default 3).",
)
@click.option("--duration", metavar="TIME", help="Length of each run (default 20s; 5s with --quick).")
@click.option(
    "--cca",
    metavar="NAME[,NAME...]",
    help="Only cells whose flows all use these algorithms; with --cpu, "
    "the grid's algorithms (default: every BBR version the guest kernel has, and cubic; bbr_2brobust and "
    "bbr3_2brobust are BBR with the 2BRobust patch).",
)
@click.option(
    "--substitute",
    metavar="NAME=bpf:PATH",
    help="Run a BPF congestion control (a .bpf.o, or its C source) in place of NAME in the cells that use it, "
    "on both engines: e.g. cubic=bpf:my_cubic.bpf.c.",
)
@click.option("--no-bench", is_flag=True, help="Skip the emulator's capacity benchmark (20, 50, 100 Mbit/s).")
@click.option(
    "--out",
    metavar="DIR",
    help="Write validate.csv, validate.json and validate.md here, every run's "
    "files under DIR/runs, and each finished cell to DIR/cells.jsonl: run again with the same DIR to "
    "resume a grid that was stopped.",
)
@click.option(
    "--rerun-sim",
    is_flag=True,
    help="With --out: cells already in DIR/cells.jsonl keep their kernel "
    "runs and the simulator runs again (after a change to the simulator).",
)
@click.option(
    "--report",
    "html",
    is_flag=True,
    help="With --out: also the grid as an HTML page, DIR/report/index.html "
    "('ccbench report DIR' renders it again from validate.json).",
)
@click.option(
    "--cpu",
    is_flag=True,
    help="Instead: the sender-CPU model against the VM engine on the 2BRobust "
    "grid (share x slice x algorithm x rate x RTT); with --out, VM results kept in DIR/cpu-cells.jsonl are "
    "not run again (resume, or the simulator alone after a change to it).",
)
@click.option(
    "--pacing",
    is_flag=True,
    help="With --cpu: the phone study's grid instead (1, 5 and 20 flows of Cubic "
    "and BBR, each paced and not, at 100 Mbit/s, 200 Mbit/s and 1 Gbit/s, 1 ms, the vCPU unreserved or held "
    "to 25% or 15% of 1 ms slices); the RTT is judged too.",
)
@click.option(
    "--cpu-costs",
    metavar="FILE",
    help="With --cpu: the simulator's sender host costs ([host.cost] and "
    "host.tx_completion, from 'ccbench calibrate-host').",
)
@click.option(
    "--guest-kernel", default="debian:6.1", show_default=True, metavar="SPEC", help="With --cpu: the VM's kernel."
)
@click.option("--rate", "rates", metavar="RATE[,RATE...]", help="With --cpu: only these bottleneck rates of the grid.")
@click.option("--rtt", "rtts", metavar="TIME[,TIME...]", help="With --cpu: only these RTTs of the grid.")
def validate(
    quick: bool,
    family: Optional[str],
    cell_names: Optional[str],
    reps: Optional[int],
    duration: Optional[str],
    cca: Optional[str],
    substitute: Optional[str],
    no_bench: bool,
    out: Optional[str],
    rerun_sim: bool,
    html: bool,
    cpu: bool,
    pacing: bool,
    cpu_costs: Optional[str],
    guest_kernel: str,
    rates: Optional[str],
    rtts: Optional[str],
) -> None:
    """Run a grid of scenarios on the simulator and on the kernel and compare them.

    The full grid (about 120 cells, 20 s, 3 repetitions): one flow at 10, 100 and 500
    Mbit/s, 5 to 200 ms, 0.5 to 8 BDP; random loss 0.1-30% (also without SACK) and
    bursty loss; BBR and Cubic sharing at 0.25-16 BDP; 2 and 4 flows; RTTs 10 and 50 ms;
    staggered starts; LTE traces; CoDel and FQ-CoDel; ECN; receive windows and buffers; send
    buffers; sized and repeated downloads, also on connections opened when due, with and
    without Fast Open; a path MTU below the hosts', with ICMP and as a black hole; the
    kernel's BPF Cubic and DCTCP as objects on both engines. Needs root (the kernel engine). With --cpu, the 2BRobust grid on the simulator and
    the VM engine instead (--quick: 6 cells); with --cpu --pacing, the phone study's
    (--quick: 6 cells).
    """
    from ..kernel import host

    host.require_root()
    if cpu:
        not_with_cpu = {
            "--family": family,
            "--cell": cell_names,
            "--report": html,
            "--rerun-sim": rerun_sim,
            "--substitute": substitute,
        }
        _refuse("not with --cpu", not_with_cpu)
        validate_cpu(quick, pacing, duration, cca, cpu_costs, guest_kernel, out, rates, rtts, _checked_reps(reps, 3))
        return
    _refuse("only with --cpu", {"--pacing": pacing, "--cpu-costs": cpu_costs, "--rate": rates, "--rtt": rtts})
    if html and out is None:
        raise ScenarioError("--report", "needs --out DIR (the page is written to DIR/report)")
    if rerun_sim and (out is None or not (Path(out) / "cells.jsonl").is_file()):
        raise ScenarioError("--rerun-sim", "needs --out DIR holding a grid's cells.jsonl")
    _validate_kernel(quick, family, cell_names, reps, duration, cca, substitute, no_bench, out, rerun_sim, html)


def _refuse(why: str, flags: dict[str, Any]) -> None:
    """ScenarioError on the first of ``flags`` given (not None nor False)."""
    for name, value in flags.items():
        if value is not None and value is not False:
            raise ScenarioError(name, why)


def _checked_reps(reps: Optional[int], default: int) -> int:
    """``--reps``, checked, or the grid's default."""
    if reps is None:
        return default
    if not 1 <= reps <= MAX_VALIDATE_REPS:
        raise ScenarioError(
            "--reps",
            f"must be from 1 to {MAX_VALIDATE_REPS} (each repetition runs every cell on "
            "the kernel or the VM in real time)",
        )
    return reps


def _validate_kernel(
    quick: bool,
    family: Optional[str],
    cell_names: Optional[str],
    reps: Optional[int],
    duration: Optional[str],
    cca: Optional[str],
    substitute: Optional[str],
    no_bench: bool,
    out: Optional[str],
    rerun_sim: bool,
    html: bool,
) -> None:
    """The grid on the simulator and the kernel, printed and with --out written."""
    from .. import validate as v
    from ..validate import command

    cells = command.grid(quick, family)
    params: dict[str, Any] = {"duration": "5s", "reps": 1} if quick else {"duration": "20s", "reps": 3}
    params["reps"] = _checked_reps(reps, params["reps"])
    if duration is not None:
        duration_flag(duration, "--duration")
        params["duration"] = duration
    cells = command.substitute(command.select(cells, family, cell_names, cca), substitute)
    out_dir(out)
    click.echo(
        f"validating {len(cells)} scenario(s) x {params['reps']} repetition(s) of {params['duration']} on both engines",
        err=True,
    )
    with signals_interrupt():
        results = v.run_grid(
            cells, params["duration"], params["reps"], None if out is None else Path(out), rerun_sim=rerun_sim
        )
        bench = [] if no_bench else v.emulator_benchmark()
    command.print_results(results, bench)
    if out is not None:
        _write(Path(out), results, bench, quick, params, html)


def _write(out: Path, results: Any, bench: Any, quick: bool, params: dict[str, Any], html: bool) -> None:
    from .. import validate as v
    from ..kernel import host

    facts = host.facts()
    meta = {
        "command": "ccbench validate" + (" --quick" if quick else ""),
        "kernel": facts.kernel,
        "kernel_hz": facts.kernel_hz,
        "version": _core.version(),
        "duration": params["duration"],
        "reps": params["reps"],
    }
    paths = v.write(out, results, bench, meta)
    if html:
        from ..validate.report import build_from_file

        paths.append(build_from_file(out / "validate.json", out / "report"))
    click.echo(f"wrote {', '.join(str(p) for p in paths)}")
