"""The table every replication ends with: each finding, the study's figure, ccbench's
figure from the runs, and a note on how they differ. Printed, and saved as CSV and
Markdown."""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

COLUMNS = ("point", "study", "ccbench", "note")
HEADINGS = ("point / finding", "study", "ccbench", "note")


@dataclass(frozen=True)
class Finding:
    """One row: what is compared, the study's figure (as the paper states it),
    ccbench's figure (computed from the runs) and a note."""

    point: str
    study: str
    ccbench: str
    note: str = ""


def print_comparison(rows: Sequence[Finding], console: Console, title: str) -> None:
    t = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, header_style="bold",
              show_lines=True)
    for heading, ratio in zip(HEADINGS, (3, 4, 4, 4)):
        t.add_column(heading, ratio=ratio, overflow="fold")
    for r in rows:
        t.add_row(r.point, r.study, r.ccbench, r.note)
    console.print(t)


def save_comparison(rows: Sequence[Finding], out: Path, stem: str = "comparison") -> list[Path]:
    """``out/stem.csv`` and ``out/stem.md``."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out / f"{stem}.csv", out / f"{stem}.md"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow(asdict(r))
    lines = ["| " + " | ".join(HEADINGS) + " |", "|" + " --- |" * len(HEADINGS)]
    for r in rows:
        lines.append("| " + " | ".join(_md(v) for v in (r.point, r.study, r.ccbench, r.note)) + " |")
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [csv_path, md_path]


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
