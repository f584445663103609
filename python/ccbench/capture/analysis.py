"""The measurements of one TCP connection in a capture.

Sequence numbers are unwrapped to 64 bits and taken relative to the first byte of data
(the SYN's sequence number + 1 when the handshake was captured). The direction that
carries more payload is the *sender*'s.

What a capture can measure depends on where it was taken (``side``):

* at the **sender** (or anywhere before the bottleneck), data segments are seen as they
  leave and ACKs as they come back: one RTT sample per ACK, as the kernel's ``ca_rtt``,
  from the newest segment the ACK newly SACKs, else the newest it newly acknowledges
  cumulatively (Karn's rule: a retransmitted segment gives no SACK sample, and an ACK
  whose cumulative part covers a retransmitted range no cumulative one), and bytes in
  flight are the unacknowledged bytes less those SACKed;
* at the **receiver**, data is seen as it arrives (losses upstream are invisible except
  as holes later filled by retransmissions) and ACKs as they leave: the RTT comes from
  TCP timestamps, from an ACK carrying TSval E leaving to the first data segment that
  echoes E arriving (the receiver's view, as Linux's ``tcp_rcv_rtt_measure_ts``), and
  bytes in flight cannot be known.

Goodput counts the bytes the receiver acknowledged in order (at the receiver: the bytes
that arrived in order) over the flow's life, from its first data segment until the last
byte was delivered (when the sender closed with FIN) or the connection's last packet.
"""

from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Optional

from .reader import ACK, CWR, ECE, FIN, RST, SYN, TcpPacket

MOD = 1 << 32
HALF = 1 << 31


def unwrap(x: int, ref: int) -> int:
    """32-bit ``x`` as the 64-bit value nearest to ``ref``."""
    return ref + ((x - ref + HALF) % MOD) - HALF


