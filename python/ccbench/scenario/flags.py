"""The flags that build a scenario (``ccbench run --rate 20Mbit --cca bbr``), each declared
once, in :data:`FLAGS`, by the scenario field it sets.

A flag that is one field's value is nothing but that field's name: its help (the
field's description, example and default), its check (the field's own validation) and
its keyword in :meth:`Scenario.from_flags` all follow from it. The few flags that are
not one field's value (``--cca`` builds the flows, ``--trace`` replaces the rate, ...)
say how they apply, and give their help where no field describes them.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from pydantic.fields import FieldInfo

from ..errors import ScenarioError
from .flag_table import EVERY_FLOW, EVERY_UDP, Apply, Doc, Flag, each_direction, set_field, tables
from .flow import BBR_FAMILY
from .traffic_flags import TRAFFIC_FLAGS

if TYPE_CHECKING:
    from . import Scenario

# Without a base scenario: one Cubic flow over 100 Mbit/s, 40 ms, 1 BDP, for 10 s.
FLAG_DEFAULTS: Doc = {
    "duration": "10s",
    "link": {"rate": "100Mbit", "rtt": "40ms", "buffer": "1bdp"},
    "flows": [{"cca": "cubic"}],
}

# The flags that are not one field's value.


def _cca(doc: Doc, value: Union[str, list[str]], given: Mapping[str, Any]) -> None:
    # One flow of each algorithm ("none": no TCP flow), in place of the base's TCP flows.
    names = [c.strip() for c in value.split(",")] if isinstance(value, str) else list(value)
    if [n.lower() for n in names] == ["none"]:
        names = []
    doc["flows"] = [{"cca": name} for name in names if name] + tables(doc, EVERY_UDP)


def _capacity(where: str, key: str, other: str, other_flag: str) -> Apply:
    """``key`` (rate or trace) of the bottleneck at ``where``: one source of capacity, so
    it replaces the base's ``other`` unless ``other_flag`` gives that too (an error)."""

    def apply(doc: Doc, value: Any, given: Mapping[str, Any]) -> None:
        for link in tables(doc, where):
            if given.get(other_flag) is None:
                link.pop(other, None)
            link[key] = value

    return apply


def _aqm_at(where: str, buffer_flag: str) -> Apply:
    """The AQM of the bottleneck at ``where``; ``buffer_flag`` gives its drop-tail limit."""

    def apply(doc: Doc, value: str, given: Mapping[str, Any]) -> None:
        from .link import Link

        droptail = Link.model_fields["aqm"].default
        for link in tables(doc, where):
            if value != link.get("aqm", droptail):  # the base's parameters are another AQM's
                link.pop("aqm_params", None)
            if value != droptail and given.get(buffer_flag) is None:  # the AQM's limit holds instead
                link.pop("buffer", None)
            link["aqm"] = value

    return apply


def _direction(doc: Doc, value: Union[str, list[str]], given: Mapping[str, Any]) -> None:
    each_direction(doc, value, EVERY_FLOW, "--direction", "flow")


def _rwnd(doc: Doc, value: Any, given: Mapping[str, Any]) -> None:
    if value == "auto":  # autotuning up to the limit each flow has
        set_field(doc, "flows[].rwnd_autotune", True)
    else:
        set_field(doc, "flows[].rwnd", value)


def _inflight_deficit(doc: Doc, value: bool, given: Mapping[str, Any]) -> None:
    if not value:
        return
    bbr = [e for e in tables(doc, EVERY_FLOW) if str(e.get("cca", "")).lower() in BBR_FAMILY]
    if not bbr:
        raise ScenarioError("bbr_inflight_deficit", f"needs a BBR flow ({', '.join(BBR_FAMILY)})")
    for entry in bbr:
        params = entry.setdefault("params", {})
        if isinstance(params, dict):
            params["inflight_deficit"] = 1


