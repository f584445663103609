"""The scenario schema: TOML with human units, validated strictly, resolved to the
simulator's JSON (``ccbench_sim::config::Scenario``) in base units.

Attribute names carry their unit (``duration_ns``, ``rate_bps``); the TOML keys are the
plain names (``duration``, ``rate``). Every table rejects unknown keys. Any problem is
raised as :class:`~ccbench.errors.ScenarioError` naming the dotted field
(``link.rate``, ``flows[0].cca``) and what is allowed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import tomllib

import tomli_w
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional, Sequence, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from . import _core
from .errors import ScenarioError
from .host import Host, HostCost
from .traces import Trace, load_trace
from .units import (
    Buffer,
    format_buffer,
    format_duration,
    format_loss,
    format_rate,
    format_size,
    parse_buffer,
    parse_duration,
    parse_loss,
    parse_probability,
    parse_rate,
    parse_size,
)

Duration = Annotated[int, BeforeValidator(parse_duration)]
Rate = Annotated[int, BeforeValidator(parse_rate)]
Size = Annotated[int, BeforeValidator(parse_size)]
Loss = Annotated[float, BeforeValidator(parse_loss)]
Probability = Annotated[float, BeforeValidator(parse_probability)]
BufferLimit = Annotated[Buffer, BeforeValidator(parse_buffer)]
TraceFile = Annotated[Trace, BeforeValidator(load_trace)]


def _int_range(lo: int, hi: int) -> AfterValidator:
    def check(v: int) -> int:
        if not lo <= v <= hi:
            raise ValueError(f"must be an integer from {lo} to {hi}, got {v}")
        return v

    return AfterValidator(check)


MS = 1_000_000
S = 1_000_000_000
TSO_RTT_LOG = 9  # net.ipv4.tcp_tso_rtt_log default (Linux 5.18+)
FRTO = 2  # net.ipv4.tcp_frto default
MIN_INTERVAL_NS = 1 * MS
MAX_FLOWS_PER_ENTRY = 10_000


class _Table(BaseModel):
    """Strict, immutable, unknown keys rejected; TOML keys are the field aliases."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    def to_dict(self) -> dict[str, Any]:
        """This table in TOML form (human units), every default filled in."""
        raise NotImplementedError


class RateStep(_Table):
    """``link.rate_schedule`` entry: from ``at`` on, the bottleneck serves at ``rate``."""

    at_ns: Duration = Field(alias="at")
    rate_bps: Rate = Field(alias="rate")

    def to_dict(self) -> dict[str, Any]:
        return {"at": format_duration(self.at_ns), "rate": format_rate(self.rate_bps)}

    def to_core(self) -> dict[str, Any]:
        return {"at_ns": self.at_ns, "rate_bps": self.rate_bps}


