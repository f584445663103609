"""``ccbench report``: an HTML report of a run, a sweep or a validation grid."""

from __future__ import annotations

from typing import Optional

import click


@click.command()
@click.argument("run_dir", metavar="[RUN_DIR]", required=False)
@click.option("--sweep", metavar="NAME", help="Report on a sweep in the results store instead of one run.")
@click.option("--store", metavar="DIR", help="Results store to read (default ./ccbench-results).")
@click.option(
    "--out",
    metavar="DIR",
    help="Where to write index.html and its figures (default RUN_DIR/report, or reports/NAME for a sweep).",
)
@click.option(
    "--metric",
    default="goodput_mbps",
    show_default=True,
    metavar="COLUMN",
    help="Metric of the per-algorithm heatmaps (a column of the runs table).",
)
@click.option("--x", metavar="COLUMN", help="Heatmap x axis among the swept conditions (default: buffer).")
@click.option("--y", metavar="COLUMN", help="Heatmap y axis (default: RTT, else the next swept condition).")
@click.option("--facet", metavar="COLUMN", help="One heatmap panel per value of this condition.")
@click.option(
    "--format",
    "formats",
    default="png,svg",
    show_default=True,
    metavar="FMT[,FMT]",
    help="Figure files written beside the page: png, svg.",
)
def report(
    run_dir: Optional[str],
    sweep: Optional[str],
    store: Optional[str],
    out: Optional[str],
    metric: str,
    x: Optional[str],
    y: Optional[str],
    facet: Optional[str],
    formats: str,
) -> None:
    """Write a self-contained HTML report of a run directory, of a stored sweep, or of a
    validation grid (a directory written by 'ccbench validate --out DIR')."""
    from ..report_html.command import report_command
    from ..validate.report import build_from_file

    report_command(run_dir, sweep, store, out, metric, x, y, facet, formats, pages={"validate.json": build_from_file})
