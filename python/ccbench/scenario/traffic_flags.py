"""The flags of UDP flows and arrivals (docs/traffic.md): ``--udp`` makes constant-rate
UDP flows and ``--arrivals`` groups of arrivals, and the others set a key of every one
(refused when there is none)."""

from __future__ import annotations

from typing import Any, Mapping, Union

from ..errors import ScenarioError
from .flag_table import EVERY_FLOW, EVERY_GROUP, EVERY_UDP, Apply, Doc, Flag, each_direction, tables


def _each(field: str, option: str, wanted: str) -> Apply:
    """``field`` set in every entry at its path (UDP flows, groups of arrivals); refused
    when there is none, saying how to make one (``wanted``)."""
    where, _, key = field.rpartition(".")

    def apply(doc: Doc, value: Any, given: Mapping[str, Any]) -> None:
        entries = tables(doc, where)
        if not entries:
            raise ScenarioError(option, f"needs {wanted}")
        for entry in entries:
            entry[key] = value

    return apply


UDP_WANTED = 'UDP flows: --udp RATE, or [[flows]] entries with kind = "udp"'
GROUPS_WANTED = "arrivals: --arrivals CCA, or [[arrivals]] entries"


def _udp(doc: Doc, value: Union[str, list[str]], given: Mapping[str, Any]) -> None:
    # One constant-rate UDP flow per rate, in place of the base's UDP flows.
    rates = [r.strip() for r in value.split(",")] if isinstance(value, str) else list(value)
    doc["flows"] = tables(doc, EVERY_FLOW) + [{"kind": "udp", "rate": rate} for rate in rates if rate]


def _udp_direction(doc: Doc, value: Union[str, list[str]], given: Mapping[str, Any]) -> None:
    each_direction(doc, value, EVERY_UDP, "--udp-direction", "UDP flow", UDP_WANTED)


# The flags that say how a group's connections arrive, and the key each sets.
PROCESS_FLAGS = {"arrival_load": "load", "arrival_rate": "rate", "arrival_times": "times"}


def _arrivals(doc: Doc, value: Union[str, list[str]], given: Mapping[str, Any]) -> None:
    # One group per algorithm, in place of the base's groups; web-search sizes unless
    # --arrival-sizes says otherwise.
    names = [c.strip() for c in value.split(",")] if isinstance(value, str) else list(value)
    if not any(given.get(flag) is not None for flag in PROCESS_FLAGS):
        raise ScenarioError("--arrivals", "give --arrival-load, --arrival-rate or --arrival-times too")
    doc["arrivals"] = [{"cca": name, "sizes": "web-search"} for name in names if name]


def _process(key: str, option: str) -> Apply:
    """How a group's connections arrive (load, rate or times): one way, so it replaces
    the others the base's groups had."""
    others = [k for k in PROCESS_FLAGS.values() if k != key]

    def apply(doc: Doc, value: Any, given: Mapping[str, Any]) -> None:
        also = [f"--{f.replace('_', '-')}" for f, k in PROCESS_FLAGS.items() if k != key and given.get(f) is not None]
        if also:
            raise ScenarioError(
                option, f"give one of --arrival-load, --arrival-rate, --arrival-times, not {also[0]} too"
            )
        groups = tables(doc, EVERY_GROUP)
        if not groups:
            raise ScenarioError(option, f"needs {GROUPS_WANTED}")
        for group in groups:
            for other in others:
                group.pop(other, None)
            group[key] = value

    return apply


# In the order of `ccbench run --help`, after the flows' flags.
TRAFFIC_FLAGS: tuple[Flag, ...] = (
    Flag(
        "--udp",
        "udp[].rate",
        apply=_udp,
        help="Constant-rate UDP flows beside the TCP ones, one per rate (of IP packets), in place of the "
        "scenario's UDP flows: --udp 5Mbit (docs/traffic.md).",
        metavar="RATE[,RATE...]",
    ),
    Flag(
        "--udp-direction",
        apply=_udp_direction,
        help="Which way each UDP flow sends: down or up; one for every UDP flow, or one per UDP flow entry.",
        metavar="DIR[,DIR...]",
    ),
    Flag("--udp-size", "udp[].size", apply=_each("udp[].size", "--udp-size", UDP_WANTED), help="UDP flows' {}."),
    Flag(
        "--udp-on",
        "udp[].on",
        apply=_each("udp[].on", "--udp-on", UDP_WANTED),
        help="UDP flows send for this long, then pause for --udp-off, e.g. 2s; without them they send throughout.",
    ),
    Flag(
        "--udp-off", "udp[].off", apply=_each("udp[].off", "--udp-off", UDP_WANTED), help="UDP flows' pause, e.g. 1s."
    ),
    Flag(
        "--udp-on-off",
        "udp[].on_off",
        apply=_each("udp[].on_off", "--udp-on-off", UDP_WANTED),
        help="UDP flows' {}.",
    ),
    Flag(
        "--arrivals",
        "arrivals[].cca",
        apply=_arrivals,
        help="Connections arriving open-loop, one group per algorithm, judged by flow completion time, in place "
        "of the scenario's groups; with --arrival-load, --arrival-rate or --arrival-times, and web-search "
        "sizes unless --arrival-sizes (docs/traffic.md). Without a scenario file or --cca, no bulk flow runs "
        "beside them.",
        metavar="CCA[,CCA...]",
    ),
    Flag(
        "--arrival-load",
        "arrivals[].load",
        apply=_process("load", "--arrival-load"),
        help="Poisson arrivals whose transfers offer this share of the link's rate, e.g. 50% or 0.5.",
        metavar="LOAD",
    ),
    Flag(
        "--arrival-rate",
        "arrivals[].rate",
        apply=_process("rate", "--arrival-rate"),
        help="Poisson arrivals at this many connections a second.",
        metavar="PER_S",
    ),
    Flag(
        "--arrival-times",
        "arrivals[].times",
        apply=_process("times", "--arrival-times"),
        help="Arrivals at the instants in FILE, one time in seconds per line.",
        metavar="FILE",
    ),
    Flag(
        "--arrival-sizes",
        "arrivals[].sizes",
        apply=_each("arrivals[].sizes", "--arrival-sizes", GROUPS_WANTED),
        help="Transfer sizes: web-search or data-mining (built-in CDFs), a size such as 10KB, or a CDF file "
        "(lines of 'bytes probability').",
        metavar="NAME|SIZE|FILE",
    ),
    Flag(
        "--arrival-direction",
        "arrivals[].direction",
        apply=_each("arrivals[].direction", "--arrival-direction", GROUPS_WANTED),
        help="Which way the arrivals' transfers go: {}.",
    ),
)
