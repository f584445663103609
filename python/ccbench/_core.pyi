"""Type stub of the compiled simulator binding (crates/ccbench-py)."""

from ccbench.errors import ScenarioError as ScenarioError

Column = list[float] | list[int] | list[str]

def run(
    scenario_json: str, capture_json: str | None = None
) -> tuple[str, dict[str, Column], dict[str, Column], dict[str, Column], dict[str, Column]]:
    """Run a scenario given as the simulator's JSON; with ``capture_json``
    (``{"points": [...], "flows": [...] | null, "dir": "..."}``) also write
    ``dir/capture-<point>.pcap``.

    Returns (summary JSON, flows table, link table, states table, connections table: one
    row per connection of the arrivals, empty without any); tables map column names
    to equally long lists (floats, ints for u32 columns, strings for the states table's
    ``machine`` and ``state``). The GIL is released while running.
    Raises ScenarioError(field, message) for a scenario the simulator does not accept.
    """

def alone_fcts(scenario_json: str, transfers: list[tuple[int, int]]) -> list[int | None]:
    """The FCT (ns) of each ``(group, size)`` transfer of the scenario's arrivals alone on
    its empty path, as the simulator's summary takes it (simulated once per distinct
    size); None where it would not complete."""

def arrival_schedule(scenario_json: str, group: int) -> list[tuple[int, int]]:
    """Every connection of arrivals group ``group`` as the simulator opens them:
    ``(instant in ns from the run's start, size in bytes)``."""

def udp_schedule(scenario_json: str, k: int) -> list[tuple[int, int, int]]:
    """UDP flow ``k``'s send instants as the simulator's source sends them, as runs of
    evenly spaced instants ``(first ns from the run's start, gap ns, count)``."""

def validate(scenario_json: str) -> None:
    """Parse and validate a scenario given as JSON without running it."""

def version() -> str:
    """Version of the simulator crate."""

def algorithms() -> list[str]:
    """Names of the congestion-control algorithms the simulator implements."""

def summarize(scenario_json: str, measured_json: str) -> str:
    """The summary of a run from what an engine measured (``ccbench_sim::summary::Measured``
    as JSON), built as the simulator builds its own, as JSON."""

def series_columns() -> dict[str, list[str]]:
    """The time-series tables' columns as the simulator writes them, in order: ``flows``
    (the algorithms' internals, ``cc_<name>``, follow these) and ``link``."""

def schema_facts() -> str:
    """The scenario facts the simulator owns, as JSON: ``defaults`` by table, integer
    ``ranges`` (``{"tcp.mss": {"lo", "hi", "allowed"}}``), the ``aqms`` with their
    parameters, the ``cpu_costs`` by ``[host.cost]`` key, the ``cpu_presets`` and the
    parsers' ``limits``."""

def parameters() -> str:
    """Every algorithm's overridable parameters (``[[flows]] params``) as JSON:
    ``{algorithm: [{"name", "kind" ("flag", "integer" or "gain"), "default", "min", "max",
    "kernel", "meaning"}, ...]}``; ``min`` and ``max`` are inclusive, in the scenario's
    units (gains as real numbers, rounded to 1/256 when applied)."""

def emulate(config_json: str, control_fd: int = 0, out_fd: int = 1) -> None:
    """Run the real-time link emulator of the kernel engine until told to stop on
    `control_fd`, writing its reports to `out_fd`. The GIL is released while running."""

