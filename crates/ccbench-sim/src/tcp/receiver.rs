//! The Linux receiver's ACK policy (`__tcp_ack_snd_check`, `tcp_event_data_recv`,
//! `tcp_send_delayed_ack`; tcp_input.c, tcp_output.c): ACK every second full segment,
//! quick-ACK at start, a delayed-ACK timer with `ato` adaptation, immediate SACKed
//! duplicate ACKs for out-of-order data with SACK compression after three, DSACK.
//! The application reads at once, so the advertised window stays at its limit.

use super::config::{FlowConfig, TcpConfig};
use super::handshake::{self, Client, FastOpenCache};
use super::io::Io;
use super::rcvbuf::RcvBuf;
use super::wake::Wake;
use crate::event::{Timer, TimerFire};
use crate::net::packet::Control;
use crate::net::packet::SackBlock;
use crate::net::Ecn;
use crate::net::Packet;
use crate::time::{Dur, Time, NS_PER_SEC};
use crate::units::wire;

/// `TCP_MAX_QUICKACKS`.
const MAX_QUICKACKS: u32 = 16;
/// `TCP_DELACK_MAX`.
const DELACK_MAX: Dur = Dur::from_ms(200);
/// `TCP_FASTRETRANS_THRESH`: dup-ACKs sent before SACK compression starts.
const FASTRETRANS_THRESH: u32 = 3;
/// `tcp_comp_sack_nr`, `tcp_comp_sack_delay_ns`.
const COMP_SACK_NR: u32 = 44;
const COMP_SACK_DELAY: Dur = Dur::from_ms(1);
/// SACK blocks remembered (`TCP_NUM_SACKS`) and sent with timestamps on.
const NUM_SACKS: usize = 4;
const SACKS_PER_ACK: usize = 3;
/// `TCP_SACK_BLOCKS_EXPECTED`: blocks a peer is assumed to see from one ACK.
const SACK_BLOCKS_EXPECTED: usize = 2;

mod client;

#[derive(Clone, Debug)]
pub struct ReceiverParams {
    pub id: u32,
    /// The stack's settings (MSS, tick rate, delayed-ACK minimum, SACK).
    pub tcp: TcpConfig,
    /// The flow as the scenario gives it: `rwnd_bytes` (the advertised window, or with
    /// `rwnd_autotune` the ceiling of DRS), `size_bytes`, `ecn`.
    pub flow: FlowConfig,
    /// RTT the receiver knows from the handshake (for delayed-ACK and SACK compression).
    pub rtt: Dur,
    /// Which of the flow's connections this is; data of another one is ignored.
    pub conn: u16,
}

#[derive(Default, Debug, Clone)]
pub struct ReceiverStats {
    pub acks_sent: u64,
    pub dupacks_sent: u64,
    pub dup_segments: u64,
    pub segments_received: u64,
}

pub struct Receiver {
    p: ReceiverParams,
    /// The next stream offset expected; what the receiver keeps is in stream offsets
    /// (bytes), as the sender's segments arrive cut at whatever MSS it has.
    pub rcv_nxt: u64,
    /// Bytes a Fast Open SYN delivered, ahead of the numbered segments.
    syn_data: u64,
    /// `rcv_nxt` when the last ACK was sent.
    rcv_wup: u64,
    /// Out-of-order byte ranges held, sorted and disjoint.
    ooo: Vec<SackBlock>,
    /// SACK blocks to report, most recent first (`selective_acks`).
    sacks: Vec<SackBlock>,
    dsack: Option<SackBlock>,
    quick: u32,
    ato: Dur,
    lrcvtime: Time,
    ato_initialised: bool,
    ack_pending: bool,
    ack_now: bool,
    /// `ICSK_ACK_PUSHED`: a segment that may end a write arrived; cleared by every ACK
    /// sent. (`ICSK_ACK_PUSHED2`, a second short one, matters only in ping-pong mode,
    /// which a connection that sends no data never enters.)
    pushed: bool,
    /// `icsk_ack.rcv_mss`, the receiver's guess of the sender's MSS, and
    /// `icsk_ack.last_seg_size` (`tcp_measure_rcv_mss`).
    rcv_mss: u32,
    last_seg_size: u32,
    delack: Timer,
    comp_timer: Timer,
    compressed_ack: u32,
    compressed_ack_rcv_nxt: u64,
    dup_ack_counter: u32,
    ts_recent: u32,
    /// Classic ECN: echo ECE until the sender's CWR (`TCP_ECN_DEMAND_CWR`).
    demand_cwr: bool,
    /// ECN-low: the CE state of the last data segment, echoed per ACK (DCTCP style).
    ce_state: bool,
    pub completed_at: Option<Time>,
    pub stats: ReceiverStats,
    /// The autotuned receive buffer, if autotuning.
    rcvbuf: Option<RcvBuf>,
    /// The client's side of a connection it opens for its download, and its timer.
    client: Option<Client>,
    connect_timer: Timer,
    /// What the client knows of the server for Fast Open; the world carries it from one
    /// connection of a flow to the next.
    pub fastopen: FastOpenCache,
}

