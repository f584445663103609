"""One kernel run: namespaces, the emulator, the agents, and their removal.

```
 sender namespace                 root namespace                 receiver namespace
 agent send  --> ccb-ID-s  ==fd==> emulator (Rust) ==fd==> ccb-ID-r --> agent receive
 10.X.Y.1 (and 10.X.Y.8)           bottleneck, delays              10.X.Y.2 and 10.X.Y.3
```

Flows with classic ECN connect to the receiver's second address, whose route in the
sender's namespace carries ``features ecn``; the others to the first. Ports follow the
emulator's lanes: flow i's ``BASE_PORT + i``, then each UDP flow's sink, then each group
of arrivals' listener (``_traffic``).

A flow going up runs the other way: its sender in the receiver's namespace (a socket
the sending agent creates there), its receiver in the sender's (the receiving agent's),
so that the emulator carries its data through the reverse bottleneck. The receiver's
namespace then routes to the sender's address with the route options too, and to the
sender's second address (with ECN flows going up) with ``features ecn``.

The emulator creates both TUN devices and keeps their descriptors; the run moves each
device into its namespace. Every process is started in a session of its own (a Ctrl-C in
the terminal reaches only this process, which then removes everything) and is killed by
the kernel if this process dies (``PR_SET_PDEATHSIG``). Whatever happens, the
``finally`` clause removes what the state file recorded; after a ``kill -9`` the next
run (or ``ccbench kernel cleanup``) does.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Optional, Protocol

from ..lifecycle import die_with_parent, signals_interrupt
from . import bpf_ca
from .host import KernelRunError
from .plan import BASE_PORT, FlowPlan, Plan, arrival_window, emulator_config
from .state import RunState, recorded_run
from .tcpinfo import cc_info_kind

AGENT = Path(__file__).with_name("agent.py")
READY_TIMEOUT_S = 20.0
# Margin between telling the processes the epoch and the epoch itself.
EPOCH_MARGIN_NS = 100_000_000
# The agents run at a higher priority than ordinary work on the machine (a build beside
# a run must not starve the application that feeds or drains the sockets).
AGENT_NICENESS = -10
# Time allowed after the end of the run for the agents to write their results.
FINISH_GRACE_S = 20.0


@dataclass
class RawRun:
    """What the processes of a run reported."""

    run_id: str
    t0_ns: int
    emulator: dict[str, Any]
    receiver: dict[str, Any]
    sender: dict[str, Any]
    notes: list[str]
    # The run's BPF congestion controls (``cca = "bpf:PATH"``), as registered.
    bpf: Optional[bpf_ca.BpfSet] = None


def run_ip(*args: str, stdin: Optional[str] = None) -> None:
    proc = subprocess.run(["ip", *args], input=stdin, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise KernelRunError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")


class _Children:
    """The run's processes, each recorded in the state file as soon as it exists."""

    def __init__(self, st: RunState) -> None:
        self.st = st
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.stderr: dict[str, IO[bytes]] = {}

    def start(self, role: str, argv: list[str], niceness: int = 0) -> subprocess.Popen[bytes]:
        err = open(self.st.workdir / f"{role}.stderr", "w+b")
        self.stderr[role] = err
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
            preexec_fn=die_with_parent(os.getpid(), niceness),
            cwd=self.st.workdir,
        )
        self.procs[role] = proc
        self.st.add_process(proc.pid, role)
        return proc

    def error_text(self, role: str) -> str:
        err = self.stderr.get(role)
        if err is None:
            return ""
        err.flush()
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else ""

    def failure(self, role: str, what: str) -> KernelRunError:
        proc = self.procs.get(role)
        code = proc.poll() if proc is not None else None
        detail = self.error_text(role)
        status = f" (exit status {code})" if code is not None else ""
        return KernelRunError(f"{role} {what}{status}{': ' + detail if detail else ''}")

    def read_line(self, role: str, timeout_s: float) -> str:
        proc = self.procs[role]
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout_s):
                raise self.failure(role, f"did not answer within {timeout_s:g} s")
        line = proc.stdout.readline()
        if not line:
            proc.wait(timeout=5)
            raise self.failure(role, "stopped")
        return line.decode().rstrip("\n")

    def expect(self, role: str, word: str, timeout_s: float = READY_TIMEOUT_S) -> None:
        line = self.read_line(role, timeout_s)
        if line != word:
            raise KernelRunError(f"{role}: expected {word!r}, got {line[:200]!r}")

    def tell(self, role: str, line: str) -> None:
        proc = self.procs[role]
        assert proc.stdin is not None
        try:
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:
            raise self.failure(role, "stopped") from None

    def close_stdin(self, role: str) -> None:
        stdin = self.procs[role].stdin
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()

    def stop_all(self) -> None:
        for role, proc in self.procs.items():
            if proc.poll() is None:
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            for pipe in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()
        for err in self.stderr.values():
            err.close()


