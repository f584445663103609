"""A kernel run's UDP flows and connections of arrivals as the simulator's summary takes
them (``Measured.udp``, ``Measured.connections``).

UDP: sent by the source (what it sent before the run's end), delivered by the sink
(what arrived before it, with the one-way delay from the send time in each payload to
the kernel's receive time stamp); dropped: at the emulator's bottleneck, before the
emulator read it (the sender's socket or device queue) and at the sink's socket (full),
which a real path counts as lost all the same.

Arrivals: each connection of the simulator's schedule that arrived before the run's
end, its FCT from its instant to the moment the receiver had every byte, its
retransmissions from the sender's ``TCP_INFO``; the ideal FCT (the same
transfer alone on the empty path) is the simulator's (``_core.alone_fcts``), which a
real path cannot measure; None for an algorithm the simulator lacks.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from .. import _core
from .traffic import Traffic

# A note when the agents were later than this at the 99th percentile (µs).
LATE_NOTE_US = 1000.0


def udp_measured(
    traffic: Traffic, sender: dict[str, Any], receiver: dict[str, Any], emulator: dict[str, Any]
) -> list[dict[str, Any]]:
    """Each UDP flow as ``Measured.udp`` takes it."""
    out = []
    for u, sent, got, emu in zip(traffic.udp, sender["udp"], receiver["udp"], emulator["udp"]):
        before_path = max(0, sent["sent_packets"] - emu["datagrams_in"])
        out.append(
            {
                "sent_packets": sent["sent_packets"],
                "sent_bytes": sent["sent_bytes"],
                "delivered_packets": got["delivered_packets"],
                "delivered_bytes": got["delivered_bytes"],
                "dropped": emu["dropped"] + before_path + got["overflow"],
                "one_way_delay_ms": got["one_way_delay_ms"],
            }
        )
    return out


def udp_extras(sender: dict[str, Any], receiver: dict[str, Any], emulator: dict[str, Any]) -> list[dict[str, Any]]:
    """Kernel-only figures of each UDP flow: where its datagrams were lost."""
    return [
        {
            "dropped_bottleneck": emu["dropped"],
            "dropped_hosts": max(0, sent["sent_packets"] - emu["datagrams_in"]) + got["overflow"],
        }
        for sent, got, emu in zip(sender["udp"], receiver["udp"], emulator["udp"])
    ]


def connections_measured(
    core: dict[str, Any], traffic: Traffic, sender: dict[str, Any], receiver: dict[str, Any], end_ns: int
) -> list[dict[str, Any]]:
    """Every connection that arrived before ``end_ns``, in order of arrival."""
    conns = []
    for a, sent, got in zip(traffic.arrivals, sender["arrivals"], receiver["arrivals"]):
        for k, (at, size) in enumerate(a.schedule):
            if at >= end_ns:
                break
            done = got["done_ns"][k]
            conns.append(
                {
                    "group": a.index,
                    "arrival_ns": at,
                    "size_bytes": size,
                    "fct_ns": None if done is None else max(0, done - at),
                    "ideal_fct_ns": None,
                    "retransmits": sent["retransmits"][k] or 0,
                }
            )
    conns.sort(key=lambda c: (c["arrival_ns"], c["group"]))
    _add_ideal(core, conns)
    return conns


def _add_ideal(core: dict[str, Any], conns: list[dict[str, Any]]) -> None:
    """The ideal FCT of each finished connection: the simulator's run of its transfer alone,
    group by group (on a scenario of that group alone, so that algorithms only the
    kernel has elsewhere in the scenario do not stop the simulator)."""
    simulated = set(_core.algorithms())
    for g, group in enumerate(core.get("arrivals") or []):
        mine = [c for c in conns if c["group"] == g and c["fct_ns"] is not None]
        if not mine or group["cca"] not in simulated:
            continue
        alone = json.dumps(dict(core, flows=[], udp=[], arrivals=[group]))
        ideal = _core.alone_fcts(alone, [(0, c["size_bytes"]) for c in mine])
        for c, t in zip(mine, ideal):
            c["ideal_fct_ns"] = t


def connections_table(conns: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The connections of arrivals as the simulator's connections table (NaN unfinished)."""
    ms = [lambda c, k=k: float("nan") if c[k] is None else c[k] / 1e6 for k in ("fct_ns", "ideal_fct_ns")]
    return {
        "group": [c["group"] for c in conns],
        "arrival_s": [c["arrival_ns"] / 1e9 for c in conns],
        "size_bytes": [float(c["size_bytes"]) for c in conns],
        "fct_ms": [ms[0](c) for c in conns],
        "ideal_fct_ms": [ms[1](c) for c in conns],
        "retransmits": [float(c["retransmits"]) for c in conns],
    }


def traffic_notes(traffic: Traffic, sender: dict[str, Any], receiver: dict[str, Any]) -> list[str]:
    """What the run's notes say of its UDP flows and arrivals: connections not opened,
    and agents that fell behind their instants."""
    notes = []
    for a, sent, got in zip(traffic.arrivals, sender.get("arrivals") or [], receiver.get("arrivals") or []):
        skipped = sent["skipped"] + got["skipped"]
        if skipped:
            notes.append(
                f"{a.field}: {skipped} connections not opened (an agent held its limit of connections open "
                "at once); they count as unfinished"
            )
    for who, late in (("sending", sender.get("late_us") or {}), ("receiving", receiver.get("late_us") or {})):
        for what, stats in late.items():
            p99 = _p99(stats)
            if p99 is not None and p99 > LATE_NOTE_US:
                noun = "datagrams" if what == "udp" else "connections of arrivals"
                notes.append(
                    f"the {who} agent sent or opened its {noun} up to {stats['max'] / 1e3:.1f} ms after their "
                    f"instants (99th percentile {p99 / 1e3:.1f} ms)"
                )
    return notes


def _p99(stats: dict[str, Any]) -> Optional[float]:
    return None if not stats or not stats.get("max") else float(stats["p99"])
