"""The VM engine's traffic agent (crates/ccbench-agent), tested on the host.

The agent is the kernel engine's Python sender rewritten as one static binary for the
guest. Here it runs as root in network namespaces that each test creates (unique names,
removed afterwards, every wait bounded) against the kernel engine's Python receiver, over
a veth pair shaped by tbf, and its out file is compared with the Python sender's for the
same configuration. Without cargo (and no binary built before) or without root, the
tests that need them are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import platform
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

pytestmark = pytest.mark.host

ROOT = Path(__file__).resolve().parent.parent
PY_AGENT = ROOT / "python" / "ccbench" / "kernel" / "agent.py"
BUILD_TIMEOUT_S = 900
BASE_PORT = 5201
RWND_BYTES = 6 << 20
# The veth's egress toward the receiver: a bottleneck, so both senders meet the same link.
TBF = ["rate", "100mbit", "burst", "64kb", "limit", "500000"]
LINK_BYTES_PER_S = 100e6 / 8
SENDER_ADDR, RECEIVER_ADDR = "10.231.0.1", "10.231.0.2"
TOP_KEYS = {"samples", "final", "done_ns", "end_ns", "tcp_ext", "downloads"}
BBR_KEYS = {"bw_bytes_per_s", "min_rtt_us", "pacing_gain", "cwnd_gain"}


def host_triple() -> Optional[str]:
    try:
        out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"^host: (\S+)$", out, re.M)
    return m.group(1) if m else None


@pytest.fixture(scope="session")
def agent_binary() -> Path:
    """The static agent, built (or brought up to date) with glibc's static C runtime.

    `--target` keeps the static build apart from the workspace's ordinary one in
    target/release, and keeps RUSTFLAGS off build scripts and proc macros."""
    triple = host_triple()
    if shutil.which("cargo") is None or triple is None:
        built = sorted(ROOT.glob("target/*/release/ccbench-agent"))
        if not built:
            pytest.skip("cargo is missing and no ccbench-agent was built before")
        return built[0]
    env = dict(os.environ, RUSTFLAGS="-C target-feature=+crt-static")
    res = subprocess.run(
        ["cargo", "build", "--release", "-p", "ccbench-agent", "--target", triple],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    path = ROOT / "target" / triple / "release" / "ccbench-agent"
    assert path.is_file()
    return path


# Static linking


PT_DYNAMIC, PT_INTERP, DT_NEEDED = 2, 3, 1


def elf_program_headers(data: bytes) -> list[tuple[int, int, int]]:
    """(type, file offset, file size) of each program header of a 64-bit little-endian ELF."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a 64-bit little-endian ELF"
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    out = []
    for i in range(phnum):
        p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        out.append((p_type, p_offset, p_filesz))
    return out


