"""``ccbench recommend``: the algorithm to use at one operating point."""

from __future__ import annotations

from typing import Any, Optional

import click

from .scenario_flags import FlagsFromSchema

# The sender host's and the arrivals' flags are run's (ccbench.scenario.flags), after
# this command's own.
HOST_FLAGS = ("--cpu", "--cpu-share", "--cpu-slice")
ARRIVAL_FLAGS = ("--arrival-load", "--arrival-sizes")


@click.command(cls=FlagsFromSchema, scenario_flags=HOST_FLAGS + ARRIVAL_FLAGS, flags_first=False)
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
    type=click.Choice(["goodput", "delay", "retrans", "score", "slowdown"]),
    default="goodput",
    show_default=True,
    help="What to optimise; goodput ties (within 2%) go to the lower RTT. slowdown: each candidate runs as "
    "open-loop arrivals (--arrival-load, default 50%; --arrival-sizes, default web-search) and the lowest "
    "p99 slowdown wins.",
)
@click.option("--weights", metavar="goodput=W,delay=W,retrans=W", help="Weights of --objective score.")
@click.option("--workers", type=int, metavar="N", help="Parallel simulations (default: one per core).")
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
    **scenario_flags: Any,
) -> None:
    """Simulate the candidate algorithms at one operating point and recommend one, with
    its predicted goodput, RTT and retransmissions (or its arrivals' slowdown and FCT)
    and the reasons."""
    from ..advise.recommend import recommend_command

    given = {k: v for k, v in scenario_flags.items() if v is not None}
    arrivals = {k: v for k, v in given.items() if k.startswith("arrival_")}
    host = {k: v for k, v in given.items() if k not in arrivals}
    recommend_command(
        rate,
        rtt,
        buffer,
        loss,
        flows,
        duration,
        seeds,
        cca,
        reno,
        neighbours,
        objective,
        weights,
        workers,
        host,
        arrivals,
    )
