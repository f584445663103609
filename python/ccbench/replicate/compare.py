"""The table every replication ends with: each finding, the study's figure, ccbench's
figure from the runs (the simulator's, and a VM's beside it when the study ran there
too), and a note on how they differ. Printed, and saved as CSV and Markdown."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

COLUMNS = ("point", "study", "ccbench", "note")
HEADINGS = ("point / finding", "study", "ccbench", "note")
# With a VM column: ccbench's figure is the simulator's.
VM_COLUMNS = ("point", "study", "ccbench", "vm", "note")
VM_HEADINGS = ("point / finding", "study", "simulator", "VM", "note")


@dataclass(frozen=True)
class Finding:
    """One row: what is compared, the study's figure (as the paper states it),
    ccbench's figure (computed from the simulator's runs), a note, and the VM engine's
    figure when the study ran there too."""

    point: str
    study: str
    ccbench: str
    note: str = ""
    vm: Optional[str] = None


def _layout(rows: Sequence[Finding]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The columns (field names) and their headings: a VM column if any row has one."""
    return (VM_COLUMNS, VM_HEADINGS) if any(r.vm is not None for r in rows) else (COLUMNS, HEADINGS)


def print_comparison(rows: Sequence[Finding], console: Console, title: str) -> None:
    columns, headings = _layout(rows)
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
    columns, headings = _layout(rows)
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
