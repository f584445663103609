"""What one packetdrill run says, read into an outcome and the first mismatch.

packetdrill stops at the first failure and prints one message on stderr, in one of these
forms (the formats are packetdrill's: run.c, run_packet.c, run_system_call.c, code.c):

* a packet: ``NAME:LINE: error handling packet: MSG`` and, for most messages, the script's
  and the stack's packet as ``script packet:  T DUMP`` / ``actual packet:  T DUMP``; MSG is
  ``timing error: expected outbound packet at X sec but happened at Y sec; tolerance Z
  sec`` (the right packet at the wrong time: every header check comes before the time
  check), ``live packet field tcp_seq: expected: A (0x..) vs actual: B (0x..)``, ``bad value
  in outbound TCP option (kind=2): expected: mss 600 actual: mss 1460``, ``live packet
  payload: expected N bytes vs actual M bytes`` (no dumps), or ``Timed out waiting for
  packet`` when none came (netdev.c);
* a system call: ``NAME:LINE: runtime error in write call: Expected result 10000 but got
  5000 with errno ...``;
* an event at the wrong time: ``NAME:LINE: timing error: expected system call start at ...``;
* a ``%{ }%`` block: packetdrill runs all the blocks' Python after the script, so the
  failing assertion comes last: ``NAME:LINE: error in Python code`` (LINE is the block's
  first line), a traceback quoting the statement, and ``AssertionError: 19`` (the value of
  the assert's message expression);
* set-up the script could not do here (the fq qdisc, a missing tool, a sysctl this kernel
  refuses, a route): stderr of the script's shell commands. These make the script
  ``unsupported``: the run did not test what the script means to test.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional

from .verdict import Mismatch, Outcome


@dataclass(frozen=True)
class Reading:
    """One run's result, before re-runs are counted."""

    outcome: Outcome
    mismatch: Optional[Mismatch] = None
    reason: Optional[str] = None


def read_output(name: str, script: str, returncode: int, stdout: str, stderr: str) -> Reading:
    """Read packetdrill's output for the script file ``name`` (as packetdrill was given it)
    whose text is ``script``. ``stdout`` holds the script's own prints and is not needed."""
    problem = setup_problem(stderr, script)
    if problem is not None:
        return Reading("unsupported", reason=problem)
    if returncode == 0:
        return Reading("pass")
    lines = stderr.splitlines()
    prefix = re.escape(name)
    for i, line in enumerate(lines):
        if m := re.match(rf"{prefix}:(\d+): error handling packet: (.*)$", line):
            return Reading("fail", _packet_mismatch(script, int(m[1]), m[2], lines[i + 1 : i + 3]))
        if m := re.match(rf"{prefix}:(\d+): runtime error in (\w+) call: (.*)$", line):
            return Reading("fail", _syscall_mismatch(script, int(m[1]), m[3]))
        if m := re.match(rf"{prefix}:(\d+): (timing error: .*)$", line):
            n = int(m[1])
            return Reading(
                "fail",
                Mismatch(
                    n,
                    _expected_text(script, n) + _expected_time(m[2]),
                    _actual_time(m[2]),
                    event_times(script).get(n),
                    timing_only=True,
                ),
            )
        if m := re.match(rf"{prefix}:(\d+): error in Python code$", line):
            return _python_failure(script, int(m[1]), lines[i + 1 :])
        if m := re.match(rf"{prefix}:(\d+): (?:parse error|syntax error|error: )(.*)$", line):
            return Reading("unsupported", reason=f"packetdrill cannot run line {m[1]}: {m[2].strip()}")
    last = next((ln.strip() for ln in reversed(lines) if ln.strip()), "no message")
    return Reading("unsupported", reason=f"packetdrill stopped without a verdict (status {returncode}): {last}")


# -- set-up the script could not do ------------------------------------------------------

_QDISC = re.compile(r"\btc\s+qdisc\s+(?:add|replace|change)\s+dev\s+\S+\s+(?:root|parent\s+\S+)\s+(\w+)")


def qdisc_kinds(script: str) -> list[str]:
    """The queueing disciplines the script's ``tc qdisc`` commands install."""
    return sorted(set(_QDISC.findall(script)))


