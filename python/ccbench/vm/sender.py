"""The VM engine's sender side: the senders run in a QEMU guest whose virtio NIC is a TAP
device in the run's sender namespace, which routes to the emulator's TUN device.

```
 guest (QEMU, TCG or KVM)      sender namespace (router)        root        receiver namespace
 ccbench-agent --> eth0 ==TAP==> ccb-ID-t --fwd--> ccb-ID-s ==> emulator ==> ccb-ID-r --> agent receive
 10.X.Y.6/30                    10.X.Y.5/30                                    10.X.Y.2, .3
```

The guest's agent (``crates/ccbench-agent``) takes commands as JSON lines over the guest's
virtio serial port; its epoch is its own clock when it reads ``go``, sent at the host's
epoch, so the guest's flows start late by the control channel's latency (well under a
millisecond). For flows that repeat downloads, the receiver's notice that a download is
complete (a datagram to the run's ``done_path``, as for the kernel engine's sender) is
relayed to the agent as a ``done`` line.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..kernel.host import KernelRunError
from ..kernel.session import RunContext, attach_device, run_ip, setup_namespace
from . import bpf, deadline, kprofile, placement, switches
from .guest import GuestKernel
from .qemu import Vm, VmError

AGENT_TIMEOUT_S = 30.0
# The agent's line protocols that know `done` (repeated downloads) and `route`.
DONE_PROTOCOL = 2
ROUTE_PROTOCOL = 3
HANDSHAKE_RETRY_S = 1.0
MAC = "52:54:00:cc:be:01"
# The guest's only NIC, as its kernel names it.
GUEST_NIC = "eth0"
# QEMU's main thread moves every packet between the guest and its TAP. Waiting for a host
# CPU more than this share of a run, it held the guest's skbs (and so their TX
# completions) and its ACKs for longer than the guest's own work did: the testbed, not
# the sender, shaped the run. Measured here (two CPUs, TCG, placed): it waits 5-6% of
# an unlimited run at 20 Mbit/s, 17-46% at 100, 58-78% at 200 (its TX completions three
# to four times the 20 Mbit/s ones), and 67-89% where the guest no longer reaches the
# link (docs/vm-engine.md, "When the testbed is the bottleneck").
IO_WAIT_BOUND = 0.5
# What the guest's receive path holds before it drops: the virtio-net receive queue (set,
# QEMU's default) and, while that is full, its TAP's queue (tun's ring holds txqueuelen
# packets and `tun_net_xmit` drops beyond it). A held Cubic flow at 1 Gbit/s, 15% of
# 20 ms, lost none of its 7,157 ACKs there, where a 256-packet ring would have dropped
# most of them; the simulator that stands in for this VM gets the sum as its
# `host.rx_ring` (`ccbench.engines.vm.cpu_grid`).
VIRTIO_RX_QUEUE = 256
TAP_QUEUE = 1000
RECEIVE_PATH_PACKETS = VIRTIO_RX_QUEUE + TAP_QUEUE


def route_metrics(options: list[str]) -> dict[str, int]:
    """The plan's route options (``["initcwnd", "4", "rto_min", "50ms"]``) as the agent's
    ``route`` command takes them."""
    given = dict(zip(options[::2], options[1::2]))
    out = {}
    if "initcwnd" in given:
        out["initcwnd"] = int(given["initcwnd"])
    if "rto_min" in given:
        out["rto_min_ms"] = int(given["rto_min"].removesuffix("ms"))
    return out


def guest_addresses(addr_sender: str) -> tuple[str, str]:
    """(the TAP's address, the guest's address): a /30 beside the run's /32s."""
    a, b, c, _ = addr_sender.split(".")
    return f"{a}.{b}.{c}.5", f"{a}.{b}.{c}.6"


@dataclass(frozen=True)
class Instruments:
    """What a run measures beyond its results, each at some cost to the guest or host."""

    # How long the guest's NIC holds each skb (the guest's tracefs).
    trace_tx: bool = False
    # The guest kernel's tick profile (boots it with ``profile=``, see ``kprofile``).
    profile_guest: bool = False
    # When and why the vCPU threads were off their CPUs (the host's context-switch
    # records and wake-up events, ``switches``).
    trace_vcpu: bool = False


