"""Shared pieces of the scenario's tables: strict immutable tables whose TOML keys are
the field aliases, unit-parsing field types, integer ranges, and the constants the
tables share.
"""

from __future__ import annotations


from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict

from ..traces import Trace, load_trace
from ..units import Buffer, parse_buffer, parse_duration, parse_loss, parse_probability, parse_rate, parse_size


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


