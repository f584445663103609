"""A parser for packetdrill scripts (the language of google/packetdrill's ``parser.y``),
enough of it for the TCP scripts: times, TCP packets with their options, system calls,
shell commands (their ``sysctl`` settings) and ``%{ ... }%`` blocks of assertions over
``TCP_INFO`` fields, which :func:`evaluate` runs with a small whitelist evaluator.

Every event keeps its 1-based line number. Times are in microseconds.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union

#: packetdrill's default ``--tolerance_usecs``.
DEFAULT_TOLERANCE_US = 4000

#: Names packetdrill's Python prelude defines for ``%{ }%`` blocks (tcp.h).
CODE_CONSTANTS: dict[str, int] = {
    # `tcpi_state` values (include/net/tcp_states.h), as packetdrill's code.c names them.
    "TCP_ESTABLISHED": 1,
    "TCP_SYN_SENT": 2,
    "TCP_SYN_RECV": 3,
    "TCP_FIN_WAIT1": 4,
    "TCP_FIN_WAIT2": 5,
    "TCP_TIME_WAIT": 6,
    "TCP_CLOSE": 7,
    "TCP_CLOSE_WAIT": 8,
    "TCP_LAST_ACK": 9,
    "TCP_LISTEN": 10,
    "TCP_CLOSING": 11,
    "TCP_CA_Open": 0,
    "TCP_CA_Disorder": 1,
    "TCP_CA_CWR": 2,
    "TCP_CA_Recovery": 3,
    "TCP_CA_Loss": 4,
}

TimeKind = Literal["absolute", "relative", "any", "absolute_range", "relative_range"]


class ScriptError(ValueError):
    """A script this parser cannot read: ``line`` is 1-based."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


@dataclass(frozen=True)
class EventTime:
    kind: TimeKind
    start_us: int = 0
    end_us: Optional[int] = None  # ranges only


@dataclass(frozen=True)
class TcpOption:
    """One TCP option: ``kind`` is mss, wscale, sackOK, nop, eol, TS, sack, FO, md5."""

    kind: str
    value: Optional[int] = None  # mss, wscale
    ts_val: Optional[int] = None
    ts_ecr: Optional[int] = None
    blocks: tuple[tuple[int, int], ...] = ()  # sack
    cookie: Optional[str] = None  # FO, FOEXP: the cookie's hex digits ("" for a cookie request)


@dataclass(frozen=True)
class Packet:
    direction: Literal["<", ">"]
    flags: str  # as written, e.g. "S", "S.", ".", "P.", "F.", "SEW", "-"
    start: int
    end: int
    length: int
    ack: Optional[int] = None
    win: Optional[int] = None
    #: None: no options written; "...": any options.
    options: Union[None, str, tuple[TcpOption, ...]] = None
    ecn: Optional[str] = None  # noecn, ect0, ect1, ce, ect01 (IP header ECN field)

    @property
    def is_syn(self) -> bool:
        return "S" in self.flags

    def option(self, kind: str) -> Optional[TcpOption]:
        if not isinstance(self.options, tuple):
            return None
        return next((o for o in self.options if o.kind == kind), None)

    def sack_blocks(self) -> tuple[tuple[int, int], ...]:
        o = self.option("sack")
        return o.blocks if o else ()

    def text(self) -> str:
        s = f"{self.direction} {self.flags} {self.start}:{self.end}({self.length})"
        if self.ack is not None:
            s += f" ack {self.ack}"
        if self.win is not None:
            s += f" win {self.win}"
        return s


@dataclass(frozen=True)
class IcmpPacket:
    """An ICMP packet line (``< icmp unreachable frag_needed mtu 640 [2001:3001(1000)]``):
    its type and code as packetdrill names them, the MTU it carries, and what it quotes
    of the packet it answers: a TCP segment's sequence numbers (``start``, ``end``,
    ``length`` as the script writes them), a UDP or raw payload's length. Without a
    quote packetdrill quotes a TCP header with sequence number 0."""

    direction: Literal["<", ">"]
    type: str
    code: Optional[str] = None
    mtu: Optional[int] = None
    echo_id: Optional[int] = None
    quoted: Literal["tcp", "udp", "raw"] = "tcp"
    start: int = 0
    end: int = 0
    length: int = 0

    def text(self) -> str:
        s = f"{self.direction} icmp {self.type}"
        if self.code is not None:
            s += f" {self.code}"
        if self.mtu is not None:
            s += f" mtu {self.mtu}"
        if self.quoted == "tcp":
            return s + f" [{self.start}:{self.end}({self.length})]"
        return s + f" [{self.quoted}({self.length})]"


