"""Figures of a run, their medians and spread over repetitions, and the verdict of a cell.

Tolerances (simulator relative to kernel):

* goodput within 10% per flow; where loss or sharing makes a flow's goodput small
  (``OF_CAPACITY`` cells), within 10% of the link's capacity instead; flows that are all
  alike are compared by rank (the largest with the largest), since which of them ends up
  ahead is chance on a real kernel;
* mean RTT within 20% per flow (p95 shown, not judged);
* retransmissions of the cell within a factor of 2, or both below 0.1% of packets sent;
* completion time of a sized flow within 15% (of a flow that repeats downloads: the
  median download's, which also judges the per-download throughput);
* the time a flow was held back by the peer's receive window (`tcpi_rwnd_limited` on
  both engines), as a share of the run, within 10 points, judged where either engine
  saw any;
* a flow's MSS at the end of a run with a path MTU (``final_snd_mss``, the kernel's
  `tcpi_snd_mss`) within 8 bytes (`tcp_probe_threshold`'s default, where probing stops),
  judged where both engines report it;
* a UDP flow's delivered rate within 10%;
* a group of arrivals' median and 99th-percentile FCT, each within 15% (both engines
  open the same connections at the same instants: the simulator's seeded schedule).

Each figure is the median over the repetitions. The kernel varies from run to run, so a
figure also passes when the simulator's median lies inside the range the kernel's
repetitions spanned (its spread), which the table shows. A failing cell whose reference
is a VM that its own testbed held (the guest's vCPU busy all the time, or the host's
I/O path behind) gets the verdict ``testbed``: there the testbed, not the sender the
simulator models, decided the figures.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Optional

from .cells import OF_CAPACITY, Cell

GOODPUT_TOLERANCE = 0.10
RTT_TOLERANCE = 0.20
RETRANSMIT_FACTOR = 2.0
RETRANSMIT_FLOOR = 0.001  # both below 0.1% of packets sent: equal enough
COMPLETION_TOLERANCE = 0.15
RWND_LIMITED_POINTS = 10.0  # percentage points of the run
MSS_TOLERANCE_BYTES = 8  # tcp_probe_threshold's default


def _finite(x: Any) -> Optional[float]:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def run_figures(summary: dict[str, Any], mss: int) -> dict[str, Any]:
    """What the grid compares, from one run's summary (either engine)."""
    flows = summary["flows"]
    sent = sum((f.get("sent_bytes") or f["delivered_bytes"]) for f in flows)
    retransmits = sum(f["retransmits"] for f in flows)
    emulator = summary.get("emulator") or {}
    return {
        "flows": [
            {
                "goodput_bps": f["goodput_bps"],
                "rtt_mean_ms": _finite(f.get("rtt_ms", {}).get("mean")),
                "rtt_p95_ms": _finite(f.get("rtt_ms", {}).get("p95")),
                "completion_s": _completion(f),
                "rwnd_limited_pct": 100 * (f.get("rwnd_limited_ms") or 0.0) / (1e3 * summary["duration_s"]),
                "retransmits": f["retransmits"],
                "final_snd_mss": f.get("final_snd_mss"),
            }
            for f in flows
        ],
        "udp": [{"delivered_bps": u["delivered_bps"], "loss": u["loss"]} for u in summary.get("udp", [])],
        "arrivals": [
            {"fct_p50_ms": _finite(a["all"]["fct_p50_ms"]), "fct_p99_ms": _finite(a["all"]["fct_p99_ms"])}
            for a in summary.get("arrivals", [])
        ],
        "capacity_bps": summary["link"]["rate_bps"],
        "retransmits": retransmits,
        "retransmit_fraction": retransmits / max(1.0, sent / mss),
        "emulator_ratio": emulator.get("delivered_rate_ratio"),
        "emulator_flag_short": emulator.get("flag_short"),
        # A VM run whose guest or host I/O path, not the network, held the sender.
        "testbed_bound": (summary.get("vm") or {}).get("testbed_bound"),
        "notes": summary.get("notes", []),
    }


