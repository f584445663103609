"""The ``ccbench`` command.

Every bad input ends the same way: one line ``error: <field>: <what is allowed>`` on
stderr, exit status 2, nothing written.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional, Sequence, TypeVar

import click

from . import _core, engines
from .engines.base import capture_dir
from .errors import InternalError, ScenarioError
from .kernel.host import KernelRunError
from .lifecycle import signals_interrupt
from .vm.guest import SERIES as GUEST_SERIES
from .vm.qemu import VmError

EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
T = TypeVar("T")


def _version_message() -> str:
    from . import __version__

    return f"ccbench {__version__} (simulator {_core.version()})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_message())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.option(
    "--debug",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, p, v: _set_debug(v),
    help="On an internal fault, print the traceback (and the simulator's backtrace).",
)
def cli() -> None:
    """ccbench: a TCP congestion-control laboratory."""


_debug = False


def _set_debug(on: bool) -> None:
    global _debug
    _debug = bool(on)
    _core.set_debug(_debug)


@cli.command()
@click.argument("scenario", required=False, metavar="[SCENARIO.toml]")
@click.option("--cca", metavar="NAME[,NAME...]", help="Algorithm(s); one flow of each (default cubic).")
@click.option("--flows", type=int, metavar="N", help="N flows of each algorithm (default 1).")
@click.option("--rate", metavar="RATE", help="Bottleneck rate, e.g. 100Mbit, 1Gbit (default 100Mbit).")
@click.option("--rtt", metavar="TIME", help="Base RTT of the bottleneck path, e.g. 40ms (default 40ms).")
@click.option("--buffer", metavar="SIZE", help="Bottleneck buffer: 1bdp, 256KB, 100pkt (default 1bdp).")
@click.option("--loss", metavar="LOSS", help="Random loss at the bottleneck: 0.5% or 0.005 (default 0).")
@click.option("--duration", metavar="TIME", help="Simulated time, e.g. 30s (default 10s).")
@click.option("--seed", type=int, metavar="N", help="Random seed (default 1).")
@click.option("--interval", metavar="TIME", help="Time-series interval, at least 1ms (default 100ms).")
@click.option("--size", metavar="SIZE", help="Bytes per flow, e.g. 20MB (default: bulk until the end).")
@click.option("--pacing", type=click.Choice(["on", "off"]), help="Force pacing on or off (default: per algorithm).")
@click.option("--repeat", type=int, metavar="N", help="With --size: N downloads per flow, each on a new connection.")
@click.option("--pause", metavar="TIME", help="With --repeat: wait this long after each download (default 0s).")
@click.option(
    "--rwnd",
    metavar="SIZE|auto",
    help="Receive-window limit of every flow, e.g. 3MB (default 6MiB); "
    "auto: autotune the receive buffer up to the limit, as Linux does.",
)
@click.option("--cpu", metavar="PRESET", help="Sender host CPU: server, phone-lowend, phone-midend, phone-highend.")
@click.option("--cpu-share", metavar="SHARE", help="CPU available in deadline-style slices, e.g. 25% (default 100%).")
@click.option("--cpu-slice", metavar="TIME", help="Period of the CPU slices, e.g. 10ms (default 10ms).")
@click.option("--cpu-trace", metavar="FILE", help="CPU on/off intervals, one '<on> <off>' pair per line.")
@click.option("--pacing-stride", type=int, metavar="N", help="Burst and idle N times longer when pacing (default 1).")
@click.option("--fixed-cwnd", type=int, metavar="SEGS", help="Hold every flow's cwnd at SEGS segments.")
@click.option("--fixed-pacing-rate", metavar="RATE", help="Hold every flow's pacing rate, e.g. 20Mbit.")
@click.option("--freeze-cc", is_flag=True, default=None, help="Skip the algorithms' per-ACK model updates.")
@click.option(
    "--bbr-inflight-deficit",
    is_flag=True,
    default=None,
    help="2BRobust: BBR flows pace at high gain while less than a BDP is in flight.",
)
@click.option("--tso-rtt-log", type=int, metavar="N", help="net.ipv4.tcp_tso_rtt_log; 0 = older kernels (default 9).")
@click.option(
    "--trace", metavar="PATH", help="Bottleneck capacity from a Mahimahi delivery-opportunity trace (replaces --rate)."
)
@click.option("--ack-trace", "ack_trace", metavar="PATH", help="Delivery-opportunity trace for the ACK direction.")
@click.option(
    "--aqm",
    type=click.Choice(["droptail", "codel", "fq_codel"]),
    help="Queueing discipline at the bottleneck (default droptail).",
)
@click.option(
    "--set",
    "set_values",
    multiple=True,
    metavar="PATH=VALUE",
    help="Set any scenario value, named "
    "as in a scenario file, after the other flags: link.rate=50Mbit, tcp.mss=1400, flows[1].cca=bbr, "
    "flows.rwnd=1MB (every flow). Repeatable.",
)
@click.option("--out", metavar="DIR", help="Write summary.json, flows.parquet, link.parquet, scenario.toml here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary JSON instead of tables.")
@click.option("--plot", "make_plots", is_flag=True, help="With --out: also write figures of every flow to DIR/plots.")
@click.option(
    "--format",
    "formats",
    metavar="FMT[,FMT]",
    help="With --out: also write the run as flent data "
    "(DIR/run.flent.gz) and/or an iperf3 -J report (DIR/iperf3.json): flent, iperf3.",
)
@click.option(
    "--engine", type=click.Choice(engines.names()), default=engines.DEFAULT, show_default=True, help=engines.help_text()
)
@click.option(
    "--cpu-costs",
    metavar="FILE",
    help="Sender host costs ([host.cost], and host.tx_completion if "
    "given) from a file that 'ccbench calibrate-host' writes.",
)
@click.option(
    "--guest-kernel",
    metavar="SPEC",
    help="VM engine: the guest's kernel, debian:6.1 (default), "
    "debian:6.12, debian:PACKAGE=VERSION, or a kernel of your own (see docs/vm-engine.md).",
)
@click.option("--vcpus", type=int, metavar="N", help="VM engine: the guest's vCPUs (default 1).")
@click.option("--allow-large", is_flag=True, help="Run even if the estimated memory or time is beyond this machine.")
@click.option(
    "--pcap",
    metavar="POINT[,POINT]",
    help="Capture packets to DIR/capture-<point>.pcap at: sender, "
    "bottleneck-in, bottleneck-out, receiver (needs --out DIR or [capture] dir).",
)
@click.option("--pcap-flows", metavar="N[,N]", help="Capture only these flows (0-based; default every flow).")
def run(
    scenario: Optional[str],
    out: Optional[str],
    as_json: bool,
    engine: str,
    guest_kernel: Optional[str],
    vcpus: Optional[int],
    cpu_costs: Optional[str],
    **flags: Any,
) -> None:
    """Run a scenario file, or a scenario built from flags.

    Flags given with a scenario file override its values; --cca then replaces its flows.
    """
    from .result import summary_bytes
    from .scenario import read_toml

    make_plots = flags.pop("make_plots")
    allow_large = flags.pop("allow_large")
    if make_plots and out is None:
        raise ScenarioError("--plot", "needs --out DIR; the figures go to DIR/plots")
    exports = _export_formats(flags.pop("formats"), out)
    if flags["pacing"] is not None:
        flags["pacing"] = flags["pacing"] == "on"
    base = read_toml(scenario) if scenario is not None else None
    runner = engines.get(engine, guest_kernel=guest_kernel, vcpus=vcpus, allow_large=allow_large or None)
    sc = runner.from_flags(base=base, **flags)
    if cpu_costs is not None:
        sc = runner.load(_with_costs(sc, cpu_costs))
    sc = runner.check(sc)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ScenarioError("--out", f"{out!r} exists and is not a directory")
    if sc.capture is not None:
        try:
            capture_dir(sc, out)
        except ScenarioError as e:
            if flags["pcap"] is not None:
                raise ScenarioError("--pcap", "needs --out DIR; the captures go to DIR/capture-<point>.pcap") from None
            raise e

    result = _with_status(lambda: runner.run(sc, capture_to=out), quiet=as_json, text=runner.status)

    if as_json:
        sys.stdout.buffer.write(summary_bytes(result.summary))
        sys.stdout.flush()
    else:
        from .report import render

        render(result.summary)
    if out is not None:
        try:
            written = result.save(out)
        except OSError as e:
            raise ScenarioError("--out", f"cannot write to {out!r}: {e.strerror or e}") from None
        # With --json, stdout carries only the JSON.
        for line in (
            f"wrote {out}: {', '.join(p.name for p in written)}",
            f"  flows.parquet columns: {', '.join(map(str, result.flows.columns)) or '(none)'}",
            f"  link.parquet columns: {', '.join(map(str, result.link.columns)) or '(none)'}",
        ):
            click.echo(line, err=as_json)
        if exports:
            paths = [exports[fmt](result, out) for fmt in exports]
            click.echo(f"wrote {out}: {', '.join(p.name for p in paths)}", err=as_json)
        if make_plots:
            _write_plots(out, None, None, "png,svg", err=as_json)
    if sc.capture is not None:
        where = Path(capture_dir(sc, out) or ".")
        names = ", ".join(f"capture-{p}.pcap" for p in sc.capture.points)
        click.echo(f"wrote {where}: {names}", err=as_json)


def _duration_flag(value: str, flag: str) -> int:
    """A duration flag's value in ns; ScenarioError on ``flag`` if it is not one."""
    from .units import parse_duration

    try:
        return parse_duration(value)
    except ValueError as e:
        raise ScenarioError(flag, str(e)) from None


