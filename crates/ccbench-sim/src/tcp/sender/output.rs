//! The output path (net/ipv4/tcp_output.c): `tcp_write_xmit` with its pacing check (on
//! `tcp/pacing.rs`), cwnd quota, TSO sizing and deferral (`tcp_tso_autosize`,
//! `tcp_tso_should_defer`) and TCP Small Queues (`tcp_small_queue_check`, on
//! `tcp/tsq.rs`); retransmission (`tcp_xmit_retransmit_queue`); and the skb handed to
//! the NIC (`__tcp_transmit_skb`, `tcp_rate_skb_sent`, `tcp_update_skb_after_send`).

use super::*;
use crate::cc::{CaEvent, CaState};
use crate::net::Ecn;
use crate::net::Packet;
use crate::tcp::chrono::Chrono;
use crate::tcp::io::Io;
use crate::tcp::pacing;
use crate::tcp::rate::TxSnapshot;
use crate::tcp::scoreboard::Seg;
use crate::tcp::scoreboard::SKB_END;
use crate::tcp::tsopt::ts_ms;
use crate::tcp::tsq::Tsq;
use crate::tcp::xmit_timer::XmitTimer;
use crate::time::{Dur, Time};
use crate::units::wire;
use std::ops::Range;

/// `tcp_max_tso_deferred_mss`.
const TSO_MAX_DEFERRED_SEGS: u64 = 3;
/// `sk_gso_max_size` of a typical device (`GSO_LEGACY_MAX_SIZE`).
const GSO_MAX_SIZE: u64 = 65536;

/// `tcp_tso_should_defer`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Defer {
    No,
    /// Wait for ACKs to open the congestion window.
    ForCwnd,
    /// Wait for the peer to open its window.
    ForRwnd,
}

/// What became of one skb handed to the NIC.
struct SentSkb {
    /// Payload bytes.
    payload: u64,
    /// When its last segment's TX completion reaches the host.
    done: Time,
    /// A segment of it carried CWR.
    cwr: bool,
}

/// What an skb handed to the NIC carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TxKind {
    New,
    /// A retransmission of lost data (`tcp_retransmit_skb`: the R bit, `retrans_out`).
    Retrans,
    /// A tail loss probe resending the last segment (`__tcp_retransmit_skb` alone).
    Probe,
}

/// What `tcp_mtu_probe` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Probe {
    /// A probe left.
    Sent,
    /// Not now: wait for room before sending anything (`return 0`).
    Wait,
    /// No probe; send as usual (`return -1`).
    No,
}

impl Sender {
    /// Whole segments the peer's window still admits beyond `snd_nxt`.
    fn rwnd_segs(&self) -> u64 {
        (self.wnd_end().saturating_sub(self.write.seg_start(self.snd_nxt())) / self.write.mss() as u64).max(1)
    }

    /// `tcp_tso_segs` / `tcp_tso_autosize`: about 1 ms of data at the pacing rate, plus
    /// a bonus on short-RTT paths (`tcp_tso_rtt_log`, Linux 5.18+), capped at 64 KB, at
    /// least `min_tso_segs`. A pacing stride multiplies the goal (the cap still holds).
    pub fn tso_segs(&self) -> u32 {
        if !self.p.gso {
            return 1;
        }
        let stride = self.p.flow.pacing_stride as u64;
        if stride == 1 {
            return self.base_tso_segs();
        }
        let bytes = (self.base_tso_segs() as u64 * self.write.mss() as u64 * stride).min(GSO_MAX_SIZE);
        ((bytes / self.write.mss() as u64) as u32).max(1)
    }

    /// The TSO goal of an unmodified kernel.
    fn base_tso_segs(&self) -> u32 {
        let mut bytes = self.w.pacing_rate >> self.p.tcp.pacing_shift;
        if self.p.tcp.tso_rtt_log > 0 {
            let r = self.rtt.min_rtt_us() >> self.p.tcp.tso_rtt_log;
            if r < 64 {
                bytes += GSO_MAX_SIZE >> r;
            }
        }
        let bytes = bytes.min(GSO_MAX_SIZE);
        let min = if self.cc.owns_cwnd() { self.cc.min_tso_segs(self.w.pacing_rate) } else { self.p.tcp.min_tso_segs };
        ((bytes / self.write.mss() as u64) as u32).max(min)
    }

