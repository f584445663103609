"""The simulator's log-linear histogram (``base/histogram.rs``) in the agents, so that a
kernel run's delays are summarized exactly as the simulator's: fixed memory whatever
the run's length, relative error below 1/128. Standard library only."""

from __future__ import annotations

import math
from typing import Any

SUB_BITS = 7
SUB = 1 << SUB_BITS


def bucket_of(v: int) -> int:
    if v < SUB:
        return v
    msb = v.bit_length() - 1
    group = msb - SUB_BITS + 1
    return group * SUB + ((v >> (msb - SUB_BITS)) & (SUB - 1))


def value_of(bucket: int) -> int:
    """The midpoint of a bucket's values."""
    group, sub = divmod(bucket, SUB)
    if group == 0:
        return sub
    shift = group - 1
    return ((sub | SUB) << shift) + ((1 << shift) >> 1)


class Histogram:
    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.n = self.sum = self.max = 0
        self.min = -1

    def record(self, v: int) -> None:
        v = max(v, 0)
        b = bucket_of(v)
        self.counts[b] = self.counts.get(b, 0) + 1
        self.n += 1
        self.sum += v
        self.min = v if self.min < 0 else min(self.min, v)
        self.max = max(self.max, v)

    def quantile(self, q: float) -> int:
        """The value at quantile ``q``, clamped to the observed min and max."""
        if self.n == 0:
            return 0
        rank = min(max(math.ceil(q * self.n), 1), self.n)
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return min(max(value_of(b), self.min), self.max)
        return self.max

    def stats(self, scale: float) -> dict[str, Any]:
        """``summary::Stats`` of the values divided by ``scale`` (1e6: ns to ms)."""
        if self.n == 0:
            return {k: 0.0 for k in ("min", "mean", "p50", "p95", "p99", "max")}
        return {
            "min": self.min / scale,
            "mean": self.sum / self.n / scale,
            "p50": self.quantile(0.50) / scale,
            "p95": self.quantile(0.95) / scale,
            "p99": self.quantile(0.99) / scale,
            "max": self.max / scale,
        }
