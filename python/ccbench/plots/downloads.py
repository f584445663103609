"""Repeated downloads: the distribution, across downloads, of completion time,
throughput and self-inflicted delay, one line per flow."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from matplotlib.figure import Figure

from . import style
from .rundir import RunData

PANELS = (
    ("completion_s", "completion time (s)", 1.0),
    ("throughput_bps", "throughput (Mbit/s)", 1e-6),
    ("self_inflicted_delay_ms", "self-inflicted delay (ms)", 1.0),
)


def has_downloads(run: RunData) -> bool:
    return any(f.get("downloads") for f in run.summary.get("flows", []))


def downloads_figure(run: RunData) -> Optional[Figure]:
    """Empirical CDFs across each flow's downloads (unfinished ones count as not
    completed: they are left out of the completion-time panel)."""
    flows = [f for f in run.summary.get("flows", []) if f.get("downloads")]
    if not flows:
        return None
    fig = Figure(figsize=(11, 3.4))
    axes = fig.subplots(1, len(PANELS))
    for k, f in enumerate(flows):
        color = style.FLOW_COLORS[k % len(style.FLOW_COLORS)]
        label = f"flow {f['id']} {f['cca']} ({len(f['downloads'])} downloads)"
        for ax, (key, _, scale) in zip(axes, PANELS):
            values = _values(f["downloads"], key, scale)
            if len(values):
                ys = np.arange(1, len(values) + 1) / len(values)
                ax.step(values, ys, where="post", color=color, lw=1.3, label=label)
    for ax, (_, xlabel, _) in zip(axes, PANELS):
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1.02)
        ax.set_xlim(left=0)
    axes[0].set_ylabel("fraction of downloads")
    axes[0].set_title("CDF across downloads")
    axes[0].legend(loc="lower right")
    fig.tight_layout()
    return fig


def _values(downloads: list[dict[str, Any]], key: str, scale: float) -> np.ndarray:
    return np.sort(np.array([d[key] * scale for d in downloads if d.get(key) is not None], dtype=float))