def test_the_agent_is_statically_linked(agent_binary: Path) -> None:
    data = agent_binary.read_bytes()
    headers = elf_program_headers(data)
    # No program interpreter: the kernel starts it without ld.so, which the guest lacks.
    assert PT_INTERP not in [t for t, _, _ in headers]
    # A static PIE keeps a dynamic section for its own relocations, but needs no library.
    for p_type, offset, size in headers:
        if p_type == PT_DYNAMIC:
            tags = [struct.unpack_from("<q", data, offset + k)[0] for k in range(0, size, 16)]
            assert DT_NEEDED not in tags
    if shutil.which("ldd"):
        res = subprocess.run(["ldd", str(agent_binary)], capture_output=True, text=True, timeout=30)
        assert "statically linked" in res.stdout + res.stderr or "not a dynamic executable" in res.stdout + res.stderr
    out = subprocess.run([str(agent_binary), "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("ccbench-agent ")


def test_bad_arguments_are_one_error_line_and_exit_2(agent_binary: Path) -> None:
    res = subprocess.run([str(agent_binary), "serve", "--bogus"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error: ") and res.stdout == ""


# The control channel on a terminal


class Pty:
    """The host's end of a pseudo-terminal whose other end the agent opens by path."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.path = os.ttyname(self.slave)
        self.buf = b""

    def send(self, obj: dict[str, Any]) -> None:
        os.write(self.master, json.dumps(obj).encode() + b"\n")

    def reply(self, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, f"no reply line; got {self.buf!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                self.buf += os.read(self.master, 65536)
        line, self.buf = self.buf.split(b"\n", 1)
        # In raw mode the terminal adds no \r and echoes nothing back.
        assert not line.endswith(b"\r"), line
        return json.loads(line)

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


def handshake(term: Pty, timeout: float = 10.0) -> dict[str, Any]:
    """`info` every half second until the agent answers (what reached the terminal before
    the agent made it raw was flushed, and the agent answers well within the interval)."""
    deadline = time.monotonic() + timeout
    while True:
        term.send({"cmd": "info"})
        try:
            reply = term.reply(timeout=0.5)
            break
        except AssertionError:
            assert time.monotonic() < deadline, "the agent never answered"
    assert set(reply) == {"info"}, reply
    return reply["info"]


def test_serve_speaks_the_line_protocol_over_a_raw_terminal(agent_binary: Path) -> None:
    term = Pty()
    proc = subprocess.Popen(
        [str(agent_binary), "serve", "--control", term.path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # The agent speaks only when spoken to; input that reaches the terminal before
        # the agent has made it raw is flushed, so the host repeats `info` until answered.
        info = handshake(term)
        assert info["kernel"] == platform.release() and info["static"] is True and info["protocol"] == 3
        avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        assert info["available_congestion_control"] == avail and info["cpus"] == os.cpu_count()
        term.send({"cmd": "reboot"})
        assert term.reply()["error"].startswith("command: unknown variant `reboot`")
        term.send({"cmd": "go"})
        assert term.reply()["error"].startswith("go: no run prepared")
        term.send({"cmd": "send", "config": {"base_port": 1, "duration_ns": 1, "interval_ns": 0, "flows": []}})
        assert term.reply()["error"] == "interval_ns: a positive number of nanoseconds"
        term.send({"cmd": "quit"})
        assert term.reply() == {"ok": True}
        assert proc.wait(timeout=10) == 0
        out, _ = proc.communicate(timeout=10)
        assert out == b""  # nothing on stdout when the channel is a device
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        term.close()


# Against the Python receiver, in network namespaces


def root_reason() -> Optional[str]:
    if sys.platform != "linux":
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    for cmd in ("ip", "tc"):
        if shutil.which(cmd) is None:
            return f"iproute2's {cmd} is missing"
    return None


needs_root = pytest.mark.skipif(root_reason() is not None, reason=f"agent namespace tests: {root_reason()}")


def sh(*args: str) -> None:
    subprocess.run(list(args), check=True, capture_output=True, timeout=30)


def namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


class Pair:
    """A sender and a receiver namespace joined by a veth pair, the sender's side shaped."""

    def __init__(self) -> None:
        tag = f"ccbagent-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.sender, self.receiver = f"{tag}-s", f"{tag}-r"
        self.procs: list[subprocess.Popen[str]] = []

    def create(self) -> None:
        for ns in (self.sender, self.receiver):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh(
            "ip",
            "link",
            "add",
            "vagent0",
            "netns",
            self.sender,
            "type",
            "veth",
            "peer",
            "name",
            "vagent1",
            "netns",
            self.receiver,
        )
        for ns, dev, addr in ((self.sender, "vagent0", SENDER_ADDR), (self.receiver, "vagent1", RECEIVER_ADDR)):
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("tc", "-n", self.sender, "qdisc", "add", "dev", "vagent0", "root", "tbf", *TBF)

    def start(self, ns: str, argv: list[str]) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def remove(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        for ns in (self.sender, self.receiver):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


@pytest.fixture
def pair() -> Iterator[Pair]:
    p = Pair()
    try:
        p.create()
        yield p
    finally:
        p.remove()
    left = [ns for ns in namespaces() if ns in (p.sender, p.receiver)]
    assert not left, f"left behind: {left}"


def read_line(proc: subprocess.Popen[str], timeout: float = 20.0) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "no line in time"
    line = proc.stdout.readline()
    assert line, f"exited: {proc.wait(timeout=10)}, {proc.stderr.read() if proc.stderr else ''}"
    return line.strip()


def tell(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def start_receiver(
    pair: Pair, tmp: Path, common: dict[str, Any], flows: list[dict[str, Any]]
) -> tuple[subprocess.Popen[str], Path]:
    out = tmp / "receiver.out.json"
    cfg = tmp / "receiver.json"
    cfg.write_text(
        json.dumps(
            dict(
                common,
                out=str(out),
                flows=[
                    {"addr": RECEIVER_ADDR, "size": f.get("size"), "rwnd": RWND_BYTES, "autotune": False} for f in flows
                ],
            )
        )
    )
    proc = pair.start(pair.receiver, [sys.executable, "-E", "-s", str(PY_AGENT), "receive", str(cfg)])
    assert read_line(proc) == "ready"
    return proc, out


def congestion_by_port(ns: str) -> dict[int, str]:
    """Each established connection's algorithm by peer port, from `ss -tin`: a line per
    socket (local and peer address last), then an indented line of its TCP details."""
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "ss", "-tinH", "state", "established"], capture_output=True, text=True, timeout=30
    ).stdout
    found: dict[int, str] = {}
    port: Optional[int] = None
    for line in out.splitlines():
        if line[:1].isspace():
            m = re.search(r"\b(reno|cubic|bbr\w*)\b", line)
            if m and port is not None:
                found[port] = m.group(1)
        elif line.strip():
            port = int(line.split()[-1].rsplit(":", 1)[1])
    return found


def run_sender(
    pair: Pair, tmp: Path, sender_argv: list[str], cfg: dict[str, Any], watch_at_s: Optional[float] = None
) -> tuple[dict[str, Any], dict[str, Any], dict[int, str]]:
    """One run: the Python receiver, the given sender in `send` mode; (sender out,
    receiver out, algorithms seen by `ss` at `watch_at_s` into the run)."""
    tmp.mkdir(parents=True, exist_ok=True)
    common = {k: cfg[k] for k in ("base_port", "duration_ns", "interval_ns")}
    receiver, receiver_out = start_receiver(pair, tmp, common, cfg["flows"])
    sender_out = tmp / "sender.out.json"
    (tmp / "sender.json").write_text(json.dumps(dict(cfg, out=str(sender_out))))
    sender = pair.start(pair.sender, [*sender_argv, "send", str(tmp / "sender.json")])
    assert read_line(sender) == "ready"
    t0 = time.monotonic_ns() + 50_000_000
    tell(receiver, f"go {t0}")
    tell(sender, f"go {t0}")
    seen: dict[int, str] = {}
    if watch_at_s is not None:
        time.sleep(max(0.0, (t0 - time.monotonic_ns()) / 1e9 + watch_at_s))
        seen = congestion_by_port(pair.sender)
    limit = cfg["duration_ns"] / 1e9 + 20
    assert sender.wait(timeout=limit) == 0, sender.stderr.read() if sender.stderr else ""
    assert receiver.stdin is not None
    receiver.stdin.close()  # the receiver may stop lingering
    assert receiver.wait(timeout=limit) == 0, receiver.stderr.read() if receiver.stderr else ""
    return json.loads(sender_out.read_text()), json.loads(receiver_out.read_text()), seen


def check_schema(out: dict[str, Any], flows: list[dict[str, Any]], duration_ns: int, interval_ns: int) -> None:
    # The static agent also reports the kernel's account of its CPUs over the run; the
    # kernel engine's Python agent the algorithm each flow's socket ran, and its UDP flows
    # and arrivals (with how late it sent them).
    assert set(out) - {"cpu_counters", "cca", "udp", "arrivals", "late_us"} == TOP_KEYS
    n = len(flows)
    assert len(out["final"]) == len(out["done_ns"]) == n and isinstance(out["end_ns"], int)
    times = [row[0] for row in out["samples"]]
    assert times == sorted(times) and all(t % interval_ns == 0 for t in times[:-1])
    for at, taken, per_flow in out["samples"]:
        assert isinstance(at, int) and isinstance(taken, int) and taken >= at
        assert len(per_flow) == n
    assert out["samples"][-1][2] == out["final"]
    for f, info in zip(flows, out["final"]):
        assert all(type(v) is int for k, v in info.items() if k != "bbr")
        # The TCP_CC_INFO structure the plan names (kernel/tcpinfo.cc_info_kind).
        if f.get("cc_info") == "bbr":
            assert set(info["bbr"]) == BBR_KEYS and info["bbr"]["bw_bytes_per_s"] > 0
            assert all(type(v) is float for v in info["bbr"].values())
        else:
            assert "bbr" not in info


def python_sender() -> list[str]:
    return [sys.executable, "-E", "-s", str(PY_AGENT)]


# Flow 0 bulk Cubic for the whole run; flow 1 sized BBR from 200 ms. The namespace's
# default algorithm is reno, so both others can only come from TCP_CONGESTION.
MIXED = {
    "base_port": BASE_PORT,
    "duration_ns": 2_000_000_000,
    "interval_ns": 100_000_000,
    "sysctls": {"net.ipv4.tcp_congestion_control": "reno"},
    "flows": [
        {"addr": RECEIVER_ADDR, "cca": "cubic", "start_ns": 0, "size": None, "force_pacing": False},
        {
            "addr": RECEIVER_ADDR,
            "cca": "bbr",
            "start_ns": 200_000_000,
            "size": 4_000_000,
            "force_pacing": False,
            "cc_info": "bbr",
        },
    ],
}


@needs_root
def test_bulk_cubic_and_sized_bbr_match_the_python_sender(agent_binary: Path, pair: Pair, tmp_path: Path) -> None:
    rust, rust_rcv, seen = run_sender(pair, tmp_path / "rust", [str(agent_binary)], MIXED, watch_at_s=1.0)
    py, py_rcv, _ = run_sender(pair, tmp_path / "python", python_sender(), MIXED)
    duration, interval = MIXED["duration_ns"], MIXED["interval_ns"]
    for out in (rust, py):
        check_schema(out, MIXED["flows"], duration, interval)
    # The same keys everywhere: top level, TCP_INFO fields, BBR's fields.
    for r, p in zip(rust["final"], py["final"]):
        assert list(r) == list(p)
    # A bulk flow keeps the run to its end: 19 grid samples and the closing one.
    assert len(rust["samples"]) == len(py["samples"]) == duration // interval
    assert rust["samples"][-1][0] == duration and rust["end_ns"] >= duration
    # Each socket ran the algorithm asked for, not the namespace's default.
    assert seen.get(BASE_PORT) == "cubic" and seen.get(BASE_PORT + 1) == "bbr", seen
    size = MIXED["flows"][1]["size"]
    for out, rcv in ((rust, rust_rcv), (py, py_rcv)):
        bulk, sized = out["final"]
        # The bulk flow filled what the sized flow left of a 100 Mbit/s link.
        assert 0.6 * LINK_BYTES_PER_S * 2.0 < rcv["bytes"][0] + rcv["bytes"][1] <= 1.05 * LINK_BYTES_PER_S * 2.0
        # What the sender saw acknowledged at its last sample and what the receiver read
        # by its end differ by what was in flight: at most the tbf queue and a window.
        assert abs(bulk["bytes_acked"] - rcv["bytes"][0]) < 1_000_000
        # The sized flow: every byte delivered and acknowledged, done before the end.
        assert rcv["bytes"][1] == size and sized["bytes_acked"] >= size and sized["unacked"] == 0
        assert out["done_ns"][0] is None and MIXED["flows"][1]["start_ns"] < out["done_ns"][1] < duration
    ratio = rust_rcv["bytes"][0] / py_rcv["bytes"][0]
    assert 0.7 < ratio < 1.4, (rust_rcv["bytes"], py_rcv["bytes"])


SIZED_BBR = {
    "base_port": BASE_PORT,
    "duration_ns": 5_000_000_000,
    "interval_ns": 50_000_000,
    "flows": [
        {"addr": RECEIVER_ADDR, "cca": "bbr", "start_ns": 0, "size": 3_000_000, "force_pacing": False, "cc_info": "bbr"}
    ],
}


@needs_root
def test_a_run_of_sized_flows_ends_when_the_last_is_acknowledged(
    agent_binary: Path, pair: Pair, tmp_path: Path
) -> None:
    rust, rcv, _ = run_sender(pair, tmp_path / "rust", [str(agent_binary)], SIZED_BBR)
    py, _, _ = run_sender(pair, tmp_path / "python", python_sender(), SIZED_BBR)
    for out in (rust, py):
        check_schema(out, SIZED_BBR["flows"], SIZED_BBR["duration_ns"], SIZED_BBR["interval_ns"])
    assert list(rust["final"][0]) == list(py["final"][0])
    done = rust["done_ns"][0]
    # 3 MB at 100 Mbit/s is 0.24 s on the wire; the run closes at its completion.
    assert 0.2e9 < done < 2e9 and rust["samples"][-1][0] == done and rust["end_ns"] < 3e9
    assert len(rust["samples"]) == done // SIZED_BBR["interval_ns"] + 1
    assert rcv["bytes"] == [3_000_000] and rcv["completed_ns"][0] is not None
    assert rust["final"][0]["bbr"]["pacing_gain"] > 0


@needs_root
def test_serve_runs_a_flow_and_reports_over_its_channel(agent_binary: Path, pair: Pair, tmp_path: Path) -> None:
    agent = pair.start(pair.sender, [str(agent_binary), "serve"])

    def ask(cmd: dict[str, Any], timeout: float = 20.0) -> dict[str, Any]:
        tell(agent, json.dumps(cmd))
        return json.loads(read_line(agent, timeout))

    assert "cubic" in ask({"cmd": "info"})["info"]["available_congestion_control"]
    assert ask({"cmd": "sysctl", "set": {"net.ipv4.tcp_notsent_lowat": 131072}}) == {"ok": True}
    lowat = subprocess.run(
        ["ip", "netns", "exec", pair.sender, "cat", "/proc/sys/net/ipv4/tcp_notsent_lowat"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert lowat.strip() == "131072"
    cfg = json.loads(json.dumps(SIZED_BBR))
    cfg["flows"][0]["cca"] = "nosuchcc"
    err = ask({"cmd": "send", "config": cfg})["error"]
    assert err.startswith('flows[0].cca: "nosuchcc" is not available in this kernel'), err

    common = {k: SIZED_BBR[k] for k in ("base_port", "duration_ns", "interval_ns")}
    receiver, receiver_out = start_receiver(pair, tmp_path, common, SIZED_BBR["flows"])
    assert ask({"cmd": "send", "config": SIZED_BBR}) == {"ready": True}
    tell(receiver, f"go {time.monotonic_ns()}")
    result = ask({"cmd": "go"}, timeout=SIZED_BBR["duration_ns"] / 1e9 + 20)["result"]
    check_schema(result, SIZED_BBR["flows"], SIZED_BBR["duration_ns"], SIZED_BBR["interval_ns"])
    assert result["done_ns"][0] is not None and result["final"][0]["unacked"] == 0
    assert receiver.stdin is not None
    receiver.stdin.close()
    assert receiver.wait(timeout=20) == 0
    assert json.loads(receiver_out.read_text())["bytes"] == [3_000_000]
    assert ask({"cmd": "quit"}) == {"ok": True}
    assert agent.wait(timeout=10) == 0
