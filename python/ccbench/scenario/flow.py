"""The ``[tcp]`` table (stack-wide knobs, Linux sysctl defaults) and ``[[flows]]``
entries (algorithm, start, size, per-flow study knobs).
"""

from __future__ import annotations


from typing import Annotated, Literal, Optional

from pydantic import Field, field_validator

from .. import _core

from .fields import FRTO, MAX_FLOWS_PER_ENTRY, MS, TSO_RTT_LOG, Duration, Rate, S, Size, _int_range, _Table


BBR_FAMILY = ("bbr", "bbr2", "bbr3")


def algorithms() -> list[str]:
    """Congestion-control algorithms the simulator implements."""
    return list(_core.algorithms())


class Tcp(_Table):
    """Stack knobs; the defaults are those of a recent Linux kernel."""

    core_when_changed = ("tso_rtt_log", "frto", "sack")

    mss: Annotated[int, _int_range(64, 9000)] = Field(1448, description="bytes, 64..9000", examples=[1448])
    init_cwnd: Annotated[int, _int_range(1, 1_000_000)] = Field(10, description="segments", examples=[10])
    hz: int = Field(1000, description="kernel tick rate; must divide 1000000", examples=[1000])
    rto_min_ns: Duration = Field(200 * MS, alias="rto_min", description="minimum RTO (TCP_RTO_MIN)",
                                 examples=["200ms"])
    rto_init_ns: Duration = Field(1 * S, alias="rto_init", description="initial RTO (TCP_TIMEOUT_INIT)",
                                  examples=["1s"])
    tsq_limit_bytes: Size = Field(4 * 2**20, alias="tsq_limit",
                                  description="TCP Small Queues cap (tcp_limit_output_bytes)", examples=["4MiB"])
    pacing_shift: Annotated[int, _int_range(0, 31)] = Field(10, description="sk_pacing_shift, 0..31", examples=[10])
    delack_min_ns: Duration = Field(40 * MS, alias="delack_min", description="minimum delayed-ACK timeout (TCP_DELACK_MIN)",
                                    examples=["40ms"])
    tso_rtt_log: Annotated[int, _int_range(0, 31)] = Field(
        TSO_RTT_LOG, description="net.ipv4.tcp_tso_rtt_log (5.18+); 0 = no short-RTT TSO bonus", examples=[9])
    frto: Annotated[int, _int_range(0, 2)] = Field(
        FRTO, description="net.ipv4.tcp_frto: F-RTO (RFC 5682) on a timeout; 0 = off (1 and 2 alike)", examples=[2])
    sack: bool = Field(True, description="net.ipv4.tcp_sack; false = no SACK: plain duplicate ACKs, NewReno recovery",
                       examples=[True])

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


class Flow(_Table):
    """One ``[[flows]]`` entry: ``count`` identical flows."""

    not_in_core = frozenset({"count"})  # the scenario expands the entry into count flows
    # The phone study's knobs and repeated downloads.
    core_when_changed = ("pacing_stride", "fixed_cwnd", "fixed_pacing_rate_bps", "freeze_cc", "repeat", "pause_ns",
                         "rwnd_autotune")

    cca: str = Field(description="reno, cubic, bbr (v1), bbr2, bbr3", examples=["cubic"])
    count: Annotated[int, _int_range(1, MAX_FLOWS_PER_ENTRY)] = Field(
        1, description="expands to N identical flows", examples=[1])
    start_ns: Duration = Field(0, alias="start", description="before the end of the run", examples=["0s"])
    access_delay_ns: Duration = Field(0, alias="access_delay", description="extra one-way delay each way for this flow",
                                      examples=["0ms"])
    size_bytes: Optional[Size] = Field(None, alias="size", description="bytes to transfer; omit for a bulk flow",
                                       examples=["20MB"])
    pacing: Optional[bool] = Field(None, description="omit to follow the algorithm (Reno and Cubic do not pace)",
                                   examples=[True])
    rwnd_bytes: Size = Field(6 * 2**20, alias="rwnd", description="receive-window limit, at least one MSS",
                             examples=["6MiB"])
    params: dict[str, float] = Field(default_factory=dict, description="algorithm parameter overrides by name (numbers)",
                                     examples=[{}])
    ecn: Literal["off", "classic", "low"] = Field(
        "off", description="off, classic (RFC 3168) or low (low-threshold route, DCTCP-style echo)", examples=["off"])
    pacing_stride: Annotated[int, _int_range(1, 1000)] = Field(
        1, description="the phone study's pacing stride, 1..1000", examples=[1])
    fixed_cwnd: Optional[Annotated[int, _int_range(1, 1_000_000_000)]] = Field(
        None, description="hold cwnd (segments); omit to let the algorithm set it", examples=[70])
    fixed_pacing_rate_bps: Optional[Rate] = Field(
        None, alias="fixed_pacing_rate", description="hold the pacing rate; omit to let the algorithm set it",
        examples=["140Mbit"])
    freeze_cc: bool = Field(False, description="skip the algorithm's per-ACK model update", examples=[False])
    # Connections are numbered in 16 bits (world/mod.rs).
    repeat: Annotated[int, _int_range(1, 65_535)] = Field(
        1, description="with size: this many downloads, each on a new connection", examples=[1])
    pause_ns: Duration = Field(0, alias="pause", description="wait after each download completes before the next",
                               examples=["0s"])
    rwnd_autotune: bool = Field(
        False, description="true: the receive buffer starts at 128 KiB and grows (Linux DRS) up to rwnd",
        examples=[False])

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
        return dict(sorted(v.items()))
