"""``ccbench validate --cpu``: the sender-CPU model against the VM engine, on the
2BRobust grid or (``--pacing``) the phone study's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click

from .. import _core, engines
from ..errors import ScenarioError
from ..lifecycle import signals_interrupt
from .common import duration_flag, out_dir, read_host_costs


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
    from ..vm import validate as vc

    params = _grid(quick, pacing, rates, rtts, duration)
    costs = None if cpu_costs is None else read_host_costs(cpu_costs)
    out_dir(out)
    vm = engines.get("vm", guest_kernel=guest_kernel)
    params["ccas"] = _algorithms(cca, pacing, vm, params.get("ccas"))
    if pacing:
        cells = vc.pacing_grid(
            params["shares"], params["slices"], params["flows"], params["ccas"], params["rates"], params["rtts"]
        )
    else:
        cells = vc.grid(params["shares"], params["slices"], params["ccas"], params["rates"], params["rtts"])
    vc.check(cells, params["duration"], costs, vm)  # every cell runnable on both engines, before the first run
    click.echo(
        f"validating the sender-CPU model{' (pacing)' if pacing else ''}: {len(cells)} cell(s) of "
        f"{params['duration']} on the simulator "
        f"and {reps} time(s) on the VM ({guest_kernel})",
        err=True,
    )
    kept = None
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        kept = Path(out) / "cpu-cells.jsonl"
    with signals_interrupt():
        rows = vc.run(
            cells, params["duration"], costs, vm, progress=lambda line: click.echo(line, err=True), kept=kept, reps=reps
        )
    limits = vc.thresholds(rows)
    click.echo(vc.markdown(rows, limits, {"guest": guest_kernel}), nl=False)
    if out is not None:
        meta = {
            "command": "ccbench validate --cpu" + (" --pacing" if pacing else ""),
            "guest": guest_kernel,
            "duration": params["duration"],
            "reps": reps,
            "costs": costs,
            "version": _core.version(),
        }
        paths = vc.write(Path(out), rows, limits, meta)
        click.echo(f"wrote {', '.join(str(p) for p in paths)}")


def _grid(
    quick: bool, pacing: bool, rates: Optional[str], rtts: Optional[str], duration: Optional[str]
) -> dict[str, Any]:
    """The grid's parameters, narrowed to the --rate and --rtt given."""
    from ..vm import validate as vc

    if pacing:
        params: dict[str, Any] = dict(vc.PACING_QUICK if quick else vc.PACING_FULL)
    else:
        params = dict(vc.QUICK if quick else vc.FULL)
    for flag, key, given in (("--rate", "rates", rates), ("--rtt", "rtts", rtts)):
        if given is not None:
            chosen = tuple(v.strip() for v in given.split(",") if v.strip())
            unknown = [v for v in chosen if v not in params[key]]
            if unknown or not chosen:
                raise ScenarioError(
                    flag, f"{', '.join(unknown) or given!r} is not in the grid; allowed: {', '.join(params[key])}"
                )
            params[key] = chosen
    if duration is not None:
        duration_flag(duration, "--duration")
        params["duration"] = duration
    return params


def _algorithms(cca: Optional[str], pacing: bool, vm: Any, grid: Any) -> Any:
    """--cca's algorithms; without it the phone study's, or every BBR version the guest
    kernel has (Debian's: v1) and Cubic."""
    if cca is not None:
        ccas = tuple(c.strip().lower() for c in cca.split(",") if c.strip())
        if not ccas:
            raise ScenarioError("--cca", f"{cca!r} names no algorithm; give NAME[,NAME...]")
        return ccas
    if pacing:
        return grid
    offered = vm.congestion_control()
    return (*(v for v in ("bbr", "bbr2", "bbr3") if v in offered), "cubic")
