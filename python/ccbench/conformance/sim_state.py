"""The state of one script's run on the simulator: the constants of the stack it
stands for, what the handshake established, what the application wrote and received,
the skbs waiting to be matched against ``>`` lines, and the small helpers that move
between the script's byte numbers and the sender."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ..scenario import Tcp
from .script import Event, Script
from .verdict import Mismatch

STACK = "simulator"

#: The kernel this machine runs (`CONFIG_HZ`), whose timers the harness rounds to.
KERNEL_HZ = 250
TCP_MAX_QUICKACKS = 16
INVALID_RATELIMIT_US = 500_000  # net.ipv4.tcp_invalid_ratelimit
#: The tun device's MTU unless `--mtu` sets another (`TUN_DRIVER_DEFAULT_MTU`); less
#: IPv4 and TCP headers, the route's `advmss`, the cap on the MSS.
TUN_MTU = 1500
IPV4_TCP_HEADERS = 40
#: packetdrill's command-line options that change only the script's environment:
#: addresses and ports (within IPv4), the tun device's reported speed, output.
ENVIRONMENT_OPTIONS = frozenset(
    {"local_ip", "remote_ip", "gateway_ip", "netmask_ip", "bind_port", "connect_port", "speed", "verbose", "debug"}
)
#: `TCP_MSS_DEFAULT`: what TCP_MAXSEG reads before a connection when none was set.
TCP_MSS_DEFAULT = 536
#: TCP timestamp option bytes taken from the MSS when timestamps are negotiated.
TS_OPTION_BYTES = 12
#: `MAX_RW_COUNT` (include/linux/fs.h, INT_MAX rounded down to a 4 KB page): the most
#: one write() or sendmsg() copies.
MAX_RW_COUNT = 2_147_479_552
#: `net.core.wmem_max`'s default: the most SO_SNDBUF takes (`sk_setsockopt`).
WMEM_MAX = 212_992
#: `SOCK_MIN_SNDBUF` (include/net/sock.h) on a 64-bit kernel: the least `sk_sndbuf`.
SOCK_MIN_SNDBUF = 4_608
#: packetdrill's default `--tolerance_percent`.
TOLERANCE_PERCENT = 12.5
#: packetdrill waits this long past an outbound packet's expected time.
SNIFF_TIMEOUT_US = 2_000_000

#: Values every script starts from (common/defaults.sh); a script that changes one the
#: simulator has no knob for is unsupported.
MODELLED_DEFAULTS = {
    "net.ipv4.tcp_sack": "1",
    "net.ipv4.tcp_recovery": "1",
    "net.ipv4.tcp_reordering": "3",
}
#: The [tcp] settings that are sysctls, which a script may change (the handshake, not
#: the sysctl, decides SACK: ``net.ipv4.tcp_sack`` stays in ``MODELLED_DEFAULTS``).
STACK_SYSCTLS = {k: v for k, v in Tcp.sysctl_fields().items() if k not in MODELLED_DEFAULTS}
#: Settings that do not reach the data sender of these scripts.
IGNORED_SYSCTLS = {
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_syn_retries",
    "net.ipv4.tcp_synack_retries", "net.ipv4.tcp_dsack", "net.ipv4.tcp_fack", "net.ipv4.tcp_ecn_option",
    "net.ipv4.tcp_notsent_lowat", "net.ipv4.tcp_fastopen_key",
    "net.ipv4.tcp_syncookies",
}  # fmt: skip
#: Shell lines with no effect on the simulated sender.
#: The one qdisc change after the connection is up that the model has: a qdisc that
#: refuses every packet.
DROP_ALL_QDISC = "tc qdisc replace dev tun0 root pfifo limit 0"
IGNORED_COMMANDS = ("ip tcp_metrics flush", "tc qdisc add dev tun0 root pfifo", "/tmp/sysctl_restore_")
#: TCP_INFO fields the harness has no state for.
NO_STATE: dict[str, str] = {}
#: Module parameters of tcp_cubic a script may write, which the simulator's Cubic
#: takes under the same names.
CUBIC_MODULE_PARAMS = {
    "beta", "bic_scale", "fast_convergence", "tcp_friendliness", "initial_ssthresh",
    "hystart", "hystart_detect", "hystart_low_window", "hystart_ack_delta_us",
}  # fmt: skip
_MODULE_PARAM = re.compile(r"echo\s+(?:-n\s+)?(\d+)\s*>\s*/sys/module/(\w+)/parameters/(\w+)$")
#: Socket calls with nothing to do in the model.
NO_OP_CALLS = {"socket", "bind", "listen", "accept"}
#: IP-level socket options that change nothing the model has: path-MTU discovery (no
#: path-MTU model) and the TOS byte (Linux keeps a TCP socket's ECN bits whatever
#: IP_TOS says, `__ip_sock_set_tos`; the route refresh it forces has nothing to refresh).
NO_OP_IP_OPTIONS = {"IP_MTU_DISCOVER", "IP_TOS"}


class Unsupported(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Failed(Exception):
    def __init__(self, m: Mismatch) -> None:
        super().__init__(m)
        self.mismatch = m


@dataclass
class Skb:
    time_us: float
    start: int  # first byte (script numbering, 1 = first data byte)
    length: int
    retrans: bool
    ect: bool
    cwr: bool
    fin: bool = False
    ack: int = 1  # 1 + the peer's data bytes received, + 1 once its FIN is acknowledged
    rst: bool = False
    ack_flag: bool = True  # a RST for no socket answering a segment with ACK has none

    def text(self) -> str:
        # PSH is left out: it is not compared (see _flags_match).
        flags = ("F" if self.fin else "") + ("R" if self.rst else "") + ("W" if self.cwr else "")
        if not self.ack_flag:
            return f"{flags} {self.start}:{self.start + self.length}({self.length})"
        return f"{flags}. {self.start}:{self.start + self.length}({self.length}) ack {self.ack}"


@dataclass
class Conn:
    """What the handshake established."""

    mss: int = 536
    #: `rx_opt.mss_clamp`: the peer's MSS option within TCP_MAXSEG; None: not known.
    mss_clamp: Optional[int] = None
    peer_wscale: int = 0
    wscale_ok: bool = False
    ts_ok: bool = False
    ecn_ok: bool = False
    syn_time_us: int = 0  # our SYN (active) or SYN-ACK (passive) left
    syn_seen: bool = False
    sack_ok: bool = True
    active: bool = False


@dataclass
class Run:
    script: Script
    tolerance_us: int
    cc_params: dict[str, float]
    cca: str = "cubic"
    paced: bool = False
    ecn_sysctl: int = 0
    strict_segments: bool = False
    cubic_module: dict[str, float] = field(default_factory=dict)
    # [tcp] settings the script's sysctls set (the simulator's TcpConfig fields).
    stack: dict[str, Any] = field(default_factory=dict)
    tlp: bool = True
    h: Any = None
    conn: Conn = field(default_factory=Conn)
    now_us: int = 0
    last_event: Optional[Event] = None
    last_event_us: int = 0
    fifo: list[Skb] = field(default_factory=list)
    # TCP_NODELAY and TCP_CORK as set before the connection is up (applied as it opens);
    # the tun device's TSO/GSO (`ethtool -K tun0 tso off gso off` turns them off).
    nodelay: bool = False
    cork: bool = False
    gso: bool = True
    # `tc qdisc replace dev tun0 root pfifo limit 0`: from then on nothing leaves.
    qdisc_drops: bool = False
    user_mss: Optional[int] = None
    # `--mtu`: the tun device's MTU; `--mss`: the segment size of the peer's data that the
    # tun device hands to the stack as one GRO packet; `--tolerance_percent`.
    tun_mtu: int = TUN_MTU
    # The route to the peer as `ip route change` set it (a sim_path.Route), if it did.
    route: Any = None
    gro_mss: Optional[int] = None
    tolerance_percent: float = TOLERANCE_PERCENT
    # SO_SNDBUF as the kernel keeps it (doubled), if the script set it.
    sndbuf: Optional[int] = None
    # A write() that waits for room in the send buffer: its event and the end of its
    # expected time range; the end of the current event's range (a syscall's).
    blocked: Optional[tuple[Event, Optional[int]]] = None
    event_end_us: Optional[int] = None
    # A blocked write that returned outside its time range, checked lazily.
    late_return: Optional[Mismatch] = None
    # Descriptors set O_NONBLOCK (fcntl F_SETFL), and a read() waiting for the peer's
    # data: its event, its length, and the end of its expected time range.
    nonblocking: set[str] = field(default_factory=set)
    read_waiting: Optional[tuple[Event, int, Optional[int]]] = None
    namespace: dict[str, Any] = field(default_factory=dict)
    failed_assertion: Optional[Mismatch] = None
    # The listening socket's and the connection's descriptors (accept's or connect's);
    # close() of the connection's was called (see sim_close); a connection closed before
    # it was established is gone; the peer's FIN came and was acknowledged.
    listen_fd: Optional[str] = None
    # SO_LINGER on with a zero time: close() resets the connection.
    linger_zero: bool = False
    conn_fd: Optional[str] = None
    closed_fd: bool = False
    gone: bool = False
    peer_fin: bool = False
    # The peer's data (see _inbound_data): bytes received in order and read by the
    # application; when data last arrived (`icsk_ack.lrcvtime`); quick ACKs left.
    received: int = 0
    consumed: int = 0
    lrcvtime_us: int = 0
    quickacks: int = 0
    # When the last challenge ACK left (`tp->last_oow_ack_time`).
    last_oow_ack_us: Optional[int] = None
    # Fast Open (see sim_fastopen): net.ipv4.tcp_fastopen (TFO_CLIENT_ENABLE by
    # default), the state of the connection and the client's cookie cache, and the bytes
    # of data our SYN carried that its SYN-ACK acknowledged, which come before the
    # sender's own numbering (its byte 0 is the script's byte 1 + syn_data).
    fastopen_sysctl: int = 1
    fo: Any = None
    syn_data: int = 0

    @property
    def written(self) -> int:
        """Bytes the application's writes have put in the send buffer."""
        return self.h.written() if self.h is not None else 0

    @property
    def ack(self) -> int:
        """The ACK field of what we send: the peer's next byte."""
        return 1 + self.received + self.peer_fin


