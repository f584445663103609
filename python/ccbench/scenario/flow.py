"""The ``[tcp]`` table (stack-wide knobs, Linux sysctl defaults) and ``[[flows]]``
entries (algorithm, start, size, per-flow study knobs).
"""

from __future__ import annotations


from typing import Annotated, Any, Literal, Optional

from pydantic import BeforeValidator, Field, field_validator

from .. import _core
from ..bpf import name as bpf_name

from .fields import MAX_FLOWS_PER_ENTRY, S, Duration, Rate, Size, _int_range, _Table, core_default, core_range, positive


BBR_FAMILY = ("bbr", "bbr2", "bbr3")
#: The largest `tcp_wmem` value the kernel takes (INT_MAX).
WMEM_LIMIT = 2**31 - 1
#: Linux's `tcp_rmem` (`tcp_init`). The core has no default of its own: it takes
#: `tcp.rmem` only when set, and otherwise sizes the buffer as before the setting.
RMEM_DEFAULT = (4096, 131072, 6291456)


def _as_tuple(value: Any) -> Any:
    """A TOML array as the tuple a fixed-length setting is."""
    return tuple(value) if isinstance(value, list) else value


def _sysctl_text(value: Any) -> str:
    """A setting as its sysctl reads: an integer, or a vector's values space-separated."""
    if isinstance(value, tuple):
        return " ".join(str(int(v)) for v in value)
    return str(int(value))


def algorithms() -> list[str]:
    """Congestion-control algorithms the simulator implements."""
    return list(_core.algorithms())


def _tcp(name: str) -> Any:
    return core_default("tcp", name)


def _flow(name: str) -> Any:
    return core_default("flow", name)


def _sysctl(name: str) -> dict[str, str]:
    """Marks a field that is the sender's ``net.ipv4.<name>``, which real-kernel engines set."""
    return {"sysctl": f"net.ipv4.{name}"}