def _with_costs(sc: Any, path: str) -> dict[str, Any]:
    """The scenario's document with the host entries of the file at ``path``."""
    from . import host_costs
    from .scenario import _without_none

    return host_costs.laid_over(_without_none(sc.to_dict()), host_costs.read(path))


def _export_formats(formats: Optional[str], out: Optional[str]) -> dict[str, Callable[[Any, str], Path]]:
    """The writers ``run --format`` asks for, in the order given."""
    if formats is None:
        return {}
    if out is None:
        raise ScenarioError("--format", "needs --out DIR; the files go to DIR/run.flent.gz and DIR/iperf3.json")
    from .exporters.flent import write_flent
    from .exporters.iperf3 import write_iperf3

    writers: dict[str, Callable[[Any, str], Path]] = {"flent": write_flent, "iperf3": write_iperf3}
    chosen = {}
    for name in (f.strip().lower() for f in formats.split(",")):
        if name not in writers:
            raise ScenarioError("--format", f"expected flent or iperf3 (comma-separated), got {name!r}")
        chosen[name] = writers[name]
    return chosen


def _with_status(work: Callable[[], T], quiet: bool, text: str) -> T:
    """Show a spinner on an interactive stderr while the engine runs."""
    if quiet or not sys.stderr.isatty():
        return work()
    from rich.console import Console

    with Console(stderr=True).status(text):
        return work()