@dataclass(frozen=True)
class Syscall:
    name: str
    args: tuple[str, ...]  # each argument's text
    result: str  # the expected return value's text
    errno: Optional[str] = None
    end_us: Optional[int] = None  # blocking calls: "...end" time

    def int_arg(self, i: int) -> Optional[int]:
        return _int_or_none(self.args[i]) if i < len(self.args) else None


@dataclass(frozen=True)
class Command:
    text: str
    #: ``sysctl`` settings it makes, by dotted name (``net.ipv4.tcp_ecn``).
    sysctls: dict[str, str] = field(default_factory=dict)
    #: Shell lines that are neither sysctls nor the defaults include.
    other: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assertion:
    expr: str
    message: Optional[str]
    line: int


@dataclass(frozen=True)
class Code:
    text: str
    #: Statements in order: ("assert", Assertion) or ("assign", (name, expr)) or
    #: ("print", expr).
    statements: tuple[tuple[str, Any], ...]

    @property
    def names(self) -> set[str]:
        """Every ``tcpi_*`` name the block reads."""
        out: set[str] = set()
        for kind, s in self.statements:
            src = s.expr if kind == "assert" else s[1] if kind == "assign" else s
            out |= {n for n in re.findall(r"\btcpi_\w+", src)}
        return out


@dataclass(frozen=True)
class Event:
    line: int
    time: EventTime
    kind: Literal["packet", "syscall", "command", "code"]
    body: Union[Packet, IcmpPacket, Syscall, Command, Code]
    text: str


@dataclass
class Script:
    path: Path
    options: dict[str, Optional[str]]
    init: Optional[Command]
    events: list[Event]

    @property
    def tolerance_us(self) -> int:
        v = self.options.get("tolerance_usecs")
        return int(v) if v else DEFAULT_TOLERANCE_US

    def sysctls(self) -> dict[str, str]:
        """Settings in effect at the start: the init command (with its includes), then
        commands in event order later override (see :meth:`Command.sysctls`)."""
        return dict(self.init.sysctls) if self.init else {}


# --- lexical helpers -------------------------------------------------------------------

_NUM = r"(?:\d+\.\d+|\.\d+|\d+\.(?!\.)|\d+)"
_TIME_RE = re.compile(rf"(?P<any>\*)|(?P<p1>\+)?(?P<t1>{_NUM})(?:\s*~\s*(?P<p2>\+)?(?P<t2>{_NUM}))?")


def _secs_to_us(s: str) -> int:
    if "." in s:
        whole, frac = s.split(".")
        frac = (frac + "000000")[:6]
        return int(whole or "0") * 1_000_000 + int(frac)
    return int(s) * 1_000_000


def _int_or_none(s: str) -> Optional[int]:
    s = s.strip().strip("[]")
    try:
        return int(s, 0)
    except ValueError:
        return None


def _strip_comment(s: str) -> str:
    out, q = [], None
    i = 0
    while i < len(s):
        c = s[i]
        if q:
            if c == q:
                q = None
        elif c == '"':
            q = c
        elif s.startswith("//", i):
            break
        out.append(c)
        i += 1
    return "".join(out).rstrip()


# --- the parser ------------------------------------------------------------------------


