"""``ccbench plot``: the figures of a run directory."""

from __future__ import annotations

from typing import Optional

import click

from ..errors import ScenarioError
from .common import write_plots


@click.command()
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
    write_plots(run_dir, [flow], out, formats)
