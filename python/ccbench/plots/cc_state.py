"""Each algorithm's own state, as the flow figure's panel draws it: the series that
``internals()`` publishes (``cc_<key>`` columns) which say what the algorithm decides by,
in one unit per panel, with the thresholds it compares them against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

Threshold = Callable[[dict[str, Any]], Optional[float]]


@dataclass(frozen=True)
class StatePanel:
    title: str
    unit: str
    # (column, label) drawn as lines.
    series: tuple[tuple[str, str], ...]
    # (label, value from the flow's params) drawn as reference lines.
    thresholds: tuple[tuple[str, Threshold], ...] = ()


def _param(name: str, default: float) -> Threshold:
    return lambda params: float(params.get(name, default))


def _const(value: float) -> Threshold:
    return lambda params: value


PANELS: dict[str, StatePanel] = {
    "cdg": StatePanel(
        "CDG: the delay gradient summed over its window (a positive one may back off)",
        "µs",
        (("cc_grad_us", "gradient sum"),),
        (("0: no backoff at or below", lambda params: 0.0),),
    ),
    "dctcp": StatePanel(
        "DCTCP: α, the moving average of the marked fraction", "α", (("cc_dctcp_alpha", "α (1 = every segment)"),)
    ),
    "vegas": StatePanel(
        "Vegas: segments queued, diff = cwnd·(RTT − baseRTT)/baseRTT",
        "segments",
        (("cc_diff", "diff"),),
        (("α: grow below", _param("alpha", 2)), ("β: shrink above", _param("beta", 4))),
    ),
    "veno": StatePanel(
        "Veno: backlog N = cwnd·(RTT − baseRTT)/RTT",
        "segments",
        (("cc_backlog", "N"),),
        (("β = 3: a loss cuts to 4/5 below, 1/2 at or above", _const(3)),),
    ),
    "yeah": StatePanel(
        "YeAH: estimated queue",
        "segments",
        (("cc_queue", "queue"),),
        (("Q_max = 80: decongest above", _const(80)),),
    ),
    "illinois": StatePanel(
        "Illinois: additive increase α (per RTT) from the queueing delay", "α", (("cc_alpha", "α"),)
    ),
    "htcp": StatePanel(
        "H-TCP: additive increase α (per RTT), from the time since the last loss", "α", (("cc_alpha", "α"),)
    ),
    "hybla": StatePanel("Hybla: ρ = RTT / rtt0", "ρ", (("cc_rho", "ρ"),)),
    "highspeed": StatePanel("HighSpeed: the AIMD table's row a(w)", "segments per RTT", (("cc_ai", "a(w)"),)),
    "westwood": StatePanel(
        "Westwood+: bandwidth estimate × min RTT, the window a reduction ends at",
        "segments",
        (("cc_bw_rtt_min_segs", "estimate × min RTT"),),
    ),
    "nv": StatePanel(
        "NV: the window its delivery rate allows (max_win = cwnd_by_slope + nv_pad)",
        "segments",
        (("cc_max_win", "max_win"), ("cc_cwnd_by_slope", "cwnd_by_slope")),
    ),
    "lp": StatePanel(
        "LP: smoothed one-way delay and the early-congestion threshold",
        "ms",
        (("cc_sowd_ms", "smoothed one-way delay"), ("cc_threshold_ms", "threshold")),
    ),
}


def panel_for(cca: str, frame: Any) -> Optional[StatePanel]:
    """The algorithm's panel, if it has one and the run recorded its series (``frame``:
    the flow's rows)."""
    if cca.startswith("bpf:"):
        return _bpf_panel(cca, frame)
    p = PANELS.get(cca)
    return p if p is not None and any(col in frame.columns for col, _ in p.series) else None


# How many of a BPF object's values one panel draws.
BPF_SERIES = 2


def _bpf_panel(cca: str, frame: Any) -> Optional[StatePanel]:
    """A BPF object's own state: the first values of its private area that move over the
    run, by its struct's field names where its BTF gives them (``cc_ca_<field>``), else
    as the area's 32-bit words (``cc_ca_priv_u32_NN``)."""
    words = [c for c in frame.columns if c.startswith("cc_ca_priv_u32_")]
    named = [c for c in frame.columns if c.startswith("cc_ca_") and c not in words]
    moving = [c for c in (named or words) if frame[c].nunique(dropna=True) > 1][:BPF_SERIES]
    if not moving:
        return None
    name = cca.rsplit("/", 1)[-1]
    return StatePanel(
        f"{name}: its private state (icsk_ca_priv)", "value", tuple((c, c[len("cc_ca_") :]) for c in moving)
    )