@cli.group()
def kernel() -> None:
    """Housekeeping of the kernel engine."""


@kernel.command("cleanup")
def kernel_cleanup() -> None:
    """Remove what interrupted kernel runs left behind.

    Only runs whose owner process is gone are touched, and only the namespaces,
    devices and processes their state files (under /run/ccbench) recorded.
    """
    from .kernel import host, state

    host.require_root()
    removed = state.cleanup_stale()
    for line in removed:
        click.echo(f"removed {line}")
    live = state.live_runs()
    if not removed:
        click.echo("nothing to clean up")
    if live:
        click.echo(f"left alone: {len(live)} run(s) in progress ({', '.join(st.id for st in live)})")


MAX_VALIDATE_REPS = 100


@cli.command()
@click.option("--quick", is_flag=True, help="The quick grid: a cell or two of every family, 5 s, one repetition.")
@click.option(
    "--family",
    metavar="NAME[,NAME...]",
    help="Only these families of cells: base, loss, mix, fairness, "
    "rtt-unfairness, staggered, trace, aqm, ecn, rwnd, sized.",
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

    The full grid (about 100 cells, 20 s, 3 repetitions): one flow at 10, 100 and 500
    Mbit/s, 5 to 200 ms, 0.5 to 8 BDP; random loss 0.1-30% (also without SACK) and
    bursty loss; BBR and Cubic sharing at 0.25-16 BDP; 2 and 4 flows; RTTs 10 and 50 ms;
    staggered starts; LTE traces; CoDel and FQ-CoDel; ECN; receive windows; sized and
    repeated downloads.
    Needs root (the kernel engine). With --cpu, the 2BRobust grid on the simulator and
    the VM engine instead (--quick: 6 cells); with --cpu --pacing, the phone study's
    (--quick: 6 cells).
    """
    from . import validate as v
    from .kernel import host
    from .validate import cells as grid
    from .validate import command

    host.require_root()
    if cpu:
        for name, value in (
            ("--family", family),
            ("--cell", cell_names),
            ("--report", html or None),
            ("--rerun-sim", rerun_sim or None),
        ):
            if value is not None:
                raise ScenarioError(name, "not with --cpu")
        _validate_cpu(quick, pacing, duration, cca, cpu_costs, guest_kernel, out, rates, rtts, _reps(reps, 3))
        return
    for name, value in (("--pacing", pacing or None), ("--cpu-costs", cpu_costs), ("--rate", rates), ("--rtt", rtts)):
        if value is not None:
            raise ScenarioError(name, "only with --cpu")
    if html and out is None:
        raise ScenarioError("--report", "needs --out DIR (the page is written to DIR/report)")
    if rerun_sim and (out is None or not (Path(out) / "cells.jsonl").is_file()):
        raise ScenarioError("--rerun-sim", "needs --out DIR holding a grid's cells.jsonl")
    cells = grid.quick_grid() if quick else grid.full_grid()
    params: dict[str, Any] = {"duration": "5s", "reps": 1} if quick else {"duration": "20s", "reps": 3}
    params["reps"] = _reps(reps, params["reps"])
    if duration is not None:
        _duration_flag(duration, "--duration")
        params["duration"] = duration
    cells = command.select(cells, family, cell_names, cca)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ScenarioError("--out", f"{out!r} exists and is not a directory")
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
        facts = host.facts()
        meta = {
            "command": "ccbench validate" + (" --quick" if quick else ""),
            "kernel": facts.kernel,
            "kernel_hz": facts.kernel_hz,
            "version": _core.version(),
            "duration": params["duration"],
            "reps": params["reps"],
        }
        paths = v.write(Path(out), results, bench, meta)
        if html:
            from .validate.report import build_from_file

            paths.append(build_from_file(Path(out) / "validate.json", Path(out) / "report"))
        click.echo(f"wrote {', '.join(str(p) for p in paths)}")


def _reps(reps: Optional[int], default: int) -> int:
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


def _validate_cpu(
    quick: bool,
    pacing: bool,
    duration: Optional[str],
    cca: Optional[str],
    cpu_costs: Optional[str],
    guest_kernel: str,
    out: Optional[str],
    rates: Optional[str],
    rtts: Optional[str],
    reps: int,
) -> None:
    engines.workflow("validate-cpu").command(
        quick=quick,
        pacing=pacing,
        duration=duration,
        cca=cca,
        cpu_costs=cpu_costs,
        guest_kernel=guest_kernel,
        out=out,
        rates=rates,
        rtts=rtts,
        reps=reps,
        version=_core.version(),
        say=lambda line: click.echo(line, err=True),
        show=click.echo,
    )


@cli.command()
@click.argument("capture", metavar="CAPTURE.pcap", required=False)
@click.option(
    "--flow",
    type=int,
    metavar="N",
    help="Only the N-th connection carrying data (0-based, in order of its first packet).",
)
@click.option("--port", type=int, metavar="P", help="Only connections with port P at either end.")
@click.option(
    "--side",
    type=click.Choice(["sender", "receiver"]),
    help="Where the capture was taken (default: detected from timing).",
)
@click.option("--interval", default="100ms", show_default=True, metavar="TIME", help="Time-series interval.")
@click.option("--out", metavar="DIR", help="Write summary.json, flows.parquet, link.parquet, packets.parquet here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary JSON instead of tables.")
@click.option("--plot", "make_plots", is_flag=True, help="With --out: also write the figures to DIR/plots.")
def analyze(
    capture: Optional[str],
    flow: Optional[int],
    port: Optional[int],
    side: Optional[str],
    interval: str,
    out: Optional[str],
    as_json: bool,
    make_plots: bool,
) -> None:
    """Measure the TCP connections of a packet capture (pcap or pcapng) as a run:
    goodput, throughput, retransmissions, RTT, duplicate ACKs, bytes in flight and the
    receive window, written as a run directory that 'ccbench plot' draws."""
    from .capture import analyze_file
    from .units import parse_duration

    if capture is None:
        raise ScenarioError("CAPTURE", "missing; give a pcap or pcapng file")
    if make_plots and out is None:
        raise ScenarioError("--plot", "needs --out DIR; the figures go to DIR/plots")
    try:
        interval_s = parse_duration(interval) / 1e9
    except ValueError as e:
        raise ScenarioError("--interval", str(e)) from None
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ScenarioError("--out", f"{out!r} exists and is not a directory")
    _show_and_save(
        analyze_file(capture, flow=flow, port=port, side=side, interval=interval_s), out, as_json, make_plots
    )


@cli.command("import-iperf3")
@click.argument("report", metavar="FILE.json", required=False)
@click.option("--out", metavar="DIR", help="Write summary.json, flows.parquet, link.parquet here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary JSON instead of tables.")
@click.option("--plot", "make_plots", is_flag=True, help="With --out: also write the figures to DIR/plots.")
def import_iperf3(report: Optional[str], out: Optional[str], as_json: bool, make_plots: bool) -> None:
    """Turn an 'iperf3 -J' report (also --reverse, -P N) into a run directory:
    throughput, retransmissions, snd_cwnd, RTT, rttvar and PMTU per interval."""
    from .importers.iperf3 import import_file

    if report is None:
        raise ScenarioError("FILE", "missing; give the JSON output of 'iperf3 -J'")
    if make_plots and out is None:
        raise ScenarioError("--plot", "needs --out DIR; the figures go to DIR/plots")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ScenarioError("--out", f"{out!r} exists and is not a directory")
    _show_and_save(import_file(report), out, as_json, make_plots)


@cli.command()
@click.argument("run_dir", metavar="RUN_DIR", required=False)
@click.option("--flow", type=int, default=0, show_default=True, metavar="N", help="Index of the flow to plot.")
@click.option("--out", metavar="DIR", help="Write the figures here (default RUN_DIR/plots).")
@click.option(
    "--format", "formats", default="png,svg", show_default=True, metavar="FMT[,FMT]", help="File formats: png, svg."
)
def plot(run_dir: Optional[str], flow: int, out: Optional[str], formats: str) -> None:
    """Plot a run directory written by 'ccbench run --out': flow<N> (throughput, RTT,
    cwnd, pacing and bandwidth estimate, state timeline) and link (queue, drops)."""
    if run_dir is None:
        raise ScenarioError("RUN_DIR", "missing; give a directory written by 'ccbench run --out DIR'")
    _write_plots(run_dir, [flow], out, formats)


def _show_and_save(run: Any, out: Optional[str], as_json: bool, make_plots: bool) -> None:
    """Print a measured run (its summary JSON, or the tables) and, with --out, save it
    (and its figures). With --json, stdout carries only the JSON."""
    from .result import summary_bytes

    if as_json:
        sys.stdout.buffer.write(summary_bytes(run.summary))
        sys.stdout.flush()
    else:
        from .report import render

        render(run.summary)
    if out is not None:
        paths = run.save(out)
        click.echo(f"wrote {out}: {', '.join(p.name for p in paths)}", err=as_json)
        if make_plots:
            _write_plots(out, None, None, "png,svg", err=as_json)


def _write_plots(run_dir: str, flows: Optional[list[int]], out: Optional[str], formats: str, err: bool = False) -> None:
    from .plots import plot_run

    paths = plot_run(run_dir, flows=flows, out=out, formats=formats)
    click.echo(f"wrote {paths[0].parent}: {', '.join(p.name for p in paths)}", err=err)


@cli.command()
@click.argument("run_dir", metavar="[RUN_DIR]", required=False)
@click.option("--sweep", metavar="NAME", help="Report on a sweep in the results store instead of one run.")
@click.option("--store", metavar="DIR", help="Results store to read (default ./ccbench-results).")
@click.option(
    "--out",
    metavar="DIR",
    help="Where to write index.html and its figures (default RUN_DIR/report, or reports/NAME for a sweep).",
)
@click.option(
    "--metric",
    default="goodput_mbps",
    show_default=True,
    metavar="COLUMN",
    help="Metric of the per-algorithm heatmaps (a column of the runs table).",
)
@click.option("--x", metavar="COLUMN", help="Heatmap x axis among the swept conditions (default: buffer).")
@click.option("--y", metavar="COLUMN", help="Heatmap y axis (default: RTT, else the next swept condition).")
@click.option("--facet", metavar="COLUMN", help="One heatmap panel per value of this condition.")
@click.option(
    "--format",
    "formats",
    default="png,svg",
    show_default=True,
    metavar="FMT[,FMT]",
    help="Figure files written beside the page: png, svg.",
)
def report(
    run_dir: Optional[str],
    sweep: Optional[str],
    store: Optional[str],
    out: Optional[str],
    metric: str,
    x: Optional[str],
    y: Optional[str],
    facet: Optional[str],
    formats: str,
) -> None:
    """Write a self-contained HTML report of a run directory, of a stored sweep, or of a
    validation grid (a directory written by 'ccbench validate --out DIR')."""
    from .report_html.command import report_command
    from .validate.report import build_from_file

    report_command(run_dir, sweep, store, out, metric, x, y, facet, formats, pages={"validate.json": build_from_file})


@cli.command()
@click.option("--sweep", required=True, metavar="NAME", help="The stored sweep to learn from.")
@click.option("--store", metavar="DIR", help="Results store to read (default ./ccbench-results).")
@click.option(
    "--objective",
    type=click.Choice(["goodput", "delay", "retrans", "score"]),
    default="goodput",
    show_default=True,
    help="What winning means, besides goodput (always shown).",
)
@click.option("--weights", metavar="goodput=W,delay=W,retrans=W", help="Weights of --objective score (default 1 each).")
@click.option("--cca", metavar="NAME[,NAME...]", help="Only compare these algorithms (default: every one swept).")
@click.option("--max-depth", type=int, default=3, show_default=True, metavar="N", help="Depth of the tree.")
@click.option("--out", metavar="DIR", help="Where to draw the trees (default reports/NAME).")
@click.option("--format", "formats", default="png,svg", show_default=True, metavar="FMT[,FMT]", help="png, svg.")
def advise(
    sweep: str,
    store: Optional[str],
    objective: str,
    weights: Optional[str],
    cca: Optional[str],
    max_depth: int,
    out: Optional[str],
    formats: str,
) -> None:
    """Learn from a stored sweep which algorithm wins where: a decision tree over
    buffer (BDP), loss, RTT, bandwidth, CPU share and flow count."""
    from .advise.command import advise_command

    advise_command(sweep, store, objective, weights, cca, max_depth, out, formats)


from .sweep.command import register as _register_sweep_commands  # noqa: E402  (sweep, results)

_register_sweep_commands(cli)


@cli.command()
@click.option("--rate", required=True, metavar="RATE", help="Bottleneck rate, e.g. 50Mbit.")
@click.option("--rtt", required=True, metavar="TIME", help="Base RTT, e.g. 30ms.")
@click.option("--buffer", required=True, metavar="SIZE", help="Bottleneck buffer: 64KB, 0.5bdp, 100pkt.")
@click.option("--loss", default="0", show_default=True, metavar="LOSS", help="Random loss, e.g. 0.1%.")
@click.option(
    "--flows", type=int, default=1, show_default=True, metavar="N", help="Flows per run (all of one algorithm)."
)
@click.option("--duration", default="10s", show_default=True, metavar="TIME", help="Simulated time per run.")
@click.option("--seeds", type=int, default=5, show_default=True, metavar="N", help="Runs per algorithm and buffer.")
@click.option(
    "--cca", default="cubic,bbr,bbr3", show_default=True, metavar="NAME[,NAME...]", help="Candidate algorithms."
)
@click.option("--reno", is_flag=True, help="Add Reno to the candidates.")
@click.option(
    "--neighbours/--no-neighbours",
    default=True,
    show_default=True,
    help="Also simulate half and double the buffer, to show how sensitive the answer is.",
)
@click.option(
    "--objective",
    type=click.Choice(["goodput", "delay", "retrans", "score"]),
    default="goodput",
    show_default=True,
    help="What to optimise; goodput ties (within 2%) go to the lower RTT.",
)
@click.option("--weights", metavar="goodput=W,delay=W,retrans=W", help="Weights of --objective score.")
@click.option("--workers", type=int, metavar="N", help="Parallel simulations (default: one per core).")
@click.option("--cpu", metavar="PRESET", help="The sender's CPU: server, phone-lowend, phone-midend, phone-highend.")
@click.option("--cpu-share", metavar="SHARE", help="CPU available in slices, e.g. 25% (a VM's vCPU).")
@click.option("--cpu-slice", metavar="TIME", help="Period of the CPU slices (default 10ms).")
def recommend(
    rate: str,
    rtt: str,
    buffer: str,
    loss: str,
    flows: int,
    duration: str,
    seeds: int,
    cca: str,
    reno: bool,
    neighbours: bool,
    objective: str,
    weights: Optional[str],
    workers: Optional[int],
    cpu: Optional[str],
    cpu_share: Optional[str],
    cpu_slice: Optional[str],
) -> None:
    """Simulate the candidate algorithms at one operating point and recommend one, with
    its predicted goodput, RTT and retransmissions and the reasons."""
    from .advise.recommend import recommend_command

    host = {k: v for k, v in (("cpu", cpu), ("cpu_share", cpu_share), ("cpu_slice", cpu_slice)) if v is not None}
    recommend_command(
        rate, rtt, buffer, loss, flows, duration, seeds, cca, reno, neighbours, objective, weights, workers, host
    )


@cli.command()
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option(
    "--kernel",
    "on_kernel",
    is_flag=True,
    help="Run on this machine's kernel with packetdrill (as root, a network namespace per script).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option(
    "--expect", metavar="FILE", help="Compare with verdicts recorded by '--kernel --json' and say where they differ."
)
@click.option(
    "--tolerance-usecs",
    type=click.IntRange(min=0, max=10_000_000),
    metavar="N",
    help="Timing tolerance for every script (default: the script's own, else 4000).",
)
@click.option(
    "--vm",
    "on_vm",
    is_flag=True,
    help="Run on the VM engine's guest kernel with packetdrill (one QEMU "
    "boot; for what this kernel lacks, such as the fq qdisc).",
)
@click.option(
    "--guest-kernel",
    default="debian:sid",
    show_default=True,
    metavar="SPEC",
    help="With --vm: the guest's kernel (as for --engine vm; packetdrill needs Linux 6.18 or later).",
)
@click.option(
    "--packetdrill",
    metavar="PATH",
    help="With --kernel or --vm: this packetdrill binary instead of one built from source into the cache.",
)
def conformance(
    paths: tuple[str, ...],
    on_kernel: bool,
    on_vm: bool,
    guest_kernel: str,
    as_json: bool,
    expect: Optional[str],
    tolerance_usecs: Optional[int],
    packetdrill: Optional[str],
) -> None:
    """Run packetdrill TCP scripts (files, or directories searched for *.pkt) against the
    simulator's TCP sender, with --kernel against this machine's kernel, or with --vm
    against the VM guest's kernel: one line per script (pass, fail with the first
    mismatch, unsupported with the reason) and a count."""
    import json as jsonlib

    from .conformance import command

    scripts = command.collect(list(paths))
    expected = command.load_expected(expect) if expect else None
    echo = (lambda v: None) if as_json else (lambda v: click.echo(command.line(v)))
    if packetdrill is not None and not (on_kernel or on_vm):
        raise ScenarioError("--packetdrill", "only with --kernel or --vm")
    if on_kernel and on_vm:
        raise ScenarioError("--vm", "not with --kernel: one stack per run")
    if on_vm:
        from .conformance.guest import run_guest

        verdicts = run_guest(
            [Path(p) for p in paths],
            None if packetdrill is None else Path(packetdrill),
            tolerance_usecs,
            echo,
            guest_kernel,
        )
        stack = verdicts[0].stack if verdicts else "linux (VM guest)"
    elif on_kernel:
        from .conformance.kernel import run_kernel

        verdicts = run_kernel(
            [Path(p) for p in paths], None if packetdrill is None else Path(packetdrill), tolerance_usecs, echo
        )
        stack = verdicts[0].stack if verdicts else "linux"
    else:
        verdicts = command.run_simulator(scripts, tolerance_usecs, echo)
        stack = "simulator"
    differ = []
    if expected is not None:
        differ = [(v.script, d) for v in verdicts if (d := command.disagreement(v, expected.get(v.script)))]
    if as_json:
        out = command.as_json(verdicts, stack)
        if expected is not None:
            out["differences"] = [{"script": s, "why": d} for s, d in differ]
        click.echo(jsonlib.dumps(out, indent=1))
        return
    click.echo(command.summary(verdicts, stack))
    if expected is not None:
        for s, d in differ:
            click.echo(f"differs     {s}: {d}")
        click.echo(f"{len(verdicts) - len(differ)} of {len(verdicts)} agree with {expect}")


@cli.command()
@click.argument("name", metavar="[NAME]", required=False)
@click.option(
    "--quick/--full",
    default=True,
    show_default=True,
    help="A small grid (a minute or two on two cores), or the study's full grid.",
)
@click.option(
    "--out", metavar="DIR", help="Where to write the comparison, figures and report (default replications/NAME)."
)
@click.option("--workers", type=int, metavar="N", help="Parallel simulations (default: one per core).")
@click.option("--store", metavar="DIR", help="Results store to run into (default ./ccbench-results).")
@click.option(
    "--engine",
    type=click.Choice(engines.names()),
    default=engines.DEFAULT,
    show_default=True,
    help="Where the study's runs go; a study lists the engines it can run on (elmenhorst2026: vm, "
    "side by side with the simulator).",
)
@click.option(
    "--guest-kernel",
    metavar="SPEC",
    help="--engine vm: the guest's kernel (default debian:6.1); one "
    "with BBRv3 (ccbench vm build-kernel) runs the study's BBRv3 findings.",
)
def replicate(
    name: Optional[str],
    quick: bool,
    out: Optional[str],
    workers: Optional[int],
    store: Optional[str],
    engine: str,
    guest_kernel: Optional[str],
) -> None:
    """Replicate a published study and compare its findings with ccbench's; without
    NAME, list the studies."""
    from .replicate.command import replicate_command

    engines.use_by_default(engine, guest_kernel=guest_kernel)
    replicate_command(name, quick, out, workers, store, engine)


@cli.group()
def vm() -> None:
    """The VM engine's guest: a Debian kernel in QEMU with its vCPUs under SCHED_DEADLINE."""


