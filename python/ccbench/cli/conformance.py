"""``ccbench conformance``: packetdrill scripts against the simulator, the kernel or the
VM guest's kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click

from ..errors import ScenarioError


@click.command()
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option(
    "--kernel",
    "on_kernel",
    is_flag=True,
    help="Run on this machine's kernel with packetdrill (as root, a network namespace per script).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option(
    "--expect", metavar="FILE", help="Compare with verdicts recorded by '--kernel --json' and say where they differ."
)
@click.option(
    "--tolerance-usecs",
    type=click.IntRange(min=0, max=10_000_000),
    metavar="N",
    help="Timing tolerance for every script (default: the script's own, else 4000).",
)
@click.option(
    "--vm",
    "on_vm",
    is_flag=True,
    help="Run on the VM engine's guest kernel with packetdrill (one QEMU "
    "boot; for what this kernel lacks, such as the fq qdisc).",
)
@click.option(
    "--guest-kernel",
    default="debian:sid",
    show_default=True,
    metavar="SPEC",
    help="With --vm: the guest's kernel (as for --engine vm; packetdrill needs Linux 6.18 or later).",
)
@click.option(
    "--packetdrill",
    metavar="PATH",
    help="With --kernel or --vm: this packetdrill binary instead of one built from source into the cache.",
)
def conformance(
    paths: tuple[str, ...],
    on_kernel: bool,
    on_vm: bool,
    guest_kernel: str,
    as_json: bool,
    expect: Optional[str],
    tolerance_usecs: Optional[int],
    packetdrill: Optional[str],
) -> None:
    """Run packetdrill TCP scripts (files, or directories searched for *.pkt) against the
    simulator's TCP sender, with --kernel against this machine's kernel, or with --vm
    against the VM guest's kernel: one line per script (pass, fail with the first
    mismatch, unsupported with the reason) and a count."""
    from ..conformance import command

    scripts = command.collect(list(paths))
    expected = command.load_expected(expect) if expect else None
    echo = (lambda v: None) if as_json else (lambda v: click.echo(command.line(v)))
    if packetdrill is not None and not (on_kernel or on_vm):
        raise ScenarioError("--packetdrill", "only with --kernel or --vm")
    if on_kernel and on_vm:
        raise ScenarioError("--vm", "not with --kernel: one stack per run")
    binary = None if packetdrill is None else Path(packetdrill)
    if on_vm:
        from ..conformance.guest import run_guest

        verdicts = run_guest([Path(p) for p in paths], binary, tolerance_usecs, echo, guest_kernel)
        stack = verdicts[0].stack if verdicts else "linux (VM guest)"
    elif on_kernel:
        from ..conformance.kernel import run_kernel

        verdicts = run_kernel([Path(p) for p in paths], binary, tolerance_usecs, echo)
        stack = verdicts[0].stack if verdicts else "linux"
    else:
        verdicts = command.run_simulator(scripts, tolerance_usecs, echo)
        stack = "simulator"
    _report(verdicts, stack, expected, expect, as_json)


def _report(
    verdicts: list[Any], stack: str, expected: Optional[dict[str, Any]], expect: Optional[str], as_json: bool
) -> None:
    """The verdicts (as JSON, or a summary), and with --expect where they differ from
    the recorded ones."""
    import json as jsonlib

    from ..conformance import command

    differ: list[tuple[str, str]] = []
    if expected is not None:
        differ = [(v.script, d) for v in verdicts if (d := command.disagreement(v, expected.get(v.script)))]
    if as_json:
        out = command.as_json(verdicts, stack)
        if expected is not None:
            out["differences"] = [{"script": s, "why": d} for s, d in differ]
        click.echo(jsonlib.dumps(out, indent=1))
        return
    click.echo(command.summary(verdicts, stack))
    if expected is not None:
        for s, d in differ:
            click.echo(f"differs     {s}: {d}")
        click.echo(f"{len(verdicts) - len(differ)} of {len(verdicts)} agree with {expect}")
