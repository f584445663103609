"""What the engines that start processes share: children that die with ccbench (even
when it is killed with SIGKILL), and SIGTERM/SIGHUP unwinding like Ctrl-C so that every
``finally`` and context manager removes what a run created."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from typing import Any, Callable, Iterator

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, niceness: int = 0) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGKILL when ``parent`` exits (prctl
    PR_SET_PDEATHSIG survives exec), optionally at a lower priority."""

    def preexec() -> None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
        if niceness:
            with contextlib.suppress(OSError):
                os.nice(niceness)

    return preexec


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a run: unwind and clean up like Ctrl-C."""


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block (on the main thread), SIGTERM and SIGHUP raise Interrupted."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
