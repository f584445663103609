"""From a scenario to what the kernel engine sets up, or a clear refusal.

Each scenario value maps to a kernel mechanism, or is refused when the kernel cannot
express it:

==================  =====================================================================
scenario            kernel engine
==================  =====================================================================
link.*              the emulator (rate or trace, ack_trace, rate and RTT schedules, buffer or
                    AQM, loss or loss model, nic_rate), exactly as the simulator; traces and
                    schedules start at the measurement epoch
link.reverse        the emulator's reverse bottleneck (rate or trace, buffer in its own BDP,
                    AQM, loss of data only), exactly as the simulator: the up flows' data and
                    the down flows' ACKs share its queue
flows[].direction   ``down``: the sender in the sender's namespace, the receiver in the
                    receiver's; ``up``: the other way round (the sending agent creates the
                    flow's sockets in the receiver's namespace and the receiving agent in the
                    sender's, ``setns``), so that its data crosses the reverse bottleneck and
                    its ACKs the forward one, behind the down flows' data
link.mtu, mtu_black_hole
                    the emulator drops a packet from a sender longer than link.mtu and (but
                    in a black hole) writes an ICMP "fragmentation needed" with the MTU into
                    that sender's device, from its receiver's address; the hosts' devices
                    keep tcp.mss + 52
tcp.mss             MTU of the devices = mss + 52 (IPv4 20, TCP 20, timestamps 12)
tcp.init_cwnd       ``initcwnd`` on each sender's route (when not the default 10): the
                    sender's namespace's, and the receiver's when a flow goes up
tcp.rto_min         ``rto_min`` on each sender's route (whole milliseconds)
tcp.tsq_limit, tso_rtt_log, frto, sack, tso_win_divisor, min_tso_segs, slow_start_after_idle,
mtu_probing, base_mss, probe_threshold, probe_interval, mtu_probe_floor
                    their ``net.ipv4`` sysctls (``Tcp.sysctls``) in both namespaces (and in a VM
                    guest), so that they reach the senders of either direction; one the kernel
                    lacks is refused unless it keeps its default; tcp_probe_interval is in whole
                    seconds
tcp.hz              must be the kernel's CONFIG_HZ; the default (1000) is replaced by it
tcp.rto_init, tcp.pacing_shift, tcp.delack_min
                    fixed in the kernel: only their defaults are accepted
flows[].cca         ``TCP_CONGESTION`` per socket; must be in tcp_available_congestion_control
                    (the kernel's modules, the same in every namespace), or be ``bpf:PATH``: an
                    object registered under a name of the run's own (``bpf_ca``)
flows[].pacing      ``true`` for an algorithm that does not pace: ``SO_MAX_PACING_RATE`` (any
                    cap turns on the kernel's internal pacing); ``false`` for BBR is refused
flows[].rwnd        the receiver's window: its buffer locked (``SO_RCVBUFFORCE``) and
                    ``TCP_WINDOW_CLAMP`` held at rwnd on the connection (re-set after each
                    read, since Linux recomputes the clamp from the buffer)
flows[].rwnd_autotune
                    the buffer left to autotuning, the clamp held at no more than rwnd
tcp.rmem            ``net.ipv4.tcp_rmem`` in the receiver's namespace as set (and in the
                    sender's when a flow goes up); left at its default, ``4096 131072 max(4
                    rwnd, 6 MiB)`` (the largest rwnd of the flows received there), room for
                    autotuning to reach rwnd as the simulator's buffer does
flows[].ecn         ``classic``: the flow connects to a second address of its receiver's
                    namespace, whose route in its sender's namespace has ``features ecn`` (so
                    ECN can differ per flow); ``low`` is refused (mainline kernels have no
                    ECN-low route feature)
link.ecn_threshold  the emulator marks ECN-capable packets CE, exactly as the simulator
flows[].params      refused (kernel module parameters are global), but for a ``bpf:`` algorithm:
                    the object's globals, set in the run's copy of it
flows[].start, size, access_delay, count
                    the sender agent and the emulator
flows[].repeat, pause
                    one connection per download, connected ahead of it; the receiver
                    tells the sender when it has a download (a Unix socket outside the
                    emulated path), and the next starts ``pause`` later, as in the simulator
flows[].connect     ``sender``: the sender agent calls connect() when each download is due;
                    ``receiver``: the sender agent listens on its own address and the
                    receiver agent connects when each download is due and sends a
                    100-byte request, which the sender reads before it writes
flows[].fastopen    ``net.ipv4.tcp_fastopen = 3`` in both namespaces, ``TCP_FASTOPEN`` on the
                    listener, ``TCP_FASTOPEN_CONNECT`` on the sender's sockets
udp[k]              the sending agent sends real datagrams (``size`` bytes of payload, the
                    first 16 its number and send time) at the instants the simulator's source
                    sends them (``_core.udp_schedule``, the seed's on/off periods included),
                    from the namespace of the flow's source (the receiver's going up) to a
                    sink in the other, which counts them and takes each one's one-way delay
                    from the kernel's receive time stamp; the emulator puts them on a lane
                    of their own (its sink's port), where random loss takes them as data;
                    a datagram over the hosts' MTU is refused
arrivals[k]         each connection opens at the simulator's instant with the simulator's
                    size (``_core.arrival_schedule``), in the namespace of its direction:
                    ``connect = "sender"``: the sender connects, then writes the size (its
                    first 4 bytes the connection's number); ``"receiver"``: the receiver
                    connects and sends a 100-byte request naming it, the sender answers;
                    the receiver takes the moment it had every byte (FCT = that minus the
                    arrival instant: the kernel's time stamp of the last segment where all
                    came in order, else its own clock) and resets the connection; the
                    emulator carries a group's connections on one lane (its listener's
                    port); the ideal FCT is the simulator's (``_core.alone_fcts``);
                    ``params`` and BPF algorithms are refused, as are sizes under 4 bytes
load                the run is refused up front beyond what the emulator and the Python
                    agents keep up with (``traffic``): packets a second through the emulator
                    (both links full, their ACKs, the UDP flows at their peak), datagrams a
                    second, and connections in the busiest second
==================  =====================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..scenario import Flow, Scenario, Tcp
from ..units import format_duration
from ..bpf.name import is_bpf
from .host import HostFacts, KernelEngineError
from .traffic import Traffic, plan_traffic

HEADER_BYTES = 52
MAX_FLOWS = 200
BASE_PORT = 20000
# Algorithms that always pace in the kernel (they set SK_PACING_NEEDED themselves), but
# for the VM engine's BBR built without it (``bbr_unpaced``: ccbench.vm.patched).
SELF_PACED_PREFIX = "bbr"
UNPACED_SUFFIX = "_unpaced"
MS = 1_000_000
S = 1_000_000_000
# SCHED_FIFO priority of the emulator's thread: on a two-CPU machine it cuts the 99th
# percentile of its lateness at 100 Mbit/s from milliseconds to tens of microseconds.
EMULATOR_PRIORITY = 10


@dataclass(frozen=True)
class FlowPlan:
    index: int
    entry: int
    cca: str
    start_ns: int
    access_delay_ns: int
    size_bytes: Optional[int]
    rwnd_bytes: int
    rwnd_autotune: bool
    repeat: int
    pause_ns: int
    paced: bool
    force_pacing: bool
    ecn: bool
    sndbuf_bytes: Optional[int] = None
    connect: str = "ahead"
    fastopen: bool = False
    # The data goes up: the sender in the receiver's namespace, the receiver in the sender's.
    up: bool = False

    @property
    def field(self) -> str:
        return f"flows[{self.entry}]"


@dataclass(frozen=True)
class Plan:
    """A scenario as the kernel engine runs it."""

    scenario: Scenario  # as run: tcp.hz is the kernel's
    flows: list[FlowPlan]
    mtu: int
    route_options: list[str]
    sender_sysctls: dict[str, str]
    receiver_sysctls: dict[str, str]
    notes: list[str] = field(default_factory=list)
    # The scenario as the simulator reads it (what the emulator and the summary read).
    core: dict[str, Any] = field(default_factory=dict, repr=False)
    traffic: Traffic = field(default_factory=Traffic)

    @property
    def duration_ns(self) -> int:
        return self.scenario.duration_ns

    @property
    def interval_ns(self) -> int:
        return self.scenario.interval_ns


def _defaults() -> Tcp:
    return Tcp.model_validate({})


def make_plan(sc: Scenario, host: HostFacts) -> Plan:
    """The scenario as the kernel engine runs it on ``host``, or KernelEngineError naming
    the first value it cannot express (the table above)."""
    default = _defaults()
    sc, notes = _with_kernel_hz(sc, host, default)
    tcp = sc.tcp
    _check_kernel_fixed(tcp, default)
    route = _route_options(tcp, default)
    flows = _flow_plans(sc, host)
    mtu = tcp.mss + HEADER_BYTES
    core = sc.to_core()
    try:
        traffic = plan_traffic(core, host, mtu)
    except KernelEngineError as e:
        # Named by the user's [[flows]] entry, as the simulator's errors are.
        raise KernelEngineError(sc._entry_field(e.field), e.message) from None
    sender, receiver = _namespace_sysctls(tcp, default, host, flows, traffic)
    return Plan(sc, flows, mtu, route, sender, receiver, notes, core, traffic)


def _with_kernel_hz(sc: Scenario, host: HostFacts, default: Tcp) -> tuple[Scenario, list[str]]:
    """The scenario with tcp.hz the kernel's CONFIG_HZ (an error when the scenario set
    another), and a note when that changed it."""
    tcp = sc.tcp
    notes: list[str] = []
    if host.kernel_hz is not None and tcp.hz != host.kernel_hz:
        if tcp.hz != default.hz:
            raise KernelEngineError(
                "tcp.hz",
                f"the kernel ticks at CONFIG_HZ={host.kernel_hz}; set hz = {host.kernel_hz} or leave the default",
            )
        sc = sc.model_copy(update={"tcp": tcp.model_copy(update={"hz": host.kernel_hz})})
        notes.append(f"tcp.hz set to the kernel's CONFIG_HZ={host.kernel_hz}")
    return sc, notes


def _check_kernel_fixed(tcp: Tcp, default: Tcp) -> None:
    """The [tcp] values the kernel has no knob for must keep their defaults."""
    fixed = (
        ("rto_init", tcp.rto_init_ns, default.rto_init_ns, format_duration),
        ("pacing_shift", tcp.pacing_shift, default.pacing_shift, str),
        ("delack_min", tcp.delack_min_ns, default.delack_min_ns, format_duration),
    )
    if tcp.probe_interval_ns % S:
        raise KernelEngineError("tcp.probe_interval", "the kernel's net.ipv4.tcp_probe_interval is in whole seconds")
    for name, value, dflt, fmt in fixed:
        if value != dflt:
            raise KernelEngineError(
                f"tcp.{name}",
                f"the kernel engine cannot change it (the kernel's value is {fmt(dflt)}); leave the default",
            )


def _route_options(tcp: Tcp, default: Tcp) -> list[str]:
    """The [tcp] values the kernel sets per route (``ip route ... initcwnd N rto_min T``)."""
    route: list[str] = []
    if tcp.init_cwnd != default.init_cwnd:
        route += ["initcwnd", str(tcp.init_cwnd)]
    if tcp.rto_min_ns != default.rto_min_ns:
        if tcp.rto_min_ns % MS:
            raise KernelEngineError("tcp.rto_min", "the kernel engine sets it per route in whole milliseconds")
        route += ["rto_min", f"{tcp.rto_min_ns // MS}ms"]
    return route


def _flow_plans(sc: Scenario, host: HostFacts) -> list[FlowPlan]:
    """Each flow entry, checked against what the kernel can do, ``count`` times."""
    flows: list[FlowPlan] = []
    for entry, f in enumerate(sc.flows):
        if getattr(f, "kind", "tcp") == "udp":
            continue  # the core's udp[k], planned with the arrivals (``traffic``)
        self_paced, ecn = _check_flow(f, f"flows[{entry}]", host)
        for _ in range(f.count):
            flows.append(
                FlowPlan(
                    index=len(flows),
                    entry=entry,
                    cca=f.cca,
                    start_ns=f.start_ns,
                    access_delay_ns=f.access_delay_ns,
                    size_bytes=f.size_bytes,
                    rwnd_bytes=f.rwnd_bytes,
                    rwnd_autotune=f.rwnd_autotune,
                    repeat=f.repeat,
                    pause_ns=f.pause_ns,
                    paced=self_paced or f.pacing is True,
                    force_pacing=not self_paced and f.pacing is True,
                    ecn=ecn == "classic",
                    sndbuf_bytes=f.sndbuf_bytes,
                    connect=f.connect,
                    fastopen=f.fastopen,
                    up=goes_up(f),
                )
            )
    if len(flows) > MAX_FLOWS:
        raise KernelEngineError("flows", f"the kernel engine runs at most {MAX_FLOWS} flows, got {len(flows)}")
    return flows


def goes_up(f: Flow) -> bool:
    """Whether the flow's data goes up (``direction = "up"``, read where the scenario has it)."""
    return getattr(f, "direction", "down") == "up"


