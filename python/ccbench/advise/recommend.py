"""``ccbench recommend``: simulate each candidate algorithm at one operating point (a few
seeds, and half and double the buffer to show how sensitive the answer is) and say
which to use and why. With the slowdown objective each candidate runs as open-loop
arrivals (docs/traffic.md) and is judged by their p99 slowdown."""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from ..analysis import ARRIVAL_METRICS, aggregate, record_from_result, runs_frame
from .. import engines
from ..errors import ScenarioError
from ..scenario import Scenario
from ..units import Buffer, format_buffer, parse_buffer
from .winners import OBJECTIVES, RETRANS_FLOOR, Weights

DEFAULT_CCAS = ("cubic", "bbr", "bbr3")
DEFAULT_SEEDS = 5
DEFAULT_DURATION = "10s"
# Goodputs this close (relative) count as a tie, decided on delay, then retransmissions.
GOODPUT_TIE = 0.02
METRICS = (
    "goodput_mbps",
    "rtt_mean_ms",
    "rtt_p95_ms",
    "self_inflicted_delay_ms",
    "retrans_rate",
    "retransmits",
    "utilization",
    "jain_index",
)
# The arrivals the slowdown objective runs each candidate as, unless told otherwise.
ARRIVAL_DEFAULTS = {"arrival_load": "50%", "arrival_sizes": "web-search"}


@dataclass
class Recommendation:
    point: dict[str, Any]  # the flags as given
    buffer_bdp: float
    table: pd.DataFrame  # means and intervals per buffer and algorithm
    choice: str
    reasons: list[str]
    sensitivity: list[str] = field(default_factory=list)
    objective: str = "goodput"
    ccas: list[str] = field(default_factory=list)

    def at(self, buffer: str) -> pd.DataFrame:
        """Rows of one buffer, indexed by algorithm in the order the candidates were given."""
        here = self.table[self.table["buffer"] == buffer].set_index("cca")
        return here.loc[[c for c in self.ccas if c in here.index]]

    def buffers(self) -> list[str]:
        """The simulated buffers, smallest first."""
        return list(dict.fromkeys(self.table.sort_values("buffer_bdp")["buffer"]))


def neighbour_buffers(buffer: str) -> list[str]:
    """Half, the buffer itself, and double, spelled as the user spelled the buffer."""
    b = parse_buffer(buffer)
    amounts: list[float] = [b.amount / 2, b.amount, b.amount * 2]
    if b.kind != "bdp":
        amounts = [max(1, int(a)) for a in amounts]
    spelled = [format_buffer(Buffer(b.kind, a)) for a in amounts]  # type: ignore[arg-type]
    return list(dict.fromkeys(spelled))


def scenarios(
    rate: str,
    rtt: str,
    buffer: str,
    loss: str = "0",
    flows: int = 1,
    duration: str = DEFAULT_DURATION,
    seeds: int = DEFAULT_SEEDS,
    ccas: Sequence[str] = DEFAULT_CCAS,
    neighbours: bool = True,
    host: Optional[Mapping[str, Any]] = None,
    arrivals: Optional[Mapping[str, Any]] = None,
) -> list[tuple[dict[str, Any], Scenario]]:
    """(point, scenario) for every buffer, algorithm and seed; bad flags raise
    ScenarioError naming the flag. ``host`` holds ``Scenario.from_flags``'s CPU flags
    (``cpu``, ``cpu_share``, ``cpu_slice``). With ``arrivals`` (its arrival flags:
    ``arrival_load``, ``arrival_sizes``, ...) each candidate runs as arrivals of its
    algorithm instead of ``flows`` bulk flows."""
    if seeds < 1:
        raise ScenarioError("--seeds", "must be at least 1")
    if flows < 1:
        raise ScenarioError("--flows", "must be at least 1")
    try:
        buffers = neighbour_buffers(buffer) if neighbours else [format_buffer(parse_buffer(buffer))]
    except ValueError as e:
        raise ScenarioError("--buffer", str(e)) from None
    out = []
    for buf in buffers:
        for cca in ccas:
            for seed in range(1, seeds + 1):
                traffic = {"flows": flows, "cca": cca} if arrivals is None else {"arrivals": cca, **arrivals}
                try:
                    sc = Scenario.from_flags(
                        **traffic,
                        rate=rate,
                        rtt=rtt,
                        buffer=buf,
                        loss=loss,
                        duration=duration,
                        seed=seed,
                        **dict(host or {}),
                    )
                except ScenarioError as e:
                    raise ScenarioError(_flag(e.field), e.message) from None
                out.append(({"buffer": buf, "cca": cca, "seed": seed}, sc))
    return out


