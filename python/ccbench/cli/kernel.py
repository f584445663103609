"""``ccbench kernel``: housekeeping of the kernel engine."""

from __future__ import annotations

import click


@click.group()
def kernel() -> None:
    """Housekeeping of the kernel engine."""


@kernel.command("cleanup")
def kernel_cleanup() -> None:
    """Remove what interrupted kernel runs left behind.

    Only runs whose owner process is gone are touched, and only the namespaces,
    devices, processes and BPF congestion controls (struct_ops maps, matched by
    algorithm name, map name and id) their state files (under /run/ccbench) recorded.
    """
    from ..kernel import host, state

    host.require_root()
    removed = state.cleanup_stale()
    for line in removed:
        click.echo(f"removed {line}")
    live = state.live_runs()
    if not removed:
        click.echo("nothing to clean up")
    if live:
        click.echo(f"left alone: {len(live)} run(s) in progress ({', '.join(st.id for st in live)})")
