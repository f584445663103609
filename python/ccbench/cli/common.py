"""What several commands share: checks of their flags, the spinner, and printing and
saving a run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import click

from ..errors import ScenarioError

T = TypeVar("T")


def duration_flag(value: str, flag: str) -> int:
    """A duration flag's value in ns; ScenarioError on ``flag`` if it is not one."""
    from ..units import parse_duration

    try:
        return parse_duration(value)
    except ValueError as e:
        raise ScenarioError(flag, str(e)) from None


def out_dir(out: Optional[str], flag: str = "--out") -> None:
    """Refuse an output directory that is a file."""
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ScenarioError(flag, f"{out!r} exists and is not a directory")


def plots_need_out(make_plots: bool, out: Optional[str]) -> None:
    if make_plots and out is None:
        raise ScenarioError("--plot", "needs --out DIR; the figures go to DIR/plots")


def with_status(work: Callable[[], T], quiet: bool, text: str) -> T:
    """Show a spinner on an interactive stderr while ``work`` runs."""
    if quiet or not sys.stderr.isatty():
        return work()
    from rich.console import Console

    with Console(stderr=True).status(text):
        return work()


def print_summary(summary: dict[str, Any], as_json: bool) -> None:
    """The summary JSON on stdout, or its tables."""
    if as_json:
        from ..result import summary_bytes

        sys.stdout.buffer.write(summary_bytes(summary))
        sys.stdout.flush()
    else:
        from ..report import render

        render(summary)


def show_and_save(run: Any, out: Optional[str], as_json: bool, make_plots: bool) -> None:
    """Print a measured run (its summary JSON, or the tables) and, with --out, save it
    (and its figures). With --json, stdout carries only the JSON."""
    print_summary(run.summary, as_json)
    if out is not None:
        paths = run.save(out)
        click.echo(f"wrote {out}: {', '.join(p.name for p in paths)}", err=as_json)
        if make_plots:
            write_plots(out, None, None, "png,svg", err=as_json)


def write_plots(run_dir: str, flows: Optional[list[int]], out: Optional[str], formats: str, err: bool = False) -> None:
    from ..plots import plot_run

    paths = plot_run(run_dir, flows=flows, out=out, formats=formats)
    click.echo(f"wrote {paths[0].parent}: {', '.join(p.name for p in paths)}", err=err)
