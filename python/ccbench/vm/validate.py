"""``ccbench validate --cpu``: the simulator's sender-CPU model against the VM engine on
the 2BRobust grid (CPU share x slice length x algorithm x rate x RTT), with the same
sender costs on both (``[host.cost]`` and ``host.tx_completion`` from ``ccbench
calibrate-host``).

Each cell runs once on the simulator (deterministic: no loss, so no seed matters) and
``reps`` times on the VM, whose goodput in a held cell varies several-fold from run to
run. Tolerances: goodput within 15% of the VM's median, or inside the range its
repetitions spanned, or both below 5% of the link; and, per BBR variant, slice length,
rate and RTT, the highest share at which BBR gets less than half of Cubic's goodput (VM
medians) within 10 percentage points of the VM's.

An algorithm of the grid is a name either engine knows, or ``bbr_2brobust``: BBR with
the 2BRobust patch (``params.inflight_deficit = 1``, which the VM runs as its patched
module: ``ccbench.vm.patched``).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from . import patched, placement

GOODPUT_TOLERANCE = 0.15
LINK_FLOOR = 0.05
THRESHOLD_POINTS = 10

FULL = {"shares": (0.10, 0.15, 0.25, 0.35, 0.45, 0.55, 0.70), "slices": ("1ms", "10ms", "20ms"),
        "ccas": ("bbr", "cubic"), "rates": ("10Mbit", "100Mbit", "1Gbit"), "rtts": ("10ms", "40ms"),
        "duration": "10s"}
QUICK = {"shares": (0.15, 0.35, 0.70), "slices": ("10ms",), "ccas": ("bbr", "cubic"), "rates": ("100Mbit",),
         "rtts": ("20ms",), "duration": "5s"}


@dataclass(frozen=True)
class CpuCell:
    share: float
    slice: str
    cca: str
    rate: str
    rtt: str

    @property
    def name(self) -> str:
        return f"{self.cca} {self.share:.0%} of {self.slice}, {self.rate}, {self.rtt}"

    def scenario(self, duration: str, costs: Optional[dict[str, Any]], tick_ns: Optional[int] = None,
                 hz: Optional[int] = None) -> dict[str, Any]:
        """The cell; for the simulator with ``costs`` (host entries: ``cost``,
        ``tx_completion``), the scheduler tick of the host the VM ran on and the guest
        kernel's CONFIG_HZ (the sender's jiffy)."""
        host: dict[str, Any] = {"cpu_share": self.share, "cpu_slice": self.slice}
        if costs:
            host.update(costs)
        if tick_ns is not None:
            host["cpu_tick"] = f"{tick_ns}ns"
        doc: dict[str, Any] = {"duration": duration, "link": {"rate": self.rate, "rtt": self.rtt, "buffer": "1bdp"},
                               "host": host, "flows": [flow(self.cca)]}
        if hz is not None:
            doc["tcp"] = {"hz": hz}
        return doc


def flow(cca: str) -> dict[str, Any]:
    """The grid's algorithm ``cca`` as a scenario flow: a patched algorithm's name is its
    base algorithm with the patch's parameter set."""
    for p in patched.PATCHES:
        if cca == p.algorithm:
            return {"cca": p.base, "params": {p.param: 1}}
    return {"cca": cca}


@dataclass(frozen=True)
class TxShape:
    skbs_per_slice: float
    segs_per_skb: float

    @staticmethod
    def of(skbs: int, segs: int, duration: str, slice_: str) -> "TxShape":
        from ..units import parse_duration

        slices = parse_duration(duration) / parse_duration(slice_)
        return TxShape(skbs / slices, segs / skbs if skbs else 0.0)

    @staticmethod
    def median(shapes: Sequence["TxShape"]) -> "TxShape":
        return TxShape(statistics.median(s.skbs_per_slice for s in shapes),
                       statistics.median(s.segs_per_skb for s in shapes))

    def __str__(self) -> str:
        return f"{self.skbs_per_slice:.1f} ({self.segs_per_skb:.1f})"