class ScriptedSender:
    """The simulator's TCP sender driven by a script (a packetdrill peer): writes, socket
    options and the peer's ACKs go in at explicit times; every skb that leaves TCP comes
    out as ``(time_ns, first_segment, stream_offset, segments, bytes, retransmission, ect,
    cwr, psh, fin)``. Sequence numbers count segments (an MSS each, except a write's short
    end); segment 0 starts at stream offset 0, the first data byte."""

    def __init__(
        self,
        cca: str = "cubic",
        cc_params: dict[str, float] = ...,
        handshake_rtt_ns: int = 100_000_000,
        snd_wnd: int = 65535,
        ecn: str = "off",
        paced: bool = False,
        gso: bool = True,
        tcp: str = "{}",
        tcp_options: int = 0,
        mss_clamp: int | None = None,
    ) -> None:
        """``gso``: the device takes multi-segment skbs; ``tcp``: JSON of stack settings
        (the simulator's ``TcpConfig`` fields) over packetdrill's defaults (a 1000-byte
        MSS, no slow start after idle); ``tcp_options``: option bytes on each data segment
        (12 with timestamps); ``mss_clamp``: the peer's MSS option within TCP_MAXSEG
        (None: the MSS and options)."""
    def icmp_frag_needed(self, now_ns: int, mtu: int, quoted_seq: int) -> None:
        """An ICMP "fragmentation needed" with next-hop ``mtu``, quoting the segment at
        stream offset ``quoted_seq`` (0: the first data byte)."""
    def route_changed(self, now_ns: int, mtu: int, mtu_locked: bool, advmss: int | None = None) -> None:
        """The route to the peer changed (``ip route change``): its MTU, locked or not;
        seen from the socket's next transmit."""
    def write(self, now_ns: int, bytes: int, more: bool = False, eor: bool = False) -> None:
        """The application writes, with MSG_MORE if ``more`` and MSG_EOR if ``eor``."""
    def write_pending(self) -> int:
        """Bytes of the last write still waiting for room in the send buffer."""
    def return_short(self) -> None:
        """A non-blocking write returns short: what waits is the application's again."""
    def set_sndbuf(self, bytes: int) -> None:
        """SO_SNDBUF as the kernel keeps it (doubled): the buffer, locked."""
    def sndbuf(self) -> int:
        """``sk_sndbuf``."""
    def written(self) -> int:
        """Bytes the send buffer has taken from the application's writes."""
    def setsockopt(self, now_ns: int, option: str, on: bool) -> None:
        """TCP_NODELAY (``"nodelay"``) or TCP_CORK (``"cork"``) on or off."""
    def seg_floor(self, byte: int) -> tuple[int, int]:
        """The last segment starting at or before stream offset ``byte`` (the end of what
        was written counts as one past the last segment), and its offset."""
    def receive(
        self, now_ns: int, ack: int, rwnd: int, sacks: list[tuple[int, int]] = ..., ece: bool = False, data: int = 0
    ) -> None:
        """An ACK from the peer: cumulative ACK and SACK blocks in segments, window in
        bytes, and the bytes of data it carries (such an ACK is never a duplicate)."""
    def set_qdisc_drops(self, drop: bool) -> None:
        """From now on the local qdisc refuses every packet, or takes them again."""
    def refused_packet(self, now_ns: int) -> None:
        """The local qdisc refused an ACK, FIN or RST sent for the stack: a CWR reduction
        starts, as for any refused segment."""
    def advance(self, until_ns: int) -> list[tuple[int, int, int, int, int, bool, bool, bool, bool, bool]]:
        """Run the timers up to ``until_ns``; the skbs sent since the last call."""
    def sent(self) -> list[tuple[int, int, int, int, int, bool, bool, bool, bool, bool]]: ...
    def next_event_ns(self) -> int | None: ...
    def now_ns(self) -> int: ...
    def written_segs(self) -> int: ...
    def close(self, now_ns: int, unread: bool) -> str:
        """close(): "fin" (queued behind the data), "reset" (aborted for unread data:
        the caller sends the RST) or "nothing"."""
    def shutdown(self, now_ns: int) -> None:
        """shutdown(SHUT_WR): the FIN is queued behind the data."""
    def peer_fin(self, now_ns: int) -> bool:
        """The peer's FIN, in order, after ``receive`` took its ACK; whether it is
        acknowledged at once."""
    def peer_reset(self, now_ns: int) -> None:
        """The peer's RST, in sequence: the connection is gone."""
    def state(self) -> str:
        """The socket's state by its kernel name (ESTABLISHED, FIN_WAIT1, ...)."""
    def write_error(self) -> str | None:
        """What a write finds: ECONNRESET once after a reset, EPIPE once writing is shut."""
    def read_error(self) -> str | None:
        """What a read with nothing queued finds: an errno name once after a reset,
        "EOF" at the end of the stream, None to wait."""
    def fin(self) -> tuple[int, bool, bool, bool] | None:
        """Our FIN once queued: (its segment, alone in it, sent, acknowledged)."""
    def tcp_info(self) -> dict[str, int]:
        """``TCP_INFO`` fields the model has, by their ``tcpi_`` names."""

def bpf_object(path: str, hz: int = 1000) -> str:
    """What a BPF struct_ops object holds, as JSON: ``maps`` (symbol, name, flags,
    callbacks), settable ``globals`` (name, section, size, value), ``kfuncs``,
    ``helpers``, ``kconfig`` and ``ca_fields``. Raises ScenarioError("cca", ...) for an
    object the simulator refuses."""

def bpf_prepare(path: str, out: str, names_json: str, params_json: str) -> None:
    """Write a copy of the object at ``path`` to ``out`` with its struct_ops maps renamed
    (``names_json``: {map symbol: new name}) and globals set (``params_json``)."""
