"""The scenario schema: TOML with human units, validated strictly, resolved to the
simulator's JSON (``ccbench_sim::config::Scenario``) in base units.

Attribute names carry their unit (``duration_ns``, ``rate_bps``); the TOML keys are the
plain names (``duration``, ``rate``). Every table rejects unknown keys. Any problem is
raised as :class:`~ccbench.errors.ScenarioError` naming the dotted field
(``link.rate``, ``flows[0].cca``) and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
import os

import tomli_w
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Mapping, Optional, Sequence, Union

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from .. import _core, toml_input
from ..errors import ScenarioError
from ..units import format_duration
from . import entries
from .arrivals import Arrivals, is_size_file
from .fields import (
    MAX_FLOWS_PER_ENTRY,
    MIN_INTERVAL_NS,
    Duration,
    KeyProblem,
    _int_range,
    _Table,
    core_default,
    positive,
)
from .flow import BBR_FAMILY, Flow, Tcp, algorithms
from .flags import FLAG_DEFAULTS, flags_doc
from .host import Host, HostCost
from .link import AQMS, AqmParams, GilbertElliott, Link, RateStep, ReverseLink, RttStep
from .udp import UdpFlow, UdpRateStep

__all__ = [
    "AQMS",
    "Arrivals",
    "BBR_FAMILY",
    "CAPTURE_POINTS",
    "FLAG_DEFAULTS",
    "MAX_FLOWS_PER_ENTRY",
    "MIN_INTERVAL_NS",
    "AqmParams",
    "Capture",
    "Flow",
    "GilbertElliott",
    "Link",
    "RateStep",
    "ReverseLink",
    "RttStep",
    "Scenario",
    "Tcp",
    "UdpFlow",
    "algorithms",
    "read_toml",
]


CAPTURE_POINTS = ("sender", "bottleneck-in", "bottleneck-out", "receiver")
CapturePoint = Literal["sender", "bottleneck-in", "bottleneck-out", "receiver"]


class Capture(_Table):
    """``[capture]``: pcap files of chosen flows at chosen points of the path. It does not
    change the experiment, so it is not part of ``scenario_hash``."""

    points: list[CapturePoint] = Field(
        description="sender, bottleneck-in, bottleneck-out, receiver", examples=[["sender", "receiver"]]
    )
    flows: Optional[list[int]] = Field(
        None, description="flow indices after `count` expansion; omit for every flow", examples=[[0]]
    )
    dir: Optional[str] = Field(None, description="omit for the --out directory", examples=["captures"])

    @field_validator("points")
    @classmethod
    def _some_points(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError(f"name at least one of {', '.join(CAPTURE_POINTS)}")
        return sorted(set(v), key=CAPTURE_POINTS.index)

    @field_validator("flows")
    @classmethod
    def _flow_list(cls, v: Optional[list[int]]) -> Optional[list[int]]:
        if v is not None:
            if not v:
                raise ValueError("name at least one flow index, or leave flows out for every flow")
            if any(i < 0 for i in v):
                raise ValueError("flow indices start at 0")
            v = sorted(set(v))
        return v

    def to_core(self, directory: Union[str, os.PathLike[str]]) -> dict[str, Any]:
        return {"points": list(self.points), "flows": self.flows, "dir": os.fspath(directory)}


def _without_none(value: Any) -> Any:
    """TOML has no null: unset optional values are left out."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