def _check_flow(f: Flow, where: str, host: HostFacts) -> tuple[bool, str]:
    """A flow entry the kernel can run (its algorithm loaded); whether the algorithm
    paces by itself, and the flow's ECN."""
    if is_bpf(f.cca):
        # Its params are the object's globals, set in the run's own copy.
        if host.bpf_unavailable is not None:
            raise KernelEngineError(f"{where}.cca", host.bpf_unavailable)
    else:
        host.require_module_algorithm(f.cca, f.params, where)
    self_paced = f.cca.startswith(SELF_PACED_PREFIX) and not f.cca.endswith(UNPACED_SUFFIX)
    if self_paced and f.pacing is False:
        raise KernelEngineError(
            f"{where}.pacing",
            f"{f.cca} always paces in the kernel; remove pacing = false "
            "(the VM engine has BBRv1 without pacing, bbr_unpaced, a module it builds)",
        )
    ecn = getattr(f, "ecn", "off")
    if f.connect == "receiver" and ecn != "off":
        raise KernelEngineError(
            f"{where}.ecn",
            "the kernel engine negotiates ECN on the receiver's address, which a receiver that "
            'opens its connections does not use; with connect = "receiver", leave ecn off',
        )
    if ecn not in ("off", "classic"):
        raise KernelEngineError(
            f"{where}.ecn",
            f"'{ecn}' needs a kernel with an ECN-low route feature, which "
            "mainline Linux lacks; allowed here: off, classic",
        )
    return self_paced, ecn


