"""A run's two directions as its summary tells them: which way each flow went, and the
bottleneck of each way (``link``, down; ``link.reverse``, up). Every view of a run that
shows the link's figures (the text and HTML reports, plots, the store's export) shows
them per direction from here, and only for a run that has an uplink of its own or flows
going up: other runs look as they did.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

DOWN = "down"
UP = "up"


def direction(flow: Mapping[str, Any]) -> str:
    """Which way a flow's data went (a summary without directions: down)."""
    return str(flow.get("direction") or DOWN)


def is_two_way(summary: Mapping[str, Any]) -> bool:
    """Whether the run has an uplink of its own (``[link.reverse]``) or flows going up."""
    link = summary.get("link")
    return (isinstance(link, Mapping) and isinstance(link.get("reverse"), Mapping)) or any(
        direction(f) == UP for f in summary.get("flows") or []
    )


def uplink(summary: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """The reverse bottleneck's summary (``link.reverse``), if the run has one."""
    link = summary.get("link")
    reverse = link.get("reverse") if isinstance(link, Mapping) else None
    return reverse if isinstance(reverse, Mapping) else None


def links(summary: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(direction, its bottleneck's summary): down's, then up's when there is one."""
    link = summary.get("link")
    out: list[tuple[str, Mapping[str, Any]]] = [(DOWN, link if isinstance(link, Mapping) else {})]
    up = uplink(summary)
    if up is not None:
        out.append((UP, up))
    return out


def link_of(summary: Mapping[str, Any], flow: Mapping[str, Any]) -> Mapping[str, Any]:
    """The bottleneck a flow's data crossed: the uplink for an up flow."""
    up = uplink(summary)
    if direction(flow) == UP and up is not None:
        return up
    link = summary.get("link")
    return link if isinstance(link, Mapping) else {}


def jain_index(values: Sequence[float]) -> Optional[float]:
    """Jain's fairness index, (sum x)^2 / (n sum x^2), as the simulator's summary
    computes it (1 when every value is 0); None for no values."""
    if not values:
        return None
    total, squares = sum(values), sum(x * x for x in values)
    return 1.0 if squares == 0 else total * total / (len(values) * squares)


def jain_of(summary: Mapping[str, Any], way: str) -> Optional[float]:
    """Jain's index over the goodputs of the flows going ``way``."""
    goodputs = [
        float(f["goodput_bps"])
        for f in summary.get("flows") or []
        if direction(f) == way and isinstance(f.get("goodput_bps"), (int, float))
    ]
    return jain_index(goodputs)
