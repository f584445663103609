"""``ccbench replicate NAME``: the command's work (its flags are in ``ccbench.cli.replicate``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.console import Console

from .. import engines
from . import get, studies


def list_studies(console: Console) -> None:
    for s in studies().values():
        also = [e for e in s.runs if e != engines.DEFAULT]
        where = f" (also --engine {', '.join(also)})" if also else ""
        console.print(f"{s.name:16} {s.summary}{where}", markup=False, highlight=False)


def replicate_command(
    name: Optional[str],
    quick: bool,
    out: Optional[str],
    workers: Optional[int],
    store_path: Optional[str],
    engine: str = engines.DEFAULT,
) -> None:
    console = Console(highlight=False)
    if name is None:
        list_studies(console)
        return
    run = get(name).on(engine)
    from ..errors import ScenarioError
    from ..store import open_store

    if workers is not None and workers < 1:
        raise ScenarioError("--workers", f"must be at least 1, got {workers}")
    target = Path(out) if out is not None else Path("replications") / name
    if target.exists() and not target.is_dir():
        raise ScenarioError("--out", f"'{target}' exists and is not a directory")
    run(quick, target, workers, open_store(store_path), console)