def cca_name(name: str) -> str:
    """A script's congestion control, if the simulator has it."""
    name = name.strip().strip('"')
    if name not in ("cubic", "reno", "bbr"):
        raise Unsupported(f"congestion control {name!r}")
    return name


def collect(run: Run, sent: list[tuple[int, int, int, int, int, bool, bool, bool, bool, bool]]) -> None:
    """The skbs the sender reports, queued for the script's ``>`` lines in its numbering."""
    for time_ns, _seg, offset, segs, nbytes, retrans, ect, cwr, _psh, fin in sent:
        if segs == 0:  # a zero-window probe: empty, one byte below snd_una
            run.fifo.append(Skb(time_ns / 1000, offset, 0, False, False, False, ack=run.ack))
            continue
        run.fifo.append(Skb(time_ns / 1000, offset + 1 + run.syn_data, nbytes, retrans, ect, cwr, fin, ack=run.ack))


def emit(run: Run, skb: Skb) -> None:
    """A segment the driver sends for the stack (an ACK, FIN or RST). A local qdisc that
    refuses everything drops it, and the refusal starts a CWR reduction as for any
    segment (`__tcp_transmit_skb` -> `tcp_enter_cwr`)."""
    if run.qdisc_drops:
        run.h.refused_packet(int(skb.time_us * 1000))
        return
    run.fifo.append(skb)


def snd_nxt_byte(run: Run) -> int:
    """`snd_nxt` in the script's numbering: past our FIN once it has left."""
    fin = run.h.fin()
    return 1 + run.syn_data + run.written - run.h.tcp_info()["tcpi_notsent_bytes"] + bool(fin and fin[2])


def snd_una_byte(run: Run) -> int:
    return run.h.tcp_info()["tcpi_bytes_acked"] + 1 + run.syn_data


def advmss(run: Run) -> int:
    """`tp->advmss`: the route's (its `advmss` metric, else the tun device's MTU less
    headers, `ipv4_default_advmss`), lowered by the user's TCP_MAXSEG."""
    metric = run.route.advmss if run.route is not None else None
    route = metric if metric is not None else run.tun_mtu - IPV4_TCP_HEADERS
    return min(route, run.user_mss) if run.user_mss else route
