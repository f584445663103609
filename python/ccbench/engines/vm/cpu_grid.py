"""``ccbench validate --cpu``: the simulator's sender-CPU model against the VM engine on
the 2BRobust grid (CPU share x slice length x algorithm x rate x RTT), with the same
sender costs on both (``[host.cost]`` and ``host.tx_completion`` from ``ccbench
calibrate-host``). ``--pacing``: the phone study's grid instead (vCPU unreserved or held
x rate x flows x paced or not, on its 1 ms, 1,000-packet network), where the RTT is
judged too, since not pacing is paid for in queueing delay.

Each cell runs once on the simulator (deterministic: no loss, so no seed matters) and
``reps`` times on the VM, whose goodput in a held cell varies several-fold from run to
run. Tolerances: goodput within 15% of the VM's median, or inside the range its
repetitions spanned, or both below 5% of the link; and, per BBR variant, slice length,
rate and RTT, the highest share at which BBR gets less than half of Cubic's goodput (VM
medians) within 10 percentage points of the VM's.

An algorithm of the grid is a name either engine knows, or ``bbr_2brobust``: BBR with
the 2BRobust patch (``params.inflight_deficit = 1``, which the VM runs as its patched
module: ``ccbench.vm.patched``), ``bbr_unpaced`` (BBR with ``pacing = false``, another
patched module) or ``<cca>_paced`` (``pacing = true``: the stack's internal pacing).
The pacing grid's RTT (median of the flows' median RTTs) is within 30% or 2 ms of the
VM's median, or inside the range of its repetitions.

A cell that differs where QEMU's main thread, which carries the guest's packets, waited
for a host CPU over half of the VM's runs (``vm.io_thread``) is counted apart, as
``testbed``: there the testbed's I/O path, not the guest, held the sender.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ... import host_costs
from ...kernel.plan import UNPACED_SUFFIX
from ...vm import patched, placement
from ...vm.sender import IO_WAIT_BOUND, RECEIVE_PATH_PACKETS

GOODPUT_TOLERANCE = 0.15
LINK_FLOOR = 0.05
THRESHOLD_POINTS = 10
RTT_TOLERANCE = 0.30
RTT_FLOOR_MS = 2.0
PACED_SUFFIX = "_paced"

FULL = {
    "shares": (0.10, 0.15, 0.25, 0.35, 0.45, 0.55, 0.70),
    "slices": ("1ms", "10ms", "20ms"),
    "ccas": ("bbr", "cubic"),
    "rates": ("10Mbit", "100Mbit", "1Gbit"),
    "rtts": ("10ms", "40ms"),
    "duration": "10s",
}
QUICK = {
    "shares": (0.15, 0.35, 0.70),
    "slices": ("10ms",),
    "ccas": ("bbr", "cubic"),
    "rates": ("100Mbit",),
    "rtts": ("20ms",),
    "duration": "5s",
}
# The phone study's network (Vargas et al.): 1 ms, a 1,000-packet buffer, and no short-RTT
# TSO bonus (its kernels predate tcp_tso_rtt_log). The vCPU unreserved, or held to a
# quarter of 1 ms slices, which a TCG guest's work fills at 200 Mbit/s, as the low-end
# phone's CPU was filled, or to 15%, which it fills at 100 Mbit/s. 100 Mbit/s is where a
# two-CPU TCG testbed's I/O path keeps up (QEMU's main thread waiting under half the run);
# 1 Gbit/s is the study's rate. (Its RTT, 1 ms, is in no cell of the 2BRobust grid, so
# the two grids' cells never share a name.)
PACING_FULL = {
    "shares": (1.0, 0.25, 0.15),
    "slices": ("1ms",),
    "flows": (1, 5, 20),
    "ccas": ("cubic", "cubic_paced", "bbr", "bbr_unpaced"),
    "rates": ("100Mbit", "200Mbit", "1Gbit"),
    "rtts": ("1ms",),
    "duration": "10s",
}
PACING_QUICK = {
    "shares": (0.25,),
    "slices": ("1ms",),
    "flows": (1, 20),
    "ccas": ("cubic", "bbr", "bbr_unpaced"),
    "rates": ("200Mbit",),
    "rtts": ("1ms",),
    "duration": "5s",
}
PACING_BUFFER = "1000pkt"


@dataclass(frozen=True)
class CpuCell:
    share: float  # 1: no reservation
    slice: str
    cca: str
    rate: str
    rtt: str
    flows: int = 1
    pacing: bool = False  # a cell of the pacing grid: the phone study's network, its RTT judged

    @property
    def reserved(self) -> bool:
        return self.share < 1

    @property
    def name(self) -> str:
        who = self.cca if self.flows == 1 else f"{self.flows} x {self.cca}"
        cpu = f" {self.share:.0%} of {self.slice}" if self.reserved else ""
        return f"{who}{cpu}, {self.rate}, {self.rtt}"

    def scenario(
        self,
        duration: str,
        costs: Optional[dict[str, Any]],
        tick_ns: Optional[int] = None,
        hz: Optional[int] = None,
        rx_ring: Optional[int] = None,
    ) -> dict[str, Any]:
        """The cell; for the simulator with ``costs`` (host entries: ``cost``,
        ``tx_completion``), the scheduler tick of the host the VM ran on, the guest
        kernel's CONFIG_HZ (the sender's jiffy) and the ACKs the VM's receive path holds
        (``rx_ring``, for a cell with a host)."""
        host: dict[str, Any] = {"cpu_share": self.share, "cpu_slice": self.slice} if self.reserved else {}
        if tick_ns is not None and self.reserved:
            host["cpu_tick"] = f"{tick_ns}ns"
        link = {"rate": self.rate, "rtt": self.rtt, "buffer": PACING_BUFFER if self.pacing else "1bdp"}
        doc: dict[str, Any] = {
            "duration": duration,
            "link": link,
            "flows": [dict(flow(self.cca), **({"count": self.flows} if self.flows > 1 else {}))],
        }
        if host:
            doc["host"] = host
        if costs:
            doc = host_costs.laid_over(doc, costs)
        if rx_ring is not None and "host" in doc:
            doc["host"]["rx_ring"] = rx_ring
        tcp: dict[str, Any] = {"tso_rtt_log": 0} if self.pacing else {}
        if hz is not None:
            tcp["hz"] = hz
        if tcp:
            doc["tcp"] = tcp
        return doc


def flow(cca: str) -> dict[str, Any]:
    """The grid's algorithm ``cca`` as a scenario flow: a patched algorithm's name is its
    base algorithm with what asks for the patch; ``<cca>_paced`` is ``cca`` with
    ``pacing = true``."""
    for p in patched.PATCHES:
        if cca == p.algorithm:
            return p.flow()
    if cca.endswith(PACED_SUFFIX):
        return {"cca": cca.removesuffix(PACED_SUFFIX), "pacing": True}
    return {"cca": cca}


@dataclass(frozen=True)
class TxShape:
    skbs_per_slice: float
    segs_per_skb: float

    @staticmethod
    def of(skbs: int, segs: int, duration: str, slice_: str) -> "TxShape":
        from ...units import parse_duration

        slices = parse_duration(duration) / parse_duration(slice_)
        return TxShape(skbs / slices, segs / skbs if skbs else 0.0)

    @staticmethod
    def median(shapes: Sequence["TxShape"]) -> "TxShape":
        return TxShape(
            statistics.median(s.skbs_per_slice for s in shapes), statistics.median(s.segs_per_skb for s in shapes)
        )

    def __str__(self) -> str:
        return f"{self.skbs_per_slice:.1f} ({self.segs_per_skb:.1f})"


@dataclass
class CpuRow:
    cell: CpuCell
    link_mbps: float
    sim_mbps: float
    vm_runs: list[float]  # every repetition's goodput on the VM
    vm_cpu_use: float  # the median of their vCPU use
    # How each engine sent: skbs per slice and segments per skb (the VM's: medians over its
    # repetitions), where a held sender's two engines part (docs/vm-engine.md).
    sim_tx: Optional["TxShape"] = None
    vm_tx: Optional["TxShape"] = None
    # The accelerator and the placement of the host's threads of its VM runs.
    vm_testbed: tuple[str, ...] = ()
    # The median of the flows' median RTTs, judged on the pacing grid: the simulator's and
    # every repetition's on the VM.
    sim_rtt_ms: Optional[float] = None
    vm_rtts_ms: list[float] = field(default_factory=list)
    # The median share of its repetitions for which QEMU's main thread, carrying the
    # guest's packets, waited for a host CPU (None from runs kept before it was measured).
    vm_io_waiting: Optional[float] = None

    @property
    def vm_mbps(self) -> float:
        """The median of the VM's repetitions."""
        return statistics.median(self.vm_runs)

    @property
    def ratio(self) -> Optional[float]:
        return self.sim_mbps / self.vm_mbps if self.vm_mbps > 0 else None

    @property
    def vm_rtt_ms(self) -> Optional[float]:
        return _median(self.vm_rtts_ms)

    @property
    def passed(self) -> bool:
        return self.goodput_passed and self.rtt_passed

    @property
    def goodput_passed(self) -> bool:
        floor = LINK_FLOOR * self.link_mbps
        if self.sim_mbps < floor and self.vm_mbps < floor:
            return True
        if len(self.vm_runs) > 1 and min(self.vm_runs) <= self.sim_mbps <= max(self.vm_runs):
            return True
        return self.ratio is not None and abs(self.ratio - 1) <= GOODPUT_TOLERANCE

    @property
    def rtt_passed(self) -> bool:
        """Judged on the pacing grid only (the 2BRobust grid's 1-BDP buffer bounds it)."""
        sim, vm = self.sim_rtt_ms, self.vm_rtt_ms
        if not self.cell.pacing or sim is None or vm is None:
            return True
        if len(self.vm_rtts_ms) > 1 and min(self.vm_rtts_ms) <= sim <= max(self.vm_rtts_ms):
            return True
        return abs(sim - vm) <= max(RTT_TOLERANCE * vm, RTT_FLOOR_MS)

    @property
    def testbed_bound(self) -> bool:
        """The VM's packets waited on the host for most of its runs: where such a cell
        differs, the testbed differs from the sender the simulator models."""
        return self.vm_io_waiting is not None and self.vm_io_waiting > IO_WAIT_BOUND

    @property
    def verdict(self) -> str:
        return _verdict(self.passed, self.testbed_bound)

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
    # Some of its cells, the algorithm's or Cubic's, the testbed held (CpuRow.testbed_bound).
    testbed: bool = False

    @property
    def passed(self) -> bool:
        sim, vm = self.sim_share or 0.0, self.vm_share or 0.0
        return abs(sim - vm) * 100 <= THRESHOLD_POINTS

    @property
    def verdict(self) -> str:
        return _verdict(self.passed, self.testbed)