# A note is added when other processes took more than this share of all CPUs.
BUSY_SHARE = 0.25
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class _CpuTimes:
    """Busy CPU time of the whole machine and of the run's processes, in clock ticks."""

    at: float
    machine: int
    ours: int

    @classmethod
    def now(cls, children: "_Children") -> "_CpuTimes":
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        ticks = [int(x) for x in fields]
        busy = sum(ticks[:8]) - ticks[3] - ticks[4]  # all but idle and iowait
        ours = 0
        # Every process the run recorded (a VM run's QEMU too), not only the agents.
        for pid in {p.pid for p in children.st.processes}:
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{pid}/stat").read_text()
                f = stat[stat.rindex(")") + 2 :].split()
                ours += int(f[11]) + int(f[12])
        return cls(time.monotonic(), busy, ours)

    def others_share(self, children: "_Children") -> float:
        end = _CpuTimes.now(children)
        capacity = (end.at - self.at) * _TICKS * (os.cpu_count() or 1)
        others = (end.machine - self.machine) - (end.ours - self.ours)
        return max(0.0, others / capacity) if capacity > 0 else 0.0


def _subnet(run_id: str) -> tuple[str, str, str, str]:
    """Per-run addresses: the sender, the receiver, the receiver's ECN address, and the
    sender's (for flows going up; .4 to .7 are the VM engine's guest /30). Each run has
    namespaces of its own, so equal addresses in two runs would not collide anyway;
    distinct ones keep captures unambiguous."""
    v = int(run_id, 16)
    x, y = 64 + (v >> 8) % 128, v & 0xFF
    return f"10.{x}.{y}.1", f"10.{x}.{y}.2", f"10.{x}.{y}.3", f"10.{x}.{y}.8"


def netns_path(name: str) -> str:
    """The file of the network namespace ``name`` (iproute2's NETNS_RUN_DIR)."""
    return f"/var/run/netns/{name}"


