"""``ccbench advise``: which algorithm wins where, learnt from a stored sweep."""

from __future__ import annotations

from typing import Optional

import click


@click.command()
@click.option("--sweep", required=True, metavar="NAME", help="The stored sweep to learn from.")
@click.option("--store", metavar="DIR", help="Results store to read (default ./ccbench-results).")
@click.option(
    "--objective",
    type=click.Choice(["goodput", "delay", "retrans", "score", "slowdown"]),
    default="goodput",
    show_default=True,
    help="What winning means, besides goodput (always shown when the runs have bulk flows); slowdown: "
    "the lowest p99 slowdown of runs with arrivals.",
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
    buffer (BDP), loss, RTT, bandwidth, CPU share, flow count and the arrivals' load."""
    from ..advise.command import advise_command

    advise_command(sweep, store, objective, weights, cca, max_depth, out, formats)