    /// `tcp_cwnd_test`: a single skb never takes more than half the cwnd.
    fn cwnd_quota(&self) -> u32 {
        let (inflight, cwnd) = (self.inflight(), self.w.cwnd);
        if inflight >= cwnd {
            0
        } else {
            (cwnd - inflight).min((cwnd >> 1).max(1))
        }
    }

    /// `tcp_small_queue_check` for an skb of `nsegs` (the limit doubled `factor` times):
    /// throttled while the qdisc and NIC hold more of this socket's data than about 1 ms
    /// (at least two skbs), unless the retransmit queue holds at most one skb; the TX
    /// completion wakes the socket.
    fn tsq_throttled(&mut self, now: Time, nsegs: u32, factor: u32, q: &mut impl Io) -> bool {
        let tcp = &self.p.tcp;
        let unpaced_cap = (!self.pacing.enabled()).then_some(tcp.tsq_limit_bytes);
        let payload = nsegs as u64 * self.write.mss() as u64;
        let limit = Tsq::limit(payload, self.w.pacing_rate, tcp.pacing_shift, unpaced_cap, factor);
        if !self.tsq.over_limit(limit, q.reaped(now)) {
            return false;
        }
        if self.sb.packets_out() <= self.tso_segs() {
            return false;
        }
        self.tsq.wait_for_completion(now, q);
        true
    }

    /// `tcp_tso_should_defer`: wait for more ACKs to send a bigger skb? Returns whether
    /// to defer and which window the wait is for: cwnd (`is_cwnd_limited`) or the peer's
    /// (`is_rwnd_limited`); the write queue's skb is taken to be longer than either, as
    /// a bulk sender's `size_goal` skbs are.
    fn should_defer(&self, now: Time, max_segs: u32) -> Defer {
        if self.ca_state >= CaState::Recovery || now.since(self.pacing.wstamp()) > Dur::from_ms(1) {
            return Defer::No;
        }
        let mss = self.write.mss() as u64;
        let send_win = self.wnd_end().saturating_sub(self.write.seg_start(self.snd_nxt()));
        let cong_win = (self.w.cwnd - self.inflight()) as u64 * mss;
        let limit = send_win.min(cong_win);
        if limit >= max_segs as u64 * mss {
            return Defer::No;
        }
        // The last data of a sized flow (FIN) is never held back.
        let unsent = (self.write.written_segs() - self.snd_nxt()).saturating_mul(mss);
        if unsent <= limit {
            return Defer::No;
        }
        if self.p.tcp.tso_win_divisor > 0 {
            // If at least some fraction of a window is available, use it.
            let chunk = self.snd_wnd.min(self.w.cwnd as u64 * mss) / self.p.tcp.tso_win_divisor as u64;
            if limit >= chunk {
                return Defer::No;
            }
        } else if limit > TSO_MAX_DEFERRED_SEGS * mss {
            // Do not defer past a single ACK of two full segments.
            return Defer::No;
        }
        // If the next ACK is due later than min(srtt/2, 1 ms) from now, do not defer: a
        // smooth ACK clock is worth more than a bigger skb. (Linux 6.18 and the stable
        // trees since October 2025, "tcp: fix tcp_tso_should_defer() vs large RTT";
        // before, the test was the oldest skb's age against srtt/2.)
        let Some(head) = self.sb.head() else { return Defer::No };
        let srtt = Dur(self.rtt.srtt_us8 * 125);
        let threshold = Dur(srtt.ns() / 2).min(Dur::from_ms(1));
        if head.tx_time + srtt > now + threshold {
            return Defer::No;
        }
        if cong_win < send_win {
            Defer::ForCwnd
        } else {
            Defer::ForRwnd
        }
    }