def _completion(flow: dict[str, Any]) -> Optional[float]:
    """A sized flow's completion time; for repeated downloads the median download's
    (the per-download throughput is the size over it), unfinished ones left out."""
    if not flow.get("size_bytes"):
        return None
    downloads = flow.get("downloads")
    if downloads:
        times = [d["completion_s"] for d in downloads if d["completion_s"] is not None]
        return float(statistics.median(times)) if times else None
    return flow.get("completion_s")


@dataclass
class Spread:
    median: Optional[float]
    low: Optional[float]
    high: Optional[float]

    @staticmethod
    def of(values: list[Optional[float]]) -> "Spread":
        xs = [float(v) for v in values if v is not None]
        if not xs:
            return Spread(None, None, None)
        return Spread(float(statistics.median(xs)), min(xs), max(xs))


@dataclass
class EngineFigures:
    """One engine's repetitions of a cell (``available`` False: not run, ``reason`` why)."""

    available: bool
    reason: str = ""
    runs: list[dict[str, Any]] = field(default_factory=list)

    def flow(self, i: int, key: str) -> Spread:
        # .get: figures journalled before a figure was added have none of it.
        return Spread.of([r["flows"][i].get(key) for r in self.runs if i < len(r["flows"])])

    def total(self, key: str) -> Spread:
        return Spread.of([r[key] for r in self.runs])

    def item(self, kind: str, i: int, key: str) -> Spread:
        """Item `i` of a run's `kind` list (``udp``, ``arrivals``): its `key`."""
        return Spread.of([r[kind][i][key] for r in self.runs if i < len(r.get(kind, []))])

    def count(self, kind: str) -> int:
        return min((len(r.get(kind, [])) for r in self.runs), default=0)

    @property
    def n_flows(self) -> int:
        return min((len(r["flows"]) for r in self.runs), default=0)


@dataclass
class Check:
    """One judged figure: the simulator's and the kernel's medians, their ratio, the
    kernel's spread, and whether it passed."""

    figure: str
    flow: Optional[int]
    sim: Optional[float]
    kernel: Spread
    ratio: Optional[float]
    ok: bool

    @property
    def label(self) -> str:
        return self.figure if self.flow is None else f"{self.figure}[{self.flow}]"


@dataclass
class CellResult:
    cell: Cell
    sim: EngineFigures
    kernel: EngineFigures
    checks: list[Check] = field(default_factory=list)
    emulator_ratio: Optional[float] = None
    emulator_flagged: bool = False

    @property
    def verdict(self) -> str:
        """pass, FAIL, n/a (not run on both engines), or testbed: a failing cell whose
        reference (a VM) was held by its own testbed, not by the network, in a run."""
        if not (self.sim.available and self.kernel.available):
            return "n/a"
        if all(c.ok for c in self.checks):
            return "pass"
        return "testbed" if self.testbed_bound else "FAIL"

    @property
    def testbed_bound(self) -> Optional[str]:
        """Why the reference's testbed held a run of it (the first such run's), if one did."""
        return next((r["testbed_bound"] for r in self.kernel.runs if r.get("testbed_bound")), None)

    @property
    def worst(self) -> Optional[Check]:
        """The check furthest from agreement (largest |log ratio|), failing ones first."""
        scored = [c for c in self.checks if c.ratio is not None and c.ratio > 0]
        if not scored:
            return None
        return max(scored, key=lambda c: (not c.ok, abs(math.log(c.ratio or 1.0))))


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _inside(x: Optional[float], s: Spread) -> bool:
    return x is not None and s.low is not None and s.high is not None and s.low <= x <= s.high


def _by_rank(figures: EngineFigures) -> EngineFigures:
    """Each run's flows ordered by goodput, largest first."""
    runs = [{**r, "flows": sorted(r["flows"], key=lambda f: -f["goodput_bps"])} for r in figures.runs]
    return EngineFigures(figures.available, figures.reason, runs)