def _pcap(doc: Doc, value: Any, given: Mapping[str, Any]) -> None:
    items = [p.strip().lower() for p in (value.split(",") if isinstance(value, str) else value)]
    set_field(doc, "capture.points", [p for p in items if p])


def _pcap_flows(doc: Doc, value: Any, given: Mapping[str, Any]) -> None:
    if isinstance(value, str):
        try:
            value = [int(x) for x in value.split(",") if x.strip()]
        except ValueError:
            raise ScenarioError("capture.flows", f"expected flow indices such as '0,2', got {value!r}") from None
    set_field(doc, "capture.flows", list(value))


def _set_values(doc: Doc, value: Any, given: Mapping[str, Any]) -> None:
    if value:
        from ..overrides import apply

        apply(doc, value)


# In the order of `ccbench run --help`, which is also the order they apply in: --cca
# makes the flows the per-flow flags then change, and --set comes last.
FLAGS: tuple[Flag, ...] = (
    Flag("--cca", "flows[].cca", apply=_cca, help="Algorithm(s), one flow of each: {}.", metavar="NAME[,NAME...]"),
    Flag("--flows", "flows[].count", help="Each flow entry (one per --cca algorithm) {}."),
    Flag(
        "--direction",
        apply=_direction,
        help="Which way each flow's data goes: down (through the bottleneck) or up (through the reverse "
        "one, --reverse-rate); one for every flow, or one per flow entry: --cca cubic,cubic --direction down,up.",
        metavar="DIR[,DIR...]",
    ),
    Flag("--rate", "link.rate", apply=_capacity("link", "rate", "trace", "trace")),
    Flag("--rtt", "link.rtt"),
    Flag("--buffer", "link.buffer"),
    Flag("--loss", "link.loss"),
    Flag("--duration", "duration"),
    Flag("--seed", "seed"),
    Flag("--interval", "interval"),
    Flag("--size", "flows[].size"),
    Flag("--pacing", "flows[].pacing", help="Pacing on or off; {}."),
    Flag("--repeat", "flows[].repeat"),
    Flag("--pause", "flows[].pause"),
    Flag(
        "--rwnd",
        "flows[].rwnd",
        apply=_rwnd,
        help="{}; auto: autotune the receive buffer up to the limit, as Linux does.",
        metavar="SIZE|auto",
    ),
    *TRAFFIC_FLAGS,
    Flag("--cpu", "host.cpu", help="Sender host CPU {}; without --cpu flags, none is modelled.", metavar="PRESET"),
    Flag("--cpu-share", "host.cpu_share"),
    Flag("--cpu-slice", "host.cpu_slice"),
    Flag(
        "--cpu-trace",
        "host.cpu_trace",
        help="CPU on/off intervals from a file, one '<on> <off>' pair per line (not with --cpu-share).",
        metavar="FILE",
    ),
    Flag("--pacing-stride", "flows[].pacing_stride", help="Burst and idle N times longer when pacing: {}."),
    Flag("--fixed-cwnd", "flows[].fixed_cwnd", metavar="SEGS"),
    Flag("--fixed-pacing-rate", "flows[].fixed_pacing_rate"),
    Flag("--freeze-cc", "flows[].freeze_cc"),
    Flag(
        "--bbr-inflight-deficit",
        apply=_inflight_deficit,
        help="2BRobust: BBR flows pace at high gain while less than a BDP is in flight.",
        switch=True,
    ),
    Flag("--tso-rtt-log", "tcp.tso_rtt_log"),
    Flag(
        "--trace",
        "link.trace",
        apply=_capacity("link", "trace", "rate", "rate"),
        help="Bottleneck capacity from a Mahimahi delivery-opportunity trace (replaces --rate).",
    ),
    Flag("--ack-trace", "link.ack_trace", help="Delivery-opportunity trace for the ACK direction."),
    Flag("--aqm", "link.aqm", apply=_aqm_at("link", "buffer"), help="Queueing discipline at the bottleneck: {}."),
    Flag(
        "--reverse-rate",
        "link.reverse.rate",
        apply=_capacity("link.reverse", "rate", "trace", "reverse_trace"),
        help="Rate of the reverse bottleneck, the uplink where up flows' data and down flows' ACKs queue "
        "([link.reverse]), e.g. 5Mbit.",
    ),
    Flag(
        "--reverse-trace",
        "link.reverse.trace",
        apply=_capacity("link.reverse", "trace", "rate", "reverse_rate"),
        help="The uplink's capacity from a delivery-opportunity trace (replaces --reverse-rate).",
    ),
    Flag("--reverse-buffer", "link.reverse.buffer", help="The uplink's {}."),
    Flag(
        "--reverse-aqm",
        "link.reverse.aqm",
        apply=_aqm_at("link.reverse", "reverse_buffer"),
        help="Queueing discipline at the uplink: {}.",
    ),
    Flag("--reverse-loss", "link.reverse.loss"),
    Flag(
        "--pcap",
        "capture.points",
        apply=_pcap,
        help="Capture packets to DIR/capture-<point>.pcap at: {} (needs --out DIR or [capture] dir).",
        metavar="POINT[,POINT]",
    ),
    Flag(
        "--pcap-flows",
        "capture.flows",
        apply=_pcap_flows,
        help="Capture only these flows (0-based, after --flows; default every flow).",
        metavar="N[,N]",
    ),
    Flag(
        "--set",
        apply=_set_values,
        help="Set any scenario value, named as in a scenario file, after the other flags: link.rate=50Mbit, "
        "tcp.mss=1400, flows[1].cca=bbr, flows.rwnd=1MB (every flow). Repeatable.",
        metavar="PATH=VALUE",
        multiple=True,
        keyword="set_values",
    ),
)
BY_KEY: dict[str, Flag] = {flag.key: flag for flag in FLAGS}