impl Receiver {
    pub fn new(p: ReceiverParams) -> Receiver {
        Receiver {
            rcv_nxt: 0,
            syn_data: 0,
            rcv_wup: 0,
            ooo: Vec::new(),
            sacks: Vec::new(),
            dsack: None,
            quick: 0,
            ato: Dur(p.tcp.delack_min_ns),
            lrcvtime: Time::ZERO,
            ato_initialised: false,
            ack_pending: false,
            ack_now: false,
            pushed: false,
            rcv_mss: p.tcp.mss,
            last_seg_size: 0,
            delack: Timer::default(),
            comp_timer: Timer::default(),
            compressed_ack: 0,
            compressed_ack_rcv_nxt: 0,
            dup_ack_counter: 0,
            ts_recent: 0,
            demand_cwr: false,
            ce_state: false,
            completed_at: None,
            stats: ReceiverStats::default(),
            rcvbuf: p.flow.rwnd_autotune.then(|| RcvBuf::new(p.flow.rwnd_bytes, p.tcp.rmem, p.tcp.mss)),
            client: None,
            connect_timer: Timer::default(),
            fastopen: FastOpenCache::default(),
            p,
        }
    }

    /// The receive window to advertise: the fixed limit, or what the autotuned buffer
    /// has room for.
    fn advertised_window(&mut self) -> u64 {
        let Some(b) = self.rcvbuf.as_mut() else { return self.p.flow.rwnd_bytes };
        let ooo: u64 = self.ooo.iter().map(|&(s, e)| e - s).sum();
        b.window(self.rcv_nxt, ooo).min(self.p.flow.rwnd_bytes)
    }

