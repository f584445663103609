"""Look and file output of ccbench figures.

Everything here aims at readable figures whose files are byte-identical from one
rendering of the same run to the next: a fixed size and DPI, the fonts matplotlib ships,
a fixed ``svg.hashsalt`` for the SVG element ids, and no date or software version in the
file metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 110
FORMATS = ("png", "svg")

# Okabe-Ito, a palette that stays distinguishable with common colour-vision deficiencies.
ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
BLACK = "#000000"
GREY = "#7F7F7F"

# Lines that recur across panels.
LINE = {
    "throughput": {"color": BLUE, "lw": 1.0},
    "goodput": {"color": ORANGE, "lw": 1.0},
    "srtt": {"color": BLUE, "lw": 1.0},
    "min_rtt": {"color": GREEN, "lw": 1.2},
    "cwnd": {"color": BLUE, "lw": 1.1},
    "inflight": {"color": ORANGE, "lw": 0.9},
    "ssthresh": {"color": GREY, "lw": 1.0, "ls": "--"},
    "inflight_hi": {"color": VERMILLION, "lw": 1.2, "ls": "--"},
    "inflight_lo": {"color": PURPLE, "lw": 1.2, "ls": "-."},
    "w_max": {"color": GREEN, "lw": 1.0, "ls": ":"},
    "rwnd": {"color": PURPLE, "lw": 1.2, "ls": "--"},
    "pacing": {"color": BLUE, "lw": 1.0},
    "delivery": {"color": "#BBBBBB", "lw": 0.7},
    "bw": {"color": ORANGE, "lw": 1.3},
    "max_bw": {"color": VERMILLION, "lw": 1.1, "ls": "--"},
    "bw_lo": {"color": PURPLE, "lw": 1.2, "ls": "-."},
    "queue": {"color": BLUE, "lw": 1.0},
    "drops": {"color": VERMILLION, "lw": 1.2},
    "link": {"color": BLACK, "lw": 1.0},
}
# The two directions of a run with a reverse bottleneck (its link figure's panels).
DIRECTION = {
    "down": {"color": BLUE, "lw": 1.0},
    "up": {"color": VERMILLION, "lw": 1.0},
}
# Horizontal reference lines (bottleneck rate, base RTT, BDP, buffer limit).
REFERENCE = {"color": BLACK, "lw": 0.9, "ls": ":", "alpha": 0.8}
REFERENCE_2 = {"color": GREY, "lw": 0.9, "ls": "-.", "alpha": 0.8}

# Per-flow lines when several flows share a panel.
FLOW_COLORS = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, YELLOW, GREY)

# State timeline colours, by row and label.
STATE_COLORS = {
    # BBR mode
    "STARTUP": VERMILLION,
    "DRAIN": SKY,
    "PROBE_BW": GREEN,
    "PROBE_RTT": PURPLE,
    # BBRv2/v3 PROBE_BW phase (v1's gain cycle reuses them: up, down, cruise)
    "UP": ORANGE,
    "DOWN": BLUE,
    "CRUISE": "#A6DCC8",
    "REFILL": YELLOW,
    # tcp_ca_state
    "Open": "#E3E3E3",
    "Disorder": "#BCBD22",
    "CWR": "#7570B3",
    "Recovery": "#8C510A",
    "Loss": "#222222",
    # flags
    "on": GREY,
}
# Bands dark enough for white text.
DARK = {VERMILLION, GREEN, PURPLE, BLUE, "#7570B3", "#8C510A", "#222222", GREY}

RC: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelsize": 9,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.6,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
    "svg.hashsalt": "ccbench",
    "svg.fonttype": "path",
    "path.simplify": True,
    "agg.path.chunksize": 20000,
}

# No timestamps and no software version: identical runs give identical files.
_METADATA = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
}


def gain_color(gain: float) -> str:
    """Colour of a BBR pacing gain: STARTUP's and DRAIN's high and low gains, or
    PROBE_BW's probing up, down, or cruising."""
    if gain >= 2.0:
        return STATE_COLORS["STARTUP"]
    if gain <= 0.5:
        return STATE_COLORS["DRAIN"]
    if gain > 1.001:
        return STATE_COLORS["UP"]
    if gain < 0.999:
        return STATE_COLORS["DOWN"]
    return STATE_COLORS["CRUISE"]


def new_figure(width: float, height: float) -> Figure:
    """A Figure on the Agg canvas, independent of pyplot and its global state."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, stem: Path, formats: Iterable[str]) -> list[Path]:
    """Write ``stem.<fmt>`` for each format; returns the paths written."""
    paths = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        fig.savefig(path, format=fmt, dpi=DPI, metadata=_METADATA[fmt])
        paths.append(path)
    return paths