class Intervals:
    """Disjoint sorted byte ranges [start, end)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, s: int, e: int) -> None:
        if e <= s:
            return
        i = bisect.bisect_left(self.ends, s)
        j = bisect.bisect_right(self.starts, e)
        if i < j:
            s, e = min(s, self.starts[i]), max(e, self.ends[j - 1])
        self.starts[i:j] = [s]
        self.ends[i:j] = [e]

    def uncovered(self, s: int, e: int) -> list[tuple[int, int]]:
        """The parts of [s, e) that no range covers."""
        out, at = [], s
        i = bisect.bisect_right(self.ends, s)
        for rs, re in zip(self.starts[i:], self.ends[i:]):
            if rs >= e:
                break
            if rs > at:
                out.append((at, rs))
            at = max(at, re)
        if at < e:
            out.append((at, e))
        return out

    def drop_below(self, x: int) -> None:
        i = bisect.bisect_right(self.ends, x)
        del self.starts[:i], self.ends[:i]
        if self.starts and self.starts[0] < x:
            self.starts[0] = x

    def total(self) -> int:
        return sum(e - s for s, e in zip(self.starts, self.ends))

    def first_end_from(self, x: int) -> int:
        """The end of the range holding ``x`` (x itself when none does)."""
        i = bisect.bisect_right(self.starts, x) - 1
        return self.ends[i] if i >= 0 and self.ends[i] >= x else x


@dataclass
class Handshake:
    isn_s: Optional[int] = None
    isn_r: Optional[int] = None
    ws_s: Optional[int] = None
    ws_r: Optional[int] = None
    mss_s: Optional[int] = None
    mss_r: Optional[int] = None
    ts: bool = False
    ecn_syn: bool = False
    ecn_synack: bool = False
    syn_t: Optional[float] = None
    synack_t: Optional[float] = None

    @property
    def seen(self) -> bool:
        return self.isn_s is not None and self.isn_r is not None

    @property
    def window_scaling(self) -> bool:
        return self.seen and self.ws_s is not None and self.ws_r is not None


@dataclass
class FlowAnalysis:
    """Everything measured for one connection; times are seconds since ``origin``."""

    src: str
    dst: str
    side: str
    mss: int
    handshake: Handshake
    start: float = math.nan
    end: float = math.nan
    completion: Optional[float] = None
    size_bytes: Optional[int] = None
    delivered: int = 0
    sent_bytes: int = 0
    data_packets: int = 0
    retransmits: int = 0
    retransmitted_packets: int = 0
    dupacks: int = 0
    rtt_samples: list[float] = field(default_factory=list)  # seconds
    rtt_method: str = "ack"
    header_bytes: list[int] = field(default_factory=list)
    wire_bytes: int = 0
    # Per-packet trace: (t, kind, seq, end, ack, rwnd, sack_left, sack_right, inflight, flag)
    # kind 0 data, 1 ACK; flag: data 1 = retransmission; ACK 1 = duplicate ACK.
    trace: list[tuple[float, int, float, float, float, float, float, float, float, int]] = field(default_factory=list)
    # State checkpoints for the time series, after each packet: (t, delivered,
    # sent payload, wire bytes of data, retransmits, dupacks, inflight, rwnd, srtt, min_rtt)
    states: list[tuple[float, ...]] = field(default_factory=list)

    @property
    def ecn(self) -> Optional[str]:
        if not self.handshake.seen:
            return None
        return "classic" if self.handshake.ecn_syn and self.handshake.ecn_synack else "off"


def detect_side(pkts: list[TcpPacket], snd: tuple[str, int]) -> str:
    """'sender' or 'receiver': where the capture was taken, from timing.

    At the sender a data segment waits about an RTT for the ACK that covers it, while
    the segment that echoes an ACK's timestamp leaves right after that ACK came in; at
    the receiver it is the other way round. Without timestamps, the handshake decides
    (SYN to SYN-ACK is an RTT at the connecting side), else 'sender'."""
    first_sent: dict[int, float] = {}
    acks: list[tuple[float, int]] = []
    first_tsval: dict[int, float] = {}
    echo: list[float] = []
    echoed: set[int] = set()
    for p in pkts:
        from_snd = (p.src, p.sport) == snd
        if from_snd and p.payload > 0:
            first_sent.setdefault(p.seq + p.payload, p.t)
            if p.tsecr is not None and p.tsecr in first_tsval and p.tsecr not in echoed:
                echoed.add(p.tsecr)
                echo.append(p.t - first_tsval[p.tsecr])
        elif not from_snd and p.flags & ACK:
            acks.append((p.t, p.ack))
            if p.tsval is not None:
                first_tsval.setdefault(p.tsval, p.t)
    waits = []
    if acks:
        ack_times = [t for t, _ in acks]
        for end, t in list(first_sent.items())[:2000]:
            k = bisect.bisect_left(ack_times, t)
            for j in range(k, min(k + 200, len(acks))):
                if (acks[j][1] - end) % MOD < HALF:
                    waits.append(acks[j][0] - t)
                    break
    if waits and echo:
        return "sender" if statistics.median(waits) > statistics.median(echo) else "receiver"
    syn = [p for p in pkts if p.flags & SYN]
    if len(syn) >= 2 and not syn[0].flags & ACK:
        client_is_snd = (syn[0].src, syn[0].sport) == snd
        handshake_rtt_here = syn[1].t - syn[0].t
        after = [p.t for p in pkts if p.t >= syn[1].t and not p.flags & SYN][:1]
        third = (after[0] - syn[1].t) if after else 0.0
        at_client = handshake_rtt_here > third
        return "sender" if at_client == client_is_snd else "receiver"
    return "sender"


def read_handshake(pkts: list[TcpPacket], snd: tuple[str, int], rcv: tuple[str, int]) -> Handshake:
    """The options of each side's first SYN (the sender's and the receiver's)."""
    hs = Handshake()
    for p in pkts:
        if not p.flags & SYN:
            continue
        if (p.src, p.sport) == snd and hs.isn_s is None:
            hs.isn_s, hs.ws_s, hs.mss_s, hs.syn_t = p.seq, p.wscale, p.mss, p.t
            hs.ts = p.tsval is not None
            hs.ecn_syn = bool(p.flags & ECE and (p.flags & CWR or p.flags & ACK))
        elif (p.src, p.sport) == rcv and hs.isn_r is None:
            hs.isn_r, hs.ws_r, hs.mss_r, hs.synack_t = p.seq, p.wscale, p.mss, p.t
            hs.ts = hs.ts and p.tsval is not None
            hs.ecn_synack = bool(p.flags & ECE)
    return hs