@dataclass
class CpuRow:
    cell: CpuCell
    link_mbps: float
    sim_mbps: float
    vm_runs: list[float]            # every repetition's goodput on the VM
    vm_cpu_use: float               # the median of their vCPU use
    # How each engine sent: skbs per slice and segments per skb (the VM's: medians over its
    # repetitions), where a held sender's two engines part (docs/vm-engine.md).
    sim_tx: Optional["TxShape"] = None
    vm_tx: Optional["TxShape"] = None
    # The accelerator and the placement of the host's threads of its VM runs.
    vm_testbed: tuple[str, ...] = ()

    @property
    def vm_mbps(self) -> float:
        """The median of the VM's repetitions."""
        return statistics.median(self.vm_runs)

    @property
    def ratio(self) -> Optional[float]:
        return self.sim_mbps / self.vm_mbps if self.vm_mbps > 0 else None

    @property
    def passed(self) -> bool:
        floor = LINK_FLOOR * self.link_mbps
        if self.sim_mbps < floor and self.vm_mbps < floor:
            return True
        if len(self.vm_runs) > 1 and min(self.vm_runs) <= self.sim_mbps <= max(self.vm_runs):
            return True
        return self.ratio is not None and abs(self.ratio - 1) <= GOODPUT_TOLERANCE

    @property
    def vm_shown(self) -> str:
        """The VM's median, with the range of its repetitions when there were several."""
        if len(self.vm_runs) < 2:
            return f"{self.vm_mbps:.1f}"
        return f"{self.vm_mbps:.1f} [{min(self.vm_runs):.1f}–{max(self.vm_runs):.1f}]"


@dataclass
class Threshold:
    """Per BBR variant, slice, rate and RTT: the highest share at which it gets under
    half of Cubic."""

    cca: str
    slice: str
    rate: str
    rtt: str
    sim_share: Optional[float]
    vm_share: Optional[float]

    @property
    def passed(self) -> bool:
        sim, vm = self.sim_share or 0.0, self.vm_share or 0.0
        return abs(sim - vm) * 100 <= THRESHOLD_POINTS


def grid(shares: Sequence[float], slices: Sequence[str], ccas: Sequence[str], rates: Sequence[str],
         rtts: Sequence[str]) -> list[CpuCell]:
    return [CpuCell(*c) for c in itertools.product(shares, slices, ccas, rates, rtts)]


def check(cells: Sequence[CpuCell], duration: str, costs: Optional[dict[str, Any]], vm_engine: Any) -> None:
    """ScenarioError, naming the cell, for the first cell either engine cannot run."""
    from ..engines import get
    from ..errors import ScenarioError

    sim = get("sim")
    for cell in cells:
        try:
            sim.check(sim.load(cell.scenario(duration, costs)))
            vm_engine.check(vm_engine.load(cell.scenario(duration, None)))
        except ScenarioError as e:
            raise ScenarioError(e.field, f"{e.message} (cell {cell.name})") from None


