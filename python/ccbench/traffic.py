"""A run's UDP flows and arrivals as its summary tells them (``udp[]``, ``arrivals[]``;
docs/traffic.md). Every view of a run (the text and HTML reports, plots, the store's
listing and export, the analysis) reads them from here, and shows them only for a run
that has them: other runs look as they did.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

# The summary's size buckets, in order (crates/ccbench-sim/src/summary/arrivals.rs).
BUCKETS = ("<100KB", "100KB-1MB", "1MB-10MB", ">10MB")
BUCKET_BOUNDS = (100_000, 1_000_000, 10_000_000, math.inf)
# A group's figures, per bucket and over all its connections.
GROUP_FIGURES = ("fct_p50_ms", "fct_p99_ms", "slowdown_p50", "slowdown_p99")


def udp_flows(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The run's UDP flows (``udp[]``), none for a run without."""
    flows = summary.get("udp")
    return [f for f in flows if isinstance(f, Mapping)] if isinstance(flows, list) else []


def groups(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The run's groups of arrivals (``arrivals[]``), none for a run without."""
    found = summary.get("arrivals")
    return [g for g in found if isinstance(g, Mapping)] if isinstance(found, list) else []


def has_traffic(summary: Mapping[str, Any]) -> bool:
    return bool(udp_flows(summary) or groups(summary))


def group_label(group: Mapping[str, Any]) -> str:
    """``arrivals 0 (cubic)``."""
    return f"arrivals {group.get('id', '?')} ({group.get('cca', '?')})"


def bucket_of(size_bytes: float) -> str:
    """The size bucket a transfer falls in (upper bounds inclusive, as the summary's)."""
    for name, bound in zip(BUCKETS, BUCKET_BOUNDS):
        if size_bytes <= bound:
            return name
    return BUCKETS[-1]


def figure(group: Mapping[str, Any], name: str, bucket: str = "all") -> float:
    """One of a group's figures (``GROUP_FIGURES``) over all its connections or in one
    bucket; NaN where it has none (no connection finished there)."""
    table: Optional[Mapping[str, Any]] = group.get("all") if bucket == "all" else None
    if bucket != "all":
        table = next((b for b in group.get("buckets") or [] if b.get("bucket") == bucket), None)
    value = table.get(name) if isinstance(table, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def worst(summary: Mapping[str, Any], name: str) -> float:
    """A figure of the run's arrivals as one number: the highest (worst) over its
    groups; NaN without arrivals."""
    values = [v for v in (figure(g, name) for g in groups(summary)) if not math.isnan(v)]
    return max(values) if values else math.nan


def headline(summary: Mapping[str, Any]) -> str:
    """The run's UDP flows and arrivals in a few words, as a figure's title gives them
    (``UDP 5 Mbit/s; arrivals cubic 24.9 %, bbr 27.5 %``); "" without."""
    parts = []
    rates = [u.get("offered_bps") for u in udp_flows(summary)]
    if rates:
        parts.append("UDP " + ", ".join(f"{r / 1e6:.3g} Mbit/s" if isinstance(r, (int, float)) else "?" for r in rates))
    loads = [(g.get("cca", "?"), g.get("offered_load")) for g in groups(summary)]
    if loads:
        parts.append(
            "arrivals "
            + ", ".join(f"{cca} {100 * x:.1f} %" if isinstance(x, (int, float)) else str(cca) for cca, x in loads)
        )
    return "; ".join(parts)


def with_flows(head: str, flow_count: int, summary: Mapping[str, Any]) -> str:
    """A title's ``link: 2 flows (bbr, cubic)`` with the run's UDP flows and arrivals
    after it, or in its place when the run has no TCP flow."""
    note = headline(summary)
    if not note:
        return head
    return f"link: {note}" if flow_count == 0 else f"{head}; {note}"
