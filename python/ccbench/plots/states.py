"""The state timeline: which mode, phase and ``ca_state`` a flow was in over time.

BBR's mode and BBRv2/v3's PROBE_BW phase come from the moves the simulator logged as
they happened (states.parquet), so every DRAIN and PROBE_RTT shows however short. Other
states (``ca_state``, BBRv1's gain cycle, and everything of a kernel run) are sampled
once per interval, at its end; each sample colours the interval that ends at it, and a
state shorter than the interval can fall between two samples: sample with a finer
``--interval`` to see it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

BBR_MODES = ("STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT")
BBR2_PHASES = ("UP", "DOWN", "CRUISE", "REFILL")
CA_STATES = ("Open", "Disorder", "CWR", "Recovery", "Loss")
PROBE_BW = 2


@dataclass(frozen=True)
class Segment:
    """One band of the timeline: ``label`` held from ``start`` to ``end`` (seconds)."""

    start: float
    end: float
    label: str


@dataclass(frozen=True)
class TimelineRow:
    """One row of the timeline, e.g. ``mode`` with its segments in time order."""

    name: str
    segments: tuple[Segment, ...]

    @property
    def labels(self) -> set[str]:
        return {s.label for s in self.segments}


def _has(f: pd.DataFrame, col: str) -> bool:
    return col in f.columns and bool(f[col].notna().any())


def _label_array(values: np.ndarray, names: Sequence[str], keep: Optional[np.ndarray] = None) -> list[Optional[str]]:
    out: list[Optional[str]] = []
    for i, v in enumerate(values):
        if keep is not None and not keep[i]:
            out.append(None)
        elif v is None or (isinstance(v, float) and math.isnan(v)):
            out.append(None)
        else:
            k = int(round(float(v)))
            out.append(names[k] if 0 <= k < len(names) else f"state {k}")
    return out


def _gain_label(g: float) -> str:
    return f"gain {g:.3g}"


def segments(times: np.ndarray, labels: Sequence[Optional[str]], interval: float) -> tuple[Segment, ...]:
    """Merge consecutive equal labels into segments. Sample ``k`` covers
    ``(times[k-1], times[k]]``, the first one ``(times[0] - interval, times[0]]``;
    ``None`` leaves a gap."""
    out: list[Segment] = []
    cur: Optional[str] = None
    start = 0.0
    prev_t = float(times[0]) - interval if len(times) else 0.0
    if abs(prev_t) < 1e-9:  # the first sample is one interval after the start
        prev_t = 0.0
    for t, lab in zip(times, labels):
        t = float(t)
        if lab != cur:
            if cur is not None:
                out.append(Segment(start, prev_t, cur))
            cur, start = lab, prev_t
        prev_t = t
    if cur is not None:
        out.append(Segment(start, prev_t, cur))
    return tuple(Segment(max(s.start, 0.0), s.end, s.label) for s in out)


def moved_segments(moves: pd.DataFrame, end: float) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """The ``mode`` and ``phase`` segments of one flow from its moves (time order), the
    last state held until ``end``. A phase shows only while the mode is PROBE_BW; a state
    left at the instant it was entered has no segment."""
    modes: list[Segment] = []
    phases: list[Segment] = []

    def close(out: list[Segment], label: Optional[str], start: float, t: float) -> None:
        if label is None or t <= start:
            return
        if out and out[-1].label == label and abs(out[-1].end - start) < 1e-12:
            out[-1] = Segment(out[-1].start, t, label)  # a re-entry continues the segment
        else:
            out.append(Segment(start, t, label))

    mode: Optional[str] = None
    phase: Optional[str] = None
    mode_t = phase_t = 0.0
    for t, machine, state in zip(moves["time_s"].to_numpy(dtype=float), moves["machine"], moves["state"]):
        if machine == "mode":
            close(modes, mode, mode_t, t)
            if mode == "PROBE_BW":
                close(phases, phase, phase_t, t)
            mode, mode_t, phase_t = str(state), t, t
        elif machine == "phase":
            if mode == "PROBE_BW":
                close(phases, phase, phase_t, t)
            phase, phase_t = str(state), t
    close(modes, mode, mode_t, end)
    if mode == "PROBE_BW":
        close(phases, phase, phase_t, end)
    return tuple(modes), tuple(phases)


def state_timeline(
    flow: pd.DataFrame, cca: str, interval: float, moves: Optional[pd.DataFrame] = None
) -> list[TimelineRow]:
    """The rows the timeline panel draws for one flow (its rows of flows.parquet in
    time order, and its moves from states.parquet if any), top to bottom.

    - BBR with logged moves: ``mode`` and, for v2/v3, ``phase`` from the moves; for v1
      ``gain`` and ``lt_bw`` from the samples, as below.
    - BBR (any version, when ``cc_mode`` is present): ``mode``
      (STARTUP/DRAIN/PROBE_BW/PROBE_RTT); then for v2/v3 ``phase`` (UP/DOWN/CRUISE/REFILL,
      only while in PROBE_BW), for v1 ``gain`` (the pacing-gain cycle in PROBE_BW,
      labelled ``gain 1.25``, ``gain 0.75``, ``gain 1``); ``lt_bw`` when v1's long-term
      (policer) bandwidth was in use.
    - BBR without ``cc_mode`` (e.g. a kernel run): ``gain``, the pacing gain throughout.
    - Every flow: ``ca_state`` (Open/Disorder/CWR/Recovery/Loss).
    """
    times = flow["time_s"].to_numpy(dtype=float)
    rows: list[TimelineRow] = []
    if len(times) == 0:
        return rows
    is_bbr = cca.startswith("bbr")
    if is_bbr and _has(flow, "cc_mode"):
        mode = flow["cc_mode"].to_numpy(dtype=float)
        in_probe_bw = np.isclose(mode, PROBE_BW)
        if moves is not None and bool((moves["machine"] == "mode").any()):
            modes, phases = moved_segments(moves, float(times[-1]))
            rows.append(TimelineRow("mode", modes))
            if phases or _has(flow, "cc_phase"):
                rows.append(TimelineRow("phase", phases))
        else:
            rows.append(TimelineRow("mode", segments(times, _label_array(mode, BBR_MODES), interval)))
            if _has(flow, "cc_phase"):
                phase = flow["cc_phase"].to_numpy(dtype=float)
                labels = _label_array(phase, BBR2_PHASES, in_probe_bw)
                rows.append(TimelineRow("phase", segments(times, labels, interval)))
        if not _has(flow, "cc_phase") and _has(flow, "cc_pacing_gain"):
            gain = flow["cc_pacing_gain"].to_numpy(dtype=float)
            labels = [_gain_label(g) if ok and not math.isnan(g) else None for g, ok in zip(gain, in_probe_bw)]
            rows.append(TimelineRow("gain", segments(times, labels, interval)))
        if _has(flow, "cc_lt_use_bw") and bool((flow["cc_lt_use_bw"] > 0).any()):
            lt = flow["cc_lt_use_bw"].to_numpy(dtype=float)
            rows.append(TimelineRow("lt_bw", segments(times, ["on" if v > 0 else None for v in lt], interval)))
    elif is_bbr and _has(flow, "cc_pacing_gain"):
        gain = flow["cc_pacing_gain"].to_numpy(dtype=float)
        labels = [None if math.isnan(g) else _gain_label(g) for g in gain]
        rows.append(TimelineRow("gain", segments(times, labels, interval)))
    if _has(flow, "ca_state"):
        ca = flow["ca_state"].to_numpy(dtype=float)
        rows.append(TimelineRow("ca_state", segments(times, _label_array(ca, CA_STATES), interval)))
    return rows