def run(cells: Sequence[CpuCell], duration: str, costs: Optional[dict[str, Any]], vm_engine: Any,
        progress: Callable[[str], None], kept: Optional[Path] = None, reps: int = 1) -> list[CpuRow]:
    """Each cell once on the simulator and ``reps`` times on ``vm_engine``. With ``kept``
    (a JSON-lines file), each VM result is appended as it finishes and repetitions
    already there are not run on the VM again: a stopped grid resumes, and after a
    change to the simulator only the simulator runs."""
    from ..engines import get
    from ..units import parse_rate
    from .deadline import host_tick_ns

    sim = get("sim")
    # Runs on a testbed arranged otherwise (see ccbench.vm.placement) are not reused.
    where = placement.plan(os.sched_getaffinity(0), getattr(vm_engine, "vcpus", 1), deadline=True)
    done = _read_kept(kept, duration, vm_engine.guest_kernel, where.describe() if where else None)
    rows = []
    for cell in cells:
        runs = []
        for rep in range(reps):
            vm = done.get((cell.name, rep))
            if vm is None:
                result = vm_engine.run(cell.scenario(duration, None))  # the VM's costs are its own
                summary = result.summary
                vm = {"cell": cell.name, "rep": rep, "duration": duration, "guest": vm_engine.guest_kernel,
                      "guest_hz": result.scenario.tcp.hz,
                      "vm_mbps": _goodput(summary), "vm_cpu_use": (summary["vm"]["vcpu_cpu_use"] or [0.0])[0],
                      "host_tick_ns": summary["vm"].get("host_tick_ns", host_tick_ns()),
                      # For later analysis: what the guest did and how its vCPU ran.
                      "work": summary["vm"]["work"], "vcpu_sleeps": summary["vm"].get("vcpu_sleeps"),
                      "vcpu_preemptions": summary["vm"].get("vcpu_preemptions"),
                      "vcpu_run_delay_s": summary["vm"].get("vcpu_run_delay_s"),
                      "accelerator": summary["vm"].get("accelerator"), "placement": summary["vm"].get("placement")}
                if kept is not None:
                    with open(kept, "a") as f:
                        f.write(json.dumps(vm) + "\n")
            runs.append(vm)
        # The simulator with the same costs, the tick of the host the VM ran on and the
        # guest's jiffy.
        sim_summary = sim.run(cell.scenario(duration, costs, runs[0]["host_tick_ns"], runs[0].get("guest_hz"))).summary
        sim_work = sim_summary["host"]["work"]
        vm_tx = [TxShape.of(r["work"]["skbs"], r["work"]["segs_out"], duration, cell.slice) for r in runs
                 if r.get("work")]
        row = CpuRow(cell, parse_rate(cell.rate) / 1e6, _goodput(sim_summary), [r["vm_mbps"] for r in runs],
                     statistics.median(r["vm_cpu_use"] for r in runs),
                     TxShape.of(sim_work["bursts"], sim_work["packets"], duration, cell.slice),
                     TxShape.median(vm_tx) if vm_tx else None, tuple(sorted({_testbed(r) for r in runs})))
        rows.append(row)
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
        progress(f"  {cell.name}: sim {row.sim_mbps:.1f}, VM {row.vm_shown} Mbit/s (ratio {ratio}, "
                 f"vCPU {row.vm_cpu_use:.0%}) {'ok' if row.passed else 'DIFFERS'}")
    return rows


def _testbed(vm: dict[str, Any]) -> str:
    placed = vm.get("placement") or "the host's threads not placed"
    return f"{str(vm.get('accelerator') or '?').upper()}, {placed}"


def _read_kept(kept: Optional[Path], duration: str, guest: str,
               where: Optional[str]) -> dict[tuple[str, int], dict[str, Any]]:
    """VM results of earlier runs of this grid with the same duration, guest and
    placement of the testbed's threads: {(cell name, repetition): result} (a result
    without a repetition number is the first); a torn last line (a run stopped while
    writing) is ignored."""
    if kept is None or not kept.is_file():
        return {}
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for line in kept.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if r.get("duration") == duration and r.get("guest") == guest and r.get("placement") == where:
            out[(r["cell"], r.get("rep", 0))] = r
    return out


def thresholds(rows: Sequence[CpuRow]) -> list[Threshold]:
    out = []
    bbrs = sorted({r.cell.cca for r in rows if r.cell.cca.startswith("bbr")})
    keys = sorted({(r.cell.slice, r.cell.rate, r.cell.rtt) for r in rows})
    cells: dict[tuple[str, str, str], dict[tuple[str, float], CpuRow]] = {key: {} for key in keys}
    for r in rows:
        cells[(r.cell.slice, r.cell.rate, r.cell.rtt)][(r.cell.cca, r.cell.share)] = r
    for cca in bbrs:
        for slice_, rate, rtt in keys:
            by = cells[(slice_, rate, rtt)]
            shares = sorted(s for (c, s) in by if c == cca)
            if shares:
                out.append(Threshold(cca, slice_, rate, rtt, _collapse(by, cca, shares, lambda r: r.sim_mbps),
                                     _collapse(by, cca, shares, lambda r: r.vm_mbps)))
    return out