    /// In-order payload bytes handed to the application so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.bytes_upto(self.rcv_nxt)
    }

    fn bytes_upto(&self, seq: u64) -> u64 {
        let b = self.syn_data + seq;
        self.p.flow.size_bytes.map_or(b, |s| b.min(s))
    }

    /// The receiver's RTO, which bounds `ato` (handshake RTT + 200 ms floor).
    fn rto(&self) -> Dur {
        self.p.rtt + Dur::from_ms(200)
    }

    /// `tcp_incr_quickack`.
    fn incr_quickack(&mut self, max: u32) {
        let rcv_wnd = self.rcvbuf.as_ref().map_or(self.p.flow.rwnd_bytes, |b| b.rcvbuf / 2);
        let n = ((rcv_wnd / (2 * self.rcv_mss as u64)) as u32).max(2).min(max);
        self.quick = self.quick.max(n);
    }

    /// `tcp_measure_rcv_mss`: a segment at least `rcv_mss` long sets it (up to our
    /// advertised MSS), and marks a write's end if it has PSH (Linux 6.6+, "tcp: fix
    /// delayed ACKs for MSS boundary condition"); two shorter ones of the same length,
    /// not tiny, set it too (the sender's MSS went down); any other shorter one may end a
    /// write. A write's end makes the reading application's `tcp_cleanup_rbuf` ACK at
    /// once.
    fn measure_rcv_mss(&mut self, pkt: &Packet) {
        let lss = std::mem::take(&mut self.last_seg_size);
        let len = pkt.payload;
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(self.p.tcp.mss);
            self.pushed |= pkt.psh;
            return;
        }
        // `len` with the TCP header against TCP_MSS_DEFAULT (536) and TCP_MIN_MSS (88);
        // every simulated segment carries the timestamp option, and PSH is its REMNANT.
        let with_header = len + wire::TCP_HEADER + wire::TCP_TS_OPTION;
        if with_header >= 536 + wire::TCP_HEADER || (with_header >= 88 + wire::TCP_HEADER && !pkt.psh) {
            self.last_seg_size = len;
            if len == lss {
                self.rcv_mss = len;
                return;
            }
        }
        self.pushed = true;
    }

    /// `tcp_cleanup_rbuf` after the application has read what arrived in order (it reads
    /// at once): an ACK still scheduled goes now if a pushed segment was read and nothing
    /// is left in the receive memory (no out-of-order data held). This connection sends
    /// no data, so it is never in ping-pong mode.
    fn cleanup_rbuf(&mut self, now: Time, q: &mut impl Io) {
        if self.ack_pending && self.pushed && self.ooo.is_empty() {
            self.send_ack(now, q);
        }
    }

    /// `tcp_event_data_recv`: adapt the delayed-ACK timeout to the arrival pattern.
    fn event_data_recv(&mut self, now: Time) {
        if !self.ato_initialised {
            self.ato_initialised = true;
            self.incr_quickack(MAX_QUICKACKS);
            self.ato = Dur(self.p.tcp.delack_min_ns);
        } else {
            let tick = NS_PER_SEC / self.p.tcp.hz as u64;
            let m = Dur((now.ns() / tick - self.lrcvtime.ns() / tick) * tick);
            let ato_min = Dur(self.p.tcp.delack_min_ns);
            if m.ns() <= ato_min.ns() / 2 {
                self.ato = Dur(self.ato.ns() / 2 + ato_min.ns() / 2);
            } else if m < self.ato {
                self.ato = Dur(self.ato.ns() / 2 + m.ns()).min(self.rto());
            } else if m > self.rto() {
                self.incr_quickack(MAX_QUICKACKS);
            }
        }
        self.lrcvtime = now;
    }

    /// A data segment arrives (`tcp_data_queue` then `__tcp_ack_snd_check`).
    pub fn on_data(&mut self, now: Time, pkt: &Packet, q: &mut impl Io) {
        if pkt.conn != self.p.conn {
            return; // a closed connection's segment still in flight
        }
        match pkt.ctl {
            Control::None => {}
            Control::Syn => return self.on_syn(now, pkt, q),
            Control::SynAck => return self.on_syn_ack(now, pkt, q),
            Control::Ack | Control::FragNeeded | Control::Datagram => return,
        }
        if self.client.is_some() && pkt.payload > 0 {
            self.response_started();
        }
        if pkt.payload == 0 {
            // A zero-window probe, one byte below `rcv_nxt`: out of the window, so
            // `tcp_validate_incoming` answers it with an ACK at once (`tcp_send_dupack`;
            // no DSACK, as it carries no data).
            self.send_ack(now, q);
            return;
        }
        self.stats.segments_received += 1;
        self.ecn_on_data(now, pkt, q);
        let (s, e) = (pkt.seq, pkt.seq + pkt.payload as u64);
        if e <= self.rcv_nxt {
            return self.old_data(now, s, e, q);
        }
        if let Some(&block) = self.ooo.iter().find(|b| b.0 <= s && e <= b.1) {
            return self.held_data(now, block, (s, e), q);
        }
        self.ack_pending = true;
        let in_order = s == self.rcv_nxt;
        if in_order {
            self.in_order_data(now, pkt, e);
        } else {
            self.out_of_order_data(now, s, e, q);
        }
        self.ack_snd_check(now, q);
        if in_order {
            self.cleanup_rbuf(now, q);
        }
    }

    /// A SYN of a connection that opens in time (`tcp_conn_request`; one sent again
    /// finds the request and is answered again, `tcp_check_req`). A Fast Open server
    /// takes the data of a SYN with a cookie (`tcp_fastopen_create_child`), which the
    /// application reads at once.
    fn on_syn(&mut self, now: Time, pkt: &Packet, q: &mut impl Io) {
        self.ts_recent = pkt.ts_val;
        let taken = handshake::server_takes(pkt, self.p.flow.fastopen) as u64;
        if taken > 0 && self.syn_data == 0 {
            self.syn_data = taken;
            if self.p.flow.size_bytes.is_some_and(|size| self.delivered_bytes() >= size) {
                self.completed_at.get_or_insert(now);
            }
        }
        let rwnd = self.advertised_window();
        let synack = handshake::syn_ack(now, pkt, rwnd, self.p.flow.fastopen, self.syn_data as u32);
        q.reply(now, self.p.id, synack);
    }

    /// Old data: report it with DSACK, ACK at once, enter quick-ACK mode
    /// (`tcp_send_dupack`, or `tcp_data_queue`'s retransmit case).
    fn old_data(&mut self, now: Time, s: u64, e: u64, q: &mut impl Io) {
        self.stats.dup_segments += 1;
        self.dsack = Some((s, e));
        self.incr_quickack(MAX_QUICKACKS);
        self.send_ack(now, q);
    }

    /// Out-of-order data already held in `block` (`tcp_data_queue_ofo`): DSACK it; the
    /// SACK block holding it moves to the front, so the DSACK is seen inside it
    /// (`tcp_sack_new_ofo_skb`); the ACK goes out as for any out-of-order segment.
    fn held_data(&mut self, now: Time, block: (u64, u64), (s, e): (u64, u64), q: &mut impl Io) {
        self.stats.dup_segments += 1;
        self.dsack = Some((s, e));
        self.sacks.retain(|b| b.1 < block.0 || b.0 > block.1);
        self.sacks.insert(0, block);
        self.sacks.truncate(NUM_SACKS);
        self.ack_pending = true;
        self.ack_snd_check(now, q);
    }

    /// The next segment in sequence (`tcp_data_queue`'s queue case): `rcv_nxt` moves
    /// over it and over the held data it joins, and the application reads it.
    // The per-packet path: inline into on_data, as it was written before it was a function.
    #[inline]
    fn in_order_data(&mut self, now: Time, pkt: &Packet, e: u64) {
        self.ts_recent = pkt.ts_val;
        if self.rcvbuf.as_mut().is_some_and(|b| b.on_in_order()) {
            self.quick |= 1; // tcp_grow_window: ACK a segment that opened the window at once
        }
        self.rcv_nxt = e;
        self.ofo_queue();
        let nxt = self.rcv_nxt;
        self.sacks.retain(|b| b.1 > nxt);
        self.measure_rcv_mss(pkt);
        self.event_data_recv(now);
        // The application reads what arrived in order at once.
        let read = self.delivered_bytes();
        if let Some(b) = self.rcvbuf.as_mut() {
            b.adjust(now, read, self.p.rtt);
        }
        if let Some(size) = self.p.flow.size_bytes {
            if self.completed_at.is_none() && self.delivered_bytes() >= size {
                self.completed_at = Some(now);
            }
        }
    }

    /// `tcp_ofo_queue`: the held blocks that now follow `rcv_nxt` join it; a filled hole
    /// is ACKed at once (RFC 5681 4.2).
    #[inline]
    fn ofo_queue(&mut self) {
        let had_ooo = !self.ooo.is_empty();
        while let Some(&(bs, be)) = self.ooo.first() {
            if bs > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(be);
            self.ooo.remove(0);
        }
        if had_ooo && self.ooo.is_empty() {
            self.ack_now = true;
        }
    }

    /// A segment beyond a hole (`tcp_data_queue_ofo`). A block about to rotate out of the
    /// first two reported ones: send any compressed ACK first, so its news is not lost
    /// (`tcp_sack_compress_send_ack`).
    fn out_of_order_data(&mut self, now: Time, s: u64, e: u64, q: &mut impl Io) {
        let idx = self.sacks.iter().position(|b| b.0 <= e && s <= b.1).unwrap_or(self.sacks.len());
        if idx >= SACK_BLOCKS_EXPECTED && self.compressed_ack > 0 {
            self.send_ack(now, q);
        }
        self.insert_ooo(s, e);
    }

    /// ECN bookkeeping for an arriving data segment (`tcp_ecn_accept_cwr`,
    /// `tcp_ecn_check_ce`; `dctcp_ece_ack_update` for ECN-low).
    fn ecn_on_data(&mut self, now: Time, pkt: &Packet, q: &mut impl Io) {
        match self.p.flow.ecn {
            Ecn::Off => {}
            Ecn::Classic => {
                if pkt.cwr {
                    self.demand_cwr = false;
                    self.ack_now = true;
                }
                if pkt.ce && !self.demand_cwr {
                    // Do not delay ACKs: the sender may have a tiny cwnd.
                    self.quick = self.quick.max(2);
                    self.demand_cwr = true;
                }
            }
            Ecn::Low => {
                if pkt.ce != self.ce_state {
                    // Report the prior state for what is already pending, then ACK now.
                    if self.ack_pending {
                        self.send_ack(now, q);
                    }
                    self.ce_state = pkt.ce;
                    self.ack_now = true;
                }
            }
        }
    }

    /// Queue an out-of-order segment and update the SACK blocks (`tcp_sack_new_ofo_skb`).
    fn insert_ooo(&mut self, s: u64, e: u64) {
        let i = self.ooo.partition_point(|b| b.1 < s);
        if i < self.ooo.len() && self.ooo[i].0 <= e {
            self.ooo[i].0 = self.ooo[i].0.min(s);
            self.ooo[i].1 = self.ooo[i].1.max(e);
            while i + 1 < self.ooo.len() && self.ooo[i + 1].0 <= self.ooo[i].1 {
                self.ooo[i].1 = self.ooo[i].1.max(self.ooo[i + 1].1);
                self.ooo.remove(i + 1);
            }
        } else {
            self.ooo.insert(i, (s, e));
        }
        // The block now holding this segment moves to the front; blocks it absorbed go.
        let block = self.ooo[self.ooo.partition_point(|b| b.1 < e)];
        self.sacks.retain(|b| b.1 < block.0 || b.0 > block.1);
        self.sacks.insert(0, block);
        self.sacks.truncate(NUM_SACKS);
    }

    /// `__tcp_ack_snd_check`.
    fn ack_snd_check(&mut self, now: Time, q: &mut impl Io) {
        let unacked = self.bytes_upto(self.rcv_nxt) - self.bytes_upto(self.rcv_wup);
        if unacked > self.rcv_mss as u64 || self.quick > 0 || self.ack_now {
            self.send_ack(now, q);
            return;
        }
        if self.ooo.is_empty() {
            self.send_delayed_ack(now, q);
            return;
        }
        if !self.p.tcp.sack || self.compressed_ack >= COMP_SACK_NR {
            // Without SACK every out-of-order segment is acknowledged at once
            // (`__tcp_ack_snd_check`: compression needs `tcp_is_sack`).
            self.send_ack(now, q);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            self.send_ack(now, q);
            return;
        }
        self.compressed_ack += 1;
        if !self.comp_timer.is_armed() {
            let delay = COMP_SACK_DELAY.min(Dur(self.p.rtt.ns() / 20));
            q.arm(&mut self.comp_timer, now + delay, Wake::SackCompress(self.p.id));
        }
    }

    /// `tcp_send_delayed_ack`, on the jiffy clock.
    fn send_delayed_ack(&mut self, now: Time, q: &mut impl Io) {
        let mut ato = self.ato;
        if ato > Dur(self.p.tcp.delack_min_ns) {
            let max_ato = Dur::from_ms(500).min(self.p.rtt.max(Dur(self.p.tcp.delack_min_ns)));
            ato = ato.min(max_ato);
        }
        ato = ato.min(DELACK_MAX);
        let tick = NS_PER_SEC / self.p.tcp.hz as u64;
        let jiffy_start = Time(now.ns() / tick * tick);
        let mut timeout = jiffy_start + Dur(ato.ns().div_ceil(tick) * tick);
        if let Some(old) = self.delack.deadline() {
            if old <= jiffy_start + Dur(ato.ns() / 4) {
                self.send_ack(now, q);
                return;
            }
            timeout = timeout.min(old);
        }
        q.arm(&mut self.delack, timeout, Wake::DelayedAck(self.p.id));
    }

    pub fn on_delack_timer(&mut self, now: Time, q: &mut impl Io) {
        match self.delack.fire(now) {
            TimerFire::Requeue(t) => q.push(t, Wake::DelayedAck(self.p.id)),
            TimerFire::Stale => {}
            TimerFire::Expired => {
                if self.ack_pending {
                    // Delayed ACK missed: inflate ato (`tcp_delack_timer_handler`).
                    self.ato = Dur(self.ato.ns() << 1).min(self.rto());
                    self.send_ack(now, q);
                }
            }
        }
    }

    pub fn on_sack_compress_timer(&mut self, now: Time, q: &mut impl Io) {
        match self.comp_timer.fire(now) {
            TimerFire::Requeue(t) => q.push(t, Wake::SackCompress(self.p.id)),
            TimerFire::Stale => {}
            TimerFire::Expired => {
                if self.compressed_ack > 0 {
                    self.send_ack(now, q);
                }
            }
        }
    }

    /// `tcp_send_ack` + `tcp_event_ack_sent`.
    fn send_ack(&mut self, now: Time, q: &mut impl Io) {
        let rwnd = self.advertised_window();
        let mut pkt = Packet {
            flow: self.p.id,
            conn: self.p.conn,
            ack: self.rcv_nxt,
            rwnd,
            ts_ecr: self.ts_recent,
            ..Default::default()
        };
        pkt.ts_val = (now.ns() / 1_000_000) as u32;
        pkt.ece = match self.p.flow.ecn {
            Ecn::Off => false,
            Ecn::Classic => self.demand_cwr,
            Ecn::Low => self.ce_state,
        };
        let mut n = 0;
        if let Some(d) = self.dsack.take().filter(|_| self.p.tcp.sack) {
            pkt.sacks[0] = d;
            pkt.dsack = true;
            n = 1;
        }
        for &b in self.sacks.iter().take(if self.p.tcp.sack { SACKS_PER_ACK - n } else { 0 }) {
            pkt.sacks[n] = b;
            n += 1;
        }
        pkt.n_sacks = n as u8;
        pkt.wire_bytes = wire::ACK_BYTES + wire::sack_option_bytes(n);
        let reports_ooo = n > 0 || (!self.p.tcp.sack && !self.ooo.is_empty());
        if reports_ooo && !pkt.dsack {
            self.stats.dupacks_sent += (self.rcv_nxt == self.rcv_wup) as u64;
        }
        self.stats.acks_sent += 1;
        self.rcv_wup = self.rcv_nxt;
        self.quick = self.quick.saturating_sub(1);
        self.ack_pending = false;
        self.ack_now = false;
        self.pushed = false;
        self.compressed_ack = 0;
        self.comp_timer.cancel();
        self.delack.cancel();
        q.reply(now, self.p.id, pkt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_SEC;

    const T0: Time = Time(NS_PER_SEC);
    const MSS: u32 = 1448;

    fn receiver(autotune: bool) -> Receiver {
        Receiver::new(ReceiverParams {
            id: 0,
            tcp: TcpConfig { mss: MSS, ..TcpConfig::default() },
            flow: FlowConfig { rwnd_bytes: 6 << 20, rwnd_autotune: autotune, ..FlowConfig::bulk("cubic") },
            rtt: Dur::from_ms(200),
            conn: 0,
        })
    }

    /// ACKs sent for `n` in-order segments arriving 1.2 ms apart (10 Mbit/s).
    fn acks_for(mut r: Receiver, n: u64) -> u64 {
        let mut q = super::super::io::Loopback::default();
        for seq in 0..n {
            let pkt = Packet { seq: seq * MSS as u64, payload: MSS, ts_val: 1, ..Default::default() };
            r.on_data(T0 + Dur::from_us(1200 * seq), &pkt, &mut q);
        }
        r.stats.acks_sent
    }

    #[test]
    fn a_segment_that_grows_the_autotuned_window_is_acked_at_once() {
        // 60 segments, less than a round trip: no DRS step. The first ones are ACKed at
        // once either way (quick-ACK mode at the start, `tcp_incr_quickack`); after that
        // the fixed window is ACKed every second segment, the autotuned one every
        // segment until `tcp_grow_window` has taken it from 10 segments to half of the
        // 128 KiB buffer (45), two segments at a time.
        let fixed = acks_for(receiver(false), 60);
        let autotuned = acks_for(receiver(true), 60);
        assert_eq!(fixed, 16 + (60 - 16) / 2);
        assert!(autotuned >= fixed + 8, "autotuned {autotuned}, fixed {fixed}");
        // Once it stops growing, every second segment again.
        let longer = acks_for(receiver(true), 70);
        assert_eq!(longer - autotuned, 5);
    }
    /// `tcp_measure_rcv_mss` and `tcp_cleanup_rbuf`: a full-sized segment with PSH that
    /// leaves an ACK pending is acknowledged as soon as the application has read it; one
    /// without PSH waits for the next segment or the delayed-ACK timer.
    #[test]
    fn a_full_sized_segment_with_psh_is_acknowledged_once_read() {
        let mut q = super::super::io::Loopback::default();
        let seg = |seq: u64, psh| Packet { seq: seq * MSS as u64, payload: MSS, psh, ..Default::default() };
        for psh in [false, true] {
            let mut r = receiver(false);
            (r.quick, r.ato_initialised, r.lrcvtime) = (0, true, T0);
            for seq in 0..3 {
                r.on_data(T0 + Dur::from_ms(seq), &seg(seq, psh && seq == 2), &mut q);
            }
            // Segments 0-1 are ACKed together; segment 2 at once only with PSH.
            assert_eq!(r.stats.acks_sent, if psh { 2 } else { 1 }, "psh {psh}");
        }
        // A pushed segment while out-of-order data is held: the receive memory is not
        // empty, so no ACK beyond what the out-of-order data itself triggers.
        let mut r = receiver(false);
        (r.quick, r.ato_initialised, r.lrcvtime) = (0, true, T0);
        r.on_data(T0, &seg(0, false), &mut q);
        r.on_data(T0, &seg(2, false), &mut q);
        let acks = r.stats.acks_sent;
        r.on_data(T0, &seg(1, true), &mut q);
        assert_eq!(r.stats.acks_sent, acks + 1, "the filled hole is ACKed once");
    }

    #[test]
    fn a_zero_window_probe_is_answered_at_once_without_counting_as_data() {
        let mut r = receiver(false);
        let mut q = super::super::io::Loopback::default();
        r.on_data(T0, &Packet { seq: 0, payload: MSS, ..Default::default() }, &mut q);
        r.on_data(T0, &Packet { seq: MSS as u64, payload: MSS, ..Default::default() }, &mut q);
        let (acks, segments) = (r.stats.acks_sent, r.stats.segments_received);
        r.on_data(T0 + Dur::from_ms(300), &Packet { seq: 2 * MSS as u64, payload: 0, ..Default::default() }, &mut q);
        assert_eq!((r.stats.acks_sent, r.stats.segments_received), (acks + 1, segments));
        assert_eq!((r.rcv_nxt, r.dsack), (2 * MSS as u64, None));
    }
}
