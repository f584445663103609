"""Elmenhorst and Aschenbruck, "2BRobust - Overcoming TCP BBR performance degradation in
virtual machines under CPU contention", 2026.

A VM sends one bulk flow; its vCPU gets ``share`` of every ``slice`` (SCHED_DEADLINE).
The host CPU model gates every sender task on those slices. Every experiment runs twice:
with the ``server`` preset (free work: only availability matters) and with the ``vm``
preset (a KVM guest: each return of the vCPU costs CPU time; docs/host-cpu.md). Each is a
sweep into the results store:

* share: BBRv1, v2, v3 and Cubic over CPU shares, slice lengths (and RTTs) at 100 Mbit/s
  (the study's Fig. 4 and 8);
* bandwidth: BBRv3 over shares at 10 to 1000 Mbit/s, 10 ms slices (Fig. 7);
* patch: BBRv3 (and BBRv1) with and without the inflight-deficit patch (Fig. 10, 15);
* time series of single runs at 25%: the spiral and inflight in BDP (Fig. 6, 9, 11).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional, Sequence

import matplotlib
import pandas as pd
from matplotlib.figure import Figure
from rich.console import Console

from .. import engines
from ..plots import style
from ..report_html import Page, Section, Table, save_figure, write_page
from . import study
from ._runs import conclude, execute_plans, line, mbps, means, runs, value
from .compare import Finding, layout

STUDY = "Elmenhorst & Aschenbruck, 2026"
NOTE = (
    "ccbench runs the sender's work under the vCPU's SCHED_DEADLINE reservation as the host kernel does "
    "(deadline = runtime, as the study set it; a 4 ms host tick), twice: with free work (the server preset) and "
    "as a KVM guest (the vm preset: free work per packet and per ACK, and a cost for each return of the vCPU: "
    "the host core's C6 exit and KVM's wake-up path from published figures, and a cache refill fitted to one "
    "point, BBRv1 at 45% of 1 ms slices; docs/host-cpu.md). The last column but one says which of the vm "
    "column's figures were fitted and which predicted. With free work and 1 ms slices EDT pacing's lateness credit of half a burst "
    "(about 0.5 ms) absorbs most of each off-period, so the server column's BBR recovers at far lower shares than "
    "the study's. The study ran BBRv1 on Linux 6.1, v2 on Google's 5.13 and v3 on Google's 6.13 kernels; "
    "ccbench models each algorithm's current code on one stack."
)
# The simulator's two hosts: free work, and a KVM guest whose returns cost (docs/host-cpu.md).
PRESETS = ("server", "vm")
# Which of the vm preset's figures were fitted to the study: its refill was set so that
# BBRv1 recovers at the study's 45% of 1 ms slices; everything else is predicted.
FITTED = {"recovery-1ms": "fitted for BBRv1 (the vm preset's refill); other versions predicted"}
PREDICTED = "predicted"
VM_NOTE = (
    "The VM engine column ran the sender in a QEMU guest ({guest}) with its vCPU under SCHED_DEADLINE (deadline = "
    "runtime, as the study set it), the bottleneck in ccbench's emulator; the server and vm columns ran the same "
    "grid on the simulator with free sender work (the server preset) and as a KVM guest (the vm preset). Of BBR, "
    "the guest's kernel has {versions}: findings about other versions are the simulator's alone (ccbench "
    "replicate elmenhorst2026). The 2BRobust patch (in no released kernel) runs in the guest as bbr_2brobust or "
    "bbr3_2brobust: the guest kernel's own tcp_bbr.c with ccbench's patch (ccbench.vm.patched). Under TCG, which "
    "runs here when KVM cannot, every guest instruction is translated, so guest work costs several times what it "
    "does under the study's KVM, and the guest does not reach 1 Gbit/s even unlimited (a few hundred Mbit/s): "
    "1 Gbit/s cells are held by QEMU, not by the share. ccbench validate --cpu compares the engines cell by cell "
    "with the guest's measured costs."
)
CCAS = {"bbr": "BBRv1", "bbr2": "BBRv2", "bbr3": "BBRv3", "cubic": "Cubic"}
COLORS = {"bbr": style.BLUE, "bbr2": style.GREEN, "bbr3": style.VERMILLION, "cubic": style.ORANGE}
RECOVERED = 80.0  # Mbit/s of 100: "exceeds 80% of the bandwidth"


@dataclass(frozen=True)
class Grid:
    duration: str
    repetitions: int
    shares: Sequence[str]
    slices: Sequence[str]
    rtts: Sequence[str]
    rates: Sequence[str]
    patched: Sequence[str]


FULL = Grid(
    duration="20s",
    repetitions=5,
    shares=tuple(f"{p}%" for p in range(10, 101, 5)),
    slices=("1ms", "10ms", "20ms"),
    rtts=("10ms", "20ms", "40ms"),
    rates=("10Mbit", "50Mbit", "100Mbit", "500Mbit", "1Gbit"),
    patched=("bbr", "bbr3"),
)
QUICK = Grid(
    duration="20s",
    repetitions=1,
    shares=("10%", "25%", "35%", "45%", "55%", "70%", "85%", "100%"),
    slices=("1ms", "10ms"),
    rtts=("10ms",),
    rates=("10Mbit", "100Mbit", "1Gbit"),
    patched=("bbr3",),
)
# On the VM engine the patch runs on the BBR versions the guest kernel has (Debian's have
# BBRv1; one built with BBRv3 by ccbench vm build-kernel, BBRv3), and a VM run costs its
# wall time (plus a boot), so the quick grid's runs are 10 s: about 90 runs, twenty minutes.
QUICK_VM = replace(QUICK, duration="10s", patched=("bbr", "bbr3"))
FULL_VM = replace(FULL, patched=("bbr", "bbr3"))


def _plan(grid: Grid, name: str, link: dict[str, Any], host: dict[str, Any], flow: dict[str, Any]) -> dict[str, Any]:
    return {
        "duration": grid.duration,
        "link": {"buffer": "1bdp", **link},
        "host": {k: v for k, v in host.items() if v is not None},
        "flows": [flow],
        "sweep": {"name": name, "repetitions": grid.repetitions},
    }


def plans(
    grid: Grid,
    prefix: str,
    ccas: Sequence[str] = tuple(CCAS),
    bandwidth_cca: str = "bbr3",
    cpu: Optional[str] = None,
) -> dict[str, dict[str, Any]]:
    """The study's sweeps: ``ccas`` over shares and slices, ``bandwidth_cca`` over
    shares and rates, and (when ``grid.patched`` names algorithms) the patch; on the
    simulator with the CPU preset ``cpu`` (None: a VM engine's runs, which name none)."""
    shares = list(grid.shares)
    out = {
        "share": _plan(
            grid,
            f"{prefix}-share",
            {"rate": "100Mbit", "rtt": list(grid.rtts)},
            {"cpu": cpu, "cpu_slice": list(grid.slices), "cpu_share": shares},
            {"cca": list(ccas)},
        ),
        "bandwidth": _plan(
            grid,
            f"{prefix}-bandwidth",
            {"rate": list(grid.rates), "rtt": "10ms"},
            {"cpu": cpu, "cpu_slice": "10ms", "cpu_share": shares},
            {"cca": bandwidth_cca},
        ),
    }
    if grid.patched:
        out["patch"] = _plan(
            grid,
            f"{prefix}-patch",
            {"rate": "100Mbit", "rtt": "10ms"},
            {"cpu": cpu, "cpu_slice": ["1ms", "10ms"], "cpu_share": shares},
            {"cca": list(grid.patched), "params": {"inflight_deficit": [0, 1]}},
        )
    return out


@study(
    "elmenhorst2026",
    summary="Elmenhorst & Aschenbruck, 2BRobust (2026): BBR in VMs with time-sliced vCPUs; the inflight-deficit patch",
)
def run(
    quick: bool, out: Path, workers: Optional[int], store: Any, console: Console, grid: Optional[Grid] = None
) -> None:
    from ..store import open_store

    grid = grid or (QUICK if quick else FULL)
    mode = "quick" if quick else "full"
    store = store if store is not None else open_store()
    frames, series, found = {}, {}, {}
    for cpu in PRESETS:
        docs = plans(grid, _prefix(f"elmenhorst2026-{mode}", cpu), cpu=cpu)
        records = execute_plans(docs, store, workers, console, f"{STUDY}, {cpu} preset")
        frames[cpu] = {part: _with_share(runs(recs)) for part, recs in records.items()}
        series[cpu] = spiral_runs(grid.duration, cpu=cpu)
        found[cpu] = {o.key: o for o in analyse(frames[cpu], series[cpu])}
    findings = _findings(found)
    conclude(
        findings,
        console,
        out,
        f"{STUDY}: the study's figures and ccbench's with each CPU preset ({mode} mode)",
        NOTE,
        lambda path: write_report(frames, series, findings, path, mode, NOTE),
    )


def _prefix(prefix: str, cpu: str) -> str:
    """The sweeps' name prefix: the server preset's keep the names they had before the
    vm preset (its runs are the same scenarios, so the store still holds them)."""
    return prefix if cpu == "server" else f"{prefix}-{cpu}"


def _findings(
    found: dict[str, dict[str, "Observation"]], engine: Optional[dict[str, "Observation"]] = None
) -> list[Finding]:
    """One row per finding of the server preset's runs: its figure, the vm preset's and
    (given) the VM engine's, and whether the vm preset's was fitted or predicted."""

    def figure(observed: dict[str, Observation], key: str) -> str:
        return observed[key].figure if key in observed else "n/a"

    return [
        Finding(
            o.point,
            o.study,
            o.figure,
            o.note,
            vm=None if engine is None else figure(engine, key),
            vm_preset=figure(found["vm"], key),
            basis=FITTED.get(key, PREDICTED),
        )
        for key, o in found["server"].items()
    ]


# The engine the study's second run is written for: a guest whose vCPU takes the slices.
ON_A_GUEST = "vm"


@study("elmenhorst2026", summary="", engine=ON_A_GUEST)
def run_vm(
    quick: bool, out: Path, workers: Optional[int], store: Any, console: Console, grid: Optional[Grid] = None
) -> None:
    """The study's grid with the sender in a QEMU guest (the VM engine), and the same
    grid on the simulator: three figures per finding, the study's, the VM's and the
    simulator's. The guest's kernel decides which BBR versions run."""
    from ..store import open_store

    grid = grid or (QUICK_VM if quick else FULL_VM)
    mode = "quick" if quick else "full"
    store = store if store is not None else open_store()
    vm = engines.get(ON_A_GUEST)
    # Root, QEMU and the guest are checked before the first run.
    vm.check(vm.load({"duration": "1s", "link": {"rate": "10Mbit", "rtt": "10ms"}, "flows": [{"cca": "cubic"}]}))
    offered = vm.congestion_control()
    versions = tuple(c for c in ("bbr", "bbr2", "bbr3") if c in offered)
    bandwidth_cca = "bbr3" if "bbr3" in offered else "bbr"
    deficit = vm.patched("inflight_deficit")
    grid = replace(grid, patched=tuple(v for v in grid.patched if v in versions and v in deficit))
    prefix = f"elmenhorst2026-vm-{mode}"
    spiral = tuple(v for v in ("bbr", "bbr3") if v in versions)
    frames, series, found = {}, {}, {}
    for label, engine, cpu in (("VM engine", ON_A_GUEST, None), *((p, engines.DEFAULT, p) for p in PRESETS)):
        docs = plans(grid, prefix if cpu is None else _prefix(prefix, cpu), (*versions, "cubic"), bandwidth_cca, cpu)
        where = "the VM engine" if cpu is None else f"the simulator, {cpu} preset"
        records = execute_plans(docs, store, workers, console, f"{STUDY} on {where}", engine=engine)
        frames[label] = {part: _with_share(runs(recs)) for part, recs in records.items()}
        series[label] = spiral_runs(grid.duration, engine, spiral, patched=bool(grid.patched), cpu=cpu)
        found[label] = {o.key: o for o in analyse(frames[label], series[label], bandwidth_cca)}
    note = VM_NOTE.format(guest=vm.guest_kernel, versions=", ".join(CCAS[v] for v in versions))
    findings = _findings(found, found["VM engine"])
    conclude(
        findings,
        console,
        out,
        f"{STUDY}: the study's figures, the VM's and the simulator's ({mode} mode)",
        note,
        lambda path: write_report(frames, series, findings, path, f"{mode} mode, VM engine", note),
    )


def _with_share(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["share"] = [float(str(s).rstrip("%")) / 100 for s in frame["host.cpu_share"]]
    if "flows[0].params.inflight_deficit" in frame:
        frame["patch"] = frame["flows[0].params.inflight_deficit"].astype(int)
    return frame


def spiral_runs(
    duration: str,
    engine: str = engines.DEFAULT,
    ccas: Sequence[str] = ("bbr", "bbr3"),
    patched: bool = True,
    cpu: Optional[str] = None,
) -> dict[str, Any]:
    """Single runs with time series: each BBR version at 25% of 10 ms slices (with and
    without the patch) and at 100% (no contention), on the simulator with the CPU preset
    ``cpu`` (None: on a VM engine)."""
    from ..scenario import Scenario

    runner = engines.get(engine)
    variants = [("100%", None, 0), ("25%", "25%", 0)] + ([("25% + patch", "25%", 1)] if patched else [])
    out = {}
    for cca in ccas:
        for label, host, patch in variants:
            flow: dict[str, Any] = {"cca": cca, **({"params": {"inflight_deficit": 1}} if patch else {})}
            doc: dict[str, Any] = {
                "duration": duration,
                "interval": "50ms",
                "link": {"rate": "100Mbit", "rtt": "10ms", "buffer": "1bdp"},
                "flows": [flow],
            }
            if host is not None:
                doc["host"] = {"cpu_share": host, "cpu_slice": "10ms", **({} if cpu is None else {"cpu": cpu})}
            out[f"{cca} {label}"] = runner.run(Scenario.from_dict(doc)).flows
    return out


def _recovery(table: pd.DataFrame, **where: Any) -> float:
    """The lowest share whose mean goodput exceeds RECOVERED (NaN if none)."""
    sel = table
    for k, v in where.items():
        sel = sel[sel[k] == v]
    ok = sel[sel["mean"] > RECOVERED]["share"]
    return float(ok.min()) if len(ok) else math.nan


def _share(x: float) -> str:
    return "never" if not math.isfinite(x) else f"{100 * x:.0f}%"


def inflight_in_bdp(flows: pd.DataFrame) -> pd.Series:
    """Bytes in flight over BBR's own BDP estimate (bandwidth x min RTT)."""
    bdp = flows["cc_bw_bps"] / 8 * flows["cc_min_rtt_ms"] / 1e3
    return flows["inflight_bytes"] / bdp.where(bdp > 0)


@dataclass(frozen=True)
class Observation:
    """One of the study's findings with ccbench's figure for it from one engine's runs."""

    key: str
    point: str
    study: str
    figure: str
    note: str = ""


def analyse(
    frames: dict[str, pd.DataFrame], series: dict[str, pd.DataFrame], bandwidth_cca: str = "bbr3"
) -> list[Observation]:
    """The findings the runs can speak to: a BBR version, the patch or a time series
    left out of the runs leaves out the findings about it."""
    share = means(frames["share"], ["link.rtt", "host.cpu_slice", "flows[0].cca", "share"])
    out = _share_findings(share)
    if {"bbr2", "bbr3"} <= set(share["flows[0].cca"]):
        out.append(_bbr2_finding(share))
    out.append(_bandwidth_finding(means(frames["bandwidth"], ["link.rate", "share"]), bandwidth_cca))
    if "patch" in frames:
        out += _patch_findings(means(frames["patch"], ["flows[0].cca", "host.cpu_slice", "patch", "share"]))
    out += _inflight_findings(series)
    return out


def _share_findings(share: pd.DataFrame) -> list[Observation]:
    """The share experiment (Fig. 4 and 8): BBR at low shares, the share at which it
    recovers with 10 ms and 1 ms slices, and Cubic."""
    ccas = set(share["flows[0].cca"])
    bbrs = [v for v in ("bbr", "bbr2", "bbr3") if v in ccas]
    pair = [v for v in ("bbr", "bbr3") if v in ccas]
    names = "/".join(CCAS[v] for v in bbrs)
    low = share[(share["share"] <= 0.25) & share["flows[0].cca"].isin(bbrs) & (share["host.cpu_slice"] != "1ms")]
    rec = {
        (cca, sl): _recovery(share, **{"flows[0].cca": cca, "host.cpu_slice": sl, "link.rtt": "10ms"})
        for cca in pair
        for sl in set(share["host.cpu_slice"])
    }
    cubic = share[(share["flows[0].cca"] == "cubic") & (share["host.cpu_slice"] != "20ms") & (share["share"] >= 0.25)]
    needs = " / ".join(CCAS[v] for v in pair)

    def recovery(sl: str) -> str:
        if (share["host.cpu_slice"] != sl).all():
            return f"n/a (no {sl} slices in this grid)"
        return " / ".join(_share(rec.get((v, sl), math.nan)) for v in pair)

    return [
        Observation(
            "low",
            "BBR at 10-25% CPU share, 10 ms slices and longer (100 Mbit/s)",
            "no BBR version exceeds 11 Mbit/s (median; 1 ms slices too)",
            f"{names} at most {mbps(low['mean'].max())}" if len(low) else "n/a",
            "1 ms slices: see below",
        ),
        Observation(
            "recovery-10ms",
            f"10 ms slices: share {needs} need{'s' if len(pair) == 1 else ''} for 80 Mbit/s",
            "at least 65-70% (BBRv1 and BBRv3)",
            recovery("10ms"),
            "10 ms RTT",
        ),
        Observation(
            "recovery-1ms",
            f"1 ms slices: share where {needs} approach{'es' if len(pair) == 1 else ''} the link rate",
            "about 45% (BBRv1 and BBRv3)",
            recovery("1ms"),
            f"first share above {RECOVERED:g} Mbit/s, 10 ms RTT",
        ),
        Observation(
            "cubic",
            "Cubic (slices up to 10 ms, 25% share and above)",
            "reaches the 100 Mbit/s link in nearly all cases",
            f"{mbps(cubic['mean'].min())} to {mbps(cubic['mean'].max())}" if len(cubic) else "n/a",
        ),
    ]


def _bbr2_finding(share: pd.DataFrame) -> Observation:
    """BBRv2 against v3 at middling shares of 10 ms slices."""
    tenth = (share["host.cpu_slice"] == "10ms") & (share["link.rtt"] == "10ms")
    v2, v3 = (share[tenth & (share["flows[0].cca"] == v)] for v in ("bbr2", "bbr3"))
    mid = [s for s in (0.35, 0.45, 0.55) if s in set(v2["share"])]
    return Observation(
        "bbr2",
        "BBRv2 (10 ms slices, 35-55% share)",
        "less affected than v1 and v3, with high variance",
        ", ".join(f"{100 * s:.0f}%: v2 {mbps(value(v2, share=s))} vs v3 {mbps(value(v3, share=s))}" for s in mid)
        or "n/a (no share of 35-55% in this grid)",
        "ccbench models v2alpha's code; the study saw v2's estimate freeze in some runs",
    )


def _bandwidth_finding(bw: pd.DataFrame, bandwidth_cca: str) -> Observation:
    """The bandwidth experiment (Fig. 7): goodput at low shares over link rates."""
    capped = {s: bw[bw["share"] == s]["mean"] for s in (0.25, 0.35) if (bw["share"] == s).any()}
    rates = sorted(set(bw["link.rate"]), key=_rate_bps)
    return Observation(
        "bandwidth",
        f"{CCAS[bandwidth_cca]}, 10 ms slices, shares up to 35%, 10-1000 Mbit/s",
        "capped near 20 Mbit/s whatever the bandwidth (BBRv3)",
        "; ".join(f"at {100 * s:.0f}%: {mbps(v.min())} to {mbps(v.max())}" for s, v in capped.items())
        + f" over {len(rates)} rates ({', '.join(rates)})",
        "the spread across rates shows how little the bottleneck matters",
    )


def _patch_findings(patch: pd.DataFrame) -> list[Observation]:
    """The patch experiment (Fig. 10, 15): the recovery share with and without it."""
    out = []
    for cca in (v for v in ("bbr3", "bbr") if v in set(patch["flows[0].cca"])):
        pr = {
            (sl, p): _recovery(patch, **{"flows[0].cca": cca, "host.cpu_slice": sl, "patch": p})
            for sl in ("1ms", "10ms")
            for p in (0, 1)
        }
        out.append(
            Observation(
                f"patch-{cca}",
                f"2BRobust patch, {CCAS[cca]}: recovery share with 1 ms / 10 ms slices",
                PATCH_FINDINGS[cca],
                f"{_share(pr[('1ms', 1)])} / {_share(pr[('10ms', 1)])} (unpatched {_share(pr[('1ms', 0)])} / "
                f"{_share(pr[('10ms', 0)])})",
                f"first share above {RECOVERED:g} Mbit/s",
            )
        )
    return out


def _inflight_findings(series: dict[str, pd.DataFrame]) -> list[Observation]:
    """The time series at 25% (Fig. 6, 9, 11): how often inflight stays below 1 BDP."""
    below = {k: float((inflight_in_bdp(_settled(v)) < 1).mean()) for k, v in series.items()}
    shown = [v for v in ("bbr3", "bbr") if f"{v} 25%" in below]
    if not shown:
        return []
    figure = "; ".join(
        f"{CCAS[v]}: below 1 BDP in {100 * below[f'{v} 25%']:.0f}% of samples"
        + (f", {100 * below[f'{v} 25% + patch']:.0f}% with the patch" if f"{v} 25% + patch" in below else "")
        + (f", {100 * below[f'{v} 100%']:.0f}% at 100% share" if f"{v} 100%" in below else "")
        for v in shown
    )
    return [
        Observation(
            "inflight",
            "Inflight at 25% share, 10 ms slices",
            "below 1 BDP (as BBR estimates it), even after BBR lowered its estimate; the patch lifts it",
            figure,
            f"samples every 50 ms after the first {SETTLE_S:g} s (the second half of shorter runs)",
        )
    ]


# The study gives BBRv3's figures in its text; BBRv1's are in a figure only (Fig. 15).
PATCH_FINDINGS = {
    "bbr3": "25% / 40% (unpatched 45% / 70%)",
    "bbr": "as BBRv3's, with slight offsets (Fig. 15; no figures in the text)",
}
SETTLE_S = 5.0


def _settled(flows: pd.DataFrame) -> pd.DataFrame:
    """A run's samples after start-up: after SETTLE_S, or the second half of a run
    shorter than twice that."""
    start = min(SETTLE_S, float(flows["time_s"].max()) / 2) if len(flows) else 0.0
    return flows[flows["time_s"] >= start]


# Runs in one figure: the VM engine's solid, the simulator's with the server preset dashed,
# with the vm preset dotted.
DASHES = {"VM engine": "-", "server": "--", "vm": ":"}


def _label(name: str, engine: str) -> str:
    return f"{name} ({engine})" if engine else name


def write_report(
    frames: dict[str, dict[str, pd.DataFrame]],
    series: dict[str, dict[str, pd.DataFrame]],
    findings: Sequence[Finding],
    out: Path,
    mode: str,
    note: str,
) -> Path:
    """The figures and the findings as an HTML page. ``frames`` and ``series`` are keyed
    by what ran them: the VM engine, or the simulator with a preset."""
    with matplotlib.rc_context(style.RC):
        images = [
            save_figure(
                share_figure({e: f["share"] for e, f in frames.items()}),
                out,
                "share",
                "Throughput against CPU share, per slice length and RTT (the study's Fig. 4)",
                "Goodput at 100 Mbit/s, mean ± 95% CI over repetitions.",
            ),
            save_figure(
                bandwidth_figure({e: f["bandwidth"] for e, f in frames.items()}),
                out,
                "bandwidth",
                "BBR against CPU share for several bottleneck rates (the study's Fig. 7, BBRv3)",
                "10 ms slices, 10 ms RTT; log scale.",
            ),
        ]
        if all("patch" in f for f in frames.values()):
            images.append(
                save_figure(
                    patch_figure({e: f["patch"] for e, f in frames.items()}),
                    out,
                    "patch",
                    "The inflight-deficit patch (the study's Fig. 10 and 15)",
                    "10 ms RTT, 100 Mbit/s.",
                )
            )
        images += [
            save_figure(
                spiral_figure(series),
                out,
                "spiral",
                "Pacing rate, delivery rate and bandwidth estimate over time (the study's Fig. 6)",
                "One flow at 100 Mbit/s, 10 ms RTT.",
            ),
            save_figure(
                inflight_figure(series),
                out,
                "inflight",
                "Inflight in BDP (as BBR estimates it) and pacing gain (the study's Fig. 9 and 11)",
                "25% of 10 ms slices.",
            ),
        ]
    names, headings = layout(findings)
    comparison = Table("Findings", list(headings), [[getattr(f, n) or "" for n in names] for f in findings])
    page = Page(
        title=f"ccbench replication: {STUDY}, 2BRobust",
        subtitle=mode,
        sections=[
            Section("The study's figures and ccbench's", paragraphs=[note], tables=[comparison]),
            Section("Figures", images=images),
        ],
    )
    return write_page(page, out)


def share_figure(frames: dict[str, pd.DataFrame]) -> Figure:
    tables = {e: means(f, ["link.rtt", "host.cpu_slice", "flows[0].cca", "share"]) for e, f in frames.items()}
    both = pd.concat(list(tables.values()))
    rtts, slices = _by_duration(both["link.rtt"]), _by_duration(both["host.cpu_slice"])
    fig = Figure(figsize=(3.4 * len(slices), 2.8 * len(rtts)))
    axes = fig.subplots(len(rtts), len(slices), sharex=True, sharey=True, squeeze=False)
    for i, rtt in enumerate(rtts):
        for j, sl in enumerate(slices):
            ax = axes[i][j]
            for engine, table in tables.items():
                for cca in CCAS:
                    t = table[
                        (table["link.rtt"] == rtt) & (table["host.cpu_slice"] == sl) & (table["flows[0].cca"] == cca)
                    ]
                    if len(t):
                        line(ax, t, "share", _label(CCAS[cca], engine), COLORS[cca], marker=".", ls=DASHES[engine])
            ax.set_title(f"{sl} slices, {rtt} RTT")
            ax.set_ylim(0, 105)
            if i == len(rtts) - 1:
                ax.set_xlabel("CPU share")
            if j == 0:
                ax.set_ylabel("goodput (Mbit/s)")
    axes[0][0].legend()
    fig.tight_layout()
    return fig


def bandwidth_figure(frames: dict[str, pd.DataFrame]) -> Figure:
    fig = Figure(figsize=(4.8, 3.4))
    ax = fig.subplots()
    palette = style.FLOW_COLORS
    titles = set()
    for engine, frame in frames.items():
        table = means(frame, ["link.rate", "share"])
        titles.update(CCAS.get(c, c) for c in set(frame["ccas"]))
        for k, rate in enumerate(sorted(set(table["link.rate"]), key=_rate_bps)):
            line(
                ax,
                table[table["link.rate"] == rate],
                "share",
                _label(rate, engine),
                palette[k % len(palette)],
                marker=".",
                ls=DASHES[engine],
            )
    ax.set_yscale("log")
    ax.set_xlabel("CPU share")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_title(f"{', '.join(sorted(titles))}, 10 ms slices")
    ax.legend(title="bottleneck", fontsize="small")
    fig.tight_layout()
    return fig


def _by_duration(values: Any) -> list[str]:
    """Distinct duration strings ("1ms", "10ms"), shortest first."""
    from ..units import parse_duration

    return sorted(set(values), key=parse_duration)


def _rate_bps(text: str) -> float:
    from ..units import parse_rate

    return float(parse_rate(text))


def patch_figure(frames: dict[str, pd.DataFrame]) -> Figure:
    tables = {e: means(f, ["flows[0].cca", "host.cpu_slice", "patch", "share"]) for e, f in frames.items()}
    both = pd.concat(list(tables.values()))
    slices = _by_duration(both["host.cpu_slice"])
    ccas = sorted(set(both["flows[0].cca"]))
    fig = Figure(figsize=(3.6 * len(slices), 2.9 * len(ccas)))
    axes = fig.subplots(len(ccas), len(slices), sharey=True, squeeze=False)
    for i, cca in enumerate(ccas):
        for j, sl in enumerate(slices):
            ax = axes[i][j]
            for (engine, table), (patch, color, label) in itertools.product(
                tables.items(), ((0, style.GREY, "original"), (1, COLORS[cca], "patched"))
            ):
                t = table[(table["flows[0].cca"] == cca) & (table["host.cpu_slice"] == sl) & (table["patch"] == patch)]
                if len(t):
                    line(ax, t, "share", _label(label, engine), color, marker=".", ls=DASHES[engine])
            ax.set_title(f"{CCAS[cca]}, {sl} slices")
            ax.set_ylim(0, 105)
            ax.set_xlabel("CPU share")
            if j == 0:
                ax.set_ylabel("goodput (Mbit/s)")
    axes[0][0].legend()
    fig.tight_layout()
    return fig


def spiral_figure(series: dict[str, dict[str, pd.DataFrame]]) -> Figure:
    panels = [
        (engine, key)
        for engine, runs_ in series.items()
        for key in ("bbr 100%", "bbr 25%", "bbr3 100%", "bbr3 25%")
        if key in runs_
    ]
    rows = (len(panels) + 1) // 2
    fig = Figure(figsize=(8, 2.6 * rows))
    axes = fig.subplots(rows, 2, sharex=True, squeeze=False).ravel()
    for ax, (engine, key) in zip(axes, panels):
        f = series[engine][key]
        ax.plot(f["time_s"], f["pacing_rate_bps"] / 1e6, label="pacing rate", **style.LINE["pacing"])
        ax.plot(f["time_s"], f["delivery_rate_bps"] / 1e6, label="delivery rate", color=style.GREY, lw=0.8)
        ax.plot(f["time_s"], f["cc_bw_bps"] / 1e6, label="bandwidth estimate", **style.LINE["bw"])
        cca, share = key.split(" ", 1)
        ax.set_title(f"{CCAS[cca]}, {share} CPU" + (f" ({engine})" if engine else ""))
        ax.set_yscale("log")
        ax.set_ylabel("Mbit/s")
    for ax in axes[-2:]:
        ax.set_xlabel("time (s)")
    axes[0].legend()
    fig.tight_layout()
    return fig


def inflight_figure(series: dict[str, dict[str, pd.DataFrame]]) -> Figure:
    """Per BBR version, inflight in BDP and the pacing gain at 25%: with and without
    the patch (grey and in colour), per engine or preset (line style)."""
    ccas = [c for c in ("bbr", "bbr3") if any(f"{c} 25%" in s for s in series.values())]
    fig = Figure(figsize=(8, 2.6 * len(ccas)))
    axes = fig.subplots(len(ccas), 2, sharex=True, squeeze=False)
    for i, cca in enumerate(ccas):
        curves = [(_label("original", engine), engine, f"{cca} 25%", style.GREY) for engine in series]
        curves += [(_label("patched", engine), engine, f"{cca} 25% + patch", COLORS[cca]) for engine in series]
        for label, engine, key, color in (c for c in curves if c[2] in series[c[1]]):
            f = series[engine][key]
            axes[i][0].plot(f["time_s"], inflight_in_bdp(f), color=color, lw=0.9, ls=DASHES[engine], label=label)
            axes[i][1].plot(f["time_s"], f["cc_pacing_gain"], color=color, lw=0.9, ls=DASHES[engine], label=label)
        axes[i][0].axhline(1.0, **style.REFERENCE)
        axes[i][0].set_ylabel("inflight (BDP)")
        axes[i][0].set_title(f"{CCAS[cca]}: inflight, 25% of 10 ms")
        axes[i][1].set_ylabel("pacing gain")
        axes[i][1].set_title(f"{CCAS[cca]}: pacing gain")
        axes[i][0].set_ylim(0, 3.0)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    axes[0][0].legend()
    fig.tight_layout()
    return fig


__all__ = [
    "FULL",
    "FULL_VM",
    "QUICK",
    "QUICK_VM",
    "Grid",
    "Observation",
    "analyse",
    "plans",
    "run",
    "run_vm",
    "write_report",
]
