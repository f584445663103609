"""HTML reports: ``ccbench report RUN_DIR`` (a run's time series) and
``ccbench report --sweep NAME`` (a sweep from the results store).

Pages are self-contained: figures are embedded as data URIs and also written beside
the page as PNG and SVG; there are no scripts and no external resources.
"""

from __future__ import annotations

from .build import ReportError, choose_axes, run_report, sweep_report
from .page import Image, Page, Section, Table, save_figure, write_page

__all__ = [
    "Image",
    "Page",
    "ReportError",
    "Section",
    "Table",
    "choose_axes",
    "run_report",
    "save_figure",
    "sweep_report",
    "write_page",
]
