"""Tidy tables from run records, and means with confidence intervals.

>>> from ccbench.store import open_store                          # doctest: +SKIP
>>> from ccbench.analysis import runs_frame, aggregate            # doctest: +SKIP
>>> runs = runs_frame(open_store().records("cao2019-grid"))        # doctest: +SKIP
>>> aggregate(runs, ["buffer_bdp", "cca"], ["goodput_mbps"])       # doctest: +SKIP
"""

from __future__ import annotations

from .frames import (
    ARRIVAL_METRICS,
    CONDITIONS,
    FLOW_METRICS,
    LABELS,
    RUN_METRICS,
    UPLINK_METRICS,
    arrivals_frame,
    cca_mix,
    cpu_share,
    flows_frame,
    runs_frame,
)
from .records import RecordLike, record_from_result
from .stats import CONFIDENCE, aggregate, mean_ci
from .compare import algorithm_table, dimensions, goodput_ratio

__all__ = [
    "ARRIVAL_METRICS",
    "CONDITIONS",
    "CONFIDENCE",
    "FLOW_METRICS",
    "LABELS",
    "RUN_METRICS",
    "UPLINK_METRICS",
    "RecordLike",
    "aggregate",
    "algorithm_table",
    "arrivals_frame",
    "cca_mix",
    "cpu_share",
    "dimensions",
    "flows_frame",
    "goodput_ratio",
    "mean_ci",
    "record_from_result",
    "runs_frame",
]