class Scenario(_Table):
    """A complete experiment: one bottleneck link and the traffic that shares it: TCP
    flows, UDP flows (``[[flows]]`` with ``kind = "udp"``, held apart in ``udp``) and
    groups of arrivals."""

    # The UDP flows' list is filled from [[flows]], never from a key of its own.
    internal_keys: ClassVar[frozenset[str]] = frozenset({entries.UDP_LIST})

    seed: Annotated[int, _int_range(0, 2**64 - 1)] = Field(
        1, description="same scenario + seed = identical results", examples=[7]
    )
    duration_ns: Annotated[Duration, positive("30s")] = Field(
        alias="duration", description="simulated time", examples=["30s"]
    )
    interval_ns: Duration = Field(
        core_default("", "sample_interval_ns"),
        alias="interval",
        description="time-series interval, at least 1ms",
        examples=["100ms"],
    )
    link: Link
    tcp: Tcp = Field(default_factory=lambda: Tcp.model_validate({}))
    host: Optional[Host] = None
    flows: list[Flow] = Field(default_factory=list)
    udp: list[UdpFlow] = Field(default_factory=list)
    arrivals: list[Arrivals] = Field(default_factory=list)
    capture: Optional[Capture] = None
    # Where each UDP entry stood in [[flows]] (entries.split_flows).
    _udp_at: tuple[int, ...] = PrivateAttr(default=())

    @field_validator("interval_ns")
    @classmethod
    def _interval_floor(cls, v: int) -> int:
        if v < MIN_INTERVAL_NS:
            raise ValueError(f"must be at least {format_duration(MIN_INTERVAL_NS)}, e.g. '100ms'")
        return v

    @model_validator(mode="wrap")
    @classmethod
    def _flow_kinds(cls, data: Any, handler: ModelWrapValidatorHandler["Scenario"]) -> "Scenario":
        """[[flows]] split by kind before the fields are read, and every problem named
        by the user's entry."""
        if not isinstance(data, Mapping):
            return handler(data)
        doc, udp_at = entries.split_flows(data)
        total = len(doc.get("flows") or []) + len(udp_at)
        try:
            sc = handler(doc)
        except ValidationError as e:
            err = _scenario_error(e)
            raise ScenarioError(entries.user_field(err.field, udp_at, total), err.message) from None
        sc._udp_at = udp_at
        try:
            return sc._consistent()
        except ScenarioError as err:
            raise ScenarioError(sc.user_field(err.field), err.message) from None

    def _consistent(self) -> "Scenario":
        """Checks across tables; fields named as in ``to_core`` (``flows[k]``, ``udp[k]``
        counting entries)."""
        if not (self.flows or self.udp or self.arrivals):
            raise ScenarioError("flows", "at least one [[flows]] or [[arrivals]] entry is required")
        end = f"must be before the end of the run (duration = {format_duration(self.duration_ns)})"
        for i, flow in enumerate(self.flows):
            if flow.start_ns >= self.duration_ns:
                raise ScenarioError(f"flows[{i}].start", end)
            if flow.rwnd_bytes < self.tcp.mss:
                raise ScenarioError(f"flows[{i}].rwnd", f"must be at least one MSS ({self.tcp.mss} bytes)")
        for k, group in enumerate(self.arrivals):
            if group.start_ns >= self.duration_ns:
                raise ScenarioError(f"arrivals[{k}].start", end)
        if self.capture is not None and self.flow_count == 0:
            raise ScenarioError(
                "capture.points", "the scenario has no TCP flows to capture (UDP flows and arrivals are not captured)"
            )
        if self.capture is not None and self.capture.flows is not None:
            n = self.flow_count
            for k in self.capture.flows:
                if k >= n:
                    valid = "0" if n == 1 else f"0..{n - 1}"
                    raise ScenarioError(
                        "capture.flows",
                        f"flow {k} out of range; the scenario has {n} flow{'s' if n != 1 else ''}: {valid}",
                    )
        # The simulator's own checks (e.g. algorithm parameter names), reported with the
        # index of the [[flows]] entry rather than of the expanded flow.
        try:
            _core.validate(self.to_json())
        except ScenarioError as e:
            raise ScenarioError(self._entry_field(e.field), e.message) from None
        return self

    # Loading

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Scenario":
        """Validate a TOML-shaped mapping (human units)."""
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise _scenario_error(e) from None

    @classmethod
    def from_toml(cls, text: str, source: str = "scenario") -> "Scenario":
        return cls.from_dict(_parse_toml(text, source))

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike[str]]) -> "Scenario":
        doc = read_toml(path)
        # Files a scenario names are relative to the scenario file.
        host = doc.get("host")
        if isinstance(host, dict) and isinstance(host.get("cpu_trace"), str):
            host["cpu_trace"] = os.path.join(os.path.dirname(os.fspath(path)), host["cpu_trace"])
        return cls.from_dict(doc)

    @classmethod
    def load(cls, scenario: Union["Scenario", Mapping[str, Any], str, os.PathLike[str]]) -> "Scenario":
        """A Scenario from a Scenario, a TOML-shaped mapping or a path to a TOML file."""
        if isinstance(scenario, Scenario):
            return scenario
        if isinstance(scenario, Mapping):
            return cls.from_dict(scenario)
        if isinstance(scenario, (str, os.PathLike)):
            return cls.from_file(scenario)
        raise TypeError(f"expected a Scenario, a mapping or a path, got {type(scenario).__name__}")

    @classmethod
    def from_flags(cls, *, base: Union["Scenario", Mapping[str, Any], None] = None, **flags: Any) -> "Scenario":
        """Build a scenario from the values of the flags in :data:`ccbench.scenario.flags.FLAGS`
        (by keyword: ``rate="20Mbit"``, ``cca="cubic,bbr"``, ``cpu_share="25%"``; None: not
        given), over ``base`` if given.

        Without a base the defaults are :data:`FLAG_DEFAULTS` (one Cubic flow over
        100 Mbit/s, 40 ms, 1 BDP, for 10 s). ``cca`` ("cubic,reno" or a list) replaces the
        flows with ``flows`` flows of each algorithm; without ``cca``, ``flows``, ``size``
        and ``pacing`` apply to every ``[[flows]]`` entry of the base, as do the phone
        study's knobs (``pacing_stride``, ``fixed_cwnd``, ``fixed_pacing_rate``,
        ``freeze_cc``); ``bbr_inflight_deficit`` turns the 2BRobust patch on for every
        BBR flow. ``cpu*`` set the ``[host]`` table. ``pcap`` ("sender,receiver") and
        ``pcap_flows`` ("0,2") set the ``[capture]`` table's points and flows.

        ``trace`` replaces the base's ``rate`` and ``rate`` its ``trace``; ``aqm`` other
        than drop-tail drops the base's ``buffer`` (unless ``buffer`` is given too, which
        is then an error), and a change of ``aqm`` drops the base's ``aqm_params``; the
        ``reverse_*`` flags do the same in ``[link.reverse]``. ``direction`` ("up", or
        "down,up": one per ``[[flows]]`` entry) sets the flows' directions. Trace paths are
        taken from the current directory. ``rwnd="auto"`` turns on receive-buffer
        autotuning up to each flow's limit. ``cca="none"`` leaves no TCP flow.

        ``udp`` ("5Mbit,1Mbit") replaces the UDP flows with constant-rate ones, and the
        ``udp_*`` flags set every UDP flow's key; ``arrivals`` ("cubic,bbr") replaces the
        groups of arrivals with one per algorithm (web-search sizes; without a base or
        ``cca``, no bulk flow beside them), and the ``arrival_*`` flags set every group's
        key, one of ``arrival_load``, ``arrival_rate`` and ``arrival_times`` replacing the
        others (docs/traffic.md).

        ``set_values`` (``["link.rate=50Mbit", "flows[1].cca=bbr"]``, the CLI's ``--set``)
        are applied last, in order, to the scenario's TOML form (:mod:`ccbench.overrides`).
        """
        return cls.from_dict(flags_doc(base, flags))

    # Output

    def to_dict(self) -> dict[str, Any]:
        """The effective scenario in TOML form: human units, every default filled in."""
        d = super().to_dict()
        for optional_table in ("host", "capture"):
            if d[optional_table] is None:
                del d[optional_table]
        d["flows"] = entries.merged(d["flows"], d.pop(entries.UDP_LIST), self.udp_places)
        if not d["arrivals"]:
            del d["arrivals"]
        return d

    def effective_toml(self) -> str:
        """The effective scenario as TOML; loading it gives an equal Scenario."""
        header = (
            "# ccbench scenario, every default filled in\n"
            f"# scenario_hash = {self.scenario_hash}\n"
            "# A flow without `size` is bulk; without `pacing` it follows its algorithm.\n\n"
        )
        return header + tomli_w.dumps(_without_none(self.to_dict()))

    def to_core(self) -> dict[str, Any]:
        """The simulator's scenario (base units), with ``count`` expanded."""
        core = {
            "seed": self.seed,
            "duration_ns": self.duration_ns,
            "sample_interval_ns": self.interval_ns,
            "link": self.link.to_core(),
            "tcp": self.tcp.to_core(),
            **({} if self.host is None else {"host": self.host.to_core()}),
            "flows": [f.to_core() for f in self.flows for _ in range(f.count)],
        }
        # Only when there are any, so that other scenarios keep their canonical JSON.
        if self.udp:
            core["udp"] = [u.to_core() for u in self.udp for _ in range(u.count)]
        if self.arrivals:
            core["arrivals"] = [a.to_core() for a in self.arrivals]
        return core

    def to_json(self) -> str:
        """Canonical JSON for the simulator: sorted keys, no whitespace."""
        return json.dumps(self.to_core(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def scenario_hash(self) -> str:
        """sha256 of the canonical JSON: equal for scenarios that run identically."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @property
    def flow_count(self) -> int:
        """TCP flows, ``count`` expanded."""
        return sum(f.count for f in self.flows)

    @property
    def udp_count(self) -> int:
        """UDP flows, ``count`` expanded."""
        return sum(u.count for u in self.udp)

    @property
    def udp_places(self) -> tuple[int, ...]:
        """Where each UDP entry stands in the ``[[flows]]`` array."""
        return entries.udp_places(self._udp_at, len(self.flows), len(self.udp))

    def user_field(self, field: str) -> str:
        """A field named by the scenario's lists (``udp[k]``: the k-th UDP entry;
        ``flows[k]``: the k-th TCP one) as the user's ``flows[i]``."""
        return entries.user_field(field, self.udp_places, len(self.flows) + len(self.udp))

    def _entry_field(self, field: str) -> str:
        """A field of the simulator's JSON, whose ``flows[k]`` and ``udp[k]`` count
        expanded flows, named by the user's [[flows]] entry."""
        field = entries.expanded_entry(field, [f.count for f in self.flows], "flows")
        field = entries.expanded_entry(field, [u.count for u in self.udp], entries.UDP_LIST)
        return self.user_field(field)


def read_toml(path: Union[str, os.PathLike[str]]) -> dict[str, Any]:
    """Read a TOML file; a missing file or bad syntax is a ScenarioError naming the file."""
    name = os.fspath(path)
    try:
        if (size := Path(path).stat().st_size) > toml_input.MAX_BYTES:
            raise ScenarioError(name, toml_input.too_large(size))
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(name, "no such scenario file") from None
    except IsADirectoryError:
        raise ScenarioError(name, "is a directory, not a scenario file") from None
    except UnicodeDecodeError:
        raise ScenarioError(name, "is not UTF-8 text; a scenario is a TOML file") from None
    except OSError as e:
        raise ScenarioError(name, f"cannot be read: {e.strerror or e}") from None
    return _resolve_paths(_parse_toml(text, name), Path(path).parent)


def _resolve_paths(doc: dict[str, Any], base: Path) -> dict[str, Any]:
    """Trace, BPF object and traffic file paths in a scenario file are relative to the
    file's directory."""
    flows, groups = doc.get("flows"), doc.get("arrivals")
    for entry in [*(flows if isinstance(flows, list) else ()), *(groups if isinstance(groups, list) else ())]:
        if not isinstance(entry, dict):
            continue
        cca = entry.get("cca")
        if isinstance(cca, str) and cca.startswith("bpf:") and not os.path.isabs(cca[4:]):
            entry["cca"] = "bpf:" + os.path.normpath(os.path.join(base, cca[4:]))
        for key in ("rate_file", "times"):
            _relative_to(entry, key, base)
        if isinstance(entry.get("sizes"), str) and is_size_file(entry["sizes"], os.fspath(base)):
            _relative_to(entry, "sizes", base)
    link = doc.get("link")
    if isinstance(link, dict):
        reverse = link.get("reverse")
        for table, key in ((link, "trace"), (link, "ack_trace"), (reverse, "trace")):
            value = table.get(key) if isinstance(table, dict) else None
            if isinstance(value, str) and value.strip() and not os.path.isabs(value):
                table[key] = os.path.normpath(os.path.join(base, value))
    return doc


def _relative_to(table: dict[str, Any], key: str, base: Path) -> None:
    value = table.get(key)
    if isinstance(value, str) and value.strip() and not os.path.isabs(value):
        table[key] = os.path.normpath(os.path.join(base, value))


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    return toml_input.loads(text, source)


# Mapping pydantic's errors to ScenarioError


def _dotted(loc: Sequence[Union[str, int]]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "scenario"


def _table_for(loc: Sequence[Union[str, int]]) -> Optional[type[BaseModel]]:
    """The model whose keys live at ``loc`` (list indices ignored)."""
    path = tuple(p for p in loc if isinstance(p, str))
    tables: dict[tuple[str, ...], type[BaseModel]] = {
        (): Scenario,
        ("link",): Link,
        ("tcp",): Tcp,
        ("flows",): Flow,
        ("udp",): UdpFlow,
        ("udp", "rate_schedule"): UdpRateStep,
        ("arrivals",): Arrivals,
        ("host",): Host,
        ("host", "cost"): HostCost,
        ("capture",): Capture,
        ("link", "rate_schedule"): RateStep,
        ("link", "rtt_schedule"): RttStep,
        ("link", "loss_model"): GilbertElliott,
        ("link", "aqm_params"): AqmParams,
        ("link", "reverse"): ReverseLink,
        ("link", "reverse", "loss_model"): GilbertElliott,
        ("link", "reverse", "aqm_params"): AqmParams,
    }
    return tables.get(path)


def _keys(model: type[BaseModel]) -> list[str]:
    internal = getattr(model, "internal_keys", frozenset())
    return [f.alias or name for name, f in model.model_fields.items() if (f.alias or name) not in internal]


def _scenario_error(e: ValidationError) -> ScenarioError:
    err = e.errors()[0]
    loc = tuple(err["loc"])
    field = _dotted(loc)
    kind = err["type"]
    if kind == "value_error":
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, KeyProblem):
            return ScenarioError(f"{field}.{cause.field}", cause.message)
        if isinstance(cause, ScenarioError):
            return cause
        return ScenarioError(field, str(cause) if cause is not None else err["msg"])
    if kind == "literal_error" and loc[:2] == ("capture", "points"):
        return ScenarioError(
            "capture.points", f"unknown capture point {err.get('input')!r}; allowed: {', '.join(CAPTURE_POINTS)}"
        )
    if kind == "extra_forbidden":
        other_kind = entries.wrong_kind(loc, _keys(Flow), _keys(UdpFlow))
        if other_kind:
            return ScenarioError(field, other_kind)
        model = _table_for(loc[:-1])
        allowed = f"; allowed keys: {', '.join(_keys(model))}" if model else ""
        return ScenarioError(field, f"unknown key{allowed}")
    if kind == "missing":
        return ScenarioError(field, "is required")
    if kind in ("model_type", "dict_type") and _table_for(loc) is not None:
        return ScenarioError(field, "must be a table")
    expected = _EXPECTED.get(kind)
    if kind == "list_type" and loc == ("flows",):
        expected = "an array of tables ([[flows]])"
    elif kind == "list_type" and loc == ("arrivals",):
        expected = "an array of tables ([[arrivals]])"
    elif kind == "list_type" and loc[-1:] in (("rate_schedule",), ("rtt_schedule",)):
        expected = 'an array of tables, e.g. [{at = "10s", rate = "20Mbit"}]'
    if expected is not None:
        return ScenarioError(field, f"must be {expected}, got {_toml_type(err.get('input'))}")
    return ScenarioError(field, err["msg"])


_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "dict_type": "a table",
    "list_type": "an array",
    "model_type": "a table",
}


def _toml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