def grid(
    shares: Sequence[float], slices: Sequence[str], ccas: Sequence[str], rates: Sequence[str], rtts: Sequence[str]
) -> list[CpuCell]:
    return [CpuCell(*c) for c in itertools.product(shares, slices, ccas, rates, rtts)]


def pacing_grid(
    shares: Sequence[float],
    slices: Sequence[str],
    flows: Sequence[int],
    ccas: Sequence[str],
    rates: Sequence[str],
    rtts: Sequence[str],
) -> list[CpuCell]:
    return [
        CpuCell(share, slice_, cca, rate, rtt, n, pacing=True)
        for share, slice_, rate, rtt, n, cca in itertools.product(shares, slices, rates, rtts, flows, ccas)
    ]


def check(cells: Sequence[CpuCell], duration: str, costs: Optional[dict[str, Any]], vm_engine: Any) -> None:
    """ScenarioError, naming the cell, for the first cell either engine cannot run."""
    from ...errors import ScenarioError
    from ..sim import ENGINE as sim

    for cell in cells:
        try:
            sim.check(sim.load(cell.scenario(duration, costs)))
            vm_engine.check(vm_engine.load(cell.scenario(duration, None)))
        except ScenarioError as e:
            raise ScenarioError(e.field, f"{e.message} (cell {cell.name})") from None