class _Reader:
    def __init__(self, text: str, path: str) -> None:
        self.text, self.path, self.i, self.line = text, path, 0, 1

    def error(self, msg: str, line: Optional[int] = None) -> ScriptError:
        return ScriptError(self.path, line or self.line, msg)

    def eof(self) -> bool:
        return self.i >= len(self.text)

    def peek(self, n: int = 1) -> str:
        return self.text[self.i : self.i + n]

    def advance(self, n: int) -> str:
        s = self.text[self.i : self.i + n]
        self.line += s.count("\n")
        self.i += n
        return s

    def skip_blank(self) -> None:
        """Whitespace and comments (// to end of line, /* ... */)."""
        while not self.eof():
            c = self.peek()
            if c.isspace():
                self.advance(1)
            elif self.peek(2) == "//":
                j = self.text.find("\n", self.i)
                self.advance((j if j >= 0 else len(self.text)) - self.i)
            elif self.peek(2) == "/*":
                j = self.text.find("*/", self.i + 2)
                if j < 0:
                    raise self.error("unterminated /* comment")
                self.advance(j + 2 - self.i)
            else:
                return

    def until(self, end: str) -> str:
        j = self.text.find(end, self.i)
        if j < 0:
            raise self.error(f"missing closing {end!r}")
        s = self.advance(j - self.i)
        self.advance(len(end))
        return s

    def logical_line(self) -> str:
        """To the end of the line, continuing while brackets are open."""
        depth, out = 0, []
        q = None
        while not self.eof():
            c = self.peek()
            if q is None and self.peek(2) == "//":
                j = self.text.find("\n", self.i)
                self.advance((j if j >= 0 else len(self.text)) - self.i)
                continue
            if c == "\n" and depth <= 0 and q is None:
                break
            self.advance(1)
            out.append(c)
            if q:
                if c == q:
                    q = None
            elif c == '"':
                q = c
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
        return "".join(out).strip()


def parse_file(path: Union[str, Path]) -> Script:
    p = Path(path)
    return parse(p.read_text(), p)


def parse(text: str, path: Union[str, Path] = "<script>") -> Script:
    path = Path(path)
    r = _Reader(text, str(path))
    options: dict[str, Optional[str]] = {}
    init: Optional[Command] = None
    events: list[Event] = []
    while True:
        r.skip_blank()
        if r.eof():
            break
        start_line = r.line
        if r.peek(2) == "--":
            opt = r.logical_line()[2:]
            name, _, value = opt.partition("=")
            options[name.strip()] = value.strip() or None
            continue
        if r.peek() == "`":
            r.advance(1)
            cmd = _command(r.until("`"), path, r, start_line)
            if not events and init is None:
                init = cmd
            else:  # a cleanup command, or an untimed command between events
                events.append(Event(start_line, EventTime("any"), "command", cmd, cmd.text))
            continue
        m = _TIME_RE.match(r.text, r.i)
        if not m or m.end() == r.i:
            raise r.error(f"expected an event time, found {r.logical_line()[:40]!r}", start_line)
        r.advance(m.end() - r.i)
        t = _event_time(m)
        # A relative range "+a~+b" may put the second time after blanks.
        r.skip_blank()
        events.append(_event(r, t, start_line))
    return Script(path, options, init, events)


def _event_time(m: re.Match[str]) -> EventTime:
    if m.group("any"):
        return EventTime("any")
    start = _secs_to_us(m.group("t1"))
    rel = bool(m.group("p1"))
    if m.group("t2") is not None:
        end = _secs_to_us(m.group("t2"))
        return EventTime("relative_range" if rel else "absolute_range", start, end)
    return EventTime("relative" if rel else "absolute", start)


def _event(r: _Reader, t: EventTime, line: int) -> Event:
    if r.peek(2) == "%{":
        r.advance(2)
        body = r.until("}%")
        return Event(line, t, "code", _code(body, r, line), "%{" + body + "}%")
    if r.peek() == "`":
        r.advance(1)
        cmd = _command(r.until("`"), Path(r.path), r, line)
        return Event(line, t, "command", cmd, cmd.text)
    text = r.logical_line()
    if text[:1] in "<>":
        icmp = _ICMP_RE.match(text)
        if icmp:
            return Event(line, t, "packet", _icmp(icmp), text)
        return Event(line, t, "packet", _packet(text, r, line), text)
    return Event(line, t, "syscall", _syscall(text, r, line), text)


_PACKET_RE = re.compile(
    r"""(?P<dir>[<>])\s*
        (?:[\[(](?P<ipinfo>[^\])]*)[\])]\s*)?
        (?P<flags>[A-Z.]+\.?|-)\s+
        (?P<start>\d+):(?P<end>\d+)\((?P<len>\d+)\)
        (?:\s+ack\s+(?P<ack>\d+))?
        (?:\s+win\s+(?P<win>\d+))?
        (?:\s+urg\s+\d+)?
        (?:\s*<(?P<opts>[^>]*)>)?\s*$""",
    re.X,
)


