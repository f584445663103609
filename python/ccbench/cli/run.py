"""``ccbench run``: a scenario file, or one built from flags, on an engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import click

from .. import engines
from ..engines.base import capture_dir
from ..errors import ScenarioError
from .common import out_dir, plots_need_out, print_summary, with_status, write_plots
from .scenario_flags import FlagsFromSchema


# The scenario flags (ccbench.scenario.flags) come first, made from the schema.
@click.command(cls=FlagsFromSchema)
@click.argument("scenario", required=False, metavar="[SCENARIO.toml]")
@click.option("--out", metavar="DIR", help="Write summary.json, flows.parquet, link.parquet, scenario.toml here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary JSON instead of tables.")
@click.option("--plot", "make_plots", is_flag=True, help="With --out: also write figures of every flow to DIR/plots.")
@click.option(
    "--format",
    "formats",
    metavar="FMT[,FMT]",
    help="With --out: also write the run as flent data "
    "(DIR/run.flent.gz) and/or an iperf3 -J report (DIR/iperf3.json): flent, iperf3.",
)
@click.option(
    "--engine", type=click.Choice(engines.names()), default=engines.DEFAULT, show_default=True, help=engines.help_text()
)
@click.option(
    "--cpu-costs",
    metavar="FILE",
    help="Sender host costs ([host.cost], and host.tx_completion if "
    "given) from a file that 'ccbench calibrate-host' writes.",
)
@click.option(
    "--guest-kernel",
    metavar="SPEC",
    help="VM engine: the guest's kernel, debian:6.1 (default), "
    "debian:6.12, debian:PACKAGE=VERSION, or a kernel of your own (see docs/vm-engine.md).",
)
@click.option("--vcpus", type=int, metavar="N", help="VM engine: the guest's vCPUs (default 1).")
@click.option("--allow-large", is_flag=True, help="Run even if the estimated memory or time is beyond this machine.")
def run(
    scenario: Optional[str],
    out: Optional[str],
    as_json: bool,
    make_plots: bool,
    formats: Optional[str],
    engine: str,
    cpu_costs: Optional[str],
    guest_kernel: Optional[str],
    vcpus: Optional[int],
    allow_large: bool,
    **flags: Any,
) -> None:
    """Run a scenario file, or a scenario built from flags.

    Flags given with a scenario file override its values; --cca then replaces its flows.
    """
    from ..scenario import read_toml

    plots_need_out(make_plots, out)
    exports = _export_formats(formats, out)
    base = read_toml(scenario) if scenario is not None else None
    runner = engines.get(engine, guest_kernel=guest_kernel, vcpus=vcpus, allow_large=allow_large or None)
    sc = runner.from_flags(base=base, **flags)
    if cpu_costs is not None:
        sc = runner.load(_with_costs(sc, cpu_costs))
    sc = runner.check(sc)
    out_dir(out)
    _check_capture(sc, out, flags["pcap"] is not None)

    result = with_status(lambda: runner.run(sc, capture_to=out), quiet=as_json, text=runner.status)

    print_summary(result.summary, as_json)
    if out is not None:
        _save(result, out, exports, make_plots, err=as_json)
    if sc.capture is not None:
        where = Path(capture_dir(sc, out) or ".")
        names = ", ".join(f"capture-{p}.pcap" for p in sc.capture.points)
        click.echo(f"wrote {where}: {names}", err=as_json)


def _check_capture(sc: Any, out: Optional[str], by_flag: bool) -> None:
    """Refuse captures with nowhere to go, naming --pcap if the flag asked for them."""
    if sc.capture is None:
        return
    try:
        capture_dir(sc, out)
    except ScenarioError:
        if by_flag:
            raise ScenarioError("--pcap", "needs --out DIR; the captures go to DIR/capture-<point>.pcap") from None
        raise


def _save(result: Any, out: str, exports: dict[str, Callable[[Any, str], Path]], make_plots: bool, err: bool) -> None:
    """Write the run to ``out``; with --json (``err``), stdout carries only the JSON."""
    try:
        written = result.save(out)
    except OSError as e:
        raise ScenarioError("--out", f"cannot write to {out!r}: {e.strerror or e}") from None
    for line in (
        f"wrote {out}: {', '.join(p.name for p in written)}",
        f"  flows.parquet columns: {', '.join(map(str, result.flows.columns)) or '(none)'}",
        f"  link.parquet columns: {', '.join(map(str, result.link.columns)) or '(none)'}",
    ):
        click.echo(line, err=err)
    if exports:
        paths = [exports[fmt](result, out) for fmt in exports]
        click.echo(f"wrote {out}: {', '.join(p.name for p in paths)}", err=err)
    if make_plots:
        write_plots(out, None, None, "png,svg", err=err)


def _with_costs(sc: Any, path: str) -> dict[str, Any]:
    """The scenario's document with the host entries of the file at ``path``."""
    from .. import host_costs
    from ..scenario import _without_none

    return host_costs.laid_over(_without_none(sc.to_dict()), host_costs.read(path))


def _export_formats(formats: Optional[str], out: Optional[str]) -> dict[str, Callable[[Any, str], Path]]:
    """The writers ``run --format`` asks for, in the order given."""
    if formats is None:
        return {}
    if out is None:
        raise ScenarioError("--format", "needs --out DIR; the files go to DIR/run.flent.gz and DIR/iperf3.json")
    from ..exporters.flent import write_flent
    from ..exporters.iperf3 import write_iperf3

    writers: dict[str, Callable[[Any, str], Path]] = {"flent": write_flent, "iperf3": write_iperf3}
    chosen = {}
    for name in (f.strip().lower() for f in formats.split(",")):
        if name not in writers:
            raise ScenarioError("--format", f"expected flent or iperf3 (comma-separated), got {name!r}")
        chosen[name] = writers[name]
    return chosen
