"""``ccbench advise``: fit decision trees on a stored sweep and say what they learned."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional, Sequence

import matplotlib
from rich.console import Console

from ..analysis import runs_frame
from ..errors import ScenarioError
from ..plots import parse_formats, style
from .tree import NAMES, TreeResult, fit_tree
from .winners import OBJECTIVES, Weights, winners


def advise(
    records: Sequence[Any],
    objective: str = "goodput",
    weights: Weights = Weights(),
    ccas: Optional[Sequence[str]] = None,
    max_depth: int = 3,
) -> list[TreeResult]:
    """A tree for goodput, and one for ``objective`` when that is something else (only
    that one for runs without goodput: arrivals alone)."""
    if objective not in OBJECTIVES:
        raise ScenarioError("--objective", f"unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}")
    runs = runs_frame(records)
    results = []
    bulk = "goodput_mbps" in runs and runs["goodput_mbps"].notna().any()
    for obj in dict.fromkeys(("goodput", objective) if bulk else (objective,)):
        points = winners(runs, obj, weights, ccas)
        results.append(fit_tree(points, obj, max_depth=max_depth))
    return results


def describe(result: TreeResult, weights: Optional[Weights] = None) -> list[str]:
    """The tree in plain words, for the terminal."""
    what = {
        "goodput": "the highest goodput",
        "delay": "the lowest mean RTT",
        "retrans": "the lowest retransmission rate",
        "score": f"the best score ({weights or Weights()}; each term 1 for the best algorithm at a point)",
        "slowdown": "the lowest p99 slowdown of its arrivals",
    }
    wins = ", ".join(f"{name} {n}" for name, n in sorted(result.wins.items(), key=lambda kv: -kv[1]))
    lines = [
        f"Which algorithm has {what[result.objective]}: {result.points} points ({wins}); "
        f"conditions: {', '.join(NAMES.get(f, f) for f in result.features)}"
    ]
    if result.folds == 0 and len(result.wins) == 1:
        lines.append("  one algorithm wins at every point; the tree has a single leaf")
    elif math.isnan(result.accuracy):
        lines.append("  too few points to cross-validate")
    else:
        lines.append(
            f"  cross-validated accuracy {100 * result.accuracy:.0f}% ± {100 * result.accuracy_sd:.0f}% "
            f"({result.folds}-fold); always answering the most frequent winner: {100 * result.baseline:.0f}%"
        )
    lines += ["  " + line for line in result.text().splitlines()]
    lines.append("  In words:")
    for i, rule in enumerate(result.rules(), 1):
        where = " and ".join(rule.conditions) if rule.conditions else "everywhere"
        lines.append(
            f"  {i}. {where}: {rule.winner} ({rule.agree} of {rule.points} point{'s' if rule.points != 1 else ''})"
        )
    return lines


def draw(results: Sequence[TreeResult], out: Path, formats: str = "png,svg") -> list[Path]:
    fmts = parse_formats(formats)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with matplotlib.rc_context(style.RC):
        for result in results:
            paths += style.save(result.figure(), out / f"tree_{result.objective}", fmts)
    return paths


def advise_command(
    sweep: str,
    store: Optional[str],
    objective: str,
    weights: Optional[str],
    cca: Optional[str],
    max_depth: int,
    out: Optional[str],
    formats: str,
) -> None:
    from ..analysis.records import sweep_records

    parsed = Weights.parse(weights)
    ccas = [c.strip().lower() for c in cca.split(",") if c.strip()] if cca else None
    results = advise(sweep_records(sweep, store), objective, parsed, ccas, max_depth)
    console = Console(highlight=False)
    for result in results:
        for line in describe(result, parsed):
            console.print(line, markup=False)
        console.print()
    target = Path(out) if out is not None else Path("reports") / sweep
    paths = draw(results, target, formats)
    console.print(f"wrote {', '.join(str(p) for p in paths)}", markup=False)
