"""Human units: every accepted spelling, the rejections, and exact round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ccbench.units import (
    Buffer,
    format_buffer,
    format_duration,
    format_loss,
    format_rate,
    format_size,
    parse_buffer,
    parse_duration,
    parse_loss,
    parse_rate,
    parse_size,
)


@pytest.mark.parametrize(
    "text, ns",
    [
        ("250ns", 250),
        ("10us", 10_000),
        ("10µs", 10_000),
        ("40ms", 40_000_000),
        ("0.1ms", 100_000),
        ("30s", 30_000_000_000),
        ("1.5s", 1_500_000_000),
        ("2min", 120_000_000_000),
        ("10 ms", 10_000_000),
        ("0s", 0),
        ("1e3ms", 1_000_000_000),
    ],
)
def test_durations(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize(
    "value, match",
    [
        ("10 parsecs", "unknown duration unit 'parsecs'.*ns, us, ms, s, min"),
        (30, "needs a unit"),
        ("30", "needs a unit"),
        ("-5ms", "must not be negative"),
        ("0.5ns", "whole number of nanoseconds"),
        ("ms", "not a duration"),
        ("", "not a duration"),
        (True, "expected a duration"),
        (None, "expected a duration"),
        ("1e12s", "too large"),
    ],
)
def test_bad_durations(value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_duration(value)


@pytest.mark.parametrize(
    "text, bps",
    [
        ("100Mbit", 100_000_000),
        ("1Gbit", 1_000_000_000),
        ("500kbit", 500_000),
        ("500Kbit", 500_000),
        ("100Mbps", 100_000_000),
        ("100Mbit/s", 100_000_000),
        ("100mbit", 100_000_000),
        ("2.5Gbit", 2_500_000_000),
        ("1Tbit", 10**12),
        ("9600bit", 9600),
        ("9600bps", 9600),
        (1_000_000, 1_000_000),
        (1e6, 1_000_000),
        ("1000000", 1_000_000),
    ],
)
def test_rates(text: object, bps: int) -> None:
    assert parse_rate(text) == bps


@pytest.mark.parametrize(
    "value, match",
    [
        ("0", "must be positive"),
        (0, "must be positive"),
        ("0Mbit", "must be positive"),
        ("-100Mbit", "must be positive"),
        ("100MB/s", "byte rates"),
        ("100MBps", "byte rates"),
        ("100 furlongs", "unknown rate unit"),
        ("0.5bit", "whole number of bit/s"),
        ("fast", "not a rate"),
        ("1e30bit", "too large"),
    ],
)
def test_bad_rates(value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_rate(value)


@pytest.mark.parametrize(
    "text, nbytes",
    [
        ("1500B", 1500),
        ("1500", 1500),
        (1500, 1500),
        ("256KB", 256_000),
        ("256kB", 256_000),
        ("20MB", 20_000_000),
        ("1GB", 10**9),
        ("1TB", 10**12),
        ("64KiB", 65_536),
        ("6MiB", 6 * 2**20),
        ("1GiB", 2**30),
        ("1TiB", 2**40),
        ("1.5KiB", 1536),
        ("20 mb", 20_000_000),
        ("0B", 0),
    ],
)
def test_sizes(text: object, nbytes: int) -> None:
    assert parse_size(text) == nbytes


@pytest.mark.parametrize(
    "value, match",
    [
        ("-1KB", "must not be negative"),
        ("0.5B", "whole number of bytes"),
        ("20 parsecs", "unknown size unit"),
        ("big", "not a size"),
        ("1e30B", "too large"),
    ],
)
def test_bad_sizes(value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_size(value)


@pytest.mark.parametrize(
    "text, buffer",
    [
        ("1bdp", Buffer("bdp", 1.0)),
        ("2bdp", Buffer("bdp", 2.0)),
        ("0.5bdp", Buffer("bdp", 0.5)),
        ("10 BDP", Buffer("bdp", 10.0)),
        ("256KB", Buffer("bytes", 256_000)),
        ("64KiB", Buffer("bytes", 65_536)),
        (100_000, Buffer("bytes", 100_000)),
        ("100pkt", Buffer("packets", 100)),
        ("100pkts", Buffer("packets", 100)),
        ("100packets", Buffer("packets", 100)),
        ("1 packet", Buffer("packets", 1)),
    ],
)
def test_buffers(text: object, buffer: Buffer) -> None:
    assert parse_buffer(text) == buffer


@pytest.mark.parametrize(
    "value, match",
    [
        ("-1bdp", "must not be negative"),
        ("-3pkt", "must not be negative"),
        ("1.5pkt", "whole number of packets"),
        ("-1KB", "must not be negative"),
        ("3 furlongs", "unknown buffer unit"),
        ("1e400bdp", "too large"),
    ],
)
def test_bad_buffers(value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_buffer(value)


def test_buffer_core_form() -> None:
    assert Buffer("bdp", 1.0).to_core() == {"bdp": 1.0}
    assert Buffer("packets", 100).to_core() == {"packets": 100}
    assert Buffer("bytes", 1500).to_core() == {"bytes": 1500}


@pytest.mark.parametrize(
    "value, fraction",
    [("0.5%", 0.005), ("0%", 0.0), ("12%", 0.12), (0.005, 0.005), (0, 0.0), ("0.005", 0.005), ("99.9%", 0.999)],
)
def test_loss(value: object, fraction: float) -> None:
    assert parse_loss(value) == fraction


@pytest.mark.parametrize("value", ["150%", "100%", 1.0, 1, -0.1, "-1%"])
def test_loss_out_of_range(value: object) -> None:
    with pytest.raises(ValueError, match="at least 0% and below 100%"):
        parse_loss(value)


def test_loss_unit() -> None:
    with pytest.raises(ValueError, match="unknown loss unit"):
        parse_loss("5 percent")


@pytest.mark.parametrize(
    "fmt, value, text",
    [
        (format_duration, 30_000_000_000, "30s"),
        (format_duration, 40_000_000, "40ms"),
        (format_duration, 1_500_000_000, "1500ms"),
        (format_duration, 0, "0s"),
        (format_duration, 7, "7ns"),
        (format_rate, 100_000_000, "100Mbit"),
        (format_rate, 10**10, "10Gbit"),
        (format_rate, 1234, "1234bit"),
        (format_size, 6 * 2**20, "6MiB"),
        (format_size, 20_000_000, "20MB"),
        (format_size, 256_000, "256KB"),
        (format_size, 1536, "1536B"),
        (format_size, 0, "0B"),
        (format_loss, 0.005, "0.5%"),
        (format_loss, 0.0, "0%"),
        (format_buffer, Buffer("bdp", 1.0), "1bdp"),
        (format_buffer, Buffer("bdp", 0.25), "0.25bdp"),
        (format_buffer, Buffer("packets", 100), "100pkt"),
        (format_buffer, Buffer("bytes", 65_536), "64KiB"),
    ],
)
def test_formatting(fmt, value, text: str) -> None:
    assert fmt(value) == text


@given(st.integers(min_value=0, max_value=10**15))
def test_duration_round_trip(ns: int) -> None:
    assert parse_duration(format_duration(ns)) == ns


@given(st.integers(min_value=1, max_value=10**13))
def test_rate_round_trip(bps: int) -> None:
    assert parse_rate(format_rate(bps)) == bps


@given(st.integers(min_value=0, max_value=2**50))
def test_size_round_trip(nbytes: int) -> None:
    assert parse_size(format_size(nbytes)) == nbytes


@given(st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_loss_round_trip(fraction: float) -> None:
    assert parse_loss(format_loss(fraction)) == fraction


@given(st.floats(min_value=0.0, max_value=1000.0))
def test_bdp_round_trip(x: float) -> None:
    assert parse_buffer(format_buffer(Buffer("bdp", x))) == Buffer("bdp", x)
