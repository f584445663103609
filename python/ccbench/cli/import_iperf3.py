"""``ccbench import-iperf3``: an iperf3 report as a run directory."""

from __future__ import annotations

from typing import Optional

import click

from ..errors import ScenarioError
from .common import out_dir, plots_need_out, show_and_save


@click.command("import-iperf3")
@click.argument("report", metavar="FILE.json", required=False)
@click.option("--out", metavar="DIR", help="Write summary.json, flows.parquet, link.parquet here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary JSON instead of tables.")
@click.option("--plot", "make_plots", is_flag=True, help="With --out: also write the figures to DIR/plots.")
def import_iperf3(report: Optional[str], out: Optional[str], as_json: bool, make_plots: bool) -> None:
    """Turn an 'iperf3 -J' report (also --reverse, -P N) into a run directory:
    throughput, retransmissions, snd_cwnd, RTT, rttvar and PMTU per interval."""
    from ..importers.iperf3 import import_file

    if report is None:
        raise ScenarioError("FILE", "missing; give the JSON output of 'iperf3 -J'")
    plots_need_out(make_plots, out)
    out_dir(out)
    show_and_save(import_file(report), out, as_json, make_plots)