def setup_problem(stderr: str, script: str) -> Optional[str]:
    """Why the script's environment is not what the script set up, or None."""
    for line in stderr.splitlines():
        line = line.strip()
        if "Specified qdisc kind is unknown" in line:
            kinds = [k for k in qdisc_kinds(script) if k not in ("pfifo", "pfifo_fast", "bfifo")]
            kind = ", ".join(kinds) or "a"
            return f"this kernel has no {kind} qdisc (the script's tc qdisc command failed)"
        if m := re.match(r"\S*sh: (?:\d+: )?(\S+): (?:command )?not found$", line):
            return f"needs {m[1]}, which is not installed on this machine"
        if m := re.match(r'sysctl: setting key "([^"]+)"(?:, ignoring)?: (.+)$', line):
            hint = (
                " (net.ipv4.tcp_allowed_congestion_control decides what a network namespace may choose)"
                if m[1].endswith("tcp_congestion_control")
                else ""
            )
            return f"could not set {m[1]}: {m[2]}{hint}"
        if m := re.match(r"sysctl: cannot stat /proc/sys/(\S+): No such file or directory$", line):
            return f"this kernel has no sysctl {m[1].replace('/', '.')}"
        if m := re.match(r"RTNETLINK answers: (.+)$", line):
            return f"a set-up command of the script failed: RTNETLINK answers: {m[1]}"
        if m := re.match(r"error executing route command '(.*)'$", line):
            return f"packetdrill could not route to its tun device: {m[1]}"
        if m := re.match(r"\S+: error executing init command: (.+)$", line):
            return f"the script's init command failed: {m[1]}"
        if m := re.match(r"\S+:(\d+): error executing `(.*)` command: (.+)$", line, re.S):
            return f"the script's command on line {m[1]} failed: {m[3]}"
    return None


# -- packets ---------------------------------------------------------------------------

_DUMP = re.compile(r"(script|actual(?: #\d+)?) packet:\s+(-?\d+\.\d+) (.*)$")


def _packet_mismatch(script: str, line: int, message: str, following: list[str]) -> Mismatch:
    dumps = {}
    for text in following:
        if m := _DUMP.match(text):
            dumps[m[1].split()[0]] = (_usecs(m[2]), m[3].strip())
    expected = _expected_text(script, line)
    actual_time, actual = dumps.get("actual", (None, ""))
    if message.startswith("timing error"):
        return Mismatch(
            line,
            expected + _expected_time(message),
            actual or _actual_time(message),
            actual_time if actual_time is not None else _happened_at(message),
            timing_only=True,
        )
    if message.startswith("Timed out waiting for packet") or message.strip() == "(null)":
        return Mismatch(line, expected, "no packet", event_times(script).get(line))
    if not actual:
        if m := re.match(r"live packet payload: expected (\d+) bytes vs actual (\d+) bytes", message):
            actual = f"{m[2]} bytes of payload"
        else:
            actual = message
    return Mismatch(line, expected, actual, actual_time)


def _expected_time(message: str) -> str:
    if m := re.search(r"expected .*? (at [-\d.]+ sec|in (?:relative )?time range \S+ ?sec)", message):
        return f" {m[1].replace('sec', 's')}"
    return ""


def _actual_time(message: str) -> str:
    m = re.search(r"but happened at ([-+\d.]+) sec", message)
    return f"at {m[1]} s" if m else message


def _happened_at(message: str) -> Optional[int]:
    m = re.search(r"but happened at ([-+\d.]+) sec", message)
    return _usecs(m[1]) if m else None


# -- system calls ----------------------------------------------------------------------


def _syscall_mismatch(script: str, line: int, message: str) -> Mismatch:
    if m := re.match(r"Expected result (-?\d+) but got (-?\d+) with errno (\d+) \((.*)\)", message):
        actual = f"returned {m[2]}" + (f" (errno {m[3]}: {m[4]})" if int(m[2]) < 0 else "")
    elif m := re.match(r"Expected non-negative result but got (-?\d+) with errno (\d+) \((.*)\)", message):
        actual = f"returned {m[1]} (errno {m[2]}: {m[3]})"
    elif m := re.match(r"Expected errno \d+ \(.*?\) but got (\d+) \((.*)\)", message):
        actual = f"errno {m[1]} ({m[2]})"
    elif m := re.match(r"Bad getsockopt optval: expected: .*? actual: (.*)$", message):
        actual = f"optval {m[1].strip()}"
    else:
        actual = message
    return Mismatch(line, _expected_text(script, line), actual, event_times(script).get(line))


# -- %{ }% blocks ----------------------------------------------------------------------


