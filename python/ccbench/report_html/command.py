"""``ccbench report``: the command's work (its flags are in ``ccbench.cli.report``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Optional

import click

from .build import ReportError, run_report, sweep_report


def report_command(
    run_dir: Optional[str],
    sweep: Optional[str],
    store: Optional[str],
    out: Optional[str],
    metric: str,
    x: Optional[str],
    y: Optional[str],
    facet: Optional[str],
    formats: str,
    pages: Mapping[str, Callable[[Path, Path], Path]] = {},
) -> None:
    """The report of a run directory or a stored sweep. ``pages`` builds the pages of
    other directories, by the file that marks them (``validate.json``: a grid written by
    'ccbench validate --out DIR'), from that file and the page's directory."""
    if (run_dir is None) == (sweep is None):
        raise ReportError("RUN_DIR", "give either a run directory (written by 'ccbench run --out DIR') or --sweep NAME")
    if run_dir is not None:
        for name, value in (("--x", x), ("--y", y), ("--facet", facet), ("--store", store)):
            if value is not None:
                raise ReportError(name, "only applies to a sweep report (--sweep NAME)")
        marker = next((name for name in pages if (Path(run_dir) / name).is_file()), None)
        if marker is not None:
            page = pages[marker](Path(run_dir) / marker, Path(out) if out else Path(run_dir) / "report")
        else:
            page = run_report(run_dir, out, formats)
    else:
        from ..analysis.records import sweep_records

        assert sweep is not None
        records = sweep_records(sweep, store)
        target = Path(out) if out is not None else Path("reports") / sweep
        page = sweep_report(records, target, name=sweep, metric=metric, x=x, y=y, facet=facet, formats=formats)
    click.echo(f"wrote {page} (figures and data beside it)")
