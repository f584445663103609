"""The table every replication ends with: each finding, the study's figure, ccbench's
figure from the runs (the simulator's; a VM's beside it when the study ran there too; the
simulator's with each CPU preset when the study's hosts call for them), and a note on how
they differ. Printed, and saved as CSV and Markdown."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from rich import box
from rich.console import Console
from rich.table import Table


@dataclass(frozen=True)
class Finding:
    """One row: what is compared, the study's figure (as the paper states it),
    ccbench's figure (computed from the simulator's runs), a note, and where a study
    calls for them: the VM engine's figure, the simulator's figure with the ``vm`` CPU
    preset beside the ``server`` preset's (``ccbench``), and whether ccbench's figure was
    fitted to the study or predicted."""

    point: str
    study: str
    ccbench: str
    note: str = ""
    vm: Optional[str] = None
    vm_preset: Optional[str] = None
    basis: Optional[str] = None


def layout(rows: Sequence[Finding]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The columns (field names) and their headings: the optional ones if any row has them."""
    has = {name: any(getattr(r, name) is not None for r in rows) for name in ("vm", "vm_preset", "basis")}
    columns = [("point", "point / finding"), ("study", "study")]
    if has["vm_preset"]:
        columns += [("ccbench", "server"), ("vm_preset", "vm")]
    else:
        columns.append(("ccbench", "simulator" if has["vm"] else "ccbench"))
    if has["vm"]:
        columns.append(("vm", "VM engine" if has["vm_preset"] else "VM"))
    if has["basis"]:
        columns.append(("basis", "vm: fitted or predicted" if has["vm_preset"] else "fitted or predicted"))
    columns.append(("note", "note"))
    names, headings = zip(*columns)
    return names, headings


def print_comparison(rows: Sequence[Finding], console: Console, title: str) -> None:
    columns, headings = layout(rows)
    t = Table(
        title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, header_style="bold", show_lines=True
    )
    for heading in headings:
        t.add_column(heading, ratio=3 if heading == headings[0] else 4, overflow="fold")
    for r in rows:
        t.add_row(*(getattr(r, c) or "" for c in columns))
    console.print(t)


def save_comparison(rows: Sequence[Finding], out: Path, stem: str = "comparison") -> list[Path]:
    """``out/stem.csv`` and ``out/stem.md``."""
    columns, headings = layout(rows)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out / f"{stem}.csv", out / f"{stem}.md"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({c: getattr(r, c) or "" for c in columns})
    lines = ["| " + " | ".join(headings) + " |", "|" + " --- |" * len(headings)]
    for r in rows:
        lines.append("| " + " | ".join(_md(getattr(r, c) or "") for c in columns) + " |")
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [csv_path, md_path]


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
