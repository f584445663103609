"""``ccbench validate``: the simulator against the real kernel, cell by cell.

Each cell of a grid (``cells``: one bulk flow at a rate, RTT and buffer; random and
bursty loss; BBR and Cubic sharing; several flows of one algorithm; different RTTs;
staggered starts; LTE traces; CoDel and FQ-CoDel; ECN; receive windows; sized and
repeated downloads) runs on both engines with repetitions (``runner``); ``judge`` turns
the runs into medians, spreads and a verdict against the tolerances; ``tables`` writes
the table, CSV and JSON; ``report`` the HTML page. Both engines run the same scenario
with the kernel's tick rate (``tcp.hz``).
"""

from __future__ import annotations

from .cells import Cell, full_grid, quick_grid
from .judge import CellResult, Check, EngineFigures, Spread, compare, run_figures
from .runner import BenchPoint, emulator_benchmark, run_cell, run_grid
from .tables import markdown, table_rows, write

__all__ = [
    "BenchPoint",
    "Cell",
    "CellResult",
    "Check",
    "EngineFigures",
    "Spread",
    "compare",
    "emulator_benchmark",
    "full_grid",
    "markdown",
    "quick_grid",
    "run_cell",
    "run_grid",
    "run_figures",
    "table_rows",
    "write",
]