def _packet(text: str, r: _Reader, line: int) -> Packet:
    m = _PACKET_RE.match(text)
    if not m:
        raise r.error(f"unrecognised packet {text!r}", line)
    opts: Union[None, str, tuple[TcpOption, ...]] = None
    if m.group("opts") is not None:
        o = m.group("opts").strip()
        opts = "..." if o == "..." else tuple(_option(x.strip(), r, line) for x in o.split(",") if x.strip())
    ecn = None
    if m.group("ipinfo"):
        info = m.group("ipinfo").strip().lower()
        for word in ("noecn", "ect01", "ect0", "ect1", "ce"):
            if re.search(rf"\b{word}\b", info):
                ecn = word
                break
    return Packet(
        direction=m.group("dir"),  # type: ignore[arg-type]
        flags=m.group("flags"),
        start=int(m.group("start")),
        end=int(m.group("end")),
        length=int(m.group("len")),
        ack=int(m.group("ack")) if m.group("ack") else None,
        win=int(m.group("win")) if m.group("win") else None,
        options=opts,
        ecn=ecn,
    )


# packetdrill's icmp_packet_spec: direction, IP info, ``icmp``, the type and code as
# words, ``mtu N``, ``id N``, and what the message quotes: ``[start:end(len)]`` of a TCP
# segment, ``[udp (N)]`` or ``[raw (N)]``.
_ICMP_RE = re.compile(
    r"""(?P<dir>[<>])\s*
        (?:\[(?P<ipinfo>[^\]]*)\]\s*)?
        icmp\s+(?P<type>[a-z_]+)
        (?:\s+(?!mtu\b|id\b)(?P<code>[a-z_]+))?
        (?:\s+mtu\s+(?P<mtu>\d+))?
        (?:\s+id\s+(?P<id>\d+))?
        (?:\s*\[\s*(?:
            (?P<start>\d+):(?P<end>\d+)\((?P<len>\d+)\)
          | (?P<proto>udp|raw)\s*\((?P<plen>\d+)\)
        )\s*\])?\s*$""",
    re.X,
)


def _icmp(m: re.Match[str]) -> IcmpPacket:
    quoted = m.group("proto") or "tcp"
    return IcmpPacket(
        direction=m.group("dir"),  # type: ignore[arg-type]
        type=m.group("type"),
        code=m.group("code"),
        mtu=int(m.group("mtu")) if m.group("mtu") else None,
        echo_id=int(m.group("id")) if m.group("id") else None,
        quoted=quoted,  # type: ignore[arg-type]
        start=int(m.group("start") or 0),
        end=int(m.group("end") or 0),
        length=int(m.group("len") or m.group("plen") or 0),
    )


def _option(s: str, r: _Reader, line: int) -> TcpOption:
    words = s.split()
    k = words[0]
    if k in ("nop", "eol", "sackOK"):
        return TcpOption(k)
    if k in ("mss", "wscale") and len(words) == 2:
        return TcpOption(k, value=int(words[1]))
    if k == "TS" and len(words) == 5 and words[1] == "val" and words[3] == "ecr":
        return TcpOption("TS", ts_val=int(words[2]), ts_ecr=int(words[4]))
    if k == "sack":
        blocks = []
        for b in words[1:]:
            a, _, e = b.partition(":")
            blocks.append((int(a), int(e)))
        return TcpOption("sack", blocks=tuple(blocks))
    if k in ("FO", "FOEXP") and len(words) <= 2:
        cookie = words[1].lower() if len(words) == 2 else ""
        if len(cookie) % 2 or not all(c in "0123456789abcdef" for c in cookie):
            raise r.error(f"Fast Open cookie {s!r} is not an even number of hex digits", line)
        return TcpOption(k, cookie=cookie)
    if k == "md5":
        return TcpOption(k)
    raise r.error(f"unrecognised TCP option {s!r}", line)


