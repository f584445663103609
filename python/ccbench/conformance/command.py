"""``ccbench conformance``: run packetdrill scripts and print one verdict per script.

Kept apart from ccbench.cli.conformance so that ``ccbench --help`` imports none of it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import ScenarioError
from .script import find_scripts
from .verdict import Verdict


def collect(paths: list[str]) -> list[tuple[Path, str]]:
    """(script, name) for every script under ``paths``; names are relative to the
    directory given, a file's relative to its parent's parent (``slow_start/x.pkt``, as
    ``kernel.collect`` names it, so the two sides' verdicts join). Bad input raises
    :class:`ScenarioError`."""
    if not paths:
        raise ScenarioError("PATH", "missing; give packetdrill scripts (*.pkt) or directories holding them")
    out: list[tuple[Path, str]] = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise ScenarioError("PATH", f"{p!r} does not exist")
        found = find_scripts([path])
        if not found:
            raise ScenarioError("PATH", f"no *.pkt scripts under {p!r}")
        for f, root in found:
            name = f.relative_to(root) if path.is_dir() else f.resolve().relative_to(f.resolve().parent.parent)
            out.append((f, name.as_posix()))
    return out


def run_simulator(scripts: list[tuple[Path, str]], tolerance_us: Optional[int],
                  progress: Callable[[Verdict], None]) -> list[Verdict]:  # fmt: skip
    from .sim import run_script

    verdicts = []
    for f, name in scripts:
        v = run_script(f, name, tolerance_us)
        progress(v)
        verdicts.append(v)
    return verdicts


def line(v: Verdict) -> str:
    """One human-readable line for a verdict."""
    head = f"{v.outcome:<11} {v.script}"
    if v.outcome == "unsupported" or (v.outcome != "pass" and v.mismatch is None):
        return f"{head}: {v.reason}"
    if v.mismatch is not None:
        m = v.mismatch
        at = f" (script time {m.time_us / 1e6:.6f} s)" if m.time_us is not None else ""
        kind = " [timing only]" if m.timing_only else ""
        return f"{head}: line {m.line}: expected {m.expected!r}, got {m.actual!r}{at}{kind}"
    return head


def summary(verdicts: list[Verdict], stack: str) -> str:
    counts = {o: sum(v.outcome == o for v in verdicts) for o in ("pass", "fail", "unsupported")}
    return (f"{len(verdicts)} scripts on {stack}: {counts['pass']} pass, {counts['fail']} fail, "
            f"{counts['unsupported']} unsupported")  # fmt: skip


def load_expected(path: str) -> dict[str, Verdict]:
    """Verdicts recorded by ``ccbench conformance --kernel --json``, by script name."""
    try:
        data = json.loads(Path(path).read_text())
        return {d["script"]: Verdict.from_dict(d) for d in data["scripts"]}
    except FileNotFoundError:
        raise ScenarioError("--expect", f"{path!r} does not exist") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ScenarioError("--expect", f"{path!r} is not a verdicts file written with --json ({e})") from None


#: A timing-only failure this close to the expected time is a matter of the kernel's
#: scheduling; further off, the stack behaved differently (a segment held for an RTO).
TIMING_SLACK_US = 10_000


def _timing_only(v: Verdict) -> bool:
    """A failure only in time, by at most :data:`TIMING_SLACK_US`."""
    m = v.mismatch
    if v.outcome != "fail" or m is None or not m.timing_only or m.time_us is None:
        return False
    at = re.search(r"\bat (\d+\.\d+) s(?:ec)?\b", m.actual)
    # A verdict that does not say when the packet came (a kernel's) is taken at its word.
    return at is None or abs(float(at.group(1)) * 1e6 - m.time_us) <= TIMING_SLACK_US


def disagreement(got: Verdict, want: Optional[Verdict]) -> Optional[str]:
    """Why ``got`` does not reproduce ``want`` (None when it does): the same outcome and,
    for a failure, the same first mismatch line and kind (timing only or not). Scripts
    either side cannot run are not held against it, nor is a timing-only failure against
    a pass: whether the kernel meets a script's few milliseconds of tolerance changes
    from run to run with how late packetdrill handles the packet that anchors the time."""
    if want is None:
        return "no recorded verdict"
    if got.outcome == "unsupported" or want.outcome == "unsupported":
        return None
    if {got.outcome, want.outcome} == {"pass", "fail"} and (_timing_only(got) or _timing_only(want)):
        return None
    if got.outcome != want.outcome:
        return f"{got.outcome} here, {want.outcome} on {want.stack}"
    if got.outcome == "fail" and got.mismatch and want.mismatch:
        if got.mismatch.line != want.mismatch.line:
            return f"first mismatch at line {got.mismatch.line} here, line {want.mismatch.line} on {want.stack}"
        if got.mismatch.timing_only != want.mismatch.timing_only:
            return f"line {got.mismatch.line}: timing_only {got.mismatch.timing_only} here, {want.mismatch.timing_only} on {want.stack}"
    return None


def as_json(verdicts: list[Verdict], stack: str) -> dict[str, Any]:
    return {"stack": stack, "scripts": [v.to_dict() for v in verdicts]}
