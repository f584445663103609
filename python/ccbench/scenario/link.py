"""The ``[link]`` table: the bottleneck (rate or trace, buffer, AQM, loss), its
schedules, and the reverse direction: ``[link.reverse]``, a bottleneck of its own (the
uplink), or the older ACK trace.
"""

from __future__ import annotations


from typing import Annotated, Any, Literal, Optional

from pydantic import (
    BeforeValidator,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from ..errors import ScenarioError
from ..facts import AQM_PARAMS, AQMS
from ..units import Buffer, parse_size

from .fields import (
    BufferLimit,
    Duration,
    Loss,
    Probability,
    Rate,
    Size,
    TraceFile,
    _Table,
    core_default,
    core_range,
    positive,
)


class RateStep(_Table):
    """``link.rate_schedule`` entry: from ``at`` on, the bottleneck serves at ``rate``."""

    at_ns: Duration = Field(alias="at")
    rate_bps: Rate = Field(alias="rate")


class RttStep(_Table):
    """``link.rtt_schedule`` entry: from ``at`` on, the path's base RTT is ``rtt``."""

    at_ns: Duration = Field(alias="at")
    rtt_ns: Annotated[Duration, positive("80ms")] = Field(alias="rtt")


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

    def to_core(self) -> dict[str, Any]:
        return {"gilbert_elliott": self.model_dump(exclude={"type"})}


# A packet size the kernel's tools print as a plain number of bytes.
PacketBytes = Annotated[int, BeforeValidator(parse_size)]


def _aqm_range(field: str) -> Any:
    return core_range(f"link.aqm_params.{field}")


class AqmParams(_Table):
    """``link.aqm_params``: CoDel / FQ-CoDel parameters, every one filled in. Which AQM
    has which, their defaults (the kernel's) and their ranges are the simulator's
    (``ccbench.facts.AQM_PARAMS``); a parameter an AQM lacks stays None."""

    target_ns: Annotated[Duration, _aqm_range("target_ns")] = Field(alias="target")
    interval_ns: Annotated[Duration, _aqm_range("interval_ns")] = Field(alias="interval")
    limit_packets: Annotated[int, _aqm_range("limit_packets")] = Field(alias="limit")
    ecn: bool
    ce_threshold_ns: Optional[Annotated[Duration, _aqm_range("ce_threshold_ns")]] = Field(None, alias="ce_threshold")
    mtu_bytes: PacketBytes = Field(alias="mtu")
    quantum_bytes: Optional[Annotated[PacketBytes, _aqm_range("quantum_bytes")]] = Field(None, alias="quantum")
    flows: Optional[Annotated[int, _aqm_range("flows")]] = None
    memory_limit_bytes: Optional[Annotated[Size, _aqm_range("memory_limit_bytes")]] = Field(None, alias="memory_limit")
    drop_batch: Optional[Annotated[int, _aqm_range("drop_batch")]] = None

    @model_serializer(mode="wrap")
    def _toml_form(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """In the TOML form only the parameters the AQM has."""
        d = handler(self)
        return {k: v for k, v in d.items() if v is not None} if info.mode == "json" else d

    def to_core(self, aqm: str) -> dict[str, Any]:
        """``{aqm: parameters}``, only those the AQM has."""
        return {aqm: {k: v for k, v in self.model_dump().items() if k in AQM_PARAMS[aqm]}}


# The AQM a link without one has (drop-tail, whose limit is link.buffer; the AQMs with
# parameters have their own limits).
DEFAULT_AQM: str = core_default("link", "aqm")
# Each AQM's parameters in TOML form: the kernel's defaults, and the keys it takes.
AQM_DEFAULTS: dict[str, dict[str, Any]] = {
    aqm: AqmParams.model_construct(**params).model_dump(mode="json", by_alias=True)
    for aqm, params in AQM_PARAMS.items()
}
_AQM_KEYS = {
    aqm: tuple(f.alias or name for name, f in AqmParams.model_fields.items() if name in params)
    for aqm, params in AQM_PARAMS.items()
}


def _capacity_and_queue(data: Any, table: str) -> Any:
    """A bottleneck's table (``link``, ``link.reverse``) before its fields are read: one
    source of capacity (rate or trace); the AQM's own limits instead of ``buffer``; the
    AQM's parameters completed with the kernel's defaults. Errors name ``table``'s keys."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    if "trace" in data and "rate" in data:
        raise ScenarioError(f"{table}.rate", "give rate or trace, not both (a trace sets the capacity)")
    if "trace" not in data and "rate" not in data:
        raise ScenarioError(f"{table}.rate", f"is required (or give {table}.trace, a delivery-opportunity trace)")
    aqm = data.get("aqm", DEFAULT_AQM)
    if aqm not in AQMS:
        return data  # the field's own error names the allowed values
    params = data.get("aqm_params")
    if aqm not in AQM_PARAMS:
        if params is not None:
            with_params = " or ".join(f"aqm = '{a}'" for a in AQM_PARAMS)
            raise ScenarioError(f"{table}.aqm_params", f"only with {with_params} (drop-tail's limit is {table}.buffer)")
        return data
    if "buffer" in data:
        raise ScenarioError(
            f"{table}.buffer",
            f"is drop-tail's limit; with aqm = '{aqm}' the queue is limited by aqm_params.limit (packets) instead",
        )
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ScenarioError(f"{table}.aqm_params", "must be a table")
    for key in params:
        if key not in _AQM_KEYS[aqm]:
            raise ScenarioError(
                f"{table}.aqm_params.{key}", f"not a parameter of {aqm}; allowed keys: {', '.join(_AQM_KEYS[aqm])}"
            )
    data["aqm_params"] = {**AQM_DEFAULTS[aqm], **params}
    return data


class ReverseLink(_Table):
    """``[link.reverse]``: the reverse direction's bottleneck, the uplink. The data of up
    flows and the ACKs of down flows wait in its one queue. Its keys are those of
    ``[link]``; a BDP here is its own rate (a trace's mean) x ``link.rtt``."""

    # Fields in the order of the TOML form.
    rate_bps: Optional[Rate] = Field(
        None, alias="rate", description="the uplink's rate (or trace, as link.trace)", examples=["5Mbit"]
    )
    trace: Optional[TraceFile] = None
    # The core's default, as [link]'s: one BDP, here of the uplink's own rate.
    buffer: BufferLimit = Field(
        Buffer.from_core(core_default("link", "buffer")),
        description="drop-tail limit, BDP of the uplink's own rate",
        examples=["1bdp"],
    )
    aqm: Literal[AQMS] = Field(
        DEFAULT_AQM, description=f"{', '.join(AQMS[:-1])} or {AQMS[-1]}, as link.aqm", examples=[DEFAULT_AQM]
    )
    aqm_params: Optional[AqmParams] = None
    loss: Loss = Field(
        core_default("link", "loss"),
        description="random loss of data packets arriving at the uplink (ACKs are spared)",
        examples=["0.5%"],
    )
    loss_model: Optional[GilbertElliott] = None
    ecn_threshold: Optional[BufferLimit] = Field(
        None, description="mark ECN-capable packets CE above this backlog; omit for none", examples=["20pkt"]
    )

    @model_validator(mode="before")
    @classmethod
    def _capacity_and_queue(cls, data: Any) -> Any:
        return _capacity_and_queue(data, "link.reverse")

    @model_serializer(mode="wrap")
    def _toml_form(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """In the TOML form, no drop-tail limit beside an AQM."""
        d = handler(self)
        if info.mode == "json" and self.aqm in AQM_PARAMS:
            d["buffer"] = None
        return d

    def to_core(self) -> dict[str, Any]:
        """The core's ``ReverseLinkConfig``: a trace or a rate, never both."""
        core: dict[str, Any] = {"buffer": self.buffer.to_core(), "loss": self.loss}
        if self.trace is not None:
            core["trace"] = self.trace.to_core()
        else:
            core["rate_bps"] = self.rate_bps
        if self.loss_model is not None:
            core["loss_model"] = self.loss_model.to_core()
        if self.aqm_params is not None:
            core["aqm"] = self.aqm_params.to_core(self.aqm)
        if self.ecn_threshold is not None:
            core["ecn_threshold"] = self.ecn_threshold.to_core()
        return core


class Link(_Table):
    # Fields in the order of the TOML form.
    rate_bps: Optional[Rate] = Field(
        None,
        alias="rate",
        description="the bottleneck's rate (or trace: see [Cellular links](cellular.md))",
        examples=["100Mbit"],
    )
    trace: Optional[TraceFile] = None
    rtt_ns: Annotated[Duration, positive("40ms")] = Field(
        alias="rtt", description="base RTT of the bottleneck path (half each way)", examples=["40ms"]
    )
    buffer: BufferLimit = Field(
        Buffer.from_core(core_default("link", "buffer")), description="drop-tail limit", examples=["1bdp"]
    )
    aqm: Literal[AQMS] = Field(
        DEFAULT_AQM,
        description=f"{', '.join(AQMS[:-1])} or {AQMS[-1]}; see [Cellular links](cellular.md)",
        examples=[DEFAULT_AQM],
    )
    aqm_params: Optional[AqmParams] = None
    loss: Loss = Field(
        core_default("link", "loss"),
        description="random loss of data packets arriving at the bottleneck",
        examples=["0.5%"],
    )
    loss_model: Optional[GilbertElliott] = None
    nic_rate_bps: Rate = Field(
        core_default("link", "nic_rate_bps"),
        alias="nic_rate",
        description="each sender's NIC (access link) rate",
        examples=["10Gbit"],
    )
    ecn_threshold: Optional[BufferLimit] = Field(
        None, description="mark ECN-capable packets CE above this backlog; omit for none", examples=["20pkt"]
    )
    ack_trace: Optional[TraceFile] = None
    # The ACK trace's queue (a link model of cellular.md, like ack_trace: no example).
    reverse_buffer: Optional[BufferLimit] = Field(
        None, description="drop-tail limit of the ACK trace's queue (BDP: the ACK link's); omit for no limit"
    )
    # The reverse direction's bottleneck, a table of its own (docs/directions.md).
    reverse: Optional[ReverseLink] = None
    rate_schedule: list[RateStep] = Field(default_factory=list)
    rtt_schedule: list[RttStep] = Field(default_factory=list)
    # The path's MTU (the simulator checks its range, ip_rt_min_pmtu to an IPv4 packet).
    mtu_bytes: Optional[PacketBytes] = Field(
        None,
        alias="mtu",
        description="the path's MTU at the bottleneck, IPv4 packet bytes (the hosts' is tcp.mss + 52): a larger "
        "data packet is dropped there and answered with ICMP fragmentation needed (RFC 1191); omit for none",
        examples=[1400],
    )
    mtu_black_hole: bool = Field(
        False,
        description="true: packets over link.mtu vanish without the ICMP, a path-MTU black hole (RFC 2923 2.1); "
        "needs link.mtu",
        examples=[False],
    )

    @model_validator(mode="before")
    @classmethod
    def _capacity_and_queue(cls, data: Any) -> Any:
        return _capacity_and_queue(data, "link")

    @property
    def reference_rate_bps(self) -> int:
        """The rate BDP-relative sizes refer to: the trace's mean, or ``rate``."""
        if self.trace is not None:
            return self.trace.mean_bps
        assert self.rate_bps is not None
        return self.rate_bps

    @model_serializer(mode="wrap")
    def _toml_form(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """In the TOML form, no drop-tail limit beside an AQM, no empty schedules and no
        black hole but a true one."""
        d = handler(self)
        if info.mode == "json":
            if self.aqm in AQM_PARAMS:
                d["buffer"] = None  # the AQM's own limit holds instead
            for schedule in ("rate_schedule", "rtt_schedule"):
                d[schedule] = d[schedule] or None
            d["mtu_black_hole"] = d["mtu_black_hole"] or None
        return d

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
        if self.reverse_buffer is not None:
            core["reverse_buffer"] = self.reverse_buffer.to_core()
        if self.reverse is not None:
            core["reverse"] = self.reverse.to_core()
        if self.rate_schedule:
            core["rate_schedule"] = [st.to_core() for st in self.rate_schedule]
        if self.rtt_schedule:
            core["rtt_schedule"] = [st.to_core() for st in self.rtt_schedule]
        if self.loss_model is not None:
            core["loss_model"] = self.loss_model.to_core()
        if self.aqm_params is not None:  # only an AQM with parameters has them
            core["aqm"] = self.aqm_params.to_core(self.aqm)
        if self.mtu_bytes is not None:
            core["mtu_bytes"] = self.mtu_bytes
        if self.mtu_black_hole:
            core["mtu_black_hole"] = True
        return core