def flags_doc(base: Union["Scenario", Mapping[str, Any], None], values: Mapping[str, Any]) -> Doc:
    """The TOML form of ``base`` (default :data:`FLAG_DEFAULTS`) with the flags'
    ``values`` (by keyword; None: not given) applied in the order of :data:`FLAGS`."""
    from . import Scenario, _without_none

    unknown = [key for key in values if key not in BY_KEY]
    if unknown:
        raise TypeError(f"from_flags() got an unexpected keyword argument {unknown[0]!r}")
    if base is None:
        doc = copy.deepcopy(FLAG_DEFAULTS)
        if values.get("arrivals") is not None and values.get("cca") is None:
            doc["flows"] = []  # the default flow stands for some traffic: the arrivals are that
    else:
        doc = _without_none(base.to_dict()) if isinstance(base, Scenario) else copy.deepcopy(dict(base))
    for flag in FLAGS:
        value = values.get(flag.key)
        if value is not None:
            flag.apply_to(doc, value, values)
    return doc


def field_info(flag: Flag) -> Optional[tuple[FieldInfo, Any]]:
    """The pydantic field ``flag`` sets and its default for a scenario built from flags
    (:data:`FLAG_DEFAULTS`, else the field's own); None for a flag that sets no one field."""
    from . import _table_for

    if not flag.field:
        return None
    where, _, key = flag.field.rpartition(".")
    model = _table_for(tuple(part for part in where.removesuffix("[]").split(".") if part))
    fields = {f.alias or name: f for name, f in model.model_fields.items()} if model is not None else {}
    if key not in fields:
        raise KeyError(f"{flag.option} sets {flag.field}, which the scenario does not have")
    info = fields[key]
    default = _flag_default(where, key)
    if default is None and not info.is_required():
        default = info.get_default(call_default_factory=True)
    return info, default


def _flag_default(where: str, key: str) -> Any:
    table: Any = FLAG_DEFAULTS if not where else FLAG_DEFAULTS.get(where.removesuffix("[]"))
    if isinstance(table, list):
        table = table[0]
    return table.get(key) if isinstance(table, dict) else None