@vm.command("probe")
@click.option(
    "--guest-kernel",
    default="debian:6.1",
    show_default=True,
    metavar="SPEC",
    help="debian:6.1, debian:6.12, debian:PACKAGE=VERSION, a directory with boot/vmlinuz-* and "
    "lib/modules/<release>, or BZIMAGE:MODULES_DIR.",
)
@click.option(
    "--vcpus",
    type=click.IntRange(1, 16),
    default=1,
    show_default=True,
    metavar="N",
    help="Guest vCPUs (one host thread each).",
)
@click.option(
    "--cpu-share", metavar="SHARE", help="Give each vCPU thread this share under SCHED_DEADLINE, e.g. 25% (root)."
)
@click.option("--cpu-slice", default="10ms", show_default=True, metavar="TIME", help="The deadline period.")
@click.option(
    "--busy",
    default="0s",
    show_default=True,
    metavar="TIME",
    help="Keep the guest busy this long and measure the CPU time each vCPU thread gets.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def vm_probe(guest_kernel: str, vcpus: int, cpu_share: Optional[str], cpu_slice: str, busy: str, as_json: bool) -> None:
    """Boot the guest once and report its kernel, the accelerator, the boot time, the
    congestion controls it offers and, with --cpu-share, the policy read back from the
    host kernel and the CPU the busy vCPUs got."""
    import json as jsonlib

    from .scenario.host import parse_share
    from .units import parse_duration
    from .vm.probe import probe

    share = None
    if cpu_share is not None:
        try:
            share = parse_share(cpu_share)
        except ValueError as e:
            raise ScenarioError("--cpu-share", str(e)) from None
    try:
        period = parse_duration(cpu_slice)
        busy_ns = parse_duration(busy)
    except ValueError as e:
        raise ScenarioError("--cpu-slice" if "slice" in str(e) else "--busy", str(e)) from None
    if not 1_000_000 <= period <= 1_000_000_000:
        raise ScenarioError("--cpu-slice", "must be from 1ms to 1s")
    if busy_ns > 600 * 10**9:
        raise ScenarioError("--busy", "must be at most 600s")
    if share is not None and os.geteuid() != 0:
        raise ScenarioError("--cpu-share", "setting SCHED_DEADLINE on the vCPU threads needs root")
    with signals_interrupt():
        report = probe(guest_kernel, vcpus, share, period, busy_ns / 1e9)
    if as_json:
        click.echo(jsonlib.dumps(report.as_dict(), indent=1))
        return
    for key, value in report.as_dict().items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else value
        click.echo(f"{key:>26}: {shown}")


@vm.command("build-kernel")
@click.option(
    "--series",
    type=click.Choice(sorted(GUEST_SERIES)),
    default="6.12",
    show_default=True,
    help="Which pinned Debian kernel's source and configuration to start from.",
)
@click.option(
    "--patch",
    "patches",
    multiple=True,
    metavar="FILE",
    help="A patch to apply (patch -p1), in the order given; e.g. BBRv3's for this series.",
)
@click.option("--out", required=True, metavar="DIR", help="Where to put the kernel (a new or empty directory).")
@click.option(
    "--jobs", type=click.IntRange(0, 256), default=0, metavar="N", help="Parallel make jobs (0: one per core)."
)
def vm_build_kernel(series: str, patches: tuple[str, ...], out: str, jobs: int) -> None:
    """Build a guest kernel of one's own from Debian's source of a pinned guest kernel,
    with patches, for --guest-kernel DIR. A BBRv3 tcp_bbr.c is offered as bbr3, with
    its 2BRobust twin bbr3_2brobust. Needs gcc-12, make, flex, bison, bc, libelf-dev
    and libssl-dev; takes about a quarter of an hour on two cores."""
    from .vm.kernel_build import build

    with signals_interrupt():
        kernel = build(series, [Path(p) for p in patches], Path(out), jobs, say=lambda line: click.echo(line, err=True))
    click.echo(f"{kernel.release}: {', '.join(kernel.congestion_control())}")
    click.echo(f"use it with --guest-kernel {out}")


@cli.command("calibrate-host")
@click.option("--quick", is_flag=True, help="Nine runs instead of seventeen (each with the idle and traced runs).")
@click.option("--guest-kernel", default="debian:6.1", show_default=True, metavar="SPEC", help="The guest's kernel.")
@click.option("--vcpus", type=click.IntRange(1, 16), default=1, show_default=True, metavar="N", help="Guest vCPUs.")
@click.option("--duration", default="5s", show_default=True, metavar="TIME", help="Length of each run.")
@click.option(
    "--out",
    default="host-costs.toml",
    show_default=True,
    metavar="FILE",
    help="Where to write host.tx_completion and the [host.cost] table.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the runs and the fit as JSON.")
def calibrate_host(quick: bool, guest_kernel: str, vcpus: int, duration: str, out: str, as_json: bool) -> None:
    """Measure the VM guest's CPU time per ACK, segment, skb and wake-up (above an idle
    guest's), what coming back after an absence costs it, and how long its NIC holds a
    sent skb, and write them as host.tx_completion and a [host.cost] table for the
    simulator (--cpu-costs FILE). Root; run it on a quiet machine, since other work
    disturbs the vCPU's times."""
    engines.workflow("calibrate-host").command(
        quick=quick,
        guest_kernel=guest_kernel,
        vcpus=vcpus,
        duration=duration,
        out=out,
        as_json=as_json,
        say=lambda line: click.echo(line, err=True),
        show=click.echo,
    )


def _fail(field: str, message: str, status: int = EXIT_BAD_INPUT, at_once: bool = False) -> NoReturn:
    # One line, whatever line breaks the message carries (a file's text may hold any).
    line = " ".join(f"error: {field}: {message}".splitlines())
    print(line, file=sys.stderr)
    if at_once:
        # Ctrl-C in the command itself: every `finally` on the way here has run; the
        # interpreter's exit handlers (joining a process pool whose workers were just
        # terminated) once hung past 30 s after this line was printed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


def _usage_error(e: click.UsageError) -> tuple[str, str]:
    """(field, message) for click's own parse errors."""
    if isinstance(e, click.NoSuchOption):
        hint = f" (did you mean {', '.join(e.possibilities)}?)" if e.possibilities else ""
        return e.option_name, f"no such option{hint}; see 'ccbench run --help'"
    if isinstance(e, click.BadOptionUsage):
        if "requires an argument" in e.message:
            return e.option_name, "requires a value; see 'ccbench run --help'"
        return e.option_name, e.message.rstrip(".")
    param = getattr(e, "param", None)
    if param is not None:
        opts = getattr(param, "opts", None)
        field = opts[0] if opts else (param.human_readable_name or "argument")
        return field, e.message.rstrip(".")
    if e.message.startswith("No such command"):
        return "command", f"{e.message.rstrip('.')}; allowed: {', '.join(sorted(cli.commands))}"
    return "usage", e.message.rstrip(".") + "; see 'ccbench --help'"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console entry point."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    try:
        rv = cli.main(args=args, prog_name="ccbench", standalone_mode=False)
    except ScenarioError as e:
        _fail(e.field, e.message)
    except KernelRunError as e:
        _fail("kernel", str(e), 1)
    except VmError as e:
        _fail("vm", str(e), 1)
    except click.UsageError as e:
        _fail(*_usage_error(e))
    except (click.Abort, KeyboardInterrupt):
        _fail("interrupted", "stopped before the run finished", EXIT_INTERRUPTED, at_once=argv is None)
    except click.exceptions.Exit as e:
        return e.exit_code
    except InternalError as e:
        if _debug:
            raise
        _fail(
            e.where,
            f"internal fault: {e.message}; please report it (ccbench --debug ... shows the backtrace)",
            EXIT_INTERNAL,
        )
    except Exception as e:  # an internal fault: one line unless debugging
        if _debug:
            raise
        _fail(
            "internal",
            f"{type(e).__name__}: {e}; please report it (ccbench --debug ... shows the traceback)",
            EXIT_INTERNAL,
        )
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
