"""``ccbench replicate``: a published study, run again and compared."""

from __future__ import annotations

from typing import Optional

import click

from .. import engines


@click.command()
@click.argument("name", metavar="[NAME]", required=False)
@click.option(
    "--quick/--full",
    default=True,
    show_default=True,
    help="A small grid (a minute or two on two cores), or the study's full grid.",
)
@click.option(
    "--out", metavar="DIR", help="Where to write the comparison, figures and report (default replications/NAME)."
)
@click.option("--workers", type=int, metavar="N", help="Parallel simulations (default: one per core).")
@click.option("--store", metavar="DIR", help="Results store to run into (default ./ccbench-results).")
@click.option(
    "--engine",
    type=click.Choice(engines.names()),
    default=engines.DEFAULT,
    show_default=True,
    help="Where the study's runs go; a study lists the engines it can run on (elmenhorst2026: vm, "
    "side by side with the simulator).",
)
@click.option(
    "--guest-kernel",
    metavar="SPEC",
    help="--engine vm: the guest's kernel (default debian:6.1); one "
    "with BBRv3 (ccbench vm build-kernel) runs the study's BBRv3 findings.",
)
def replicate(
    name: Optional[str],
    quick: bool,
    out: Optional[str],
    workers: Optional[int],
    store: Optional[str],
    engine: str,
    guest_kernel: Optional[str],
) -> None:
    """Replicate a published study and compare its findings with ccbench's; without
    NAME, list the studies."""
    from ..replicate.command import replicate_command

    engines.use_by_default(engine, guest_kernel=guest_kernel)
    replicate_command(name, quick, out, workers, store, engine)
