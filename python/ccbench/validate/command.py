"""The ``ccbench validate`` command's choice of cells and its terminal output (the
command's flags live in ``ccbench.cli.validate``)."""

from __future__ import annotations

from typing import Optional

from ..errors import ScenarioError
from .cells import FAMILIES, Cell
from .judge import CellResult
from .runner import BenchPoint


VERDICTS = ("pass", "FAIL", "testbed", "n/a")


def grid(quick: bool, family: Optional[str]) -> list[Cell]:
    """The quick or full grid, with the ``algorithms`` family (the other algorithms, judged
    on the VM) when ``--family`` names it: it needs a guest, so it runs only when asked."""
    from . import cells

    base = cells.quick_grid() if quick else cells.full_grid()
    wanted = {f.strip() for f in (family or "").split(",")}
    return base + (cells.algorithm_grid(quick) if "algorithms" in wanted else [])


def select(cells: list[Cell], family: Optional[str], cell_names: Optional[str], cca: Optional[str]) -> list[Cell]:
    """The cells of ``--family``, ``--cell`` and ``--cca`` (comma-separated lists), or a
    ScenarioError naming the flag that matches nothing."""
    if family is not None:
        wanted = [f.strip() for f in family.split(",") if f.strip()]
        unknown = [f for f in wanted if f not in FAMILIES]
        if unknown or not wanted:
            raise ScenarioError(
                "--family", f"unknown family {', '.join(unknown) or family}; allowed: {', '.join(FAMILIES)}"
            )
        cells = [c for c in cells if c.family in wanted]
    if cell_names is not None:
        parts = [p.strip() for p in cell_names.split(",") if p.strip()]
        cells = [c for c in cells if any(p in c.name for p in parts)]
        if not cells:
            raise ScenarioError("--cell", f"no cell of the grid has {cell_names!r} in its name")
    if cca is not None:
        ccas = {c.strip().lower() for c in cca.split(",") if c.strip()}
        cells = [c for c in cells if c.ccas <= ccas]
        if not cells:
            raise ScenarioError("--cca", f"no cell of the grid uses only {', '.join(sorted(ccas))}")
    return cells


def substitute(cells: list[Cell], spec: Optional[str]) -> list[Cell]:
    """``--substitute NAME=bpf:PATH``: the cells whose flows run NAME, with a BPF object
    in its place on both engines (``PATH`` a ``.bpf.o`` or its C source)."""
    if spec is None:
        return cells
    import dataclasses
    import json

    from ..bpf import name as bpf_name

    builtin, _, obj = spec.partition("=")
    builtin = builtin.strip().lower()
    if not builtin or not bpf_name.is_bpf(obj.strip()):
        raise ScenarioError("--substitute", "must be NAME=bpf:PATH, e.g. cubic=bpf:my_cubic.bpf.c")
    try:
        resolved = bpf_name.resolve(obj.strip())
    except ValueError as e:
        raise ScenarioError("--substitute", str(e)) from None
    label = "bpf:" + bpf_name.parse(resolved).path.rsplit("/", 1)[-1]
    out = []
    for c in cells:
        doc = c.doc
        if not any(f.get("cca") == builtin for f in doc["flows"]):
            continue
        doc["flows"] = [{**f, "cca": resolved} if f.get("cca") == builtin else f for f in doc["flows"]]
        axes = tuple((k, label if v == builtin else v) for k, v in c.axes)
        name = c.name.replace(builtin, label, 1)
        out.append(dataclasses.replace(c, name=name, scenario_json=json.dumps(doc, sort_keys=True), axes=axes))
    if not out:
        raise ScenarioError("--substitute", f"no selected cell runs {builtin}")
    return out


def print_results(results: list[CellResult], bench: list[BenchPoint]) -> None:
    """The grid's table (failing cells first), the counts and tolerances, and the
    emulator's capacity benchmark, on the terminal."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from . import tables

    t = Table(
        title="Simulator vs kernel (sim / kernel median [kernel's spread] (ratio)), failing cells first",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        header_style="bold",
        title_style="bold",
    )
    for h in tables.HEADERS:
        t.add_column(h)
    for row in tables.table_rows(tables.ordered(results)):
        t.add_row(*row)
    console = Console()
    console.print(t)
    counts = {verdict: sum(1 for r in results if r.verdict == verdict) for verdict in VERDICTS}
    held = f", {counts['testbed']} held by the VM's testbed" if counts["testbed"] else ""
    console.print(f"{counts['pass']} pass, {counts['FAIL']} fail{held}, {counts['n/a']} not run on both engines")
    console.print(f"tolerances: {tables.tolerances_line()}")
    if bench:
        b = Table(
            title="Emulator capacity (saturating Cubic flow, 2 BDP)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            header_style="bold",
            title_style="bold",
        )
        for h in ("rate", "delivered / configured", "lateness p50 µs", "lateness p99 µs"):
            b.add_column(h)
        for p in bench:
            ratio = "-" if p.delivered_rate_ratio is None else f"{100 * p.delivered_rate_ratio:.2f}%"
            b.add_row(
                p.rate,
                ratio + (" (short)" if p.flag_short else ""),
                f"{p.lateness_p50_us:.0f}",
                f"{p.lateness_p99_us:.0f}",
            )
        console.print(b)