def run(
    cells: Sequence[CpuCell],
    duration: str,
    costs: Optional[dict[str, Any]],
    vm_engine: Any,
    progress: Callable[[str], None],
    kept: Optional[Path] = None,
    reps: int = 1,
) -> list[CpuRow]:
    """Each cell once on the simulator and ``reps`` times on ``vm_engine``. With ``kept``
    (a JSON-lines file), each VM result is appended as it finishes and repetitions
    already there are not run on the VM again: a stopped grid resumes, and after a
    change to the simulator only the simulator runs."""
    # Runs on a testbed arranged otherwise (see ccbench.vm.placement; a reserved vCPU is
    # not pinned) are not reused.
    done = {}
    for reserved in (True, False):
        where = placement.plan(os.sched_getaffinity(0), getattr(vm_engine, "vcpus", 1), deadline=reserved)
        done[reserved] = _read_kept(kept, duration, vm_engine.guest_kernel, where.describe() if where else None)
    rows = []
    for cell in cells:
        runs = []
        for rep in range(reps):
            vm = done[cell.reserved].get((cell.name, rep))
            if vm is None:
                vm = _vm_run(cell, rep, duration, vm_engine, kept)
            runs.append(vm)
        row = _row(cell, runs, duration, costs)
        rows.append(row)
        progress(_progress_line(row))
    return rows


