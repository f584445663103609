"""The agents' clock for timed traffic: waits that end within tens of microseconds of
when they are due (a selector's timeout is rounded up to whole milliseconds), and the
kernel's receive time stamps (``CLOCK_REALTIME``) on the run's ``CLOCK_MONOTONIC``
scale. Standard library only (the agents run by path)."""

from __future__ import annotations

import ctypes
import selectors
import time
from typing import Any

# Below this, a wait sleeps rather than blocks in the selector (epoll's timeout is in
# whole milliseconds, rounded up).
SLEEP_BELOW_NS = 2_000_000
# prctl(2)'s option that sets the timer slack (<linux/prctl.h>).
PR_SET_TIMERSLACK = 29


def precise_timers() -> None:
    """Wake up when asked, not up to 50 µs later (the default timer slack)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def select_until(sel: selectors.BaseSelector, wake_ns: int) -> list[tuple[selectors.SelectorKey, int]]:
    """The selector's events, waiting no later than ``wake_ns`` (``CLOCK_MONOTONIC``): in
    the selector while the wake-up is far, then, with nothing to read or write, asleep
    until it is due."""
    left = wake_ns - time.monotonic_ns()
    if left > SLEEP_BELOW_NS:
        return sel.select((left - SLEEP_BELOW_NS) / 1e9)
    events = sel.select(0)
    if events:
        return events
    left = wake_ns - time.monotonic_ns()
    if left > 0:
        time.sleep(left / 1e9)
    return []


class Clocks:
    """``CLOCK_REALTIME`` read at the same instant as ``CLOCK_MONOTONIC``: the offset that
    turns the kernel's time stamps (realtime) into the run's clock (monotonic)."""

    def __init__(self) -> None:
        # The tightest of a few readings: the offset is good to about a microsecond.
        best: Any = None
        for _ in range(5):
            a = time.monotonic_ns()
            r = time.clock_gettime_ns(time.CLOCK_REALTIME)
            b = time.monotonic_ns()
            if best is None or b - a < best[0]:
                best = (b - a, r - (a + b) // 2)
        self.realtime_minus_monotonic = best[1]

    def monotonic_of(self, realtime_ns: int) -> int:
        return realtime_ns - self.realtime_minus_monotonic

    def realtime_of(self, monotonic_ns: int) -> int:
        return monotonic_ns + self.realtime_minus_monotonic
