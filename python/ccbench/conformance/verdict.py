"""One script's outcome on one stack (the simulator or a real kernel)."""

from __future__ import annotations
from dataclasses import asdict, dataclass
from typing import Any, Literal, Optional

Outcome = Literal["pass", "fail", "unsupported"]


@dataclass(frozen=True)
class Mismatch:
    line: int  # 1-based line in the script
    expected: str  # the script's text for what it expected (e.g. "tcpi_snd_cwnd == 18")
    actual: str  # what the stack did (e.g. "tcpi_snd_cwnd = 19", or the segment sent)
    time_us: Optional[int] = None  # script time of the mismatch, µs since the script's start
    timing_only: bool = False  # the right packet at the wrong time


@dataclass(frozen=True)
class Verdict:
    script: str  # path relative to the directory given on the command line (posix)
    stack: str  # "simulator" or "linux <release>"
    outcome: Outcome
    mismatch: Optional[Mismatch] = None
    reason: Optional[str] = None  # for unsupported (and for a kernel run that could not start)
    attempts: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Verdict":
        m = d.get("mismatch")
        return Verdict(**{**d, "mismatch": Mismatch(**m) if m else None})