def segment_size(pkts: list[TcpPacket], snd: tuple[str, int], hs: Handshake) -> int:
    """The sender's MSS: the SYNs' MSS option less the timestamp option's 12 bytes (the
    receiver's option bounds what the sender may send), else the commonest payload."""
    mss_opt = hs.mss_r if hs.mss_r is not None else hs.mss_s
    if mss_opt is not None:
        mss = mss_opt - (12 if hs.ts else 0)
    else:
        payloads = [p.payload for p in pkts if (p.src, p.sport) == snd and p.payload > 0]
        mss = statistics.mode(payloads) if payloads else 1448
    return max(mss, 1)


def analyze(pkts: list[TcpPacket], snd: tuple[str, int], origin: float, side: Optional[str] = None) -> FlowAnalysis:
    """Measure one connection (its packets in time order; ``snd`` the data sender)."""
    rcv = next(((p.src, p.sport) for p in pkts if (p.src, p.sport) != snd), ("?", 0))
    hs = read_handshake(pkts, snd, rcv)
    side = side or detect_side(pkts, snd)
    fa = FlowAnalysis(
        f"{snd[0]}:{snd[1]}",
        f"{rcv[0]}:{rcv[1]}",
        side,
        segment_size(pkts, snd, hs),
        hs,
        rtt_method="ack" if side == "sender" else "timestamps",
    )
    replay = Replay(fa, snd)
    for p in pkts:
        replay.packet(p, p.t - origin)
    replay.finish(max((p.t for p in pkts), default=origin) - origin)
    return fa


