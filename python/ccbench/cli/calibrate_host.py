"""``ccbench calibrate-host``: the VM guest's CPU costs, measured for the simulator."""

from __future__ import annotations

import click

from .. import engines


@click.command("calibrate-host")
@click.option("--quick", is_flag=True, help="Nine runs instead of seventeen (each with the idle and traced runs).")
@click.option("--guest-kernel", default="debian:6.1", show_default=True, metavar="SPEC", help="The guest's kernel.")
@click.option("--vcpus", type=click.IntRange(1, 16), default=1, show_default=True, metavar="N", help="Guest vCPUs.")
@click.option("--duration", default="5s", show_default=True, metavar="TIME", help="Length of each run.")
@click.option(
    "--out",
    default="host-costs.toml",
    show_default=True,
    metavar="FILE",
    help="Where to write host.tx_completion and the [host.cost] table.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the runs and the fit as JSON.")
def calibrate_host(quick: bool, guest_kernel: str, vcpus: int, duration: str, out: str, as_json: bool) -> None:
    """Measure the VM guest's CPU time per ACK, segment, skb and wake-up (above an idle
    guest's), what coming back after an absence costs it, and how long its NIC holds a
    sent skb, and write them as host.tx_completion and a [host.cost] table for the
    simulator (--cpu-costs FILE). Root; run it on a quiet machine, since other work
    disturbs the vCPU's times."""
    engines.workflow("calibrate-host").command(
        quick=quick,
        guest_kernel=guest_kernel,
        vcpus=vcpus,
        duration=duration,
        out=out,
        as_json=as_json,
        say=lambda line: click.echo(line, err=True),
        show=click.echo,
    )