class RttStep(_Table):
    """``link.rtt_schedule`` entry: from ``at`` on, the path's base RTT is ``rtt``."""

    at_ns: Duration = Field(alias="at")
    rtt_ns: Duration = Field(alias="rtt")

    @field_validator("rtt_ns")
    @classmethod
    def _positive_rtt(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be positive, e.g. '80ms'")
        return v

    def to_dict(self) -> dict[str, Any]:
        return {"at": format_duration(self.at_ns), "rtt": format_duration(self.rtt_ns)}

    def to_core(self) -> dict[str, Any]:
        return {"at_ns": self.at_ns, "rtt_ns": self.rtt_ns}


class GilbertElliott(_Table):
    """``link.loss_model``: Gilbert-Elliott bursty loss, per packet. Good -> Bad with
    probability ``p``, Bad -> Good with ``r``; a packet gets through with probability
    ``h`` in Bad (default 0) and ``k`` in Good (default 1)."""

    type: Literal["gilbert-elliott"]
    p: Probability
    r: Probability
    h: Probability = 0.0
    k: Probability = 1.0

    @field_validator("p", "r")
    @classmethod
    def _positive(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("must be above 0 (a transition probability per packet, e.g. '1%')")
        return v

    @property
    def mean_loss(self) -> float:
        """Long-run loss probability: (1 - k) r / (p + r) + (1 - h) p / (p + r)."""
        bad = self.p / (self.p + self.r)
        return (1 - self.k) * (1 - bad) + (1 - self.h) * bad

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "p": format_loss(self.p), "r": format_loss(self.r),
                "h": format_loss(self.h), "k": format_loss(self.k)}

    def to_core(self) -> dict[str, Any]:
        return {"gilbert_elliott": {"p": self.p, "r": self.r, "h": self.h, "k": self.k}}


AQMS = ("droptail", "codel", "fq_codel")
# The kernel's defaults (codel_params_init, codel_init, fq_codel_init); mtu and quantum
# are psched_mtu of an Ethernet device (1500 + 14).
AQM_DEFAULTS: dict[str, dict[str, Any]] = {
    "codel": {"target": "5ms", "interval": "100ms", "limit": 1000, "ecn": False, "mtu": 1514},
    "fq_codel": {"target": "5ms", "interval": "100ms", "limit": 10240, "ecn": True, "mtu": 1514,
                 "quantum": 1514, "flows": 1024, "memory_limit": "32MiB", "drop_batch": 64},
}
_AQM_KEYS = {"codel": ("target", "interval", "limit", "ecn", "ce_threshold", "mtu"),
             "fq_codel": ("target", "interval", "limit", "ecn", "ce_threshold", "mtu", "quantum", "flows",
                          "memory_limit", "drop_batch")}


class AqmParams(_Table):
    """``link.aqm_params``: CoDel / FQ-CoDel parameters, every one filled in."""

    target_ns: Duration = Field(alias="target")
    interval_ns: Duration = Field(alias="interval")
    limit: Annotated[int, _int_range(1, 2**32 - 1)]
    ecn: bool
    ce_threshold_ns: Optional[Duration] = Field(None, alias="ce_threshold")
    mtu_bytes: Size = Field(alias="mtu")
    quantum_bytes: Optional[Size] = Field(None, alias="quantum")
    flows: Optional[Annotated[int, _int_range(1, 65536)]] = None
    memory_limit_bytes: Optional[Size] = Field(None, alias="memory_limit")
    drop_batch: Optional[Annotated[int, _int_range(1, 2**32 - 1)]] = None

    @field_validator("target_ns", "interval_ns")
    @classmethod
    def _positive_time(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be positive, e.g. '5ms'")
        return v

    def to_dict(self) -> dict[str, Any]:
        d = {
            "target": format_duration(self.target_ns),
            "interval": format_duration(self.interval_ns),
            "limit": self.limit,
            "ecn": self.ecn,
            "ce_threshold": None if self.ce_threshold_ns is None else format_duration(self.ce_threshold_ns),
            "mtu": self.mtu_bytes,
            "quantum": self.quantum_bytes,
            "flows": self.flows,
            "memory_limit": None if self.memory_limit_bytes is None else format_size(self.memory_limit_bytes),
            "drop_batch": self.drop_batch,
        }
        return {k: v for k, v in d.items() if v is not None}

    def to_core(self, aqm: str) -> dict[str, Any]:
        core: dict[str, Any] = {
            "target_ns": self.target_ns,
            "interval_ns": self.interval_ns,
            "limit_packets": self.limit,
            "ecn": self.ecn,
            "ce_threshold_ns": self.ce_threshold_ns,
            "mtu_bytes": self.mtu_bytes,
        }
        if aqm == "fq_codel":
            core.update(quantum_bytes=self.quantum_bytes, flows=self.flows,
                        memory_limit_bytes=self.memory_limit_bytes, drop_batch=self.drop_batch)
        return {aqm: core}


class Link(_Table):
    rate_bps: Optional[Rate] = Field(None, alias="rate")
    rtt_ns: Duration = Field(alias="rtt")
    buffer: BufferLimit = Buffer("bdp", 1.0)
    loss: Loss = 0.0
    nic_rate_bps: Rate = Field(10_000_000_000, alias="nic_rate")
    ecn_threshold: Optional[BufferLimit] = None
    trace: Optional[TraceFile] = None
    ack_trace: Optional[TraceFile] = None
    rate_schedule: list[RateStep] = Field(default_factory=list)
    rtt_schedule: list[RttStep] = Field(default_factory=list)
    loss_model: Optional[GilbertElliott] = None
    aqm: Literal["droptail", "codel", "fq_codel"] = "droptail"
    aqm_params: Optional[AqmParams] = None

    @model_validator(mode="before")
    @classmethod
    def _capacity_and_queue(cls, data: Any) -> Any:
        """One source of capacity (rate or trace); the AQM's own limits instead of
        ``buffer``; the AQM's parameters completed with the kernel's defaults."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "trace" in data and "rate" in data:
            raise ScenarioError("link.rate", "give rate or trace, not both (a trace sets the capacity)")
        if "trace" not in data and "rate" not in data:
            raise ScenarioError("link.rate", "is required (or give link.trace, a delivery-opportunity trace)")
        aqm = data.get("aqm", "droptail")
        if aqm not in AQMS:
            return data  # the field's own error names the allowed values
        params = data.get("aqm_params")
        if aqm == "droptail":
            if params is not None:
                raise ScenarioError("link.aqm_params", "only with aqm = 'codel' or 'fq_codel' (drop-tail's "
                                    "limit is link.buffer)")
            return data
        if "buffer" in data:
            raise ScenarioError("link.buffer", f"is drop-tail's limit; with aqm = '{aqm}' the queue is limited "
                                "by aqm_params.limit (packets) instead")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ScenarioError("link.aqm_params", "must be a table")
        for key in params:
            if key not in _AQM_KEYS[aqm]:
                raise ScenarioError(f"link.aqm_params.{key}", f"not a parameter of {aqm}; allowed keys: "
                                    f"{', '.join(_AQM_KEYS[aqm])}")
        data["aqm_params"] = {**AQM_DEFAULTS[aqm], **params}
        return data

    @field_validator("rtt_ns")
    @classmethod
    def _positive_rtt(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be positive, e.g. '40ms'")
        return v

    @property
    def reference_rate_bps(self) -> int:
        """The rate BDP-relative sizes refer to: the trace's mean, or ``rate``."""
        if self.trace is not None:
            return self.trace.mean_bps
        assert self.rate_bps is not None
        return self.rate_bps

    def to_dict(self) -> dict[str, Any]:
        queue_is_aqm = self.aqm != "droptail"
        return {
            "rate": None if self.rate_bps is None else format_rate(self.rate_bps),
            "trace": None if self.trace is None else self.trace.path,
            "rtt": format_duration(self.rtt_ns),
            "buffer": None if queue_is_aqm else format_buffer(self.buffer),
            "aqm": self.aqm,
            "aqm_params": self.aqm_params.to_dict() if queue_is_aqm and self.aqm_params else None,
            "loss": format_loss(self.loss),
            "loss_model": None if self.loss_model is None else self.loss_model.to_dict(),
            "nic_rate": format_rate(self.nic_rate_bps),
            "ecn_threshold": None if self.ecn_threshold is None else format_buffer(self.ecn_threshold),
            "ack_trace": None if self.ack_trace is None else self.ack_trace.path,
            "rate_schedule": [st.to_dict() for st in self.rate_schedule] or None,
            "rtt_schedule": [st.to_dict() for st in self.rtt_schedule] or None,
        }

    def to_core(self) -> dict[str, Any]:
        core: dict[str, Any] = {
            "rate_bps": self.reference_rate_bps,
            "rtt_ns": self.rtt_ns,
            "buffer": self.buffer.to_core(),
            "loss": self.loss,
            "nic_rate_bps": self.nic_rate_bps,
            "ecn_threshold": None if self.ecn_threshold is None else self.ecn_threshold.to_core(),
        }
        # The link models appear only when set, so that scenarios without them keep
        # their canonical JSON (and scenario_hash).
        if self.trace is not None:
            core["trace"] = self.trace.to_core()
        if self.ack_trace is not None:
            core["ack_trace"] = self.ack_trace.to_core()
        if self.rate_schedule:
            core["rate_schedule"] = [st.to_core() for st in self.rate_schedule]
        if self.rtt_schedule:
            core["rtt_schedule"] = [st.to_core() for st in self.rtt_schedule]
        if self.loss_model is not None:
            core["loss_model"] = self.loss_model.to_core()
        if self.aqm != "droptail" and self.aqm_params is not None:
            core["aqm"] = self.aqm_params.to_core(self.aqm)
        return core


class Tcp(_Table):
    """Stack knobs; the defaults are those of a recent Linux kernel."""

    mss: Annotated[int, _int_range(64, 9000)] = 1448
    init_cwnd: Annotated[int, _int_range(1, 1_000_000)] = 10
    hz: int = 1000
    rto_min_ns: Duration = Field(200 * MS, alias="rto_min")
    rto_init_ns: Duration = Field(1 * S, alias="rto_init")
    tsq_limit_bytes: Size = Field(4 * 2**20, alias="tsq_limit")
    pacing_shift: Annotated[int, _int_range(0, 31)] = 10
    delack_min_ns: Duration = Field(40 * MS, alias="delack_min")
    tso_rtt_log: Annotated[int, _int_range(0, 31)] = TSO_RTT_LOG
    frto: Annotated[int, _int_range(0, 2)] = FRTO  # net.ipv4.tcp_frto: 0 off, 1 or 2 on

    @field_validator("hz")
    @classmethod
    def _hz_divides_second(cls, v: int) -> int:
        # A jiffy must be a whole number of microseconds, the unit the RTT estimator's
        # usecs_to_jiffies divides by (crates/ccbench-sim/src/tcp/rtt.rs).
        if v <= 0 or 1_000_000 % v != 0:
            raise ValueError("must divide 1000000, so that a jiffy is a whole number of microseconds, "
                             "e.g. 100, 250, 1000")
        return v

    @field_validator("rto_min_ns", "rto_init_ns")
    @classmethod
    def _positive_timer(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be positive, e.g. '200ms'")
        return v

    def to_dict(self) -> dict[str, Any]:
        return {
            "mss": self.mss,
            "init_cwnd": self.init_cwnd,
            "hz": self.hz,
            "rto_min": format_duration(self.rto_min_ns),
            "rto_init": format_duration(self.rto_init_ns),
            "tsq_limit": format_size(self.tsq_limit_bytes),
            "pacing_shift": self.pacing_shift,
            "delack_min": format_duration(self.delack_min_ns),
            "tso_rtt_log": self.tso_rtt_log,
            "frto": self.frto,
        }

    def to_core(self) -> dict[str, Any]:
        return {
            "mss": self.mss,
            "init_cwnd": self.init_cwnd,
            "hz": self.hz,
            "rto_min_ns": self.rto_min_ns,
            "rto_init_ns": self.rto_init_ns,
            "tsq_limit_bytes": self.tsq_limit_bytes,
            "pacing_shift": self.pacing_shift,
            "delack_min_ns": self.delack_min_ns,
            # Only when changed, so that scenarios written before the knob keep their hash.
            **({"tso_rtt_log": self.tso_rtt_log} if self.tso_rtt_log != TSO_RTT_LOG else {}),
            **({"frto": self.frto} if self.frto != FRTO else {}),
        }


class Flow(_Table):
    """One ``[[flows]]`` entry: ``count`` identical flows."""

    cca: str
    count: Annotated[int, _int_range(1, MAX_FLOWS_PER_ENTRY)] = 1
    start_ns: Duration = Field(0, alias="start")
    access_delay_ns: Duration = Field(0, alias="access_delay")
    size_bytes: Optional[Size] = Field(None, alias="size")
    pacing: Optional[bool] = None
    rwnd_bytes: Size = Field(6 * 2**20, alias="rwnd")
    params: dict[str, float] = Field(default_factory=dict)
    ecn: Literal["off", "classic", "low"] = "off"
    pacing_stride: Annotated[int, _int_range(1, 1000)] = 1
    fixed_cwnd: Optional[Annotated[int, _int_range(1, 1_000_000_000)]] = None
    fixed_pacing_rate_bps: Optional[Rate] = Field(None, alias="fixed_pacing_rate")
    freeze_cc: bool = False
    repeat: Annotated[int, _int_range(1, 65_535)] = 1  # connections are numbered in 16 bits (sim/world.rs)
    pause_ns: Duration = Field(0, alias="pause")
    rwnd_autotune: bool = False

    @field_validator("cca")
    @classmethod
    def _known_cca(cls, v: str) -> str:
        name = v.strip().lower()
        allowed = algorithms()
        if name not in allowed:
            raise ValueError(f"unknown algorithm {v!r}; allowed: {', '.join(allowed)}")
        return name

    @field_validator("size_bytes")
    @classmethod
    def _positive_size(cls, v: Optional[int]) -> Optional[int]:
        if v is not None and v <= 0:
            raise ValueError("must be positive, e.g. '20MB' (omit size for a bulk flow)")
        return v

    @field_validator("params")
    @classmethod
    def _finite_params(cls, v: dict[str, float]) -> dict[str, float]:
        for name, x in v.items():
            if x != x or x in (float("inf"), float("-inf")):
                raise ValueError(f"parameter {name!r} must be a finite number")
        return v

    def to_dict(self) -> dict[str, Any]:
        return {
            "cca": self.cca,
            "count": self.count,
            "start": format_duration(self.start_ns),
            "access_delay": format_duration(self.access_delay_ns),
            "size": None if self.size_bytes is None else format_size(self.size_bytes),
            "pacing": self.pacing,
            "rwnd": format_size(self.rwnd_bytes),
            "params": dict(sorted(self.params.items())),
            "ecn": self.ecn,
            "pacing_stride": self.pacing_stride,
            "fixed_cwnd": self.fixed_cwnd,
            "fixed_pacing_rate": None if self.fixed_pacing_rate_bps is None else format_rate(self.fixed_pacing_rate_bps),
            "freeze_cc": self.freeze_cc,
            "repeat": self.repeat,
            "pause": format_duration(self.pause_ns),
            "rwnd_autotune": self.rwnd_autotune,
        }

    def to_core(self) -> dict[str, Any]:
        # The phone study's knobs appear only when used, so that scenarios written
        # before them keep their hash.
        knobs = {
            "pacing_stride": (self.pacing_stride, 1),
            "fixed_cwnd": (self.fixed_cwnd, None),
            "fixed_pacing_rate_bps": (self.fixed_pacing_rate_bps, None),
            "freeze_cc": (self.freeze_cc, False),
            "repeat": (self.repeat, 1),
            "pause_ns": (self.pause_ns, 0),
            "rwnd_autotune": (self.rwnd_autotune, False),
        }
        return {
            **{k: v for k, (v, default) in knobs.items() if v != default},
            "cca": self.cca,
            "start_ns": self.start_ns,
            "access_delay_ns": self.access_delay_ns,
            "size_bytes": self.size_bytes,
            "pacing": self.pacing,
            "rwnd_bytes": self.rwnd_bytes,
            "params": dict(sorted(self.params.items())),
            "ecn": self.ecn,
        }




CAPTURE_POINTS = ("sender", "bottleneck-in", "bottleneck-out", "receiver")
CapturePoint = Literal["sender", "bottleneck-in", "bottleneck-out", "receiver"]


class Capture(_Table):
    """``[capture]``: pcap files of chosen flows at chosen points of the path. It does not
    change the experiment, so it is not part of ``scenario_hash``."""

    points: list[CapturePoint]
    flows: Optional[list[int]] = None
    dir: Optional[str] = None

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

    def to_dict(self) -> dict[str, Any]:
        return {"points": list(self.points), "flows": None if self.flows is None else list(self.flows),
                "dir": self.dir}

    def to_core(self, directory: Union[str, os.PathLike[str]]) -> dict[str, Any]:
        return {"points": list(self.points), "flows": self.flows, "dir": os.fspath(directory)}


def _capture_points(text: Union[str, Sequence[str]]) -> list[str]:
    items = [p.strip().lower() for p in (text.split(",") if isinstance(text, str) else text)]
    return [p for p in items if p]


def _without_none(value: Any) -> Any:
    """TOML has no null: unset optional values are left out."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


class Scenario(_Table):
    """A complete experiment: one bottleneck link and the flows that share it."""

    seed: Annotated[int, _int_range(0, 2**64 - 1)] = 1
    duration_ns: Duration = Field(alias="duration")
    interval_ns: Duration = Field(100 * MS, alias="interval")
    link: Link
    tcp: Tcp = Field(default_factory=lambda: Tcp.model_validate({}))
    host: Optional[Host] = None
    flows: list[Flow]
    capture: Optional[Capture] = None

    @field_validator("duration_ns")
    @classmethod
    def _positive_duration(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be positive, e.g. '30s'")
        return v

    @field_validator("interval_ns")
    @classmethod
    def _interval_floor(cls, v: int) -> int:
        if v < MIN_INTERVAL_NS:
            raise ValueError(f"must be at least {format_duration(MIN_INTERVAL_NS)}, e.g. '100ms'")
        return v

    @field_validator("flows")
    @classmethod
    def _some_flows(cls, v: list[Flow]) -> list[Flow]:
        if not v:
            raise ValueError("at least one [[flows]] entry is required")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        for i, flow in enumerate(self.flows):
            if flow.start_ns >= self.duration_ns:
                raise ScenarioError(
                    f"flows[{i}].start",
                    f"must be before the end of the run (duration = {format_duration(self.duration_ns)})",
                )
            if flow.rwnd_bytes < self.tcp.mss:
                raise ScenarioError(f"flows[{i}].rwnd", f"must be at least one MSS ({self.tcp.mss} bytes)")
        if self.capture is not None and self.capture.flows is not None:
            n = self.flow_count
            for k in self.capture.flows:
                if k >= n:
                    valid = "0" if n == 1 else f"0..{n - 1}"
                    raise ScenarioError("capture.flows", f"flow {k} out of range; the scenario has {n} "
                                        f"flow{'s' if n != 1 else ''}: {valid}")
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
    def from_flags(
        cls,
        *,
        base: Union["Scenario", Mapping[str, Any], None] = None,
        cca: Union[str, Sequence[str], None] = None,
        flows: Optional[int] = None,
        rate: Union[str, int, None] = None,
        rtt: Optional[str] = None,
        buffer: Union[str, int, None] = None,
        loss: Union[str, float, None] = None,
        duration: Optional[str] = None,
        seed: Optional[int] = None,
        interval: Optional[str] = None,
        size: Union[str, int, None] = None,
        pacing: Optional[bool] = None,
        rwnd: Union[str, int, None] = None,
        repeat: Optional[int] = None,
        pause: Optional[str] = None,
        cpu: Optional[str] = None,
        cpu_share: Union[str, float, None] = None,
        cpu_slice: Optional[str] = None,
        cpu_trace: Optional[str] = None,
        pacing_stride: Optional[int] = None,
        fixed_cwnd: Optional[int] = None,
        fixed_pacing_rate: Union[str, int, None] = None,
        freeze_cc: Optional[bool] = None,
        bbr_inflight_deficit: Optional[bool] = None,
        tso_rtt_log: Optional[int] = None,
        pcap: Union[str, Sequence[str], None] = None,
        pcap_flows: Union[str, Sequence[int], None] = None,
        trace: Optional[str] = None,
        ack_trace: Optional[str] = None,
        aqm: Optional[str] = None,
        set_values: Optional[Sequence[str]] = None,
    ) -> "Scenario":
        """Build a scenario from command-line values, over ``base`` if given.

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
        is then an error), and a change of ``aqm`` drops the base's ``aqm_params``. Trace
        paths are taken from the current directory.

        ``set_values`` (``["link.rate=50Mbit", "flows[1].cca=bbr"]``, the CLI's ``--set``)
        are applied last, in order, to the scenario's TOML form (:mod:`ccbench.overrides`).
        """
        doc: dict[str, Any] = copy.deepcopy(dict(FLAG_DEFAULTS if base is None else
                                                 _without_none(base.to_dict()) if isinstance(base, Scenario)
                                                 else base))
        top: list[tuple[str, object]] = [("seed", seed), ("duration", duration), ("interval", interval)]
        for key, value in top:
            if value is not None:
                doc[key] = value
        link_flags: list[tuple[str, object]] = [("rate", rate), ("rtt", rtt), ("buffer", buffer), ("loss", loss),
                                                ("trace", trace), ("ack_trace", ack_trace), ("aqm", aqm)]
        if any(value is not None for _, value in link_flags):
            link = doc.setdefault("link", {})
            if isinstance(link, dict):  # otherwise validation reports that link must be a table
                if trace is not None and rate is None:
                    link.pop("rate", None)
                if rate is not None and trace is None:
                    link.pop("trace", None)
                if aqm is not None:
                    if aqm != link.get("aqm", "droptail"):
                        link.pop("aqm_params", None)
                    if aqm != "droptail" and buffer is None:
                        link.pop("buffer", None)
                link.update((key, value) for key, value in link_flags if value is not None)
        if cca is not None:
            names = [c.strip() for c in cca.split(",")] if isinstance(cca, str) else list(cca)
            doc["flows"] = [{"cca": name} for name in names if name]
        if pcap is not None or pcap_flows is not None:
            capture = doc.get("capture")
            capture = dict(capture) if isinstance(capture, dict) else {}
            if pcap is not None:
                capture["points"] = _capture_points(pcap)
            if pcap_flows is not None:
                if isinstance(pcap_flows, str):
                    try:
                        capture["flows"] = [int(x) for x in pcap_flows.split(",") if x.strip()]
                    except ValueError:
                        raise ScenarioError("capture.flows", f"expected flow indices such as '0,2', got {pcap_flows!r}") from None
                else:
                    capture["flows"] = list(pcap_flows)
            doc["capture"] = capture
        per_flow: list[tuple[str, object]] = [
            ("count", flows), ("size", size), ("pacing", pacing), ("rwnd", rwnd), ("repeat", repeat), ("pause", pause),
            ("pacing_stride", pacing_stride),
            ("fixed_cwnd", fixed_cwnd), ("fixed_pacing_rate", fixed_pacing_rate), ("freeze_cc", freeze_cc),
        ]
        if rwnd == "auto":
            per_flow = [(k, v) for k, v in per_flow if k != "rwnd"] + [("rwnd_autotune", True)]
        entries = doc.get("flows")
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, dict):
                    entry.update((key, value) for key, value in per_flow if value is not None)
                    if bbr_inflight_deficit and str(entry.get("cca", "")).lower() in BBR_FAMILY:
                        params = entry.setdefault("params", {})
                        if isinstance(params, dict):
                            params["inflight_deficit"] = 1
        if bbr_inflight_deficit and not any(isinstance(e, dict) and str(e.get("cca", "")).lower() in BBR_FAMILY
                                            for e in (entries if isinstance(entries, list) else [])):
            raise ScenarioError("bbr_inflight_deficit", f"needs a BBR flow ({', '.join(BBR_FAMILY)})")
        if tso_rtt_log is not None:
            tcp = doc.setdefault("tcp", {})
            if isinstance(tcp, dict):
                tcp["tso_rtt_log"] = tso_rtt_log
        host_flags: list[tuple[str, object]] = [("cpu", cpu), ("cpu_share", cpu_share), ("cpu_slice", cpu_slice),
                                                ("cpu_trace", cpu_trace)]
        if any(value is not None for _, value in host_flags):
            host = doc.setdefault("host", {})
            if isinstance(host, dict):
                host.update((key, value) for key, value in host_flags if value is not None)
        if set_values:
            from .overrides import apply

            apply(doc, set_values)
        return cls.from_dict(doc)

    # Output

    def to_dict(self) -> dict[str, Any]:
        """The effective scenario in TOML form: human units, every default filled in."""
        return {
            "seed": self.seed,
            "duration": format_duration(self.duration_ns),
            "interval": format_duration(self.interval_ns),
            "link": self.link.to_dict(),
            "tcp": self.tcp.to_dict(),
            **({} if self.host is None else {"host": self.host.to_dict()}),
            "flows": [f.to_dict() for f in self.flows],
            **({} if self.capture is None else {"capture": self.capture.to_dict()}),
        }

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
        return {
            "seed": self.seed,
            "duration_ns": self.duration_ns,
            "sample_interval_ns": self.interval_ns,
            "link": self.link.to_core(),
            "tcp": self.tcp.to_core(),
            **({} if self.host is None else {"host": self.host.to_core()}),
            "flows": [f.to_core() for f in self.flows for _ in range(f.count)],
        }

    def to_json(self) -> str:
        """Canonical JSON for the simulator: sorted keys, no whitespace."""
        return json.dumps(self.to_core(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def scenario_hash(self) -> str:
        """sha256 of the canonical JSON: equal for scenarios that run identically."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @property
    def flow_count(self) -> int:
        return sum(f.count for f in self.flows)

    def _entry_field(self, field: str) -> str:
        """Rewrite ``flows[k]`` (expanded flow index) to the index of its [[flows]] entry."""
        m = re.match(r"^flows\[(\d+)\]", field)
        if m is None:
            return field
        k = int(m.group(1))
        for i, f in enumerate(self.flows):
            if k < f.count:
                return f"flows[{i}]" + field[m.end():]
            k -= f.count
        return field


BBR_FAMILY = ("bbr", "bbr2", "bbr3")

FLAG_DEFAULTS: dict[str, Any] = {
    "duration": "10s",
    "link": {"rate": "100Mbit", "rtt": "40ms", "buffer": "1bdp"},
    "flows": [{"cca": "cubic"}],
}


def algorithms() -> list[str]:
    """Congestion-control algorithms the simulator implements."""
    return list(_core.algorithms())


def read_toml(path: Union[str, os.PathLike[str]]) -> dict[str, Any]:
    """Read a TOML file; a missing file or bad syntax is a ScenarioError naming the file."""
    name = os.fspath(path)
    try:
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
    """Trace paths in a scenario file are relative to the file's directory."""
    link = doc.get("link")
    if isinstance(link, dict):
        for key in ("trace", "ack_trace"):
            value = link.get(key)
            if isinstance(value, str) and value.strip() and not os.path.isabs(value):
                link[key] = os.path.normpath(os.path.join(base, value))
    return doc


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(source, f"invalid TOML: {e}") from None


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
        (): Scenario, ("link",): Link, ("tcp",): Tcp, ("flows",): Flow, ("host",): Host, ("host", "cost"): HostCost,
        ("capture",): Capture, ("link", "rate_schedule"): RateStep, ("link", "rtt_schedule"): RttStep,
        ("link", "loss_model"): GilbertElliott, ("link", "aqm_params"): AqmParams,
    }
    return tables.get(path)


def _keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _scenario_error(e: ValidationError) -> ScenarioError:
    err = e.errors()[0]
    loc = tuple(err["loc"])
    field = _dotted(loc)
    kind = err["type"]
    if kind == "value_error":
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, ScenarioError):
            return cause
        return ScenarioError(field, str(cause) if cause is not None else err["msg"])
    if kind == "literal_error" and loc[:2] == ("capture", "points"):
        return ScenarioError("capture.points", f"unknown capture point {err.get('input')!r}; allowed: "
                             f"{', '.join(CAPTURE_POINTS)}")
    if kind == "extra_forbidden":
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
    elif kind == "list_type" and loc[-1:] in (("rate_schedule",), ("rtt_schedule",)):
        expected = "an array of tables, e.g. [{at = \"10s\", rate = \"20Mbit\"}]"
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
