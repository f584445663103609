"""Running the cells on both engines, and the emulator's capacity benchmark."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from .. import _core, engines
from ..bpf.name import is_bpf
from ..errors import ScenarioError
from ..kernel import host
from ..kernel.host import KernelRunError
from ..vm.qemu import VmError
from .cells import Cell, base
from .judge import CellResult, EngineFigures, compare, run_figures

if TYPE_CHECKING:
    from ..engines.base import Engine

Progress = Callable[[str], None]
# The engine the simulator (the default engine) is validated against where a cell names
# none: the real stack of this host.
AGAINST = "kernel"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _describe(figures: dict) -> str:
    parts = []
    if figures["flows"]:
        goodput = " + ".join(f"{f['goodput_bps'] / 1e6:.2f}" for f in figures["flows"])
        rtts = [f["rtt_mean_ms"] for f in figures["flows"] if f["rtt_mean_ms"] is not None]
        rtt = f", RTT {sum(rtts) / len(rtts):.1f} ms" if rtts else ""
        parts.append(f"{goodput} Mbit/s{rtt}, {figures['retransmits']} retx")
    parts += [f"UDP {u['delivered_bps'] / 1e6:.2f} Mbit/s" for u in figures.get("udp", [])]
    parts += [
        f"FCT p50 {a['fct_p50_ms'] or float('nan'):.1f} ms p99 {a['fct_p99_ms'] or float('nan'):.1f} ms"
        for a in figures.get("arrivals", [])
    ]
    return ", ".join(parts)


def run_cell(
    cell: Cell,
    duration: str,
    reps: int,
    progress: Progress = _stderr,
    keep: Optional[Path] = None,
    kernel: Optional[EngineFigures] = None,
) -> CellResult:
    """Run ``cell`` ``reps`` times on each engine (seeds 1, 2, ...: the kernel varies from
    run to run, the simulator with the seed): the simulator and the cell's reference, a
    real kernel (``cell.against``: the kernel engine, or the VM's guest). With ``keep``,
    every run's files are written to ``keep/<cell>/<engine>-seed<N>``. With ``kernel``,
    the reference's side is that (runs stored earlier) and only the simulator runs."""
    sim_engine, kernel_engine = engines.get(engines.DEFAULT), engines.get(cell.against)
    if cell.missing:
        return compare(cell, EngineFigures(False, cell.missing), EngineFigures(False, cell.missing))
    sim_runs: list[dict] = []
    kernel_runs: list[dict] = []
    sim_reason = kernel_reason = ""
    kernel_failures: list[str] = []
    for cca in cell.ccas:
        if cca not in _core.algorithms() and not is_bpf(cca):
            sim_reason = f"{cca} is not available in the simulator"
    hz, reason = _reference_hz(cell, kernel_engine)
    if kernel is None and reason:
        # Nothing to judge against: the simulator's runs are left out too.
        return compare(cell, EngineFigures(False, sim_reason or "not run: " + reason), EngineFigures(False, reason))
    if hz is None and cell.against == AGAINST:
        hz = host.kernel_hz()  # stored runs, judged where the kernel engine cannot run now
    for rep in range(reps):
        seed = rep + 1
        sc = cell.scenario(duration, seed=seed, hz=hz)
        mss = sc.tcp.mss
        if not sim_reason:
            try:
                result = sim_engine.run(sc)
            except ScenarioError as e:
                sim_reason = f"refused by the simulator: {e}"
            else:
                sim_runs.append(run_figures(result.summary, mss))
                if keep is not None:
                    result.save(keep / cell.slug / f"sim-seed{seed}")
        if kernel is None and not kernel_reason:
            try:
                result = kernel_engine.run(sc)
            except ScenarioError as e:  # KernelEngineError, or a simulator-only knob refused
                kernel_reason = f"not available in the {cell.against} engine: {e}"
            except (KernelRunError, VmError) as e:  # a run that failed: the others may not
                progress(f"  {cell.name} rep {seed}/{reps}: {cell.against} run failed: {e}")
                kernel_failures.append(str(e))
            else:
                kernel_runs.append(run_figures(result.summary, mss))
                if keep is not None:
                    result.save(keep / cell.slug / f"kernel-seed{seed}")  # the reference's, whichever engine
        s = _describe(sim_runs[-1]) if sim_runs and not sim_reason else sim_reason or "not run"
        if kernel is not None:
            k = "stored runs"
        else:
            k = _describe(kernel_runs[-1]) if kernel_runs and not kernel_reason else kernel_reason or "not run"
        progress(f"  {cell.name} rep {seed}/{reps}: sim {s}; {cell.against} {k}")
    sim = EngineFigures(True, "", sim_runs) if sim_runs else EngineFigures(False, sim_reason)
    if kernel is not None:
        return compare(cell, sim, kernel)
    if not kernel_runs and not kernel_reason:
        kernel_reason = f"every {cell.against} run failed: " + (kernel_failures[-1] if kernel_failures else "?")
    kern = EngineFigures(True, "", kernel_runs) if kernel_runs else EngineFigures(False, kernel_reason)
    return compare(cell, sim, kern)


def _reference_hz(cell: Cell, reference: "Engine") -> tuple[Optional[int], str]:
    """The tick rate of the reference's sender kernel (``tcp.hz`` both engines run the
    cell with), and why the reference cannot run the cell here ("" when it can)."""
    try:
        return reference.check(cell.scenario("1s", seed=1, hz=None)).tcp.hz, ""
    except ScenarioError as e:
        return None, f"not available in the {cell.against} engine: {e}"


BENCH_RATES = ("20Mbit", "50Mbit", "100Mbit")


@dataclass
class BenchPoint:
    rate: str
    delivered_rate_ratio: Optional[float]
    lateness_p50_us: float
    lateness_p99_us: float
    busy_s: float
    flag_short: bool


def emulator_benchmark(
    rates: tuple[str, ...] = BENCH_RATES, duration: str = "4s", progress: Progress = _stderr
) -> list[BenchPoint]:
    """Delivered capacity of the emulator at each rate, with a saturating Cubic flow
    over a 2-BDP buffer (the link is busy nearly all the time)."""
    kernel_engine = engines.get(AGAINST)
    points = []
    for rate in rates:
        cell = base((rate,), ("20ms",), (2.0,), ("cubic",))[0]
        check = kernel_engine.run(cell.scenario(duration, seed=1, hz=host.kernel_hz())).summary["emulator"]
        p = BenchPoint(
            rate,
            check["delivered_rate_ratio"],
            check["lateness_forward_us"]["p50"],
            check["lateness_forward_us"]["p99"],
            check["busy_s"],
            check["flag_short"],
        )
        ratio = "-" if p.delivered_rate_ratio is None else f"{100 * p.delivered_rate_ratio:.2f}%"
        progress(
            f"  emulator at {rate}: delivered {ratio} of the configured rate, "
            f"lateness p50 {p.lateness_p50_us:.0f} µs, p99 {p.lateness_p99_us:.0f} µs"
        )
        points.append(p)
    return points


JOURNAL = "cells.jsonl"


def _journal_key(cell: Cell, duration: str, reps: int) -> str:
    return json.dumps([cell.name, cell.scenario_json, cell.run_length(duration), reps])


def _from_journal(line: dict) -> CellResult:
    c = line["cell"]
    cell = Cell(**{**c, "axes": tuple(tuple(a) for a in c["axes"])})
    return compare(cell, EngineFigures(**line["sim"]), EngineFigures(**line["kernel"]))


def _journal_line(key: str, cell: Cell, res: CellResult) -> str:
    return json.dumps(
        {"key": key, "cell": asdict(cell), "sim": asdict(res.sim), "kernel": asdict(res.kernel)}, allow_nan=True
    )


def _figures_again(stored: EngineFigures, runs: Path, cell: Cell) -> EngineFigures:
    """The stored kernel runs' figures read again from their kept summaries, so that a
    change in what the grid reads from a run applies to reused runs too; the journal's
    figures where the summaries are not all there."""
    paths = sorted(runs.glob("kernel-seed*/summary.json"), key=lambda p: int(p.parent.name.removeprefix("kernel-seed")))
    if len(paths) != len(stored.runs):
        return stored
    mss = cell.scenario("1s", seed=1, hz=host.kernel_hz()).tcp.mss
    return EngineFigures(True, "", [run_figures(json.loads(p.read_text()), mss) for p in paths])


def run_grid(
    cells: list[Cell],
    duration: str,
    reps: int,
    out: Optional[Path] = None,
    progress: Progress = _stderr,
    rerun_sim: bool = False,
) -> list[CellResult]:
    """Every cell in turn. With ``out``, each finished cell is appended to
    ``out/cells.jsonl`` (and every run's files kept under ``out/runs``), so that a grid
    stopped part-way resumes where it stopped: cells already in the journal with the
    same scenario, length and repetitions are not run again. With ``rerun_sim``, such
    cells keep their kernel runs and run the simulator again (after a change to the
    simulator: the kernel's runs do not depend on it)."""
    journal = None if out is None else out / JOURNAL
    lines: dict[str, str] = {}
    if journal is not None and journal.exists():
        lines = {json.loads(text)["key"]: text for text in journal.read_text().splitlines()}
    done = {key: _from_journal(json.loads(text)) for key, text in lines.items()}
    if done:
        what = "reusing their kernel runs" if rerun_sim else "resuming"
        progress(f"{what}: {len(done)} cell(s) already in {journal}")
    results = []
    for cell in cells:
        key = _journal_key(cell, duration, reps)
        if key in done and not rerun_sim:
            results.append(done[key])
            continue
        stored = done[key].kernel if key in done and done[key].kernel.available else None
        if stored is not None and out is not None:
            stored = _figures_again(stored, out / "runs" / cell.slug, cell)
        res = run_cell(cell, duration, reps, progress, keep=None if out is None else out / "runs", kernel=stored)
        results.append(res)
        if journal is None:
            continue
        lines[key] = _journal_line(key, cell, res)
        if rerun_sim:
            # Rewritten whole (atomically), as lines change in place.
            tmp = journal.with_suffix(".tmp")
            tmp.write_text("".join(text + "\n" for text in lines.values()))
            tmp.replace(journal)
        else:
            journal.parent.mkdir(parents=True, exist_ok=True)
            with open(journal, "a") as f:
                f.write(lines[key] + "\n")
    return results