_SYSCALL_RE = re.compile(
    r"""(?:\.\.\.\s*(?P<end>[0-9.]+)\s+)?(?P<name>[a-z_0-9]+)\s*\((?P<args>.*)\)\s*=\s*
        (?P<result>[^\s(]+)(?:\s+(?P<errno>[A-Z][A-Z0-9_]*))?(?:\s*\(.*\))?\s*$""",
    re.X | re.S,
)


def _split_args(s: str) -> tuple[str, ...]:
    out, depth, cur, q = [], 0, [], None
    for c in s:
        if q:
            cur.append(c)
            if c == q:
                q = None
            continue
        if c == '"':
            q = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return tuple(" ".join(a.split()) for a in out)


def _syscall(text: str, r: _Reader, line: int) -> Syscall:
    m = _SYSCALL_RE.match(text)
    if not m:
        raise r.error(f"unrecognised system call {text!r}", line)
    end = _secs_to_us(m.group("end")) if m.group("end") else None
    return Syscall(m.group("name"), _split_args(m.group("args")), m.group("result"), m.group("errno"), end)


# --- shell commands: sysctls, and the defaults include ---------------------------------

_SYSCTL_WORDS = re.compile(r"\bsysctl\b(.*)")


def _command(text: str, script_path: Path, r: _Reader, line: int, depth: int = 0) -> Command:
    sysctls: dict[str, str] = {}
    other: list[str] = []
    # Join backslash continuations, drop shell comments.
    joined = re.sub(r"\\\n", " ", text)
    for raw in joined.splitlines():
        cmd = raw.split("#", 1)[0].strip()
        if not cmd:
            continue
        first = cmd.split()[0]
        if first.endswith("defaults.sh"):
            inc = (script_path.parent / first).resolve()
            if depth < 3 and inc.is_file():
                sub = _command(inc.read_text(), inc, r, line, depth + 1)
                sysctls.update(sub.sysctls)
                other.extend(sub.other)
            else:
                other.append(cmd)
            continue
        if first.endswith("set_sysctls.py"):
            for w in cmd.split()[1:]:
                name, eq, value = w.partition("=")
                if eq and name.startswith("/proc/sys/"):
                    sysctls[name[len("/proc/sys/") :].replace("/", ".")] = value
            continue
        m = _SYSCTL_WORDS.search(cmd) if first == "sysctl" else None
        if m:
            try:
                words = shlex.split(m.group(1))
            except ValueError:
                words = m.group(1).split()
            for w in words:
                if w.startswith("-"):
                    continue
                name, eq, value = w.partition("=")
                if eq:
                    sysctls[name.replace("/", ".")] = value.split(">")[0].strip()
            continue
        other.append(cmd)
    return Command(text.strip(), sysctls, tuple(other))


# --- %{ }% code blocks -----------------------------------------------------------------


def _code(body: str, r: _Reader, line: int) -> Code:
    stmts: list[tuple[str, Any]] = []
    for raw, line_of in _logical_lines(body):
        at = 0
        for part in _split_semicolons(raw):
            s = part.strip()
            at = raw.find(part, at)
            # The line a statement starts on, as Python reports it in a continued line.
            ln_off = line_of(at + len(part) - len(part.lstrip()))
            at += len(part)
            if not s or s.startswith("#"):
                continue
            try:
                tree = ast.parse(s, mode="exec")
            except SyntaxError as e:
                raise r.error(f"cannot parse code {s!r}: {e.msg}", line + ln_off) from None
            node = tree.body[0] if len(tree.body) == 1 else None
            if isinstance(node, ast.Assert):
                msg = ast.unparse(node.msg) if node.msg is not None else None
                stmts.append(("assert", Assertion(ast.unparse(node.test), msg, line + ln_off)))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                stmts.append(("assign", (node.targets[0].id, ast.unparse(node.value))))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                op = ast.unparse(ast.BinOp(node.target, node.op, node.value))
                stmts.append(("assign", (node.target.id, op)))
            elif (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "print"
            ):
                stmts.append(("print", ast.unparse(node.value)))
            else:
                raise r.error(f"unsupported statement in code block: {s!r}", line + ln_off)
    return Code(body, tuple(stmts))


