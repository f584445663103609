"""``ccbench validate --report``: the grid as a self-contained HTML page.

Built from the grid's JSON (``validate.json``), so a stored grid can be rendered again
without running it. Failing cells come first; then one heatmap per family: a row per
cell, a column per judged figure, coloured by log2(simulator / kernel) (white is
agreement) and marked ✗ where the check failed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..report_html.page import Page, Section, Table, save_figure, write_page

FIGURES = ("goodput", "rtt_mean", "completion", "retransmits", "rwnd_limited")
TITLES = {
    "goodput": "goodput",
    "rtt_mean": "mean RTT",
    "completion": "completion",
    "retransmits": "retransmits",
    "rwnd_limited": "window-limited",
}


def _ratio_text(c: dict[str, Any]) -> str:
    return "-" if c["ratio"] is None else f"{c['ratio']:.2f}"


def _worst(checks: list[dict[str, Any]], figure: str) -> dict[str, Any] | None:
    """The check of ``figure`` furthest from agreement (failing first) over the cell's flows."""
    mine = [c for c in checks if c["figure"] == figure]
    if not mine:
        return None
    return max(mine, key=lambda c: (not c["ok"], abs(math.log(c["ratio"])) if c["ratio"] else 0.0))


def heatmap(cells: list[dict[str, Any]], family: str, out: Path, formats: tuple[str, ...]):
    import matplotlib

    from ..plots import style

    with matplotlib.rc_context(style.RC):
        return _heatmap(cells, family, out, formats)


def _heatmap(cells: list[dict[str, Any]], family: str, out: Path, formats: tuple[str, ...]):
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    from ..plots import style

    figures = [f for f in FIGURES if any(c["figure"] == f for cell in cells for c in cell["checks"])]
    values = [[math.nan] * len(figures) for _ in cells]
    labels = [[""] * len(figures) for _ in cells]
    for i, cell in enumerate(cells):
        for j, f in enumerate(figures):
            c = _worst(cell["checks"], f)
            if c is None:
                labels[i][j] = cell["verdict"] if j == 0 and cell["verdict"] == "n/a" else ""
                continue
            if c["ratio"]:
                values[i][j] = max(-2.0, min(2.0, math.log2(c["ratio"])))
            labels[i][j] = _ratio_text(c) + ("" if c["ok"] else " ✗")
    fig = style.new_figure(1.6 + 1.3 * max(1, len(figures)) + 2.6, max(1.8, 0.8 + 0.32 * len(cells)))
    ax = fig.add_subplot()
    data = np.ma.masked_invalid(np.array(values, dtype=float))
    image = ax.imshow(data, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -1.0, 1.0), aspect="auto")
    ax.set_xticks(range(len(figures)), [TITLES[f] for f in figures])
    ax.set_yticks(range(len(cells)), [c["name"] for c in cells])
    ax.tick_params(labelsize=8)
    for i in range(len(cells)):
        for j in range(len(figures)):
            strong = not math.isnan(values[i][j]) and abs(values[i][j]) > 0.6
            ax.text(
                j,
                i,
                labels[i][j],
                ha="center",
                va="center",
                fontsize=7,
                color="white" if strong else "#222222",
                fontweight="bold" if "✗" in labels[i][j] else "normal",
            )
    bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label("log2(sim / kernel)", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    return save_figure(
        fig,
        out,
        f"validate-{family}",
        f"{family}: simulator / kernel",
        "Worst ratio over the cell's flows; ✗ marks a failed check.",
        formats,
    )


def _row(cell: dict[str, Any]) -> list[str]:
    checks = cell["checks"]
    if not checks:
        reason = cell["sim"]["reason"] or cell["kernel"]["reason"]
        return [cell["name"], f"{cell['verdict']}: {reason}" if reason else cell["verdict"], *("-" for _ in FIGURES)]
    cols = []
    for f in FIGURES:
        mine = [c for c in checks if c["figure"] == f]
        cols.append("; ".join(f"{_ratio_text(c)}{'' if c['ok'] else ' ✗'}" for c in mine) or "-")
    return [cell["name"], cell["verdict"], *cols]


def build(doc: dict[str, Any], out: Path, formats: tuple[str, ...] = ("png", "svg")) -> Path:
    """Write ``out/index.html`` (and its figures) from a grid's JSON document."""
    cells = doc["cells"]
    counts = {v: sum(1 for c in cells if c["verdict"] == v) for v in ("pass", "FAIL", "testbed", "n/a")}
    held = f", {counts['testbed']} held by the VM's testbed" if counts["testbed"] else ""
    t = doc["tolerances"]
    summary = Section(
        "Summary",
        paragraphs=[
            f"{len(cells)} cells: {counts['pass']} pass, {counts['FAIL']} fail{held}, {counts['n/a']} not run on both "
            "engines.",
            f"Kernel {doc.get('kernel', '?')} (CONFIG_HZ={doc.get('kernel_hz', '?')}), ccbench {doc.get('version', '?')}, "
            f"{doc.get('reps', '?')} repetition(s) of {doc.get('duration', '?')} per engine and cell.",
            f"Tolerances (simulator against the kernel's median): goodput {t['goodput']:.0%} (of capacity where loss or "
            f"sharing makes a flow's goodput small), mean RTT {t['rtt_mean']:.0%}, completion {t['completion']:.0%}, "
            f"retransmissions a factor {t['retransmit_factor']:g} or both under {t['retransmit_floor']:.1%} of packets; "
            "a figure inside the kernel's spread over its repetitions also passes.",
        ],
    )
    columns = ["cell", "verdict", *(f"{TITLES[f]} sim/kernel" for f in FIGURES)]
    failing = [c for c in cells if c["verdict"] == "FAIL"]
    if failing:
        summary.tables.append(Table("Failing cells", columns, [_row(c) for c in failing]))
    page = Page("ccbench validate: the simulator against the Linux kernel", doc.get("command", ""), [summary])
    families: dict[str, list[dict[str, Any]]] = {}
    for c in cells:
        families.setdefault(c["family"], []).append(c)
    for family, members in families.items():
        section = Section(family)
        if any(c["checks"] for c in members):
            section.images.append(heatmap(members, family, out, formats))
        section.tables.append(Table(f"{family} cells", columns, [_row(c) for c in members]))
        page.sections.append(section)
    return write_page(page, out)


def build_from_file(validate_json: Path, out: Path) -> Path:
    return build(json.loads(validate_json.read_text()), out)