class Replay:
    """One connection replayed packet by packet, keeping the state its TCP endpoints
    keep: the sender's snd_una and snd_max, what the receiver has SACKed, the first
    transmissions not yet acknowledged (for RTT samples), and at the receiver, the
    bytes that have arrived. Its measurements go into ``fa``.

    Sequence numbers are taken relative to ``base``, the first byte of data, and
    unwrapped from 32 bits against ``ref``, the highest byte sent so far."""

    def __init__(self, fa: FlowAnalysis, snd: tuple[str, int]) -> None:
        self.fa = fa
        self.snd = snd
        self.side = fa.side
        hs = fa.handshake
        # Window scaling applies only when both SYNs carried the option.
        self.shift = hs.ws_r if hs.window_scaling and hs.ws_r is not None else (0 if hs.seen else None)
        self.base: Optional[int] = hs.isn_s + 1 if hs.isn_s is not None else None
        self.ref = 0
        self.snd_max = 0  # highest byte sent (relative)
        self.snd_una = 0
        self.fin_end: Optional[int] = None
        self.sacked = Intervals()
        self.received = Intervals()  # bytes seen arriving (receiver side)
        self.sent_q: list[tuple[int, float]] = []  # first transmissions not yet acked: (end, t)
        self.q_head = 0
        self.retrans_ranges: list[tuple[int, int]] = []
        self.rwnd = math.nan
        self.last_win: Optional[int] = None
        self.srtt = math.nan
        self.min_rtt = math.nan
        self.ack_tsval_first: dict[int, float] = {}  # an ACK's TSval: when it was first seen
        self.echoed: set[int] = set()
        self.delivered_rx = 0

    def packet(self, p: TcpPacket, t: float) -> None:
        """One packet at ``t`` (seconds since the origin); a state row after each data
        segment and ACK that tells something."""
        if p.flags & SYN or p.flags & RST:
            return
        if (p.src, p.sport) == self.snd:
            measured = self.data_segment(p, t)
        elif p.flags & ACK:
            measured = self.ack(p, t)
        else:
            return
        if measured:
            self.state_row(t)

    def rel(self, x: int) -> int:
        return unwrap(x, self.ref + self.base) - self.base  # type: ignore[operator]

    def inflight(self) -> float:
        """Bytes in flight as the sender counts them (unknowable at the receiver)."""
        return float(self.snd_max - self.snd_una - self.sacked.total()) if self.side == "sender" else math.nan

    def delivered(self) -> int:
        """Bytes delivered in order so far, not counting the FIN."""
        delivered = self.snd_una if self.side == "sender" else self.delivered_rx
        return min(delivered, self.fin_end) if self.fin_end is not None else delivered

    def rtt_sample(self, r: float) -> None:
        """One RTT sample; srtt as the kernel's tcp_rtt_estimator (gain 1/8)."""
        self.fa.rtt_samples.append(r)
        self.srtt = r if math.isnan(self.srtt) else self.srtt + (r - self.srtt) / 8
        self.min_rtt = r if math.isnan(self.min_rtt) else min(self.min_rtt, r)

    def data_segment(self, p: TcpPacket, t: float) -> bool:
        """A segment from the sender; False for one without data (a bare FIN only marks
        where the data ends)."""
        if p.payload == 0 and not p.flags & FIN:
            return False
        if self.base is None:
            self.base = p.seq  # no SYN captured: data starts at the first segment seen
        s = self.rel(p.seq)
        e = s + p.payload
        if p.flags & FIN:
            self.fin_end = e if self.fin_end is None else max(self.fin_end, e)
        if p.payload == 0:
            return False
        self.ref = max(self.ref, e)
        retrans = self.count_sent(p, s, e, t)
        if self.side == "receiver":
            self.arrived(p, s, e, t, retrans)
        nan = math.nan
        self.fa.trace.append((t, 0, float(s), float(e), nan, nan, nan, nan, self.inflight(), int(retrans)))
        return True

    def count_sent(self, p: TcpPacket, s: int, e: int, t: float) -> bool:
        """Count the segment [s, e) as sent; True when it resends bytes sent before."""
        fa = self.fa
        if math.isnan(fa.start):
            fa.start = t
        fa.data_packets += 1
        fa.sent_bytes += p.payload
        fa.wire_bytes += p.wire
        fa.header_bytes.append(p.header)
        retrans = s < self.snd_max
        if retrans:
            fa.retransmitted_packets += 1
            fa.retransmits += max(1, -(-p.payload // fa.mss))
            self.retrans_ranges.append((s, min(e, self.snd_max)))
        if e > self.snd_max:
            self.sent_q.append((e, t))
            self.snd_max = e
        return retrans

    def arrived(self, p: TcpPacket, s: int, e: int, t: float, retrans: bool) -> None:
        """At the receiver: the bytes now in order, and an RTT sample when the segment
        echoes an ACK's timestamp for the first time (tcp_rcv_rtt_measure_ts)."""
        self.received.add(s, e)
        in_order = self.received.starts and self.received.starts[0] <= 0
        self.delivered_rx = self.received.first_end_from(0) if in_order else 0
        ecr = p.tsecr
        if ecr is not None and ecr in self.ack_tsval_first and ecr not in self.echoed and not retrans:
            self.echoed.add(ecr)
            self.rtt_sample(t - self.ack_tsval_first[ecr])
        if self.fin_end is not None and self.fa.completion is None and self.delivered_rx >= self.fin_end:
            self.fa.completion = t

    def ack(self, p: TcpPacket, t: float) -> bool:
        """An ACK from the receiver; False before any data (nothing to measure yet)."""
        if self.base is None:
            return False
        a = self.rel(p.ack)
        if p.tsval is not None:
            self.ack_tsval_first.setdefault(p.tsval, t)
        if self.shift is not None:
            self.rwnd = float(p.win << self.shift)
        # Read before the ACK's own SACK blocks are added.
        sack_newest = self.newest_newly_sacked(p.sacks, a) if self.side == "sender" else None
        # Judged against snd_una before this ACK: one that moves it is no duplicate (one
        # that only SACKs is, as tcp_ack counts it).
        dup = self.is_dupack(p, a)
        if a > self.snd_una:
            self.cumulative_ack(a, t, sack_newest)
        if sack_newest is not None:
            self.rtt_sample(t - sack_newest)
        self.fa.dupacks += dup
        self.last_win = p.win
        left, right = self.add_sacks(p.sacks, a)
        nan = math.nan
        self.fa.trace.append((t, 1, nan, nan, float(a), self.rwnd, left, right, self.inflight(), int(dup)))
        return True

    def newest_newly_sacked(self, blocks: tuple[tuple[int, int], ...], ack: int) -> Optional[float]:
        """Send time of the newest never-retransmitted first transmission that ``blocks``
        SACK for the first time (as tcp_sacktag_one's last_sackt)."""
        newest = None
        sent_q, q_head = self.sent_q, self.q_head
        for left32, right32 in blocks:
            left, right = max(self.rel(left32), ack), min(self.rel(right32), self.snd_max)
            for ns, ne in self.sacked.uncovered(left, right) if left < right else ():
                k = bisect.bisect_right(sent_q, ne, lo=q_head, key=lambda x: x[0])
                while k > q_head:
                    k -= 1
                    end, sent = sent_q[k]
                    start = sent_q[k - 1][0] if k > q_head else ack
                    if start < ns:
                        break
                    if not any(rs < end and start < re for rs, re in self.retrans_ranges):
                        newest = sent if newest is None else max(newest, sent)
                        break
        return newest

    def cumulative_ack(self, a: int, t: float, sack_newest: Optional[float]) -> None:
        """snd_una advances to ``a``. The RTT sample is from the newest first transmission
        it covers, unless the ACK newly SACKs a segment (the kernel's ca_rtt prefers that,
        tcp_clean_rtx_queue) or covers a retransmitted range (Karn's rule)."""
        newest = None
        while self.q_head < len(self.sent_q) and self.sent_q[self.q_head][0] <= a:
            newest = self.sent_q[self.q_head][1]
            self.q_head += 1
        if self.q_head > 4096:  # drop the acknowledged head now and then, not on every ACK
            del self.sent_q[: self.q_head]
            self.q_head = 0
        ambiguous = any(rs < a for rs, _ in self.retrans_ranges)
        self.retrans_ranges = [r for r in self.retrans_ranges if r[1] > a]
        if self.side == "sender" and sack_newest is None and newest is not None and not ambiguous:
            self.rtt_sample(t - newest)
        self.snd_una = a
        self.sacked.drop_below(a)
        if self.fin_end is not None and self.fa.completion is None and a >= self.fin_end and self.side == "sender":
            self.fa.completion = t

    def is_dupack(self, p: TcpPacket, a: int) -> bool:
        """A duplicate ACK as RFC 5681 (section 2) has it: no data, no FIN, data
        outstanding, the window unchanged and the acknowledgment number equal to snd_una
        as it was before this ACK."""
        return (
            a == self.snd_una
            and p.payload == 0
            and not p.flags & FIN
            and self.snd_max > self.snd_una
            and (self.last_win is None or p.win == self.last_win)
        )

    def add_sacks(self, blocks: tuple[tuple[int, int], ...], a: int) -> tuple[float, float]:
        """Add the ACK's SACK blocks to what is SACKed; the first new block's edges (NaN
        without one). A first block below the ACK or inside the second is a DSACK
        (RFC 2883, tcp_check_dsack): a duplicate, not new information."""
        first_block = (math.nan, math.nan)
        for k, (l32, r32) in enumerate(blocks):
            left, right = self.rel(l32), self.rel(r32)
            if k == 0 and (
                left < a or (len(blocks) > 1 and self.rel(blocks[1][0]) <= left and right <= self.rel(blocks[1][1]))
            ):
                continue
            self.sacked.add(max(left, a), right)
            if math.isnan(first_block[0]):
                first_block = (float(left), float(right))
        return first_block

    def state_row(self, t: float) -> None:
        """The time series' checkpoint after a packet (FlowAnalysis.states)."""
        fa = self.fa
        fa.states.append(
            (
                t,
                float(self.delivered()),
                float(fa.sent_bytes),
                float(fa.wire_bytes),
                float(fa.retransmits),
                float(fa.dupacks),
                float(fa.trace[-1][8]),
                self.rwnd,
                self.srtt,
                self.min_rtt,
            )
        )

    def finish(self, last: float) -> None:
        """The end: the flow's size when its FIN was delivered, what was delivered, and
        when it ended (completion, else the connection's last packet)."""
        fa = self.fa
        if self.fin_end is not None and fa.completion is not None:
            fa.size_bytes = self.fin_end
        fa.delivered = max(0, self.delivered())
        fa.end = fa.completion if fa.completion is not None else last


def stats(values: list[float], scale: float = 1.0) -> Optional[dict[str, float]]:
    """The summary's Stats object ({min, mean, p50, p95, p99, max}), None without values."""
    if not values:
        return None
    v = sorted(x * scale for x in values)

    def q(f: float) -> float:
        return v[min(len(v) - 1, max(0, math.ceil(f * len(v)) - 1))]

    return {"min": v[0], "mean": sum(v) / len(v), "p50": q(0.5), "p95": q(0.95), "p99": q(0.99), "max": v[-1]}


def flow_summary(fa: FlowAnalysis, index: int) -> dict[str, Any]:
    """One ``flows[]`` entry of the summary schema; what a capture cannot tell is None."""
    life = (fa.end - fa.start) if not math.isnan(fa.start) else 0.0
    per_sec = (lambda b: b * 8.0 / life) if life > 0 else (lambda b: 0.0)
    rtt = stats(fa.rtt_samples, 1e3)
    base = rtt["min"] if rtt else None
    return {
        "id": index,
        "cca": "unknown",
        "params": {},
        "ecn": fa.ecn,
        "paced": None,
        "start_s": 0.0 if math.isnan(fa.start) else fa.start,
        "base_rtt_ms": base,
        "goodput_bps": per_sec(fa.delivered),
        "throughput_bps": per_sec(fa.sent_bytes),
        "delivered_bytes": fa.delivered,
        "sent_bytes": fa.sent_bytes,
        "retransmits": fa.retransmits,
        "lost": None,
        "dropped": None,
        "rto_count": None,
        "rtt_ms": rtt,
        "self_inflicted_delay_ms": (rtt["mean"] - rtt["min"]) if rtt else None,
        "size_bytes": fa.size_bytes,
        "completion_s": None if fa.completion is None else fa.completion - fa.start,
        "final_cwnd": None,
        # Capture-only keys
        "src": fa.src,
        "dst": fa.dst,
        "capture_side": fa.side,
        "rtt_method": fa.rtt_method,
        "rtt_samples": len(fa.rtt_samples),
        "dupacks": fa.dupacks,
        "data_packets": fa.data_packets,
        "retransmitted_packets": fa.retransmitted_packets,
        "mss": fa.mss,
        "window_scale": fa.handshake.ws_r if fa.handshake.window_scaling else None,
        "handshake_captured": fa.handshake.seen,
    }