def _logical_lines(body: str) -> list[tuple[str, Any]]:
    """The code's lines with backslash continuations joined, each with a map from a
    character offset in it to its physical line (counted from the block's first)."""
    out: list[tuple[str, Any]] = []
    text, starts = "", []  # the joined text, and (offset, physical line) of each piece
    for n, phys in enumerate(body.split("\n")):
        cont = re.search(r"\\\s*$", phys)
        starts.append((len(text), n))
        text += phys[: cont.start()] + " " if cont else phys
        if not cont:
            pieces = list(starts)
            out.append((text, lambda off, pieces=pieces: max(ln for start, ln in pieces if start <= off)))
            text, starts = "", []
    if starts:
        pieces = list(starts)
        out.append((text, lambda off, pieces=pieces: max(ln for start, ln in pieces if start <= off)))
    return out


def _split_semicolons(s: str) -> list[str]:
    out, cur, q = [], [], None
    for c in s:
        if q:
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif c == ";":
            out.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    out.append("".join(cur))
    return out


# --- the evaluator ---------------------------------------------------------------------

_ALLOWED_NODES = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
    ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
    ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
    ast.Name, ast.Load, ast.Constant,
)  # fmt: skip


class EvalError(ValueError):
    pass


def evaluate(expr: str, names: dict[str, Any]) -> Any:
    """Evaluate a comparison/arithmetic expression over ``names`` without ``eval``: only
    numbers, names, arithmetic, comparisons and and/or/not are allowed. A name missing
    from ``names`` raises :class:`KeyError` naming it."""
    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise EvalError(f"{type(node).__name__} is not allowed in {expr!r}")
    return _ev(tree.body, names)


def _ev(n: ast.AST, names: dict[str, Any]) -> Any:
    if isinstance(n, ast.Constant):
        if not isinstance(n.value, (int, float, str)):
            raise EvalError(f"constant {n.value!r}")
        return n.value
    if isinstance(n, ast.Name):
        if n.id not in names:
            raise KeyError(n.id)
        return names[n.id]
    if isinstance(n, ast.UnaryOp):
        v = _ev(n.operand, names)
        return {ast.Not: lambda: not v, ast.USub: lambda: -v, ast.UAdd: lambda: +v}[type(n.op)]()
    if isinstance(n, ast.BoolOp):
        if isinstance(n.op, ast.And):
            res: Any = True
            for v in n.values:
                res = _ev(v, names)
                if not res:
                    return res
            return res
        res = False
        for v in n.values:
            res = _ev(v, names)
            if res:
                return res
        return res
    if isinstance(n, ast.BinOp):
        a, b = _ev(n.left, names), _ev(n.right, names)
        if isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            raise EvalError(f"division by zero in {ast.unparse(n)!r}")
        if isinstance(n.op, (ast.LShift, ast.RShift)) and not (isinstance(b, int) and 0 <= b < 128):
            raise EvalError(f"shift count {b!r} outside 0..127 in {ast.unparse(n)!r}")
        ops = {
            ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
            ast.Div: lambda: a / b, ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b,
            ast.BitAnd: lambda: a & b, ast.BitOr: lambda: a | b, ast.BitXor: lambda: a ^ b,
            ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b,
        }  # fmt: skip
        return ops[type(n.op)]()
    if isinstance(n, ast.Compare):
        left = _ev(n.left, names)
        for op, comp in zip(n.ops, n.comparators):
            right = _ev(comp, names)
            ok = {
                ast.Eq: left == right, ast.NotEq: left != right, ast.Lt: left < right,
                ast.LtE: left <= right, ast.Gt: left > right, ast.GtE: left >= right,
            }[type(op)]  # fmt: skip
            if not ok:
                return False
            left = right
        return True
    raise EvalError(f"{type(n).__name__} is not allowed")


def expr_names(expr: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


def find_scripts(paths: list[Path]) -> list[tuple[Path, Path]]:
    """(script, the directory or file it was found under), files as given, directories
    searched recursively for ``*.pkt`` in name order."""
    out: list[tuple[Path, Path]] = []
    for p in paths:
        if p.is_dir():
            out.extend((f, p) for f in sorted(p.rglob("*.pkt")))
        else:
            out.append((p, p.parent))
    return out