def _flag(field_name: str) -> str:
    """Scenario fields as the flags that set them."""
    leaf = field_name.split(".")[-1]
    if field_name.startswith(("flows[", "arrivals[")) and leaf == "cca":
        return "--cca"
    if field_name.startswith("arrivals[") and leaf in ("load", "sizes"):
        return f"--arrival-{leaf}"
    if field_name.startswith("host."):
        return "--" + leaf.replace("_", "-")
    if leaf == "count":
        return "--flows"
    return f"--{leaf}" if leaf in ("rate", "rtt", "buffer", "loss", "duration") else field_name


def recommend(
    rate: str,
    rtt: str,
    buffer: str,
    loss: str = "0",
    flows: int = 1,
    duration: str = DEFAULT_DURATION,
    seeds: int = DEFAULT_SEEDS,
    ccas: Sequence[str] = DEFAULT_CCAS,
    neighbours: bool = True,
    objective: str = "goodput",
    weights: Weights = Weights(),
    workers: Optional[int] = None,
    host: Optional[Mapping[str, Any]] = None,
    arrivals: Optional[Mapping[str, Any]] = None,
) -> Recommendation:
    """``arrivals``: the arrival flags of the slowdown objective (over
    :data:`ARRIVAL_DEFAULTS`); refused with another objective."""
    if objective not in OBJECTIVES:
        raise ScenarioError("--objective", f"unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}")
    ccas = list(dict.fromkeys(c.strip().lower() for c in ccas if c.strip()))
    if len(ccas) < 1:
        raise ScenarioError("--cca", "name at least one algorithm")
    arrivals = _arrival_flags(objective, flows, arrivals)
    jobs = scenarios(rate, rtt, buffer, loss, flows, duration, seeds, ccas, neighbours, host, arrivals)
    # The simulator releases the GIL, so threads run the seeds in parallel.
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        simulator = engines.get(engines.DEFAULT)
        results = list(pool.map(lambda job: simulator.run(job[1]), jobs))
    records = [record_from_result(res, point, point["seed"] - 1, "recommend") for (point, _), res in zip(jobs, results)]
    runs = runs_frame(records)
    table = aggregate(runs, ["buffer", "buffer_bdp", "cca"], [m for m in (*METRICS, *ARRIVAL_METRICS) if m in runs])
    center = format_buffer(parse_buffer(buffer))
    here = table[table["buffer"] == center].set_index("cca").loc[ccas]
    choice = choose(here, objective, weights)
    bdp = float(here["buffer_bdp"].iloc[0])
    reasons = explain_slowdown(here, choice, bdp) if objective == "slowdown" else explain(here, choice, bdp)
    sensitivity = []
    for buf in dict.fromkeys(table.sort_values("buffer_bdp")["buffer"]):
        if buf == center:
            continue
        there = table[table["buffer"] == buf].set_index("cca").loc[ccas]
        other = choose(there, objective, weights)
        sensitivity.append(
            f"with a {buf} buffer ({float(there['buffer_bdp'].iloc[0]):.2g} BDP) "
            f"{display(other)} {'would also be chosen' if other == choice else 'would be chosen instead'}"
        )
    point = {
        "rate": rate,
        "rtt": rtt,
        "buffer": center,
        "loss": loss,
        "flows": flows,
        "duration": duration,
        "seeds": seeds,
        **dict(host or {}),
        **dict(arrivals or {}),
    }
    return Recommendation(point, bdp, table, choice, reasons, sensitivity, objective, ccas)