class GuestSender:
    """Senders in a guest; implements ``ccbench.kernel.session.SenderSide``."""

    def __init__(
        self,
        kernel: GuestKernel,
        initrd: Path,
        accel: str,
        vcpus: int = 1,
        share: Optional[float] = None,
        period_ns: int = 10_000_000,
        deadline: str = "slice",
        instruments: Instruments = Instruments(),
    ) -> None:
        self.kernel, self.initrd, self.accel, self.vcpus = kernel, initrd, accel, vcpus
        self.share, self.period_ns, self.deadline = share, period_ns, deadline
        self.instruments = instruments
        self.switch_trace: Optional[switches.SwitchTrace] = None
        self.absences: Optional[switches.Absences] = None
        self.vm: Optional[Vm] = None
        self.channel: Optional[socket.socket] = None
        self.reader: Any = None
        self.info: dict[str, Any] = {}
        self.policies: list[deadline.Policy] = []
        self.threads: list[int] = []
        # CPU time of each vCPU thread and the wall time, at go and at the end of the run.
        self.cpu_at_go: list[int] = []
        self.cpu_at_end: list[int] = []
        self.delay_at_go: list[int] = []
        self.delay_at_end: list[int] = []
        # The same of QEMU's main thread, which moves the guest's packets to and from its
        # TAP (a tap netdev without vhost): how long the virtual NIC's backend waited.
        self.io_at_go: tuple[int, int] = (0, 0)
        self.io_at_end: tuple[int, int] = (0, 0)
        # The run's other processes (emulator, receivers), and where its threads ran.
        self.others: list[int] = []
        self.placement: Optional[placement.Placement] = None
        self.tap_where: Optional[tuple[str, str]] = None
        self.skbs_at_go = self.skbs = 0
        self.switches_at_go: list[tuple[int, int]] = []
        self.switches_at_end: list[tuple[int, int]] = []
        self.wall_s = 0.0
        self.relay: Optional[_DoneRelay] = None
        self._send_lock = threading.Lock()

    # SenderSide

    def setup(self, run: RunContext) -> None:
        # The namespace only routes; the sender's sysctls are set in the guest.
        setup_namespace(run.st, run.ns_sender, {"net.ipv4.ip_forward": "1", "net.ipv6.conf.all.disable_ipv6": "1"})

    def attach(self, run: RunContext) -> None:
        tap = self._tap(run)
        tap_addr, guest_addr = guest_addresses(run.addr_sender)
        attach_device(
            run.ns_sender,
            run.tun_sender,
            run.plan.mtu,
            run.addr_sender,
            run.addr_receiver,
            [
                f"route replace {run.addr_receiver}/32 dev {run.tun_sender} src {run.addr_sender}",
                f"route replace {run.addr_ecn}/32 dev {run.tun_sender} src {run.addr_sender} features ecn",
            ],
        )
        run_ip("-n", run.ns_sender, "tuntap", "add", "dev", tap, "mode", "tap")
        self.tap_where = (run.ns_sender, tap)
        run_ip(
            "-n",
            run.ns_sender,
            "-batch",
            "-",
            stdin=f"link set dev {tap} mtu {run.plan.mtu} "
            f"txqueuelen {TAP_QUEUE} up\n"
            f"addr add {tap_addr}/30 dev {tap}\n",
        )
        self._boot(run, tap, guest_addr, tap_addr)

    def receiver_routes(self, run: RunContext) -> list[str]:
        _, guest_addr = guest_addresses(run.addr_sender)
        return [f"route replace {guest_addr}/32 dev {run.tun_receiver}"]

    def start(self, run: RunContext, config: dict[str, Any]) -> None:
        if any(f.get("repeat", 1) > 1 for f in config["flows"]):
            if self.info.get("protocol", 1) < DONE_PROTOCOL:
                raise KernelRunError(
                    "guest agent: too old for repeated downloads (protocol "
                    f"{self.info.get('protocol', 1)}); rebuild the guest image"
                )
            self.relay = _DoneRelay(config["done_path"], self._send)
        self._ask({"cmd": "sysctl", "set": run.plan.sender_sysctls}, "ok")
        # As the kernel engine's sender routes: each receiver address carries the route
        # options, and the ECN flows' address the ECN feature.
        metrics = route_metrics(run.plan.route_options)
        routes = [
            {"dst": dst, **metrics, "ecn": dst == run.addr_ecn}
            for dst in sorted({f["addr"] for f in config["flows"]})
            if metrics or dst == run.addr_ecn
        ]
        if routes and self.info.get("protocol", 1) < ROUTE_PROTOCOL:
            raise KernelRunError(
                "guest agent: too old to set route metrics (protocol "
                f"{self.info.get('protocol', 1)}); rebuild the guest image"
            )
        for r in routes:
            self._ask({"cmd": "route", **r}, "ok")
        if self.instruments.trace_tx:
            config = {**config, "trace_tx": GUEST_NIC}
        self.others = [p.pid for p in run.st.processes if p.role in ("emulator", "receiver")]
        if self.instruments.trace_vcpu:
            self.switch_trace = switches.SwitchTrace(run.st, self.threads)
        self._ask({"cmd": "send", "config": config}, "ready")

    def go(self, t0_ns: int) -> None:
        # The share holds the vCPU from the run's start, after the flows have connected,
        # as the simulator's flows start with their handshake done at the path's RTT.
        # Held while connecting (15% of 10 ms, TCG), the guest's flows began with an SRTT
        # of about 140 ms on a 20 ms path, so a low pacing rate, small skbs and a tight
        # TCP Small Queues limit for their whole slow start; at full CPU, 28-39 ms.
        assert self.vm is not None
        self.placement = placement.plan(os.sched_getaffinity(0), len(self.threads), deadline=self.share is not None)
        if self.placement is not None:
            placement.apply(self.placement, self.threads, self.vm.pid, self.others)
        if self.share is not None:
            self.policies = [deadline.set_deadline(t, self.share, self.period_ns, self.deadline) for t in self.threads]
        self.skbs_at_go = self._tap_packets()
        # The guest's epoch is when it reads this line: send it at the host's epoch.
        time.sleep(max(0.0, (t0_ns - time.monotonic_ns()) / 1e9))
        self.switches_at_go = self._switches()
        self.cpu_at_go, self.delay_at_go = self._schedstats()
        self.io_at_go = deadline.schedstat(self.vm.pid, self.vm.pid)
        if self.switch_trace is not None:
            self.switch_trace.start()
        self.wall_s = time.monotonic()
        self._send({"cmd": "go"})

    def finish(self, timeout_s: float) -> dict[str, Any]:
        try:
            result: dict[str, Any] = self._reply("result", timeout_s)
        finally:
            self._stop_relay()
        self.cpu_at_end, self.delay_at_end = self._schedstats()
        assert self.vm is not None
        self.io_at_end = deadline.schedstat(self.vm.pid, self.vm.pid)
        self.wall_s = time.monotonic() - self.wall_s
        if self.switch_trace is not None:
            self.absences = self.switch_trace.stop()
            self.switch_trace = None
        self.switches_at_end = self._switches()
        self.skbs = self._tap_packets() - self.skbs_at_go
        self._send({"cmd": "quit"})
        return result

    # The guest

    def _tap(self, run: RunContext) -> str:
        return run.tun_sender[:-2] + "-t"

    def _tap_packets(self) -> int:
        """Packets the guest has handed to its NIC, as the TAP counts them: with TSO a
        whole GSO skb is one (`tun_get_user`), so this is the guest's skb count."""
        if self.tap_where is None:
            return 0
        ns, tap = self.tap_where
        proc = subprocess.run(
            ["ip", "-n", ns, "-s", "-j", "link", "show", "dev", tap], capture_output=True, text=True, timeout=10
        )
        try:
            return int(json.loads(proc.stdout)[0]["stats64"]["rx"]["packets"])
        except (ValueError, LookupError):
            return 0

    def _boot(self, run: RunContext, tap: str, guest_addr: str, gateway: str) -> None:
        # The run's BPF congestion controls go in with an archive of their own, and the
        # guest registers them before it is ready.
        initrd = (
            self.initrd
            if run.bpf is None
            else bpf.initrd(self.initrd, run.bpf, self.kernel, run.work / "initrd-bpf.gz")
        )
        vm = Vm(
            self.kernel,
            initrd,
            run.work / "vm",
            vcpus=self.vcpus,
            accel=self.accel,
            # The guest's NIC has the run's MTU (mss + headers), as the kernel
            # engine's devices do, so its segments are the scenario's MSS.
            append=f"ccbench.mode=agent ccbench.ip={guest_addr}/30 ccbench.gw={gateway} ccbench.mtu={run.plan.mtu}"
            + (f" profile={kprofile.SHIFT}" if self.instruments.profile_guest else ""),
            netns=run.ns_sender,
            on_spawn=lambda pid: run.st.add_process(pid, "qemu"),
            extra_args=[
                "-netdev",
                f"tap,id=n0,ifname={tap},script=no,downscript=no",
                "-device",
                f"virtio-net-pci,netdev=n0,mac={MAC},rx_queue_size={VIRTIO_RX_QUEUE}",
            ],
        )
        self.vm = vm
        vm.start()
        if run.bpf is not None:
            bpf.registered(vm.console_text(), run.bpf, vm.ready.get("cc", "").split(","))
        self.threads = vm.vcpu_threads()
        self.policies = [deadline.get_policy(t) for t in self.threads]
        self.channel = vm.control()
        self.channel.settimeout(None)
        self.reader = self.channel.makefile("rb")
        self.info = self._handshake()

    def vcpu_use(self) -> list[float]:
        """Each vCPU thread's CPU time over the run as a share of the run's wall time."""
        if not self.cpu_at_end or self.wall_s <= 0:
            return []
        return [(b - a) / 1e9 / self.wall_s for a, b in zip(self.cpu_at_go, self.cpu_at_end)]

    def vcpu_cpu_s(self) -> float:
        """CPU time all vCPU threads used during the run, in seconds."""
        return sum(b - a for a, b in zip(self.cpu_at_go, self.cpu_at_end)) / 1e9

    def vcpu_run_delay_s(self) -> float:
        """Time the vCPU threads waited, runnable, for a host CPU during the run, seconds."""
        return sum(b - a for a, b in zip(self.delay_at_go, self.delay_at_end)) / 1e9

    def io_thread(self) -> dict[str, float]:
        """QEMU's main thread over the run: its CPU time and the time it was runnable but
        waiting for a host CPU (s), the latter also as a share of the run's wall time."""
        cpu, wait = (b - a for a, b in zip(self.io_at_go, self.io_at_end))
        waiting = wait / 1e9 / self.wall_s if self.wall_s > 0 else 0.0
        return {"cpu_s": round(cpu / 1e9, 6), "run_delay_s": round(wait / 1e9, 6), "waiting": round(waiting, 4)}

    def vcpu_sleeps(self) -> int:
        """Times the vCPU threads went to sleep during the run (the guest going idle)."""
        return sum(b[0] - a[0] for a, b in zip(self.switches_at_go, self.switches_at_end))

    def vcpu_preemptions(self) -> int:
        """Times the vCPU threads were taken off the CPU with work to do (throttled)."""
        return sum(b[1] - a[1] for a, b in zip(self.switches_at_go, self.switches_at_end))

    def _switches(self) -> list[tuple[int, int]]:
        assert self.vm is not None
        return [deadline.context_switches(self.vm.pid, t) for t in self.threads]

    def _schedstats(self) -> tuple[list[int], list[int]]:
        """Each vCPU thread's CPU time and run delay so far."""
        assert self.vm is not None
        stats = [deadline.schedstat(self.vm.pid, t) for t in self.threads]
        return [s[0] for s in stats], [s[1] for s in stats]

    def _handshake(self) -> dict[str, Any]:
        """``info`` until the agent answers: it may still be starting, and it discards what
        arrived before it put the port in raw mode."""
        deadline = time.monotonic() + AGENT_TIMEOUT_S
        while True:
            self._send({"cmd": "info"})
            try:
                info: dict[str, Any] = self._reply("info", HANDSHAKE_RETRY_S)
                return info
            except KernelRunError:
                if time.monotonic() > deadline:
                    raise
            # A reply may still be on its way: start afresh.
            self.reader = self.channel.makefile("rb") if self.channel is not None else None

    def stop(self) -> None:
        self._stop_relay()
        if self.switch_trace is not None:
            self.switch_trace.close()
        if self.vm is not None:
            self.vm.stop()

    def _stop_relay(self) -> None:
        if self.relay is not None:
            self.relay.stop()
            self.relay = None

    def _send(self, message: dict[str, Any]) -> None:
        assert self.channel is not None
        with self._send_lock:  # the relay's thread writes too
            self.channel.sendall(json.dumps(message).encode() + b"\n")

    def _ask(self, message: dict[str, Any], key: str) -> Any:
        self._send(message)
        return self._reply(key, AGENT_TIMEOUT_S)

    def _reply(self, key: str, timeout_s: float) -> Any:
        assert self.channel is not None and self.vm is not None
        self.channel.settimeout(max(0.1, timeout_s))
        try:
            line = self.reader.readline()
        except (TimeoutError, socket.timeout):
            raise KernelRunError(f"guest agent: no reply within {timeout_s:.0f} s (waiting for {key!r})") from None
        if not line:
            raise VmError(f"the guest's control channel closed (waiting for {key!r}){self.vm._tail()}")
        try:
            reply = json.loads(line)
        except ValueError:
            raise KernelRunError(f"guest agent: unreadable reply {line[:200]!r}") from None
        if "error" in reply:
            raise KernelRunError(f"guest agent: {reply['error']}")
        if key not in reply:
            raise KernelRunError(f"guest agent: expected {key!r}, got {line[:200]!r}")
        return reply[key]


class _DoneRelay:
    """Relays the receiver's ``"<flow> <download> <at_ns>"`` datagrams, sent to
    ``path`` when a download is complete, to the guest's agent as ``done`` lines."""

    def __init__(self, path: str, send: Any) -> None:
        self.path, self.send = path, send
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._relay, name="ccbench-done-relay", daemon=True)
        self.thread.start()

    def _relay(self) -> None:
        while not self.stopping.is_set():
            try:
                data = self.sock.recv(64)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                flow, download, at_ns = (int(x) for x in data.split())
                self.send({"cmd": "done", "flow": flow, "download": download, "at_ns": at_ns})
            except (ValueError, OSError):
                continue

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=2.0)
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