def _write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def _load_json(path: Path, role: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    except (OSError, ValueError) as e:
        raise KernelRunError(f"{role} wrote no results ({e})") from None


def setup_namespace(st: RunState, ns: str, sysctls: dict[str, str]) -> None:
    st.add_namespace(ns)
    run_ip("netns", "add", ns)
    pairs = [f"{k}={v}" for k, v in sysctls.items()]
    proc = subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-E", "-s", str(AGENT), "sysctl", *pairs],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if proc.returncode != 0:
        raise KernelRunError(f"setting sysctls in {ns}: {proc.stderr.strip()[-300:]}")


def attach_device(ns: str, dev: str, mtu: int, local: str, peer: str, commands: list[str]) -> None:
    run_ip("link", "set", "dev", dev, "netns", ns)
    cmds = [
        "link set dev lo up",
        f"link set dev {dev} mtu {mtu} up",
        f"addr add {local}/32 peer {peer}/32 dev {dev}",
        *commands,
    ]
    run_ip("-n", ns, "-batch", "-", stdin="\n".join(cmds) + "\n")


@dataclass
class RunContext:
    """What a run's sender side needs to know of it."""

    plan: Plan
    st: RunState
    children: "_Children"
    ns_sender: str
    ns_receiver: str
    tun_sender: str
    tun_receiver: str
    addr_sender: str
    addr_receiver: str
    addr_ecn: str
    # The sender's namespace's ECN address, where ECN flows going up are received.
    addr_sender_ecn: str
    # The run's BPF congestion controls, prepared; the sender side registers them.
    bpf: Optional[bpf_ca.BpfSet] = None

    @property
    def work(self) -> Path:
        return self.st.workdir

    @property
    def up_ecn(self) -> bool:
        """Some flow going up negotiates ECN (the sender's namespace receives it)."""
        return any(f.up and f.ecn for f in self.plan.flows)

    def receiver_address(self, f: FlowPlan) -> str:
        """Where flow ``f``'s receiver listens: its namespace's address, or its ECN one."""
        if f.up:
            return self.addr_sender_ecn if f.ecn else self.addr_sender
        return self.addr_ecn if f.ecn else self.addr_receiver

    def sender_address(self, f: FlowPlan) -> str:
        """The address of flow ``f``'s sender's namespace."""
        return self.addr_receiver if f.up else self.addr_sender


class SenderSide(Protocol):
    """Where a run's senders live: a network namespace of this host (the kernel engine)
    or a guest behind one (the VM engine). Called in this order by ``run_plan``."""

    def setup(self, run: RunContext) -> None:
        """Create the sender's namespace (before the emulator starts), and register
        the run's BPF congestion controls (``run.bpf``) where the senders run."""

    def attach(self, run: RunContext) -> None:
        """Bring the emulator's sender-side TUN device into service, with routes."""

    def receiver_routes(self, run: RunContext) -> list[str]:
        """Extra ``ip route`` commands the receiver's namespace needs to reach the senders."""

    def start(self, run: RunContext, config: dict[str, Any]) -> None:
        """Start the senders with the agent's ``config`` and return once every flow is
        connected."""

    def go(self, t0_ns: int) -> None:
        """Start sending; ``t0_ns`` is the run's epoch on this host's CLOCK_MONOTONIC."""

    def finish(self, timeout_s: float) -> dict[str, Any]:
        """Wait for the end of the run; the sender's results (the agent's out file)."""


class NamespaceSender:
    """The kernel engine's sender: the Python agent in a namespace of this host."""

    def __init__(self) -> None:
        self.run: Optional[RunContext] = None

    def setup(self, run: RunContext) -> None:
        if run.bpf is not None:
            bpf_ca.register(run.st, run.bpf)  # the senders' kernel is this host's
        setup_namespace(run.st, run.ns_sender, run.plan.sender_sysctls)

    def attach(self, run: RunContext) -> None:
        route = " ".join(run.plan.route_options)
        # The receivers of ECN flows going up listen on the namespace's second address.
        up_ecn = [f"addr add {run.addr_sender_ecn}/32 dev {run.tun_sender}"] if run.up_ecn else []
        attach_device(
            run.ns_sender,
            run.tun_sender,
            run.plan.mtu,
            run.addr_sender,
            run.addr_receiver,
            [
                f"route replace {run.addr_receiver}/32 dev {run.tun_sender} src {run.addr_sender} {route}",
                f"route replace {run.addr_ecn}/32 dev {run.tun_sender} src {run.addr_sender} features ecn {route}",
                *up_ecn,
            ],
        )

    def receiver_routes(self, run: RunContext) -> list[str]:
        return []  # the sender's address is the receiver device's peer

    def start(self, run: RunContext, config: dict[str, Any]) -> None:
        self.run = run
        send_cfg = _write_json(run.work / "sender.json", dict(config, out=str(run.work / "sender.out.json")))
        agent = [sys.executable, "-E", "-s", str(AGENT)]
        run.children.start(
            "sender", ["ip", "netns", "exec", run.ns_sender, *agent, "send", str(send_cfg)], AGENT_NICENESS
        )
        run.children.expect("sender", "ready")

    def go(self, t0_ns: int) -> None:
        assert self.run is not None
        self.run.children.tell("sender", f"go {t0_ns}")

    def finish(self, timeout_s: float) -> dict[str, Any]:
        assert self.run is not None
        children = self.run.children
        try:
            code = children.procs["sender"].wait(timeout=max(0.1, timeout_s))
        except subprocess.TimeoutExpired:
            raise children.failure("sender", "did not finish in time") from None
        if code != 0:
            raise children.failure("sender", "failed")
        return _load_json(self.run.work / "sender.out.json", "sender")


def run_plan(plan: Plan, capture: Optional[dict[str, Any]] = None, sender: Optional[SenderSide] = None) -> RawRun:
    """Run ``plan`` on the kernel; with ``capture`` (points, flows, dir) the emulator
    writes pcap files. The senders run in a namespace of this host unless ``sender``
    puts them elsewhere. Removes everything it created before returning or raising
    (KernelRunError, KeyboardInterrupt)."""
    with recorded_run() as (st, removed):
        children = _Children(st)
        try:
            with signals_interrupt():
                return _run(plan, st, children, removed, capture, sender or NamespaceSender())
        finally:
            children.stop_all()


def _run(
    plan: Plan,
    st: RunState,
    children: _Children,
    removed: list[str],
    capture: Optional[dict[str, Any]],
    sender: SenderSide,
) -> RawRun:
    names = st.names_for()
    ns_r = names["ns_receiver"]
    addr_s, addr_r, addr_ecn, addr_s_ecn = _subnet(st.id)
    run = RunContext(
        plan,
        st,
        children,
        ns_sender=names["ns_sender"],
        ns_receiver=ns_r,
        tun_sender=names["tun_sender"],
        tun_receiver=names["tun_receiver"],
        addr_sender=addr_s,
        addr_receiver=addr_r,
        addr_ecn=addr_ecn,
        addr_sender_ecn=addr_s_ecn,
    )
    run.bpf = bpf_ca.prepare(plan, st.workdir)
    _set_up_path(run, ns_r, sender, capture)

    # Where the receiver tells the sender that a download is complete (flows that repeat them).
    common = {
        "base_port": BASE_PORT,
        "duration_ns": plan.duration_ns,
        "interval_ns": plan.interval_ns,
        "done_path": str(run.work / "done.sock"),
    }
    sending, receiving = _traffic(run)
    _start_receiver(run, ns_r, dict(common, **receiving), bpf_here=isinstance(sender, NamespaceSender))
    sender.start(run, dict(common, flows=_sender_flows(run), **sending))

    # What other processes take of the CPUs from here on is noted if it may disturb the run.
    cpu_start = _CpuTimes.now(children)
    # The epoch a little ahead, so that every process has heard of it when it comes.
    t0 = time.monotonic_ns() + EPOCH_MARGIN_NS
    children.tell("emulator", f"start {t0} {t0 + plan.duration_ns}")
    children.tell("receiver", f"go {t0}")
    sender.go(t0)

    sent = _wait_for_agents(run, sender)
    emulator = _emulator_report(children)
    notes = _notes(removed, cpu_start, children)
    return RawRun(
        run_id=st.id,
        t0_ns=t0,
        emulator=emulator,
        receiver=_load_json(run.work / "receiver.out.json", "receiver"),
        sender=sent,
        notes=notes,
        bpf=run.bpf,
    )


def _set_up_path(run: RunContext, ns_r: str, sender: SenderSide, capture: Optional[dict[str, Any]]) -> None:
    """The namespaces, then the emulator (which creates both TUN devices), then each
    device moved into its namespace."""
    plan, st, children = run.plan, run.st, run.children
    sender.setup(run)
    setup_namespace(st, ns_r, plan.receiver_sysctls)

    max_runtime = plan.duration_ns + int((READY_TIMEOUT_S * 4 + FINISH_GRACE_S + 30) * 1e9)
    emu = emulator_config(plan, run.tun_sender, run.tun_receiver, max_runtime, capture)
    emu_cfg = _write_json(run.work / "emulator.json", emu)
    st.add_device(run.tun_sender)
    st.add_device(run.tun_receiver)
    children.start("emulator", [sys.executable, "-m", "ccbench.kernel.emu", str(emu_cfg)])
    children.expect("emulator", "ready")
    sender.attach(run)
    attach_device(
        ns_r,
        run.tun_receiver,
        plan.mtu,
        run.addr_receiver,
        run.addr_sender,
        [f"addr add {run.addr_ecn}/32 dev {run.tun_receiver}", *_up_senders_routes(run), *sender.receiver_routes(run)],
    )


def _up_senders_routes(run: RunContext) -> list[str]:
    """The receiver's namespace's routes for the senders of flows going up, as the
    sender's namespace has them for the others: the route options, and ``features ecn``
    towards the address where ECN flows going up are received."""
    if not any(f.up for f in run.plan.flows):
        return []
    route = " ".join(run.plan.route_options)
    dev, src = run.tun_receiver, run.addr_receiver
    routes = [f"route replace {run.addr_sender}/32 dev {dev} src {src} {route}"]
    if run.up_ecn:
        routes.append(f"route replace {run.addr_sender_ecn}/32 dev {dev} src {src} features ecn {route}")
    return routes


def _start_receiver(run: RunContext, ns_r: str, common: dict[str, Any], bpf_here: bool) -> None:
    """The receiving agent, listening for every flow."""
    flows = _receiver_flows(run, bpf_here)
    recv_cfg = _write_json(
        run.work / "receiver.json", dict(common, out=str(run.work / "receiver.out.json"), flows=flows)
    )
    agent = [sys.executable, "-E", "-s", str(AGENT)]
    run.children.start("receiver", ["ip", "netns", "exec", ns_r, *agent, "receive", str(recv_cfg)], AGENT_NICENESS)
    run.children.expect("receiver", "ready")


def _receiver_flows(run: RunContext, bpf_here: bool) -> list[dict[str, Any]]:
    """The receiving agent's flows (ECN flows on the ECN address), the receivers of flows
    going up in the sender's namespace."""
    return [
        {
            "addr": run.receiver_address(f),
            "size": f.size_bytes,
            "rwnd": f.rwnd_bytes,
            "autotune": f.rwnd_autotune,
            "repeat": f.repeat,
            "fastopen": f.fastopen,
            # A receiver that opens the connections connects to the sender's address.
            "connect": f.connect,
            "peer": run.sender_address(f),
            "start_ns": f.start_ns,
            "pause_ns": f.pause_ns,
            "cca": _receiver_cca(run, f, bpf_here),
            **({"netns": netns_path(run.ns_sender)} if f.up else {}),
        }
        for f in run.plan.flows
    ]


def _receiver_cca(run: RunContext, f: Any, bpf_here: bool) -> Optional[str]:
    """The algorithm the receiver's listener runs, where the flow's needs ECN: as a DCTCP
    receiver runs DCTCP, so that it accepts an ECN-capable SYN and echoes each segment's
    mark (`tcp_ecn_create_request`, `dctcp_ece_ack_update`), as the simulator's receiver
    does. A BPF algorithm only where this host's kernel has it registered (the kernel
    engine, not the VM's guest)."""
    if f.cca == "dctcp":
        return "dctcp"
    if bpf_here and run.bpf is not None and f.index in run.bpf.flows and run.bpf.needs_ecn(f.index):
        return run.bpf.name(f.index)
    return None


def _sender_flows(run: RunContext) -> list[dict[str, Any]]:
    """The sending agent's flows, the senders of flows going up in the receiver's namespace."""
    return [
        {
            "addr": run.receiver_address(f),
            # A BPF algorithm by the name the run registered it under.
            "cca": run.bpf.name(f.index) if run.bpf is not None and f.index in run.bpf.flows else f.cca,
            "start_ns": f.start_ns,
            "size": f.size_bytes,
            "force_pacing": f.force_pacing,
            "sndbuf": f.sndbuf_bytes,
            "repeat": f.repeat,
            "pause_ns": f.pause_ns,
            "connect": f.connect,
            "fastopen": f.fastopen,
            "listen_addr": run.sender_address(f),
            "cc_info": cc_info_kind(f.cca),
            **({"netns": netns_path(run.ns_receiver)} if f.up else {}),
        }
        for f in run.plan.flows
    ]


def _traffic(run: RunContext) -> tuple[dict[str, Any], dict[str, Any]]:
    """The UDP flows and groups of arrivals of the sending agent (sources, senders) and of
    the receiving agent (sinks, receivers), on the ports of the emulator's lanes after
    the flows' (``BASE_PORT`` + lane); those going up with their sending end in the
    receiver's namespace and their receiving end in the sender's. Empty without any."""
    plan, traffic = run.plan, run.plan.traffic
    if not traffic:
        return {}, {}
    # (where the receiving end listens, where the sending end is, each end's namespace
    # when it is the other agent's)
    ends = {
        False: (run.addr_receiver, run.addr_sender, {}, {}),
        True: (
            run.addr_sender,
            run.addr_receiver,
            {"netns": netns_path(run.ns_receiver)},
            {"netns": netns_path(run.ns_sender)},
        ),
    }
    first_udp = len(plan.flows)
    sources, sinks = [], []
    for u in traffic.udp:
        sink, _, there, here = ends[u.up]
        port = BASE_PORT + first_udp + u.index
        sources.append({"addr": sink, "port": port, "payload": u.payload_bytes, "runs": u.runs, **there})
        sinks.append({"addr": sink, "port": port, **here})
    first_group = first_udp + len(traffic.udp)
    senders, receivers = [], []
    rwnd, autotune = arrival_window()
    for a in traffic.arrivals:
        receiving, sending, there, here = ends[a.up]
        group = {"port": BASE_PORT + first_group + a.index, "connect": a.connect, "schedule": a.schedule}
        senders.append({**group, "addr": receiving, "listen_addr": sending, "cca": a.cca, **there})
        receivers.append({**group, "addr": receiving, "peer": sending, "rwnd": rwnd, "autotune": autotune, **here})
    return {"udp": sources, "arrivals": senders}, {"udp": sinks, "arrivals": receivers}


def _wait_for_agents(run: RunContext, sender: SenderSide) -> dict[str, Any]:
    """Both agents done, within FINISH_GRACE_S of the run's end; the sender's results."""
    children = run.children
    deadline = time.monotonic() + (EPOCH_MARGIN_NS + run.plan.duration_ns) / 1e9 + FINISH_GRACE_S
    sent = sender.finish(deadline - time.monotonic())
    children.close_stdin("receiver")  # the receiver may stop lingering
    try:
        code = children.procs["receiver"].wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise children.failure("receiver", "did not finish in time") from None
    if code != 0:
        raise children.failure("receiver", "failed")
    return sent


def _emulator_report(children: _Children) -> dict[str, Any]:
    """The emulator stopped, and what it reports (its counters, the capture's outcome)."""
    children.tell("emulator", "quit")
    line = children.read_line("emulator", 30.0)
    if not line.startswith("report "):
        raise KernelRunError(f"emulator: unexpected output {line[:200]!r}")
    emulator: dict[str, Any] = json.loads(line[len("report ") :])
    children.procs["emulator"].wait(timeout=10)
    if emulator.get("capture_error"):
        raise KernelRunError(f"emulator: {emulator['capture_error']}")
    return emulator


def _notes(removed: list[str], cpu_start: _CpuTimes, children: _Children) -> list[str]:
    notes = [f"removed leftovers of an interrupted run: {x}" for x in removed]
    others = cpu_start.others_share(children)
    if others > BUSY_SHARE:
        notes.append(
            f"other processes used {min(others, 1.0):.0%} of the machine's CPU time during the run; "
            "kernel figures may be disturbed"
        )
    return notes