def _arrival_flags(objective: str, flows: int, given: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    """The arrivals each candidate runs as: with the slowdown objective, the defaults and
    the flags given; otherwise none (and arrival flags are refused)."""
    given = {k: v for k, v in (given or {}).items() if v is not None}
    if objective != "slowdown":
        for key in given:
            raise ScenarioError("--" + key.replace("_", "-"), "only with --objective slowdown")
        return None
    if flows != 1:
        raise ScenarioError("--flows", "with --objective slowdown each run is the candidate's arrivals alone")
    return {**ARRIVAL_DEFAULTS, **given}


def choose(here: pd.DataFrame, objective: str, weights: Weights = Weights()) -> str:
    """The algorithm to use at one buffer (rows indexed by algorithm, columns of means).

    goodput: the highest goodput; algorithms within 2% of it (or whose interval reaches
    it) tie, and the tie goes to the lowest mean RTT. delay, retrans: the lowest mean
    RTT, retransmission rate. score: the weighted score of :class:`Weights`."""
    g = here["goodput_mbps_mean"]
    d = here["rtt_mean_ms_mean"]
    r = here["retrans_rate_mean"].fillna(0.0)
    if objective == "goodput":
        best = g.max()
        reach = (here["goodput_mbps_hi"].fillna(g) >= best) | (g >= best * (1 - GOODPUT_TIE))
        tied = here[reach]
        return str(tied.sort_values(["rtt_mean_ms_mean", "retrans_rate_mean"], kind="stable").index[0])
    if objective == "delay":
        return str(d.idxmin())
    if objective == "retrans":
        return str(r.idxmin())
    if objective == "slowdown":
        return str(here["slowdown_p99_mean"].idxmin())
    score = (
        weights.goodput * g / g.max()
        + weights.delay * d.min() / d
        + weights.retrans * (r.min() + RETRANS_FLOOR) / (r + RETRANS_FLOOR)
    )
    return str(score.idxmax())


def explain(here: pd.DataFrame, choice: str, buffer_bdp: float) -> list[str]:
    """Why: the chosen algorithm against each other one, in goodput, delay and
    retransmissions, with the buffer's size in BDP first."""
    name = display
    w = here.loc[choice]
    reasons = []
    for other_key, o in here.drop(index=choice).iterrows():
        other = str(other_key)
        parts = []
        ratio = w["goodput_mbps_mean"] / o["goodput_mbps_mean"] if o["goodput_mbps_mean"] > 0 else math.inf
        if ratio >= 1 + GOODPUT_TIE:
            parts.append(
                f"{name(choice)}'s goodput is {_times(ratio)} {name(other)}'s "
                f"({w['goodput_mbps_mean']:.1f} vs {o['goodput_mbps_mean']:.1f} Mbit/s)"
            )
        elif ratio <= 1 - GOODPUT_TIE:
            parts.append(
                f"{name(other)}'s goodput is {_times(1 / ratio)} {name(choice)}'s "
                f"({o['goodput_mbps_mean']:.1f} vs {w['goodput_mbps_mean']:.1f} Mbit/s)"
            )
        else:
            parts.append(
                f"{name(choice)} and {name(other)} reach the same goodput within {GOODPUT_TIE:.0%} "
                f"({w['goodput_mbps_mean']:.1f} vs {o['goodput_mbps_mean']:.1f} Mbit/s)"
            )
        delta = o["rtt_mean_ms_mean"] - w["rtt_mean_ms_mean"]
        if abs(delta) >= 0.5:
            lower, by = (choice, delta) if delta > 0 else (other, -delta)
            parts.append(f"{name(lower)} keeps the mean RTT {by:.1f} ms lower")
        rw, ro = 100 * w["retrans_rate_mean"], 100 * o["retrans_rate_mean"]
        if max(rw, ro) >= 0.01 and not math.isclose(float(rw), float(ro), rel_tol=0.2):
            parts.append(f"{name(choice)} retransmits {rw:.2g}% of its segments, {name(other)} {ro:.2g}%")
        reasons.append("; ".join(parts))
    prefix = f"buffer is {buffer_bdp:.2g} BDP: "
    return [prefix + reasons[0], *reasons[1:]] if reasons else [prefix + f"{name(choice)} is the only candidate"]


def explain_slowdown(here: pd.DataFrame, choice: str, buffer_bdp: float) -> list[str]:
    """Why, for the slowdown objective: the chosen algorithm's arrivals against each
    other's, in p99 and median slowdown and p99 FCT."""
    w = here.loc[choice]
    reasons = []
    for other_key, o in here.drop(index=choice).iterrows():
        other = str(other_key)
        parts = [
            f"{display(choice)}'s p99 slowdown is {w['slowdown_p99_mean']:.2f}, {display(other)}'s "
            f"{o['slowdown_p99_mean']:.2f} (median {w['slowdown_p50_mean']:.2f} vs {o['slowdown_p50_mean']:.2f})",
            f"p99 FCT {w['fct_p99_ms_mean']:.0f} vs {o['fct_p99_ms_mean']:.0f} ms",
        ]
        reasons.append("; ".join(parts))
    prefix = f"buffer is {buffer_bdp:.2g} BDP: "
    return [prefix + reasons[0], *reasons[1:]] if reasons else [prefix + f"{display(choice)} is the only candidate"]


def _times(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.0f}x"


def display(cca: str) -> str:
    return {"bbr": "BBR", "bbr2": "BBRv2", "bbr3": "BBRv3", "cubic": "Cubic", "reno": "Reno"}.get(cca, cca)


# The table's columns: (heading, metric, scale, digits).
BULK_COLUMNS = (
    ("goodput\nMbit/s", "goodput_mbps", 1.0, 1),
    ("mean RTT\nms", "rtt_mean_ms", 1.0, 1),
    ("p95 RTT\nms", "rtt_p95_ms", 1.0, 1),
    ("retrans\n%", "retrans_rate", 100.0, 2),
    ("retrans\nsegments", "retransmits", 1.0, 0),
)
SLOWDOWN_COLUMNS = (
    ("slowdown\np50", "slowdown_p50", 1.0, 2),
    ("slowdown\np99", "slowdown_p99", 1.0, 2),
    ("FCT p50\nms", "fct_p50_ms", 1.0, 1),
    ("FCT p99\nms", "fct_p99_ms", 1.0, 1),
)


def render(rec: Recommendation, console: Any) -> None:
    """The recommendation as rich tables and sentences."""
    from rich import box
    from rich.table import Table

    from ..report_html.tables import plus_minus

    p = rec.point
    flows = f"{p['flows']} flow{'s' if p['flows'] != 1 else ''} per algorithm"
    if rec.objective == "slowdown":
        flows = f"arrivals at {p['arrival_load']} load of {p['arrival_sizes']} sizes per algorithm"
    title = (
        f"{p['rate']}, RTT {p['rtt']}, buffer {p['buffer']} ({rec.buffer_bdp:.2g} BDP), loss {p['loss']}, "
        f"{flows}: {p['seeds']} seeds x {p['duration']} simulated, mean ± 95% CI"
    )
    for buf in rec.buffers():
        here = rec.at(buf)
        center = buf == p["buffer"]
        t = Table(
            title=title if center else f"Sensitivity: buffer {buf} ({float(here['buffer_bdp'].iloc[0]):.2g} BDP)",
            title_justify="left",
            title_style="bold",
            box=box.SIMPLE_HEAD,
            header_style="bold",
        )
        columns = SLOWDOWN_COLUMNS if rec.objective == "slowdown" else BULK_COLUMNS
        t.add_column("algorithm", no_wrap=True)
        for heading, *_ in columns:
            t.add_column(heading, justify="right", no_wrap=True)
        for cca, r in here.iterrows():
            t.add_row(
                display(str(cca)) + (" *" if center and cca == rec.choice else ""),
                *(plus_minus(r[f"{m}_mean"], r[f"{m}_ci"], scale, digits) for _, m, scale, digits in columns),
            )
        if center:
            console.print(t)
    console.print(f"Recommendation ({rec.objective}): use {display(rec.choice)}", style="bold", markup=False)
    for reason in rec.reasons:
        console.print(f"  - {reason}", markup=False)
    if rec.sensitivity:
        console.print("Sensitivity to the buffer:", markup=False)
        for line in rec.sensitivity:
            console.print(f"  - {line}", markup=False)


def recommend_command(
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
    host: Optional[Mapping[str, Any]] = None,
    arrivals: Optional[Mapping[str, Any]] = None,
) -> None:
    from rich.console import Console

    ccas = [c.strip().lower() for c in cca.split(",") if c.strip()]
    if reno and "reno" not in ccas:
        ccas.append("reno")
    rec = recommend(
        rate,
        rtt,
        buffer,
        loss,
        flows,
        duration,
        seeds,
        ccas,
        neighbours,
        objective,
        Weights.parse(weights),
        workers,
        host,
        arrivals,
    )
    render(rec, Console(highlight=False))