def _traffic_checks(res: CellResult, sim: EngineFigures, kernel: EngineFigures) -> None:
    """UDP flows' delivered rates, and arrivals' median and p99 FCT."""
    judged = [("udp", "delivered_bps", "udp_delivered", GOODPUT_TOLERANCE)] + [
        ("arrivals", key, key.removesuffix("_ms"), COMPLETION_TOLERANCE) for key in ("fct_p50_ms", "fct_p99_ms")
    ]
    for kind, key, figure, tolerance in judged:
        n = min(sim.count(kind), kernel.count(kind))
        for i in range(n):
            s, k = sim.item(kind, i, key).median, kernel.item(kind, i, key)
            r = _ratio(s, k.median)
            ok = (r is not None and abs(r - 1) <= tolerance) or _inside(s, k)
            res.checks.append(Check(figure, None if n == 1 else i, s, k, r, ok))


def compare(cell: Cell, sim: EngineFigures, kernel: EngineFigures) -> CellResult:
    if cell.exchangeable:
        sim, kernel = _by_rank(sim), _by_rank(kernel)
    res = CellResult(cell, sim, kernel)
    if kernel.available and kernel.runs:
        ratios = [r["emulator_ratio"] for r in kernel.runs if r["emulator_ratio"] is not None]
        res.emulator_ratio = min(ratios) if ratios else None
        res.emulator_flagged = any(r["emulator_flag_short"] for r in kernel.runs)
    if not (sim.available and kernel.available):
        return res
    capacity = max(sim.total("capacity_bps").median or 0.0, kernel.total("capacity_bps").median or 0.0)
    for i in range(min(sim.n_flows, kernel.n_flows)):
        flow = None if sim.n_flows == 1 else i
        s, k = sim.flow(i, "goodput_bps").median, kernel.flow(i, "goodput_bps")
        if cell.goodput == OF_CAPACITY:
            ok = s is not None and k.median is not None and abs(s - k.median) <= GOODPUT_TOLERANCE * capacity
        else:
            r = _ratio(s, k.median)
            ok = r is not None and abs(r - 1) <= GOODPUT_TOLERANCE
        res.checks.append(Check("goodput", flow, s, k, _ratio(s, k.median), ok or _inside(s, k)))
        s, k = sim.flow(i, "rtt_mean_ms").median, kernel.flow(i, "rtt_mean_ms")
        r = _ratio(s, k.median)
        res.checks.append(
            Check("rtt_mean", flow, s, k, r, (r is not None and abs(r - 1) <= RTT_TOLERANCE) or _inside(s, k))
        )
        s, k = sim.flow(i, "completion_s").median, kernel.flow(i, "completion_s")
        if s is not None or k.median is not None:
            r = _ratio(s, k.median)
            res.checks.append(
                Check(
                    "completion", flow, s, k, r, (r is not None and abs(r - 1) <= COMPLETION_TOLERANCE) or _inside(s, k)
                )
            )
        s, k = sim.flow(i, "rwnd_limited_pct").median, kernel.flow(i, "rwnd_limited_pct")
        if (s or 0.0) > 0 or (k.high or 0.0) > 0:
            ok = s is not None and k.median is not None and abs(s - k.median) <= RWND_LIMITED_POINTS
            res.checks.append(Check("rwnd_limited", flow, s, k, _ratio(s, k.median), ok or _inside(s, k)))
        s, k = sim.flow(i, "final_snd_mss").median, kernel.flow(i, "final_snd_mss")
        if s is not None and k.median is not None:
            ok = abs(s - k.median) <= MSS_TOLERANCE_BYTES or _inside(s, k)
            res.checks.append(Check("final_mss", flow, s, k, _ratio(s, k.median), ok))
    _traffic_checks(res, sim, kernel)
    s, k = sim.total("retransmits").median, kernel.total("retransmits")
    both_low = (sim.total("retransmit_fraction").median or 0.0) < RETRANSMIT_FLOOR and (
        kernel.total("retransmit_fraction").median or 0.0
    ) < RETRANSMIT_FLOOR
    r = _ratio(s, k.median)
    res.checks.append(
        Check(
            "retransmits",
            None,
            s,
            k,
            r,
            both_low or _inside(s, k) or (r is not None and 1 / RETRANSMIT_FACTOR <= r <= RETRANSMIT_FACTOR),
        )
    )
    return res