class Tcp(_Table):
    """Stack knobs; the defaults are those of a recent Linux kernel."""

    core_when_changed = (
        "tso_rtt_log",
        "frto",
        "sack",
        "tso_win_divisor",
        "min_tso_segs",
        "slow_start_after_idle",
        "pacing_ss_ratio",
        "pacing_ca_ratio",
        "wmem",
        "rmem",
        "mtu_probing",
        "base_mss",
        "probe_threshold",
        "probe_interval_ns",
        "mtu_probe_floor",
    )

    mss: Annotated[int, core_range("tcp.mss")] = Field(_tcp("mss"), description="bytes, 64..9000", examples=[1448])
    init_cwnd: Annotated[int, core_range("tcp.init_cwnd")] = Field(
        _tcp("init_cwnd"), description="segments", examples=[10]
    )
    hz: int = Field(_tcp("hz"), description="kernel tick rate; must divide 1000000", examples=[1000])
    rto_min_ns: Annotated[Duration, positive("200ms")] = Field(
        _tcp("rto_min_ns"), alias="rto_min", description="minimum RTO (TCP_RTO_MIN)", examples=["200ms"]
    )
    rto_init_ns: Annotated[Duration, positive("200ms")] = Field(
        _tcp("rto_init_ns"), alias="rto_init", description="initial RTO (TCP_TIMEOUT_INIT)", examples=["1s"]
    )
    tsq_limit_bytes: Size = Field(
        _tcp("tsq_limit_bytes"),
        alias="tsq_limit",
        description="TCP Small Queues cap (tcp_limit_output_bytes)",
        examples=["4MiB"],
        json_schema_extra=_sysctl("tcp_limit_output_bytes"),
    )
    pacing_shift: Annotated[int, core_range("tcp.pacing_shift")] = Field(
        _tcp("pacing_shift"), description="sk_pacing_shift, 0..31", examples=[10]
    )
    delack_min_ns: Duration = Field(
        _tcp("delack_min_ns"),
        alias="delack_min",
        description="minimum delayed-ACK timeout (TCP_DELACK_MIN)",
        examples=["40ms"],
    )
    tso_rtt_log: Annotated[int, core_range("tcp.tso_rtt_log")] = Field(
        _tcp("tso_rtt_log"),
        description="net.ipv4.tcp_tso_rtt_log (5.18+); 0 = no short-RTT TSO bonus",
        examples=[9],
        json_schema_extra=_sysctl("tcp_tso_rtt_log"),
    )
    frto: Annotated[int, core_range("tcp.frto")] = Field(
        _tcp("frto"),
        description="net.ipv4.tcp_frto: F-RTO (RFC 5682) on a timeout; 0 = off (1 and 2 alike)",
        examples=[2],
        json_schema_extra=_sysctl("tcp_frto"),
    )
    sack: bool = Field(
        _tcp("sack"),
        description="net.ipv4.tcp_sack; false = no SACK: plain duplicate ACKs, NewReno recovery",
        examples=[True],
        json_schema_extra=_sysctl("tcp_sack"),
    )
    tso_win_divisor: Annotated[int, core_range("tcp.tso_win_divisor")] = Field(
        _tcp("tso_win_divisor"),
        description="net.ipv4.tcp_tso_win_divisor: TSO deferral ends once 1/N of the window "
        "is free; 0 = at most three segments' room",
        examples=[3],
        json_schema_extra=_sysctl("tcp_tso_win_divisor"),
    )
    min_tso_segs: Annotated[int, core_range("tcp.min_tso_segs")] = Field(
        _tcp("min_tso_segs"),
        description="net.ipv4.tcp_min_tso_segs: the smallest TSO burst of Reno and Cubic (BBR sets its own)",
        examples=[2],
        json_schema_extra=_sysctl("tcp_min_tso_segs"),
    )
    slow_start_after_idle: bool = Field(
        _tcp("slow_start_after_idle"),
        description="net.ipv4.tcp_slow_start_after_idle: a write after more than an "
        "RTO idle restarts from the initial window",
        examples=[True],
        json_schema_extra=_sysctl("tcp_slow_start_after_idle"),
    )
    pacing_ss_ratio: Annotated[int, core_range("tcp.pacing_ss_ratio")] = Field(
        _tcp("pacing_ss_ratio"),
        description="net.ipv4.tcp_pacing_ss_ratio: Reno's and Cubic's pacing rate below half "
        "of ssthresh, in percent of cwnd/SRTT (it also sizes TSO bursts and TSQ)",
        examples=[200],
        json_schema_extra=_sysctl("tcp_pacing_ss_ratio"),
    )
    pacing_ca_ratio: Annotated[int, core_range("tcp.pacing_ca_ratio")] = Field(
        _tcp("pacing_ca_ratio"),
        description="net.ipv4.tcp_pacing_ca_ratio: the same from there on",
        examples=[120],
        json_schema_extra=_sysctl("tcp_pacing_ca_ratio"),
    )

    wmem: Annotated[tuple[Size, Size, Size], BeforeValidator(_as_tuple)] = Field(
        tuple(_tcp("wmem")),
        description="net.ipv4.tcp_wmem: the send buffer's minimum, its size as a socket "
        "opens, and how far autotuning may grow it",
        examples=[["4KiB", "16KiB", "4MiB"]],
        json_schema_extra=_sysctl("tcp_wmem"),
    )

    rmem: Annotated[tuple[Size, Size, Size], BeforeValidator(_as_tuple)] = Field(
        RMEM_DEFAULT,
        description="net.ipv4.tcp_rmem: the receive buffer's minimum, its size as a socket opens "
        "(which sizes the first window), and how far autotuning may grow it; acts on rwnd_autotune "
        "flows. Left at the default, the buffer may grow to room for rwnd",
        examples=[["4KiB", "128KiB", "6MiB"]],
        json_schema_extra=_sysctl("tcp_rmem"),
    )

    mtu_probing: Annotated[int, core_range("tcp.mtu_probing")] = Field(
        _tcp("mtu_probing"),
        description="net.ipv4.tcp_mtu_probing (RFC 4821 packetization-layer path-MTU discovery): 0 off; 1 once "
        "the retransmit timer suspects a path-MTU black hole (tcp_write_timeout); 2 from the start",
        examples=[0],
        json_schema_extra=_sysctl("tcp_mtu_probing"),
    )
    base_mss: Annotated[int, core_range("tcp.base_mss")] = Field(
        _tcp("base_mss"),
        description="net.ipv4.tcp_base_mss: the MSS probing starts from (and black-hole detection drops to)",
        examples=[1024],
        json_schema_extra=_sysctl("tcp_base_mss"),
    )
    probe_threshold: Annotated[int, core_range("tcp.probe_threshold")] = Field(
        _tcp("probe_threshold"),
        description="net.ipv4.tcp_probe_threshold: probing stops once its search range is narrower than this, bytes",
        examples=[8],
        json_schema_extra=_sysctl("tcp_probe_threshold"),
    )
    probe_interval_ns: Annotated[Duration, core_range("tcp.probe_interval_ns")] = Field(
        _tcp("probe_interval_ns"),
        alias="probe_interval",
        description="net.ipv4.tcp_probe_interval: after this long probing searches again from the top "
        "(the kernel engine sets it in whole seconds)",
        examples=["10min"],
        json_schema_extra={**_sysctl("tcp_probe_interval"), "sysctl_unit_ns": S},
    )
    mtu_probe_floor: Annotated[int, core_range("tcp.mtu_probe_floor")] = Field(
        _tcp("mtu_probe_floor"),
        description="net.ipv4.tcp_mtu_probe_floor: the smallest MSS black-hole detection lowers to",
        examples=[48],
        json_schema_extra=_sysctl("tcp_mtu_probe_floor"),
    )

    @field_validator("wmem", "rmem")
    @classmethod
    def _buffer_sizes_in_order(cls, v: tuple[int, int, int]) -> tuple[int, int, int]:
        if not 1 <= v[0] <= v[1] <= v[2] <= WMEM_LIMIT:
            raise ValueError(
                f"must be [min, default, max] with 1 B <= min <= default <= max <= {WMEM_LIMIT} B "
                "(INT_MAX, the most the kernel takes)"
            )
        return v

    @classmethod
    def sysctl_fields(cls) -> dict[str, str]:
        """``net.ipv4`` sysctl -> the field that is it."""
        return {
            extra["sysctl"]: name
            for name, field in cls.model_fields.items()
            if isinstance(extra := field.json_schema_extra, dict) and "sysctl" in extra
        }

    def sysctls(self) -> dict[str, str]:
        """The fields that are ``net.ipv4`` sysctls, as a kernel takes them (a duration in
        the sysctl's unit, ``sysctl_unit_ns``, rounded down)."""
        out = {}
        for key, name in self.sysctl_fields().items():
            extra = type(self).model_fields[name].json_schema_extra
            unit = extra.get("sysctl_unit_ns", 1) if isinstance(extra, dict) else 1
            value = getattr(self, name)
            out[key] = _sysctl_text(value // unit if isinstance(unit, int) and unit > 1 else value)
        return out

    @field_validator("hz")
    @classmethod
    def _hz_divides_second(cls, v: int) -> int:
        # A jiffy must be a whole number of microseconds, the unit the RTT estimator's
        # usecs_to_jiffies divides by (crates/ccbench-sim/src/tcp/rtt.rs).
        if v <= 0 or 1_000_000 % v != 0:
            raise ValueError(
                "must divide 1000000, so that a jiffy is a whole number of microseconds, e.g. 100, 250, 1000"
            )
        return v


class Flow(_Table):
    """One ``[[flows]]`` entry: ``count`` identical flows."""

    not_in_core = frozenset({"count"})  # the scenario expands the entry into count flows
    # The phone study's knobs and repeated downloads.
    core_when_changed = (
        "pacing_stride",
        "fixed_cwnd",
        "fixed_pacing_rate_bps",
        "freeze_cc",
        "repeat",
        "pause_ns",
        "rwnd_autotune",
        "sndbuf_bytes",
        "connect",
        "fastopen",
        "direction",
    )

    cca: str = Field(
        description=f"{', '.join(algorithms())} (bbr is v1), or bpf:PATH (a BPF object or its C source)",
        examples=["cubic"],
    )
    count: Annotated[int, _int_range(1, MAX_FLOWS_PER_ENTRY)] = Field(
        1, description="expands to N identical flows", examples=[1]
    )
    start_ns: Duration = Field(
        _flow("start_ns"), alias="start", description="before the end of the run", examples=["0s"]
    )
    access_delay_ns: Duration = Field(
        _flow("access_delay_ns"),
        alias="access_delay",
        description="extra one-way delay each way for this flow",
        examples=["0ms"],
    )
    size_bytes: Optional[Annotated[Size, positive("20MB", " (omit size for a bulk flow)")]] = Field(
        None, alias="size", description="bytes to transfer; omit for a bulk flow", examples=["20MB"]
    )
    pacing: Optional[bool] = Field(
        None, description="omit to follow the algorithm (Reno and Cubic do not pace)", examples=[True]
    )
    rwnd_bytes: Size = Field(
        _flow("rwnd_bytes"), alias="rwnd", description="receive-window limit, at least one MSS", examples=["6MiB"]
    )
    sndbuf_bytes: Optional[Annotated[Size, core_range("flows.sndbuf_bytes")]] = Field(
        None,
        alias="sndbuf",
        description="SO_SNDBUF as the application sets it (iperf3 -w): the kernel keeps twice "
        "this, not autotuned; omit for tcp.wmem's autotuning",
        examples=["64KiB"],
    )
    params: dict[str, float] = Field(
        default_factory=dict, description="algorithm parameter overrides by name (numbers)", examples=[{}]
    )
    ecn: Literal["off", "classic", "low"] = Field(
        _flow("ecn"),
        description="off, classic (RFC 3168) or low (low-threshold route, DCTCP-style echo)",
        examples=["off"],
    )
    pacing_stride: Annotated[int, core_range("flows.pacing_stride")] = Field(
        _flow("pacing_stride"), description="the phone study's pacing stride, 1..1000", examples=[1]
    )
    fixed_cwnd: Optional[Annotated[int, core_range("flows.fixed_cwnd")]] = Field(
        None, description="hold cwnd (segments); omit to let the algorithm set it", examples=[70]
    )
    fixed_pacing_rate_bps: Optional[Rate] = Field(
        None,
        alias="fixed_pacing_rate",
        description="hold the pacing rate; omit to let the algorithm set it",
        examples=["140Mbit"],
    )
    freeze_cc: bool = Field(
        _flow("freeze_cc"), description="skip the algorithm's per-ACK model update", examples=[False]
    )
    repeat: Annotated[int, core_range("flows.repeat")] = Field(
        _flow("repeat"), description="with size: this many downloads, each on a new connection", examples=[1]
    )
    pause_ns: Duration = Field(
        _flow("pause_ns"),
        alias="pause",
        description="wait after each download completes before the next",
        examples=["0s"],
    )
    rwnd_autotune: bool = Field(
        _flow("rwnd_autotune"),
        description="true: the receive buffer starts at tcp.rmem's default and grows (Linux DRS) up to "
        "tcp.rmem's max (room for rwnd when tcp.rmem is left at its default); rwnd clamps the window",
        examples=[False],
    )

    connect: Literal["ahead", "sender", "receiver"] = Field(
        _flow("connect"),
        description="ahead: connected before the data is due (as iperf3 runs a test); sender: the sender "
        "connects when its data is due, then writes; receiver: the receiver connects when its download is "
        "due and sends a 100-byte request, which the sender answers (a web download). The handshake counts "
        "in a download's time",
        examples=["ahead"],
    )
    fastopen: bool = Field(
        _flow("fastopen"),
        description="TCP Fast Open on both ends: after a flow's first connection, the opener's data "
        '(the sender\'s, or the receiver\'s request) goes in the SYN; needs connect = "sender" or "receiver"',
        examples=[False],
    )

    direction: Literal["down", "up"] = Field(
        "down",
        description="which way the data goes: down through [link], or up through [link.reverse] (the uplink), "
        "its ACKs the other way",
        examples=["down"],
    )

    @field_validator("cca")
    @classmethod
    def _known_cca(cls, v: str) -> str:
        return known_cca(v)

    @field_validator("params")
    @classmethod
    def _finite_params(cls, v: dict[str, float]) -> dict[str, float]:
        return finite_params(v)


def known_cca(v: str) -> str:
    """An algorithm the simulator implements (lower case), or a BPF object's resolved name."""
    if bpf_name.is_bpf(v.strip()):
        return bpf_name.resolve(v)
    name = v.strip().lower()
    allowed = algorithms()
    if name not in allowed:
        raise ValueError(
            f"unknown algorithm {v!r}; allowed: {', '.join(allowed)}, or bpf:PATH (a BPF object or its C source)"
        )
    return name


def finite_params(v: dict[str, float]) -> dict[str, float]:
    """Algorithm parameter overrides, finite, in name order."""
    for name, x in v.items():
        if x != x or x in (float("inf"), float("-inf")):
            raise ValueError(f"parameter {name!r} must be a finite number")
    return dict(sorted(v.items()))