    /// `tcp_write_xmit`. `push_one`: 0 normal, 1 one skb, 2 one skb ignoring cwnd (TLP);
    /// `nonagle`: the Nagle setting of this push (`NAGLE_*` in `tcp/write.rs`).
    pub(super) fn write_xmit(&mut self, now: Time, push_one: u8, nonagle: u8, q: &mut impl Io) {
        if !self.started {
            return;
        }
        self.hold_overrides();
        let mut sent = 0u32;
        if push_one == 0 {
            let prior_packets_out = self.sb.packets_out();
            match self.mtu_probe(now, q) {
                Probe::Wait => return,
                Probe::Sent => {
                    sent = 1;
                    if prior_packets_out == 0 {
                        self.rearm_rto(now, q);
                    }
                }
                Probe::No => {}
            }
        }
        let max_segs = self.tso_segs();
        let mut is_cwnd_limited = false;
        let mut is_rwnd_limited = false;
        while self.has_unsent() {
            if self.pacing.check(now, q) {
                break;
            }
            let seq = self.snd_nxt();
            let mut quota = self.cwnd_quota();
            if quota == 0 {
                // `tcp_cwnd_test` lets a final FIN of one segment past cwnd.
                if push_one != 2 && !self.write.carries_fin(seq) {
                    break;
                }
                quota = 1;
            }
            if !self.rwnd_allows(seq) {
                is_rwnd_limited = true;
                break;
            }
            let nsegs = self.next_skb_segs(seq, quota, max_segs, nonagle);
            if nsegs == 0 {
                break;
            }
            if max_segs > 1 && push_one == 0 && !self.write.carries_fin(seq) {
                match self.should_defer(now, max_segs) {
                    Defer::No => {}
                    Defer::ForCwnd => {
                        is_cwnd_limited = true;
                        break;
                    }
                    Defer::ForRwnd => {
                        is_rwnd_limited = true;
                        break;
                    }
                }
            }
            if self.tsq_throttled(now, nsegs, 0, q) {
                break;
            }
            let prior_packets_out = self.sb.packets_out();
            if !self.send_skb(now, seq..seq + nsegs as u64, TxKind::New, q) {
                break;
            }
            self.write.minshall_update(seq + nsegs as u64);
            if prior_packets_out == 0 || self.xmit.is_pending(XmitTimer::LossProbe) {
                self.rearm_rto(now, q);
            }
            sent += nsegs;
            if push_one != 0 {
                break;
            }
        }
        self.write_xmit_done(now, sent, is_cwnd_limited, is_rwnd_limited, push_one != 2, q);
    }

    /// The segments of the next skb from `seq`: at most the cwnd `quota`, the TSO goal
    /// `max_segs`, what the peer's window admits and what was written, ended by a short
    /// segment, and what Nagle lets go under `nonagle`.
    // A step of write_xmit's loop only, kept inline as before it had a name (a call per
    // skb cost 0.2% of a bulk Cubic run's instructions).
    #[inline]
    fn next_skb_segs(&self, seq: u64, quota: u32, max_segs: u32, nonagle: u8) -> u32 {
        let unsent = self.write.written_segs() - seq;
        let nsegs = (quota as u64).min(max_segs as u64).min(self.rwnd_segs()).min(unsent) as u32;
        let nsegs = self.write.skb_segs(seq, nsegs);
        self.write.nagle_segs(seq, nsegs, nonagle, self.sb.snd_una, self.snd_nxt())
    }

