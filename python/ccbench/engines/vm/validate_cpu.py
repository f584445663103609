"""``ccbench validate --cpu``: the workflow around the CPU grid (``cpu_grid``) that the
VM engine registers (``ccbench.engines.workflow("validate-cpu")``): the grid the flags
ask for, the sender costs both engines get (a costs file, else the calibration kept for
this host and guest, else a calibration run first), the runs, the table and the files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from ... import host_costs
from ...errors import ScenarioError
from ...units import parse_duration
from . import calibrate
from . import cpu_grid as vc

Say = Callable[[str], None]


def command(
    *,
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
    version: str,
    say: Say,
    show: Say,
) -> None:
    """The grid on the simulator once and ``reps`` times on the VM; ``say`` reports
    progress, ``show`` prints the table and what was written."""
    from ...lifecycle import signals_interrupt
    from . import ENGINE

    params = _grid_params(quick, pacing, duration, rates, rtts)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ScenarioError("--out", f"{out!r} exists and is not a directory")
    vm = ENGINE.configure(guest_kernel=guest_kernel)
    params["ccas"] = _ccas(cca, pacing, vm) or params["ccas"]
    if pacing:
        cells = vc.pacing_grid(*(params[k] for k in ("shares", "slices", "flows", "ccas", "rates", "rtts")))
    else:
        cells = vc.grid(*(params[k] for k in ("shares", "slices", "ccas", "rates", "rtts")))
    given = None if cpu_costs is None else host_costs.read(cpu_costs)
    vc.check(cells, params["duration"], given, vm)  # every cell runnable on both engines, before the first run
    with signals_interrupt():
        costs, costs_from = (given, cpu_costs) if given is not None else kept_or_calibrated(vm, say)
        say(
            f"validating the sender-CPU model{' (pacing)' if pacing else ''}: {len(cells)} cell(s) of "
            f"{params['duration']} on the simulator and {reps} time(s) on the VM ({guest_kernel})"
        )
        kept = None
        if out is not None:
            Path(out).mkdir(parents=True, exist_ok=True)
            kept = Path(out) / "cpu-cells.jsonl"
        rows = vc.run(cells, params["duration"], costs, vm, progress=say, kept=kept, reps=reps)
    limits = vc.thresholds(rows)
    show(vc.markdown(rows, limits, {"guest": guest_kernel}).rstrip("\n"))
    if out is not None:
        meta = {
            "command": "ccbench validate --cpu" + (" --pacing" if pacing else ""),
            "guest": guest_kernel,
            "duration": params["duration"],
            "reps": reps,
            "costs": costs,
            "costs_from": costs_from,
            "version": version,
        }
        paths = vc.write(Path(out), rows, limits, meta)
        show(f"wrote {', '.join(str(p) for p in paths)}")


def kept_or_calibrated(vm: Any, say: Say) -> tuple[dict[str, Any], str]:
    """The ``[host]`` costs of the calibration kept for this host and guest, else of a
    quick calibration run now and kept (the simulator's default server costs are not
    this guest's), and the file they are in."""
    kept = calibrate.kept_path(vm)
    if kept.is_file():
        say(f"sender costs: the calibration kept for this host and guest, {kept}")
    else:
        say(
            f"no calibration is kept for this host and guest ({vm.guest_kernel}): calibrating first, "
            f"{len(calibrate.QUICK_POINTS)} runs of {calibrate.QUICK_DURATION} (ccbench calibrate-host runs the "
            "full one)"
        )
        result = calibrate.calibrate(vm.guest_kernel, vm.vcpus, calibrate.QUICK_POINTS, calibrate.QUICK_DURATION, say)
        calibrate.keep(result, vm)
        say(f"sender costs: this calibration, kept as {kept}")
    return host_costs.read(kept), str(kept)


def _grid_params(
    quick: bool, pacing: bool, duration: Optional[str], rates: Optional[str], rtts: Optional[str]
) -> dict[str, Any]:
    """The grid's axes: quick or full, 2BRobust's or the pacing grid, narrowed to the
    rates and RTTs given (which must be the grid's own)."""
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
        try:
            parse_duration(duration)
        except ValueError as e:
            raise ScenarioError("--duration", str(e)) from None
        params["duration"] = duration
    return params


def _ccas(cca: Optional[str], pacing: bool, vm: Any) -> Optional[tuple[str, ...]]:
    """The algorithms asked for; without ``--cca`` on the 2BRobust grid, every BBR
    version the guest kernel has (Debian's: v1) and Cubic; None: the grid's own."""
    if cca is not None:
        ccas = tuple(c.strip().lower() for c in cca.split(",") if c.strip())
        if not ccas:
            raise ScenarioError("--cca", f"{cca!r} names no algorithm; give NAME[,NAME...]")
        return ccas
    if pacing:
        return None
    offered = vm.congestion_control()
    return (*(v for v in ("bbr", "bbr2", "bbr3") if v in offered), "cubic")
