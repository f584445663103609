"""Figures of a finished run: ``ccbench plot RUN_DIR`` and ``ccbench run --out DIR --plot``.

>>> from ccbench.plots import plot_run
>>> plot_run("results/example")                      # doctest: +SKIP
[PosixPath('results/example/plots/flow0.png'), ...]

Figures are drawn on matplotlib's Agg canvas without pyplot, so plotting neither needs a
display nor changes global matplotlib state; the same run gives byte-identical files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

import matplotlib

from .. import traffic
from . import style
from .rundir import PlotError, RunData, load_run
from .states import Segment, TimelineRow, state_timeline
from .arrivals import arrivals_figure
from .downloads import downloads_figure
from .packets import retrans_figure, seq_figure
from .timeseries import flow_figure, link_figure

__all__ = [
    "FORMATS",
    "PlotError",
    "arrivals_figure",
    "RunData",
    "Segment",
    "TimelineRow",
    "flow_figure",
    "link_figure",
    "load_run",
    "parse_formats",
    "plot_run",
    "retrans_figure",
    "seq_figure",
    "state_timeline",
]

FORMATS = style.FORMATS
PathLike = Union[str, "os.PathLike[str]"]


def parse_formats(text: Union[str, Iterable[str]]) -> tuple[str, ...]:
    """``"png,svg"`` (or a list) as a tuple of formats; PlotError for anything else."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out: list[str] = []
    for item in items:
        fmt = item.strip().lower().lstrip(".")
        if not fmt:
            continue
        if fmt not in FORMATS:
            raise PlotError("--format", f"unknown format '{item.strip()}'; allowed: {', '.join(FORMATS)}")
        if fmt not in out:
            out.append(fmt)
    if not out:
        raise PlotError("--format", f"no format given; allowed: {', '.join(FORMATS)}")
    return tuple(out)


def plot_run(
    run_dir: Union[PathLike, RunData],
    flows: Optional[Sequence[int]] = (0,),
    out: Optional[PathLike] = None,
    formats: Union[str, Iterable[str]] = FORMATS,
    link: bool = True,
) -> list[Path]:
    """Write ``flow<N>.<fmt>`` for each flow in ``flows`` (``None``: every flow) and
    ``link.<fmt>`` into ``out`` (default ``RUN_DIR/plots``); for an analysed capture
    (with ``packets.parquet``) also ``seq<N>`` and ``retrans<N>``; for a run with
    arrivals ``arrivals`` (slowdown against size, CDF of FCT). Returns the paths
    written.

    Raises PlotError for a directory that is not a run, a flow out of range or an
    unknown format, before anything is written."""
    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    fmts = parse_formats(formats)
    wanted = list(range(run.flow_count)) if flows is None else [int(i) for i in flows]
    if run.flow_count == 0 and traffic.has_traffic(run.summary):
        wanted = []  # only UDP flows and arrivals: no TCP flow to draw
    for i in wanted:
        run.check_flow(i)
    target = Path(out) if out is not None else run.directory / "plots"
    if target.exists() and not target.is_dir():
        raise PlotError("--out", f"'{target}' exists and is not a directory")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PlotError("--out", f"cannot create '{target}': {e.strerror or e}") from None
    written: list[Path] = []
    with matplotlib.rc_context(style.RC):
        try:
            for i in wanted:
                fig, _rows = flow_figure(run, i)
                written += style.save(fig, target / f"flow{i}", fmts)
                if run.packets is not None:
                    written += style.save(seq_figure(run, i), target / f"seq{i}", fmts)
                    written += style.save(retrans_figure(run, i), target / f"retrans{i}", fmts)
            if link:
                written += style.save(link_figure(run), target / "link", fmts)
            for name, fig in (("downloads", downloads_figure(run)), ("arrivals", arrivals_figure(run))):
                if fig is not None:
                    written += style.save(fig, target / name, fmts)
        except OSError as e:
            raise PlotError("--out", f"cannot write to '{target}': {e.strerror or e}") from None
    return written