    /// The end of `tcp_write_xmit` after `sent` segments: the rwnd-limited chronograph,
    /// cwnd validation, PRR's count, and a loss probe to follow new data (unless this
    /// was one, `schedule_probe` false).
    fn write_xmit_done(
        &mut self,
        now: Time,
        sent: u32,
        mut is_cwnd_limited: bool,
        is_rwnd_limited: bool,
        schedule_probe: bool,
        q: &mut impl Io,
    ) {
        if is_rwnd_limited {
            self.chronos.start(now, Chrono::RwndLimited);
        } else {
            let empty = self.sb.is_empty() && !self.has_unsent();
            self.chronos.stop(now, Chrono::RwndLimited, empty);
        }
        is_cwnd_limited |= self.inflight() >= self.w.cwnd;
        if sent > 0 || is_cwnd_limited {
            self.cwnd_validate(now, is_cwnd_limited);
        }
        if sent > 0 {
            if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
                self.prr.on_sent(sent);
            }
            if schedule_probe {
                self.schedule_loss_probe(now, false, q);
            }
        }
    }

    /// `tcp_xmit_retransmit_queue`: resend lost segments, oldest first, as cwnd allows.
    pub(super) fn xmit_retransmit_queue(&mut self, now: Time, q: &mut impl Io) {
        self.hold_overrides();
        let max_segs = self.tso_segs() as u64;
        let mut rearm = false;
        loop {
            if self.pacing.check(now, q) {
                break;
            }
            let avail = self.w.cwnd.saturating_sub(self.inflight()) as u64;
            if avail == 0 || self.sb.retrans_out >= self.sb.lost_out {
                break;
            }
            let Some(&first) = self.sb.to_retransmit.first() else { break };
            if self.sb.get(first).len > self.mss() {
                self.recut_skb(first); // `__tcp_retransmit_skb` cuts what the MSS outgrew
                if self.sb.get(first).len > self.mss() {
                    break;
                }
            }
            // `tcp_retransmit_skb` resends one skb at a time: a shorter segment of the
            // next skb (the rest of one cut to a smaller MSS) starts its own, unless it fits
            // in the same MSS (`tcp_retrans_try_collapse`). Full segments of consecutive
            // skbs go together, up to the TSO goal.
            let mss = self.mss();
            let mut bytes = 0;
            let run = self
                .sb
                .to_retransmit
                .range(first..first + avail.min(max_segs))
                .enumerate()
                .take_while(|&(i, &s)| {
                    let len = self.sb.get(s).len;
                    bytes += len as u64;
                    let skb_ended = s > first && self.sb.get(s - 1).has(SKB_END);
                    s == first + i as u64 && (!skb_ended || len == mss || bytes <= mss as u64)
                })
                .count() as u64;
            let run = self.retrans_fin_cut(first, run);
            if self.tsq_throttled(now, run as u32, 1, q) {
                break;
            }
            if !self.send_skb(now, first..first + run, TxKind::Retrans, q) {
                break;
            }
            self.undo.on_retransmit(run as u32, self.sb.get(first).tx_time);
            if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
                self.prr.on_sent(run as u32);
            }
            if first == self.sb.snd_una && self.xmit.kind() != XmitTimer::ReoTimeout {
                rearm = true;
            }
        }
        if rearm {
            self.xmit.cancel();
            let rto = self.rtt.rto;
            self.reset_xmit_timer(now, XmitTimer::Rto, rto, q);
        }
    }

    /// RTO: retransmit the first segment regardless of cwnd. False if the local qdisc
    /// refused it.
    pub(super) fn retransmit_head(&mut self, now: Time, q: &mut impl Io) -> bool {
        let head = self.sb.snd_una;
        if self.sb.to_retransmit.contains(&head) && self.sb.get(head).len > self.mss() {
            self.recut_skb(head);
        }
        if self.sb.to_retransmit.contains(&head) {
            let lost_fin = self.write.carries_fin(head + 1) && self.sb.to_retransmit.contains(&(head + 1));
            let end = head + self.retrans_fin_cut(head, 1 + lost_fin as u64);
            if !self.send_skb(now, head..end, TxKind::Retrans, q) {
                return false;
            }
            self.undo.on_retransmit((end - head) as u32, self.sb.get(head).tx_time);
        }
        true
    }

    /// TLP with no new data: resend the last segment. False if the local qdisc refused it.
    pub(super) fn retransmit_tail_probe(&mut self, now: Time, seq: u64, q: &mut impl Io) -> bool {
        self.send_skb(now, seq..seq + 1, TxKind::Probe, q)
    }

    /// Hand one skb (a TSO burst of consecutive segments) to the NIC:
    /// `__tcp_transmit_skb` + `tcp_rate_skb_sent` + `tcp_update_skb_after_send`. A local
    /// qdisc that refuses it (`NET_XMIT_DROP`) leaves it unsent and starts a CWR
    /// reduction (`__tcp_transmit_skb` -> `tcp_enter_cwr`); returns whether it left.
    pub(super) fn send_skb(&mut self, now: Time, segs: Range<u64>, kind: TxKind, q: &mut impl Io) -> bool {
        if q.drops_all() {
            self.enter_cwr(now);
            return false;
        }
        let n = (segs.end - segs.start) as u32;
        let segs_end = segs.end;
        let prior_wstamp = self.pacing.wstamp();
        let tx_time = self.pacing.departure(now);
        if self.inflight() == 0 {
            let info = self.info(now);
            self.cc.cwnd_event(&info, &mut self.w, CaEvent::TxStart);
        }
        let conn = self.tx_snapshot(self.inflight() + n);
        let snap = self.rate.on_send(tx_time.us(), self.sb.packets_out(), &conn);
        let skb = self.transmit_segs(now, tx_time, segs.clone(), kind, snap, q);
        self.sb.mark_skb(segs.clone());
        self.pmtu.on_transmit();
        if self.tx_log.is_some() {
            self.log_skb(tx_time, segs, kind, &skb);
        }
        self.tsq.on_sent(skb.done, skb.payload);
        self.stats.data_segs_out += n as u64;
        self.stats.bytes_sent += skb.payload;
        self.stats.skbs_sent += 1;
        if kind == TxKind::New {
            self.sndbuf.on_sent(segs_end);
        } else {
            self.stats.retransmits += n as u64;
            self.pmtu.probe_size = 0; // `__tcp_retransmit_skb`: an inconclusive MTU probe
        }
        self.last_send = now;
        // EDT: the next skb leaves one burst-time later (`tcp_update_skb_after_send`).
        let rate = self.w.pacing_rate;
        if self.pacing.advances(rate, self.stats.data_segs_out) {
            let bytes = self.paced_bytes(skb.payload);
            self.pacing.advance(prior_wstamp, bytes, rate);
        }
        true
    }

    /// The segments `segs` of one skb leave at `tx_time` (EDT), each stamped in the
    /// scoreboard with `snap` and handed to the NIC as a packet.
    fn transmit_segs(
        &mut self,
        now: Time,
        tx_time: Time,
        segs: Range<u64>,
        kind: TxKind,
        snap: TxSnapshot,
        q: &mut impl Io,
    ) -> SentSkb {
        let ect = self.p.flow.ecn != Ecn::Off;
        // TSval from the departure time, as `tcp_skb_timestamp_ts` (EDT).
        let ts_val = ts_ms(tx_time);
        let psh_at = self.psh_at(&segs);
        let mut skb = SentSkb { payload: 0, done: now, cwr: false };
        for seq in segs {
            let len = self.write.seg_len(seq);
            skb.payload += len as u64;
            match kind {
                TxKind::New => self.sb.push_new(Seg { tx_time, len, flags: 0, xmits: 1, tx: snap }),
                TxKind::Retrans => self.sb.on_retransmit(seq, tx_time, snap),
                TxKind::Probe => self.sb.on_probe(seq, tx_time, snap),
            }
            let cwr = kind == TxKind::New && std::mem::take(&mut self.ecn_queue_cwr);
            skb.cwr |= cwr;
            let pkt = Packet {
                flow: self.p.id,
                conn: self.p.conn,
                wire_bytes: len + wire::DATA_OVERHEAD,
                seq: self.wire_seq(seq),
                payload: len,
                ts_val,
                ts_ecr: self.ts.recent(),
                ect,
                cwr,
                psh: psh_at == Some(seq),
                ..Default::default()
            };
            skb.done = q.transmit(now, self.p.id, pkt);
        }
        skb
    }

    /// PSH: `__tcp_transmit_skb` forces it on every skb of more than one segment (so
    /// that the receiver's GRO flushes); `tcp_push` puts it on the end of what the
    /// application wrote. After GSO it is on the skb's last segment only.
    fn psh_at(&self, segs: &Range<u64>) -> Option<u64> {
        let n = segs.end - segs.start;
        (n > 1 || segs.end == self.write.written_segs()).then_some(segs.end - 1)
    }

    /// Record the skb `segs` sent at `tx_time` in `tx_log`.
    fn log_skb(&mut self, tx_time: Time, segs: Range<u64>, kind: TxKind, skb: &SentSkb) {
        let record = TxRecord {
            time: tx_time,
            seq: segs.start,
            start: self.write.seg_start(segs.start),
            segs: (segs.end - segs.start) as u32,
            bytes: skb.payload,
            retrans: kind != TxKind::New,
            ect: self.p.flow.ecn != Ecn::Off,
            cwr: skb.cwr,
            psh: self.psh_at(&segs).is_some(),
            fin: self.write.carries_fin(segs.end - 1),
        };
        if let Some(log) = self.tx_log.as_mut() {
            log.push(record);
        }
    }

    /// Bytes whose airtime the EDT clock advances by after a burst of `payload`: the
    /// burst, or with a pacing stride the stride times the burst an unmodified kernel
    /// would have sent.
    fn paced_bytes(&self, payload: u64) -> u64 {
        let stride = self.p.flow.pacing_stride as u64;
        if stride == 1 {
            return payload;
        }
        let goal = self.base_tso_segs() as u64 * self.write.mss() as u64;
        pacing::stride_bytes(payload, stride, goal)
    }

    /// `tcp_cwnd_validate`: remember whether the last window was cwnd-limited.
    fn cwnd_validate(&mut self, now: Time, is_cwnd_limited: bool) {
        let (packets_out, snd_una, snd_nxt) = (self.sb.packets_out(), self.sb.snd_una, self.snd_nxt());
        self.cwnd_use.validate(is_cwnd_limited, packets_out, snd_una, snd_nxt);
        if !self.cwnd_limited() {
            self.note_sndbuf_limited(now);
        }
    }

    /// `tcp_mtu_probe`: with probing on and the connection in Open with room, send one
    /// segment of the search's middle size made of the unsent data, and count it as two
    /// packets (cwnd less one).
    pub(super) fn mtu_probe(&mut self, now: Time, q: &mut impl Io) -> Probe {
        let m = &self.pmtu;
        if !m.enabled || m.probe_size != 0 || self.ca_state != CaState::Open || self.w.cwnd < 11 {
            return Probe::No;
        }
        let mss_now = self.current_mss();
        let Some(size) = self.pmtu.next_probe(&self.p.tcp) else {
            self.pmtu.check_reprobe(&self.p.tcp, now.jiffies(self.p.tcp.hz), mss_now);
            return Probe::No;
        };
        let needed = size as u64 + (self.reordering.degree() as u64 + 1) * mss_now as u64;
        let start = self.write.seg_start(self.snd_nxt());
        if self.write.written_bytes() - start < needed || self.snd_wnd < needed {
            return Probe::No;
        }
        if start + needed > self.wnd_end() {
            return Probe::Wait;
        }
        if self.inflight() + 2 > self.w.cwnd {
            return if self.inflight() == 0 { Probe::No } else { Probe::Wait };
        }
        if self.write.coalescable(self.snd_nxt()) < size as u64 {
            return Probe::No; // `tcp_can_coalesce_send_queue_head`: MSG_EOR in the way
        }
        let seq = self.snd_nxt();
        self.write.cut_unsent(mss_now, seq, Some(size));
        if !self.send_skb(now, seq..seq + 1, TxKind::New, q) {
            return Probe::No;
        }
        self.w.cwnd -= 1;
        self.pmtu.probe_sent(size, (start, start + size as u64));
        Probe::Sent
    }
}
