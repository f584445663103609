"""The ``ccbench`` command: the group and its commands, one module each.

Every bad input ends the same way: one line ``error: <field>: <what is allowed>`` on
stderr, exit status 2, nothing written (``exits``). The commands import what they use
inside their functions, so that ``ccbench --help`` starts at once.
"""

from __future__ import annotations

from typing import Optional, Sequence

import click

from .. import _core
from . import (
    advise,
    analyze,
    calibrate_host,
    conformance,
    exits,
    import_iperf3,
    kernel,
    plot,
    recommend,
    replicate,
    report,
    results,
    run,
    sweep,
    validate,
    vm,
)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from .. import __version__

        click.echo(f"ccbench {__version__} (simulator {_core.version()})")
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.option(
    "--debug",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, p, v: exits.set_debug(v),
    help="On an internal fault, print the traceback (and the simulator's backtrace).",
)
def cli() -> None:
    """ccbench: a TCP congestion-control laboratory."""


for _command in (
    advise.advise,
    analyze.analyze,
    calibrate_host.calibrate_host,
    conformance.conformance,
    import_iperf3.import_iperf3,
    kernel.kernel,
    plot.plot,
    recommend.recommend,
    replicate.replicate,
    report.report,
    results.results,
    run.run,
    sweep.sweep,
    validate.validate,
    vm.vm,
):
    cli.add_command(_command)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console entry point."""
    return exits.run(cli, argv)
