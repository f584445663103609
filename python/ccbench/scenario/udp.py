"""``[[flows]]`` entries with ``kind = "udp"``: unresponsive flows that send at a set rate
whatever the network does (video, games, a constant-bit-rate tunnel), as the simulator's
``udp[k]`` (crates/ccbench-sim/src/udp/config.rs). See docs/traffic.md.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal, Optional

from pydantic import (
    BeforeValidator,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from ..units import format_rate, parse_rate, parse_size
from .fields import MAX_FLOWS_PER_ENTRY, Duration, KeyProblem, _int_range, _Table, _unit, positive
from .traffic_files import RateFile, read_rate_file

# UDP's and IPv4's headers: the rate counts them with the payload.
UDP_OVERHEAD_BYTES = 28
DEFAULT_PAYLOAD_BYTES = 1472  # a 1500-byte IP packet


def parse_send_rate(value: object) -> int:
    """A sending rate in bit/s, where 0 means silent."""
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            if Decimal(str(value).strip()) == 0:
                return 0
        except InvalidOperation:
            pass
    return parse_rate(value)


def load_rate_file(value: object) -> RateFile:
    if isinstance(value, RateFile):
        return value
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected the path of a rate file (lines of 'seconds rate'), e.g. 'video-rates.txt'")
    return read_rate_file(value)


SendRate = Annotated[int, *_unit(parse_send_rate, format_rate)]
RateFileField = Annotated[RateFile, *_unit(load_rate_file, lambda f: f.path)]


class UdpRateStep(_Table):
    """A UDP flow's ``rate_schedule`` entry: from ``at`` on it sends at ``rate`` (0: silent)."""

    at_ns: Duration = Field(alias="at")
    rate_bps: SendRate = Field(alias="rate")


class UdpFlow(_Table):
    """One ``[[flows]]`` entry with ``kind = "udp"``: ``count`` identical UDP flows."""

    kind: Literal["udp"] = Field(
        description='"udp": unresponsive datagrams at a set rate (a TCP flow leaves kind out, or says "tcp")',
        examples=["udp"],
    )
    count: Annotated[int, _int_range(1, MAX_FLOWS_PER_ENTRY)] = Field(
        1, description="expands to N identical flows", examples=[1]
    )
    rate_bps: Optional[Annotated[int, *_unit(parse_rate, format_rate)]] = Field(
        None,
        alias="rate",
        description="sending rate while on, of IP packets (payload + 28 header bytes); "
        "required unless rate_file has a line at 0",
        examples=["5Mbit"],
    )
    direction: Literal["down", "up"] = Field(
        "down", description="down through [link], or up through [link.reverse]", examples=["down"]
    )
    start_ns: Duration = Field(0, alias="start", description="when it starts sending", examples=["0s"])
    stop_ns: Optional[Duration] = Field(
        None, alias="stop", description="when it stops; omit to send to the end of the run", examples=["20s"]
    )
    payload_bytes: Annotated[int, BeforeValidator(parse_size), positive("1472")] = Field(
        DEFAULT_PAYLOAD_BYTES,
        alias="size",
        description="payload bytes of each datagram, 1..65507 (1472: 1500-byte IP packets)",
        examples=[1472],
    )
    on_ns: Optional[Annotated[Duration, positive("500ms")]] = Field(
        None,
        alias="on",
        description="with off: send for this long, then pause; omit to send throughout",
        examples=["2s"],
    )
    off_ns: Optional[Annotated[Duration, positive("500ms")]] = Field(
        None, alias="off", description="the pause after each on period", examples=["1s"]
    )
    on_off: Literal["fixed", "exponential"] = Field(
        "fixed",
        description="on and off periods fixed, or drawn from exponential distributions of those means",
        examples=["fixed"],
    )
    rate_schedule: list[UdpRateStep] = Field(default_factory=list)
    rate_file: Optional[RateFileField] = Field(
        None,
        description="rates over time from a file, lines of 'seconds rate' (0: silent), instead of rate_schedule",
    )
    access_delay_ns: Duration = Field(
        0, alias="access_delay", description="extra one-way delay each way for this flow", examples=["0ms"]
    )

    @model_validator(mode="after")
    def _consistent(self) -> "UdpFlow":
        if (self.on_ns is None) != (self.off_ns is None):
            raise KeyProblem("on" if self.on_ns is None else "off", "give both on and off periods, or neither")
        if self.on_off == "exponential" and self.on_ns is None:
            raise KeyProblem("on_off", "exponential periods need their means: give on and off")
        if self.rate_file is not None and self.rate_schedule:
            raise KeyProblem("rate_file", "give rate_schedule or rate_file, not both")
        opening = self._file_opening_rate()
        if self.rate_bps is not None and opening is not None:
            raise KeyProblem("rate", "is also set by the rate file's line at 0 s: give one of them")
        if self.rate_bps is None and opening is None:
            raise KeyProblem("rate", "is required (or a rate_file whose first line is at 0 s)")
        if opening == 0:
            raise KeyProblem("rate_file", "the rate at 0 s must be positive; give the flow a later start instead")
        return self

    def _file_opening_rate(self) -> Optional[int]:
        if self.rate_file is not None and self.rate_file.steps[0][0] == 0:
            return self.rate_file.steps[0][1]
        return None

    @property
    def initial_rate_bps(self) -> int:
        """Its rate from the start: ``rate``, or the rate file's line at 0."""
        rate = self.rate_bps if self.rate_bps is not None else self._file_opening_rate()
        assert rate is not None
        return rate

    def steps(self) -> list[tuple[int, int]]:
        """``(at_ns, rate_bps)`` after the start: the schedule's or the rate file's."""
        if self.rate_file is not None:
            return [s for s in self.rate_file.steps if s[0] > 0]
        return [(s.at_ns, s.rate_bps) for s in self.rate_schedule]

    @model_serializer(mode="wrap")
    def _toml_form(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """In the TOML form, no empty schedule."""
        d = handler(self)
        if info.mode == "json":
            d["rate_schedule"] = d["rate_schedule"] or None
        return d

    def to_core(self) -> dict[str, Any]:
        """The simulator's ``UdpFlowConfig`` (one flow; the scenario expands ``count``)."""
        core: dict[str, Any] = {
            "start_ns": self.start_ns,
            "rate_bps": self.initial_rate_bps,
            "payload_bytes": self.payload_bytes,
            "access_delay_ns": self.access_delay_ns,
        }
        if self.direction != "down":
            core["direction"] = self.direction
        if self.stop_ns is not None:
            core["stop_ns"] = self.stop_ns
        if steps := self.steps():
            core["rate_schedule"] = [{"at_ns": at, "rate_bps": rate} for at, rate in steps]
        if self.on_ns is not None and self.off_ns is not None:
            core["on_off"] = {"on_ns": self.on_ns, "off_ns": self.off_ns, "exponential": self.on_off == "exponential"}
        return core
