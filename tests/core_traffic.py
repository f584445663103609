"""Scenarios with UDP flows and arrivals, for the kernel engine's tests, until the
scenario schema has ``kind = "udp"`` flows and ``[[arrivals]]``.

The TOML-shaped document loads as any other (kernel-only algorithm names allowed); its
core JSON, which the kernel engine, the emulator and the summary read, carries the UDP
flows and groups of arrivals given as the simulator takes them (``udp[k]``,
``arrivals[k]``: ``rate_bps``, ``sizes``, ...).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from pydantic import PrivateAttr

from ccbench.kernel.scenario import from_dict
from ccbench.scenario import Scenario


class WithTraffic(Scenario):
    """A scenario whose core JSON has UDP flows and groups of arrivals."""

    _udp: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _arrivals: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def to_core(self) -> dict[str, Any]:
        core = super().to_core()
        if self._udp:
            core["udp"] = self._udp
        if self._arrivals:
            core["arrivals"] = self._arrivals
        return core


def with_traffic(
    doc: Mapping[str, Any],
    udp: Optional[Sequence[dict[str, Any]]] = None,
    arrivals: Optional[Sequence[dict[str, Any]]] = None,
) -> Scenario:
    """``doc`` with ``udp`` and ``arrivals`` (core JSON) in its core JSON."""
    sc = from_dict(doc)
    out = WithTraffic.model_construct(_fields_set=sc.model_fields_set, **dict(sc))
    out._udp = [dict(u) for u in udp or []]
    out._arrivals = [dict(a) for a in arrivals or []]
    return out