def _vm_run(cell: CpuCell, rep: int, duration: str, vm_engine: Any, kept: Optional[Path]) -> dict[str, Any]:
    """Repetition ``rep`` of ``cell`` on the VM, as kept (appended to ``kept``, if given)."""
    from ...vm.deadline import host_tick_ns

    result = vm_engine.run(cell.scenario(duration, None))  # the VM's costs are its own
    summary = result.summary
    vm = {
        "cell": cell.name,
        "rep": rep,
        "duration": duration,
        "guest": vm_engine.guest_kernel,
        "guest_hz": result.scenario.tcp.hz,
        "vm_mbps": _goodput(summary),
        "vm_rtt_ms": _rtt(summary),
        "vm_cpu_use": (summary["vm"]["vcpu_cpu_use"] or [0.0])[0],
        "host_tick_ns": summary["vm"].get("host_tick_ns", host_tick_ns()),
        # For later analysis: what the guest did and how its vCPU ran.
        "work": summary["vm"]["work"],
        "vcpu_sleeps": summary["vm"].get("vcpu_sleeps"),
        "vcpu_preemptions": summary["vm"].get("vcpu_preemptions"),
        "vcpu_run_delay_s": summary["vm"].get("vcpu_run_delay_s"),
        "io_waiting": summary["vm"]["io_thread"]["waiting"],
        "accelerator": summary["vm"].get("accelerator"),
        "placement": summary["vm"].get("placement"),
    }
    if kept is not None:
        with open(kept, "a") as f:
            f.write(json.dumps(vm) + "\n")
    return vm


def _row(cell: CpuCell, runs: list[dict[str, Any]], duration: str, costs: Optional[dict[str, Any]]) -> CpuRow:
    """The cell's row: its VM runs beside one simulator run."""
    from ...units import parse_rate
    from ..sim import ENGINE as sim

    # The simulator with the same costs, the tick of the host the VM ran on, the
    # guest's jiffy and the VM's receive path.
    sim_summary = sim.run(
        cell.scenario(duration, costs, runs[0]["host_tick_ns"], runs[0].get("guest_hz"), RECEIVE_PATH_PACKETS)
    ).summary
    sim_work = (sim_summary.get("host") or {}).get("work")  # none without a host: no costs, no reservation
    vm_tx = [TxShape.of(r["work"]["skbs"], r["work"]["segs_out"], duration, cell.slice) for r in runs if r.get("work")]
    return CpuRow(
        cell,
        parse_rate(cell.rate) / 1e6,
        _goodput(sim_summary),
        [r["vm_mbps"] for r in runs],
        statistics.median(r["vm_cpu_use"] for r in runs),
        TxShape.of(sim_work["bursts"], sim_work["packets"], duration, cell.slice) if sim_work else None,
        TxShape.median(vm_tx) if vm_tx else None,
        tuple(sorted({_testbed(r) for r in runs})),
        _rtt(sim_summary),
        [r["vm_rtt_ms"] for r in runs if r.get("vm_rtt_ms") is not None],
        _median([r["io_waiting"] for r in runs if r.get("io_waiting") is not None]),
    )


def _progress_line(row: CpuRow) -> str:
    ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
    rtt = f", RTT sim {_ms(row.sim_rtt_ms)} VM {_ms(row.vm_rtt_ms)} ms" if row.cell.pacing else ""
    io = "" if row.vm_io_waiting is None else f", I/O waits {row.vm_io_waiting:.0%}"
    return (
        f"  {row.cell.name}: sim {row.sim_mbps:.1f}, VM {row.vm_shown} Mbit/s (ratio {ratio}, "
        f"vCPU {row.vm_cpu_use:.0%}{io}{rtt}) {row.verdict.upper()}"
    )


def _testbed(vm: dict[str, Any]) -> str:
    placed = vm.get("placement") or "the host's threads not placed"
    return f"{str(vm.get('accelerator') or '?').upper()}, {placed}"


def _read_kept(
    kept: Optional[Path], duration: str, guest: str, where: Optional[str]
) -> dict[tuple[str, int], dict[str, Any]]:
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
    rows = [r for r in rows if not r.cell.pacing]
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
                held = any(r.testbed_bound for (c, _), r in by.items() if c in (cca, "cubic"))
                out.append(
                    Threshold(
                        cca,
                        slice_,
                        rate,
                        rtt,
                        _collapse(by, cca, shares, lambda r: r.sim_mbps),
                        _collapse(by, cca, shares, lambda r: r.vm_mbps),
                        held,
                    )
                )
    return out


