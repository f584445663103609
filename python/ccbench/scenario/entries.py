"""The ``[[flows]]`` array holds TCP flows and, with ``kind = "udp"``, UDP flows. The
scenario keeps them apart (``Scenario.flows``, ``Scenario.udp``: the simulator takes
them as ``flows`` and ``udp``) and remembers where each UDP entry stood, so that every
message names an entry as the user numbered it (``flows[3]``, whatever its kind) and the
TOML form writes the array back in its order.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..errors import ScenarioError

TCP = "tcp"
UDP = "udp"
KINDS = (TCP, UDP)
# The scenario's own list of UDP flows: not a key a scenario file may use.
UDP_LIST = "udp"


def split_flows(data: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[int, ...]]:
    """The TOML form with its ``[[flows]]`` entries split by kind (TCP ones stay in
    ``flows``, without ``kind``; UDP ones go to ``udp``), and the UDP entries' places."""
    if UDP_LIST in data:
        raise ScenarioError(UDP_LIST, 'unknown key; UDP flows are [[flows]] entries with kind = "udp"')
    doc = dict(data)
    entries = doc.get("flows")
    if not isinstance(entries, list):
        return doc, ()
    tcp, udp, places = [], [], []
    for i, entry in enumerate(entries):
        kind = entry.get("kind", TCP) if isinstance(entry, Mapping) else TCP
        if kind not in KINDS:
            raise ScenarioError(f"flows[{i}].kind", f'must be "tcp" (the default) or "udp", got {kind!r}')
        if kind == UDP:
            udp.append(entry)
            places.append(i)
        else:
            tcp.append({k: v for k, v in entry.items() if k != "kind"} if isinstance(entry, Mapping) else entry)
    doc["flows"] = tcp
    if udp:
        doc[UDP_LIST] = udp
    return doc, tuple(places)


def udp_places(udp_at: Sequence[int], tcp_count: int, udp_count: int) -> tuple[int, ...]:
    """Where each UDP entry stands in ``[[flows]]``: as remembered, or (for a scenario put
    together in code) after the TCP entries."""
    if len(udp_at) == udp_count and all(i < tcp_count + udp_count for i in udp_at):
        return tuple(udp_at)
    return tuple(range(tcp_count, tcp_count + udp_count))


def tcp_places(udp_at: Sequence[int], total: int) -> list[int]:
    taken = set(udp_at)
    return [i for i in range(total) if i not in taken]


def merged(tcp: list[Any], udp: list[Any], udp_at: Sequence[int]) -> list[Any]:
    """The ``[[flows]]`` array: ``tcp`` and ``udp`` entries back in their places."""
    total = len(tcp) + len(udp)
    out: list[Any] = [None] * total
    for i, entry in zip(udp_at, udp):
        out[i] = entry
    for i, entry in zip(tcp_places(udp_at, total), tcp):
        out[i] = entry
    return out


_ENTRY = re.compile(r"^(flows|udp)\[(\d+)\]")


def user_field(field: str, udp_at: Sequence[int], total: int) -> str:
    """``flows[k]`` (the k-th TCP entry) or ``udp[k]`` (the k-th UDP entry) as the user's
    ``flows[i]``; ``udp`` alone as the first UDP entry; other fields as they are."""
    if field == UDP_LIST and udp_at:
        return f"flows[{udp_at[0]}]"
    m = _ENTRY.match(field)
    if m is None:
        return field
    kind, k = m.group(1), int(m.group(2))
    places = list(udp_at) if kind == UDP_LIST else tcp_places(udp_at, total)
    if k >= len(places):
        return field
    return f"flows[{places[k]}]" + field[m.end() :]


def expanded_entry(field: str, counts: Sequence[int], prefix: str) -> str:
    """``prefix[k]`` counting expanded flows (``count`` each) as ``prefix[j]`` counting
    entries."""
    m = re.match(rf"^{re.escape(prefix)}\[(\d+)\]", field)
    if m is None:
        return field
    k = int(m.group(1))
    for j, count in enumerate(counts):
        if k < count:
            return f"{prefix}[{j}]" + field[m.end() :]
        k -= count
    return field


def wrong_kind(loc: Sequence[Any], tcp_keys: Sequence[str], udp_keys: Sequence[str]) -> str:
    """For an unknown key of a flow entry that is a key of the other kind, what to say;
    "" otherwise."""
    if len(loc) != 3 or not isinstance(loc[2], str):
        return ""
    key = loc[2]
    if loc[0] == UDP_LIST and key in tcp_keys:
        return f'is a TCP flow\'s key, not for a UDP flow (kind = "udp"); a UDP flow takes: {", ".join(udp_keys)}'
    if loc[0] == "flows" and key in udp_keys:
        return f'is a UDP flow\'s key: give the entry kind = "udp" (a TCP flow takes: {", ".join(tcp_keys)})'
    return ""