def _namespace_sysctls(
    tcp: Tcp, default: Tcp, host: HostFacts, flows: list[FlowPlan], traffic: Traffic
) -> tuple[dict[str, str], dict[str, str]]:
    """The sysctls of the sender's and the receiver's namespaces."""
    common = {
        "net.ipv6.conf.all.disable_ipv6": "1",
        "net.ipv6.conf.default.disable_ipv6": "1",
        "net.ipv4.tcp_no_metrics_save": "1",
    }
    # The [tcp] sysctls, in both namespaces: the receiver's tcp_sack decides the
    # handshake as much as the sender's; the rest act on the senders of either direction.
    stack = _tcp_sysctls(tcp, default, host)
    # tcp.wmem among them: the sender's send buffer as the simulator models it. tcp.rmem
    # acts on the receiver only, the one whose buffer the simulator models.
    stack.pop("net.ipv4.tcp_rmem", None)
    sender = {**common, **stack}
    receiver = {**common, **stack}
    if any(f.fastopen for f in flows):
        # Fast Open as a client and as a server (the default, 1, is client only).
        sender["net.ipv4.tcp_fastopen"] = receiver["net.ipv4.tcp_fastopen"] = "3"
    # tcp.rmem where flows are received: the receiver's namespace, and the sender's
    # when flows go up (a run without them keeps the sender's at the kernel's default).
    down, up = _received_windows(flows, traffic)
    receiver["net.ipv4.tcp_rmem"] = _rmem(tcp, default, down or up or [arrival_window()[0]])
    if up:
        sender["net.ipv4.tcp_rmem"] = _rmem(tcp, default, up)
    return sender, receiver