def _collapse(
    by: dict[tuple[str, float], CpuRow], cca: str, shares: Sequence[float], pick: Callable[[CpuRow], float]
) -> Optional[float]:
    """The highest share at which ``cca`` gets under half of Cubic's goodput."""
    below = [s for s in shares if ("cubic", s) in by and pick(by[(cca, s)]) < 0.5 * pick(by[("cubic", s)])]
    return max(below) if below else None


def write(out: Path, rows: Sequence[CpuRow], limits: Sequence[Threshold], meta: dict[str, Any]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "validate-cpu.csv", out / "validate-cpu.json", out / "validate-cpu.md"]
    show = lambda x, digits=3: "" if x is None else f"{x:.{digits}f}"  # noqa: E731
    with open(paths[0], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "cca",
                "share",
                "slice",
                "rate",
                "rtt",
                "sim_mbps",
                "vm_mbps",
                "vm_min_mbps",
                "vm_max_mbps",
                "vm_reps",
                "ratio",
                "vm_cpu_use",
                "sim_skbs_per_slice",
                "vm_skbs_per_slice",
                "sim_segs_per_skb",
                "vm_segs_per_skb",
                "passed",
                "flows",
                "sim_rtt_ms",
                "vm_rtt_ms",
                "vm_io_waiting",
                "verdict",
            ]
        )
        for r in rows:
            c = r.cell
            tx = [
                f"{getattr(t, name):.2f}" if t else ""
                for name in ("skbs_per_slice", "segs_per_skb")
                for t in (r.sim_tx, r.vm_tx)
            ]
            w.writerow(
                [
                    c.cca,
                    c.share,
                    c.slice,
                    c.rate,
                    c.rtt,
                    f"{r.sim_mbps:.3f}",
                    f"{r.vm_mbps:.3f}",
                    f"{min(r.vm_runs):.3f}",
                    f"{max(r.vm_runs):.3f}",
                    len(r.vm_runs),
                    show(r.ratio),
                    f"{r.vm_cpu_use:.3f}",
                    *tx,
                    r.passed,
                    c.flows,
                    show(r.sim_rtt_ms),
                    show(r.vm_rtt_ms),
                    show(r.vm_io_waiting),
                    r.verdict,
                ]
            )
    shown = [
        dict(asdict(r), vm_mbps=r.vm_mbps, vm_rtt_ms=r.vm_rtt_ms, ratio=r.ratio, passed=r.passed, verdict=r.verdict)
        for r in rows
    ]
    paths[1].write_text(
        json.dumps(
            {
                "meta": meta,
                "rows": shown,
                "thresholds": [dict(asdict(t), passed=t.passed, verdict=t.verdict) for t in limits],
            },
            indent=1,
        )
    )
    paths[2].write_text(markdown(rows, limits, meta))
    return paths


def markdown(rows: Sequence[CpuRow], limits: Sequence[Threshold], meta: dict[str, Any]) -> str:
    testbeds = "; ".join(sorted({t for r in rows for t in r.vm_testbed})) or "?"
    paced = any(r.cell.pacing for r in rows)
    rtt_head = " RTT ms sim / VM |" if paced else ""
    lines = [
        f"Simulator vs VM ({meta.get('guest', '?')}; {testbeds}); goodput Mbit/s, ratio = sim / VM; the "
        f"simulator's receive ring is the VM's receive path, {RECEIVE_PATH_PACKETS} packets",
        "",
        f"| cell | sim | VM (median [range]) | ratio | VM vCPU use | VM I/O waits | skbs per slice (segments per "
        f"skb) sim / VM |{rtt_head} verdict |",
        "|---|---|---|---|---|---|---|" + ("---|" if paced else "") + "---|",
    ]
    order = {"differs": 0, "testbed": 1, "ok": 2}
    for r in sorted(
        rows,
        key=lambda r: (order[r.verdict], r.cell.slice, r.cell.rate, r.cell.rtt, r.cell.cca, r.cell.share, r.cell.flows),
    ):
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
        tx = f"{r.sim_tx or '-'} / {r.vm_tx or '-'}"
        rtt = f" {_ms(r.sim_rtt_ms)} / {_ms(r.vm_rtt_ms)} |" if paced else ""
        io = "-" if r.vm_io_waiting is None else f"{r.vm_io_waiting:.0%}"
        lines.append(
            f"| {r.cell.name} | {r.sim_mbps:.1f} | {r.vm_shown} | {ratio} | {r.vm_cpu_use:.0%} | {io} | {tx} |"
            f"{rtt} {r.verdict} |"
        )
    lines += ["", agreement(rows)]
    if limits:
        lines += [
            "",
            "| algorithm | slice, rate, RTT | under half of Cubic up to (sim) | (VM) | verdict |",
            "|---|---|---|---|---|",
        ]
    for t in limits:
        show = lambda x: "never" if x is None else f"{x:.0%}"  # noqa: E731
        lines.append(
            f"| {t.cca} | {t.slice}, {t.rate}, {t.rtt} | {show(t.sim_share)} | {show(t.vm_share)} | {t.verdict} |"
        )
    costs = pacing_costs(rows)
    if costs:
        lines += [
            "",
            "What pacing costs: goodput paced / unpaced (RTT paced / unpaced)",
            "",
            "| algorithm | flows, rate, vCPU | sim | VM |",
            "|---|---|---|---|",
        ]
        lines += [f"| {c.cca} | {c.where} | {c.sim} | {c.vm} |" for c in costs]
    return "\n".join(lines) + "\n"


