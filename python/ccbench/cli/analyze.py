"""``ccbench analyze``: a packet capture measured as a run."""

from __future__ import annotations

from typing import Optional

import click

from ..errors import ScenarioError
from .common import out_dir, plots_need_out, show_and_save


@click.command()
@click.argument("capture", metavar="CAPTURE.pcap", required=False)
@click.option(
    "--flow",
    type=int,
    metavar="N",
    help="Only the N-th connection carrying data (0-based, in order of its first packet).",
)
@click.option("--port", type=int, metavar="P", help="Only connections with port P at either end.")
@click.option(
    "--side",
    type=click.Choice(["sender", "receiver"]),
    help="Where the capture was taken (default: detected from timing).",
)
@click.option("--interval", default="100ms", show_default=True, metavar="TIME", help="Time-series interval.")
@click.option("--out", metavar="DIR", help="Write summary.json, flows.parquet, link.parquet, packets.parquet here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary JSON instead of tables.")
@click.option("--plot", "make_plots", is_flag=True, help="With --out: also write the figures to DIR/plots.")
def analyze(
    capture: Optional[str],
    flow: Optional[int],
    port: Optional[int],
    side: Optional[str],
    interval: str,
    out: Optional[str],
    as_json: bool,
    make_plots: bool,
) -> None:
    """Measure the TCP connections of a packet capture (pcap or pcapng) as a run:
    goodput, throughput, retransmissions, RTT, duplicate ACKs, bytes in flight and the
    receive window, written as a run directory that 'ccbench plot' draws."""
    from ..capture import analyze_file
    from ..units import parse_duration

    if capture is None:
        raise ScenarioError("CAPTURE", "missing; give a pcap or pcapng file")
    plots_need_out(make_plots, out)
    try:
        interval_s = parse_duration(interval) / 1e9
    except ValueError as e:
        raise ScenarioError("--interval", str(e)) from None
    out_dir(out)
    show_and_save(analyze_file(capture, flow=flow, port=port, side=side, interval=interval_s), out, as_json, make_plots)