def _received_windows(flows: list[FlowPlan], traffic: Traffic) -> tuple[list[int], list[int]]:
    """The receive windows of the connections received in the receiver's namespace (going
    down) and in the sender's (going up): the flows', and a group of arrivals' default."""
    windows: dict[bool, list[int]] = {False: [], True: []}
    for f in flows:
        windows[f.up].append(f.rwnd_bytes)
    for a in traffic.arrivals:
        windows[a.up].append(arrival_window()[0])
    return windows[False], windows[True]


def arrival_window() -> tuple[int, bool]:
    """The receive window of a connection of arrivals and whether it autotunes: a flow's
    defaults (core arrivals carry none of their own)."""
    default = Flow.model_validate({"cca": "cubic"})
    return int(default.rwnd_bytes), bool(default.rwnd_autotune)


def _rmem(tcp: Tcp, default: Tcp, received: list[int]) -> str:
    """``net.ipv4.tcp_rmem`` of a namespace where connections of windows ``received``
    have their receivers."""
    if tcp.rmem != default.rmem:
        return tcp.sysctls()["net.ipv4.tcp_rmem"]
    # Room for the receive window to grow to rwnd whatever the skb overhead, as the
    # simulator sizes the buffer when tcp.rmem is left at its default.
    rwnd_max = max(received)
    return f"4096 131072 {max(4 * rwnd_max, 6 * 2**20)}"


def _tcp_sysctls(tcp: Tcp, default: Tcp, host: HostFacts) -> dict[str, str]:
    """``tcp.sysctls()`` less those this kernel lacks, which must then keep their default."""
    wanted, defaults, names = tcp.sysctls(), default.sysctls(), Tcp.sysctl_fields()
    out = {}
    for key, value in wanted.items():
        if host.has_sysctl(key):
            out[key] = value
        elif value != defaults[key]:
            raise KernelEngineError(
                f"tcp.{Tcp.model_fields[names[key]].alias or names[key]}",
                f"this kernel ({host.kernel}) has no {key}; leave the default",
            )
    return out


def emulator_config(
    plan: Plan, tun_sender: str, tun_receiver: str, max_runtime_ns: int, capture: Optional[dict[str, Any]] = None
) -> dict[str, Any]:
    return {
        "capture": capture,
        "scenario": plan.core or plan.scenario.to_core(),
        "tun_sender": tun_sender,
        "tun_receiver": tun_receiver,
        "base_port": BASE_PORT,
        "max_runtime_ns": max_runtime_ns,
        "realtime_priority": EMULATOR_PRIORITY,
    }