def agreement(rows: Sequence[CpuRow]) -> str:
    """How many cells agree, and how many of the others the testbed itself held."""
    ok = sum(r.verdict == "ok" for r in rows)
    testbed = sum(r.verdict == "testbed" for r in rows)
    line = f"{ok} of {len(rows)} cells agree"
    if testbed:
        line += (
            f"; {testbed} more differ where QEMU's main thread, carrying the VM's packets, waited for a host "
            f"CPU over {IO_WAIT_BOUND:.0%} of the run (the testbed's I/O path, not the guest, set those)"
        )
    return line + "."


@dataclass
class PacingCost:
    cca: str
    cell: CpuCell  # the paced one
    sim: str
    vm: str

    @property
    def where(self) -> str:
        cpu = f"{self.cell.share:.0%} of {self.cell.slice}" if self.cell.reserved else "unreserved"
        return f"{self.cell.flows}, {self.cell.rate}, {cpu}"


def pacing_costs(rows: Sequence[CpuRow]) -> list[PacingCost]:
    """Per algorithm run both ways on the pacing grid, flow count and rate: the paced
    runs' goodput and RTT over the unpaced ones', on each engine."""
    by = {(r.cell.cca, r.cell.share, r.cell.slice, r.cell.rate, r.cell.flows): r for r in rows if r.cell.pacing}
    out = []
    for (cca, *where), p in by.items():  # in the grid's order
        # cubic_paced against cubic; bbr against bbr_unpaced
        base = cca.removesuffix(PACED_SUFFIX)
        u = by.get((base if base != cca else f"{cca}{UNPACED_SUFFIX}", *where))
        if u is not None:
            out.append(
                PacingCost(
                    base,
                    p.cell,
                    _ratios(p.sim_mbps, u.sim_mbps, p.sim_rtt_ms, u.sim_rtt_ms),
                    _ratios(p.vm_mbps, u.vm_mbps, p.vm_rtt_ms, u.vm_rtt_ms),
                )
            )
    return out


def _ratios(paced: float, unpaced: float, paced_rtt: Optional[float], unpaced_rtt: Optional[float]) -> str:
    goodput = f"{paced / unpaced:.2f}" if unpaced > 0 else "-"
    rtt = f"{paced_rtt / unpaced_rtt:.2f}" if paced_rtt and unpaced_rtt else "-"
    return f"{goodput} ({rtt})"


def _verdict(passed: bool, testbed_bound: bool) -> str:
    """ok; testbed (differs, but the VM's I/O path, not its guest, was short of CPU); or
    differs."""
    return "ok" if passed else "testbed" if testbed_bound else "differs"


def _median(values: Sequence[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f}"


def _goodput(summary: dict[str, Any]) -> float:
    return sum(f["goodput_bps"] for f in summary["flows"]) / 1e6


def _rtt(summary: dict[str, Any]) -> Optional[float]:
    """The median of the flows' median RTTs, in ms."""
    rtts = [f["rtt_ms"]["p50"] for f in summary["flows"] if (f.get("rtt_ms") or {}).get("p50") is not None]
    return statistics.median(rtts) if rtts else None