def _python_failure(script: str, block_line: int, traceback: list[str]) -> Reading:
    statement = ""
    exc_type, exc_message = "", ""
    for text in traceback:
        if text.startswith("    ") and not text.strip().startswith(("^", "~")) and not statement:
            statement = text.strip()
        elif m := re.match(r"(\w+(?:Error|Exception|Exit))(?:: (.*))?$", text):
            exc_type, exc_message = m[1], (m[2] or "").strip()
            break
    line = _statement_line(script, block_line, statement)
    time_us = event_times(script).get(block_line)
    if exc_type == "NameError" and (m := re.search(r"name '(tcpi_\w+|\w+)' is not defined", exc_message)):
        return Reading("unsupported", reason=f"packetdrill gives no {m[1]} on this kernel (line {line})")
    condition, message_expr = _assert_parts(statement)
    if exc_type != "AssertionError":
        actual = f"{exc_type}: {exc_message}" if exc_type else "the block's Python failed"
        return Reading("fail", Mismatch(line, condition or statement, actual, time_us))
    return Reading(
        "fail", Mismatch(line, condition or statement, _assert_actual(condition, message_expr, exc_message), time_us)
    )


def _statement_line(script: str, block_line: int, statement: str) -> int:
    """The script line of ``statement`` inside the block starting on ``block_line``."""
    lines = script.splitlines()
    for n in range(block_line, len(lines) + 1):
        if statement and statement in lines[n - 1]:
            return n
        if "}%" in lines[n - 1]:
            break
    return block_line


def _assert_parts(statement: str) -> tuple[str, Optional[ast.expr]]:
    """The condition's text and the message expression of the assert in ``statement``."""
    source = statement.rstrip("\\").strip().rstrip(";")
    source = re.sub(r"^%\{\s*|\s*\}%$", "", source)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        m = re.search(r"\bassert\s+(.*?)(?:,|$)", source)
        return (m[1].strip() if m else ""), None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            return ast.get_source_segment(source, node.test) or "", node.msg
    return "", None


def _assert_actual(condition: str, message: Optional[ast.expr], value: str) -> str:
    """``tcpi_snd_cwnd = 19`` when the assert names the field it checks; else the message."""
    if isinstance(message, ast.Name):
        return f"{message.id} = {value}"
    fields = sorted(set(re.findall(r"\btcpi_\w+", condition)))
    numbers = re.findall(r"-?\d+", value)
    if message is not None and len(fields) == 1 and len(numbers) == 1:
        names = {n.id for n in ast.walk(message) if isinstance(n, ast.Name)}
        if names == {fields[0]}:
            return f"{fields[0]} = {numbers[0]}"
    return value or f"not ({condition})"


# -- the script's text and times ---------------------------------------------------------

_TIME = re.compile(
    r"(\*|(\+)?(\d+\.?\d*|\.\d+)(?:\s*~\s*(\+)?(\d+\.?\d*|\.\d+))?(?:\s*\.\.\.\s*(\+)?(\d+\.?\d*|\.\d+))?)"
    r"(?=\s)"
)


def _expected_text(script: str, line: int) -> str:
    """The event on ``line`` without its time and trailing comment: ``> . 1:1001(1000) ack 1``."""
    lines = script.splitlines()
    if not 1 <= line <= len(lines):
        return f"line {line}"
    text = lines[line - 1].split("//")[0].strip()
    if m := _TIME.match(text):
        text = text[m.end() :].strip()
    return text


def _usecs(seconds: str) -> int:
    return round(float(seconds) * 1_000_000)


def event_times(script: str) -> dict[int, int]:
    """Each event line's nominal script time in µs (a relative time added to the previous
    event's start, as if the stack took no time), for events whose time packetdrill does
    not print itself (system calls, ``%{ }%`` blocks)."""
    times: dict[int, int] = {}
    previous = 0
    depth = {"`": False, "%{": False, "/*": False}
    for n, raw in enumerate(script.splitlines(), start=1):
        text = raw.strip()
        if not any(depth.values()) and text and not text.startswith(("//", "--")):
            if m := _TIME.match(text):
                offset = previous if m[1] == "*" or m[2] else 0
                start = offset + (_usecs(m[3]) if m[3] else 0)
                times[n] = start
                # After a blocking call (``+.09...0.14 write``) the next event counts from the
                # call's start: packetdrill goes on while the call blocks (run.c).
                previous = start
        _track_blocks(raw, depth)
    return times


def _track_blocks(line: str, depth: dict[str, bool]) -> None:
    """Follow backtick commands, ``%{ }%`` code and ``/* */`` comments across lines."""
    i = 0
    while i < len(line):
        two = line[i : i + 2]
        if depth["/*"]:
            if two == "*/":
                depth["/*"] = False
                i += 1
        elif depth["%{"]:
            if two == "}%":
                depth["%{"] = False
                i += 1
        elif depth["`"]:
            if line[i] == "`":
                depth["`"] = False
        elif two == "//":
            return
        elif two == "/*":
            depth["/*"] = True
            i += 1
        elif two == "%{":
            depth["%{"] = True
            i += 1
        elif line[i] == "`":
            depth["`"] = True
        i += 1
