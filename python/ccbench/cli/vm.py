"""``ccbench vm``: the VM engine's guest (probe it, build a kernel of one's own)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import click

from ..errors import ScenarioError
from ..lifecycle import signals_interrupt
from ..vm.guest import SERIES as GUEST_SERIES


@click.group()
def vm() -> None:
    """The VM engine's guest: a Debian kernel in QEMU with its vCPUs under SCHED_DEADLINE."""


@vm.command("probe")
@click.option(
    "--guest-kernel",
    default="debian:6.1",
    show_default=True,
    metavar="SPEC",
    help="debian:6.1, debian:6.12, debian:PACKAGE=VERSION, a directory with boot/vmlinuz-* and "
    "lib/modules/<release>, or BZIMAGE:MODULES_DIR.",
)
@click.option(
    "--vcpus",
    type=click.IntRange(1, 16),
    default=1,
    show_default=True,
    metavar="N",
    help="Guest vCPUs (one host thread each).",
)
@click.option(
    "--cpu-share", metavar="SHARE", help="Give each vCPU thread this share under SCHED_DEADLINE, e.g. 25% (root)."
)
@click.option("--cpu-slice", default="10ms", show_default=True, metavar="TIME", help="The deadline period.")
@click.option(
    "--busy",
    default="0s",
    show_default=True,
    metavar="TIME",
    help="Keep the guest busy this long and measure the CPU time each vCPU thread gets.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def vm_probe(guest_kernel: str, vcpus: int, cpu_share: Optional[str], cpu_slice: str, busy: str, as_json: bool) -> None:
    """Boot the guest once and report its kernel, the accelerator, the boot time, the
    congestion controls it offers and, with --cpu-share, the policy read back from the
    host kernel and the CPU the busy vCPUs got."""
    import json as jsonlib

    from ..scenario.host import parse_share
    from ..units import parse_duration
    from ..vm.probe import probe

    share = None
    if cpu_share is not None:
        try:
            share = parse_share(cpu_share)
        except ValueError as e:
            raise ScenarioError("--cpu-share", str(e)) from None
    try:
        period = parse_duration(cpu_slice)
        busy_ns = parse_duration(busy)
    except ValueError as e:
        raise ScenarioError("--cpu-slice" if "slice" in str(e) else "--busy", str(e)) from None
    if not 1_000_000 <= period <= 1_000_000_000:
        raise ScenarioError("--cpu-slice", "must be from 1ms to 1s")
    if busy_ns > 600 * 10**9:
        raise ScenarioError("--busy", "must be at most 600s")
    if share is not None and os.geteuid() != 0:
        raise ScenarioError("--cpu-share", "setting SCHED_DEADLINE on the vCPU threads needs root")
    with signals_interrupt():
        report = probe(guest_kernel, vcpus, share, period, busy_ns / 1e9)
    if as_json:
        click.echo(jsonlib.dumps(report.as_dict(), indent=1))
        return
    for key, value in report.as_dict().items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else value
        click.echo(f"{key:>26}: {shown}")


@vm.command("build-kernel")
@click.option(
    "--series",
    type=click.Choice(sorted(GUEST_SERIES)),
    default="6.12",
    show_default=True,
    help="Which pinned Debian kernel's source and configuration to start from.",
)
@click.option(
    "--patch",
    "patches",
    multiple=True,
    metavar="FILE",
    help="A patch to apply (patch -p1), in the order given; e.g. BBRv3's for this series.",
)
@click.option("--out", required=True, metavar="DIR", help="Where to put the kernel (a new or empty directory).")
@click.option(
    "--jobs", type=click.IntRange(0, 256), default=0, metavar="N", help="Parallel make jobs (0: one per core)."
)
def vm_build_kernel(series: str, patches: tuple[str, ...], out: str, jobs: int) -> None:
    """Build a guest kernel of one's own from Debian's source of a pinned guest kernel,
    with patches, for --guest-kernel DIR. A BBRv3 tcp_bbr.c is offered as bbr3, with
    its 2BRobust twin bbr3_2brobust. Needs gcc-12, make, flex, bison, bc, libelf-dev
    and libssl-dev; takes about a quarter of an hour on two cores."""
    from ..vm.kernel_build import build

    with signals_interrupt():
        kernel = build(series, [Path(p) for p in patches], Path(out), jobs, say=lambda line: click.echo(line, err=True))
    click.echo(f"{kernel.release}: {', '.join(kernel.congestion_control())}")
    click.echo(f"use it with --guest-kernel {out}")