def _collapse(by: dict[tuple[str, float], CpuRow], cca: str, shares: Sequence[float],
              pick: Callable[[CpuRow], float]) -> Optional[float]:
    """The highest share at which ``cca`` gets under half of Cubic's goodput."""
    below = [s for s in shares if ("cubic", s) in by and pick(by[(cca, s)]) < 0.5 * pick(by[("cubic", s)])]
    return max(below) if below else None


def write(out: Path, rows: Sequence[CpuRow], limits: Sequence[Threshold], meta: dict[str, Any]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "validate-cpu.csv", out / "validate-cpu.json", out / "validate-cpu.md"]
    with open(paths[0], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cca", "share", "slice", "rate", "rtt", "sim_mbps", "vm_mbps", "vm_min_mbps", "vm_max_mbps",
                    "vm_reps", "ratio", "vm_cpu_use", "sim_skbs_per_slice", "vm_skbs_per_slice", "sim_segs_per_skb",
                    "vm_segs_per_skb", "passed"])
        for r in rows:
            c = r.cell
            tx = [f"{getattr(t, field):.2f}" if t else "" for field in ("skbs_per_slice", "segs_per_skb")
                  for t in (r.sim_tx, r.vm_tx)]
            w.writerow([c.cca, c.share, c.slice, c.rate, c.rtt, f"{r.sim_mbps:.3f}", f"{r.vm_mbps:.3f}",
                        f"{min(r.vm_runs):.3f}", f"{max(r.vm_runs):.3f}", len(r.vm_runs),
                        "" if r.ratio is None else f"{r.ratio:.3f}", f"{r.vm_cpu_use:.3f}", *tx, r.passed])
    paths[1].write_text(json.dumps({"meta": meta, "rows": [dict(asdict(r), vm_mbps=r.vm_mbps, ratio=r.ratio, passed=r.passed)
                                                          for r in rows],
                                    "thresholds": [dict(asdict(t), passed=t.passed) for t in limits]}, indent=1))
    paths[2].write_text(markdown(rows, limits, meta))
    return paths


def markdown(rows: Sequence[CpuRow], limits: Sequence[Threshold], meta: dict[str, Any]) -> str:
    testbeds = "; ".join(sorted({t for r in rows for t in r.vm_testbed})) or "?"
    lines = [f"Simulator vs VM ({meta.get('guest', '?')}; {testbeds}); goodput Mbit/s, ratio = sim / VM", "",
             "| cell | sim | VM (median [range]) | ratio | VM vCPU use | skbs per slice (segments per skb) sim / VM "
             "| verdict |", "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r.passed, r.cell.slice, r.cell.rate, r.cell.rtt, r.cell.cca, r.cell.share)):
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
        tx = f"{r.sim_tx or '-'} / {r.vm_tx or '-'}"
        lines.append(f"| {r.cell.name} | {r.sim_mbps:.1f} | {r.vm_shown} | {ratio} | {r.vm_cpu_use:.0%} | {tx} | "
                     f"{'ok' if r.passed else 'differs'} |")
    lines += ["", "| algorithm | slice, rate, RTT | under half of Cubic up to (sim) | (VM) | verdict |",
              "|---|---|---|---|---|"]
    for t in limits:
        show = lambda x: "never" if x is None else f"{x:.0%}"  # noqa: E731
        lines.append(f"| {t.cca} | {t.slice}, {t.rate}, {t.rtt} | {show(t.sim_share)} | {show(t.vm_share)} | "
                     f"{'ok' if t.passed else 'differs'} |")
    return "\n".join(lines) + "\n"


def _goodput(summary: dict[str, Any]) -> float:
    return sum(f["goodput_bps"] for f in summary["flows"]) / 1e6
