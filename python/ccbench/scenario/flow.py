"""The ``[tcp]`` table (stack-wide knobs, Linux sysctl defaults) and ``[[flows]]``
entries (algorithm, start, size, per-flow study knobs).
"""

from __future__ import annotations


from typing import Annotated, Any, Literal, Optional

from pydantic import Field, field_validator

from .. import _core
from ..units import format_duration, format_rate, format_size

from .fields import FRTO, MAX_FLOWS_PER_ENTRY, MS, TSO_RTT_LOG, Duration, Rate, S, Size, _int_range, _Table


BBR_FAMILY = ("bbr", "bbr2", "bbr3")


def algorithms() -> list[str]:
    """Congestion-control algorithms the simulator implements."""
    return list(_core.algorithms())


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
    sack: bool = True  # net.ipv4.tcp_sack: false = the peers do not SACK (NewReno recovery)

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
            "sack": self.sack,
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
            **({"sack": self.sack} if not self.sack else {}),
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
    repeat: Annotated[int, _int_range(1, 65_535)] = 1  # connections are numbered in 16 bits (world/mod.rs)
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




