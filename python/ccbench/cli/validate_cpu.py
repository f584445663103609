"""``ccbench validate --cpu``: the sender-CPU model against the VM engine, on the
2BRobust grid or (``--pacing``) the phone study's: the workflow the engine registers."""

from __future__ import annotations

from typing import Optional

import click

from .. import _core, engines


def validate_cpu(
    quick: bool,
    pacing: bool,
    duration: Optional[str],
    cca: Optional[str],
    cpu_costs: Optional[str],
    guest_kernel: str,
    out: Optional[str],
    rates: Optional[str],
    rtts: Optional[str],
    reps: int,
) -> None:
    engines.workflow("validate-cpu").command(
        quick=quick,
        pacing=pacing,
        duration=duration,
        cca=cca,
        cpu_costs=cpu_costs,
        guest_kernel=guest_kernel,
        out=out,
        rates=rates,
        rtts=rtts,
        reps=reps,
        version=_core.version(),
        say=lambda line: click.echo(line, err=True),
        show=click.echo,
    )
