//! What every other part of the sender reads or changes of the connection: the counts
//! (`tcp_packets_in_flight`, `snd_nxt`, the peer's window), the view congestion control
//! gets (`ConnInfo`), the CA state (`tcp_set_ca_state`), a segment marked lost
//! (`tcp_mark_skb_lost`), RACK's advance and the reordering a SACK shows, the snapshots
//! the delivery rate needs, and the values a scenario holds fixed.

use super::*;
use crate::cc::{ConnInfo, LostSegment};
use crate::net::{Ecn, Packet};
use crate::tcp::pacing;
use crate::tcp::rate::TxSnapshot;
use crate::tcp::scoreboard::{EVER_RETRANS, RETRANS};

impl Sender {
    /// `tcp_packets_in_flight`.
    pub fn inflight(&self) -> u32 {
        self.sb.in_flight()
    }

    pub fn snd_nxt(&self) -> u64 {
        self.sb.snd_nxt()
    }

    /// Data written and not yet sent (`!tcp_write_queue_empty`).
    pub(super) fn has_unsent(&self) -> bool {
        self.write.has_unsent(self.snd_nxt())
    }

    /// Whether the peer SACKs (`tcp_is_sack`).
    pub(super) fn is_reno(&self) -> bool {
        !self.p.tcp.sack
    }

    /// The sequence number (a stream offset) of segment boundary `seq` on the wire: where
    /// it starts, and one more past a FIN, which takes a sequence number.
    #[inline]
    pub fn wire_seq(&self, seq: u64) -> u64 {
        self.write.seg_start(seq) + self.write.fin_seg().is_some_and(|f| seq > f) as u64
    }

    /// The segment boundary a sequence number on the wire acknowledges: the last one at
    /// or below it, so that a partial segment counts as not acknowledged.
    #[inline]
    pub(super) fn seg_at_or_below(&self, wire: u64) -> u64 {
        match self.write.fin_seg() {
            Some(f) if wire > self.write.seg_start(f + 1) => f + 1,
            Some(f) => self.write.seg_floor(wire).0.min(f),
            None => self.write.seg_floor(wire).0,
        }
    }

    /// The first segment boundary at or above a sequence number on the wire.
    fn seg_at_or_above(&self, wire: u64) -> u64 {
        let seq = self.seg_at_or_below(wire);
        seq + (self.wire_seq(seq) < wire) as u64
    }

    /// An ACK from the wire, whose ACK and SACK blocks are sequence numbers, with them
    /// as segment boundaries: a SACK block covers the whole segments inside it.
    pub(super) fn ack_in_segments(&self, pkt: &Packet) -> Packet {
        let mut a = *pkt;
        a.ack = self.seg_at_or_below(pkt.ack);
        for b in a.sacks.iter_mut().take(a.n_sacks as usize) {
            *b = (self.seg_at_or_above(b.0), self.seg_at_or_below(b.1).max(self.seg_at_or_above(b.0)));
        }
        a
    }

    /// `tcp_wnd_end`: the stream offset the peer's window reaches.
    pub(super) fn wnd_end(&self) -> u64 {
        self.write.seg_start(self.sb.snd_una) + self.snd_wnd
    }

    /// `tcp_snd_wnd_test`: segment `seq` fits in the peer's window.
    pub(super) fn rwnd_allows(&self, seq: u64) -> bool {
        // A FIN takes a sequence number of the window too (`end_seq`).
        let fin = self.write.carries_fin(seq) as u64;
        self.write.seg_start(seq) + self.write.seg_len(seq) as u64 + fin <= self.wnd_end()
    }

    /// `tcp_is_cwnd_limited`.
    pub(super) fn cwnd_limited(&self) -> bool {
        self.cwnd_use.is_limited(self.w.in_slow_start(), self.w.cwnd)
    }

    /// The connection as congestion control sees it.
    pub fn info(&self, now: Time) -> ConnInfo {
        ConnInfo {
            now,
            jiffies: now.jiffies(self.p.tcp.hz),
            hz: self.p.tcp.hz,
            mss: self.write.mss(),
            inflight: self.inflight(),
            packets_out: self.sb.packets_out(),
            delivered: self.delivered,
            lost: self.lost,
            srtt_us: self.rtt.srtt_us(),
            min_rtt_us: self.rtt.min_rtt_us(),
            is_cwnd_limited: self.cwnd_limited(),
            ca_state: self.ca_state,
            snd_una: self.wire_seq(self.sb.snd_una),
            snd_nxt: self.wire_seq(self.snd_nxt()),
            pacing_rate: self.w.pacing_rate,
            paced: self.pacing.enabled(),
            app_limited: self.rate.app_limited != 0,
            prior_cwnd: self.prr.prior_cwnd(),
            lsndtime: self.last_send,
            wstamp: self.pacing.wstamp(),
            delivered_ce: self.delivered_ce,
            ecn_low: self.p.flow.ecn == Ecn::Low,
            delivered_us: self.rate.delivered_us,
            tlp_orig_data_app_limited: self.tlp.orig_data_app_limited(),
            rcv_tsval: self.ts.val(),
            rcv_tsecr: self.ts.ecr(),
            sacked_out: self.sb.sacked_out,
            lost_out: self.sb.lost_out,
            retrans_out: self.sb.retrans_out,
            srtt_us8: self.rtt.srtt_us8,
            mdev_us4: self.rtt.mdev_us() << 2,
            max_packets_out: self.cwnd_use.max_packets_out(),
            cwnd_limited_bit: self.cwnd_use.flag(),
            total_retrans: self.stats.retransmits as u32,
            snd_wnd: self.snd_wnd.min(u32::MAX as u64) as u32,
            ecn_ok: self.p.flow.ecn != Ecn::Off,
        }
    }

    /// The connection closes: the algorithm lets go of it (`tcp_cleanup_congestion_control`).
    pub fn close(&mut self, now: Time) {
        let info = self.info(now);
        self.cc.release(&info, &mut self.w);
    }

    /// `tcp_set_ca_state`: tell the algorithm, then switch.
    pub(super) fn set_ca_state(&mut self, now: Time, state: CaState) {
        let info = self.info(now);
        self.cc.set_state(&info, &mut self.w, state);
        self.ca_state = state;
    }

    /// Re-apply the fixed cwnd and pacing rate after anything may have changed them.
    pub(super) fn hold_overrides(&mut self) {
        if let Some(c) = self.p.flow.fixed_cwnd {
            self.w.cwnd = c;
        }
        if let Some(bps) = self.p.flow.fixed_pacing_rate_bps {
            // `sk_pacing_rate` is in payload bytes per second.
            self.w.pacing_rate = bps / 8;
        }
    }

    /// `tcp_update_pacing_rate` for algorithms without `cong_control`.
    pub(super) fn update_pacing_rate(&mut self) {
        let tcp = &self.p.tcp;
        let ratios = (tcp.pacing_ss_ratio, tcp.pacing_ca_ratio);
        let (cwnd, ssthresh, out) = (self.w.cwnd, self.w.ssthresh, self.sb.packets_out());
        let mss = self.write.mss();
        self.w.pacing_rate = pacing::cwnd_pacing_rate(mss, cwnd, ssthresh, out, self.rtt.srtt_us8, ratios);
    }

    /// `tcp_mark_skb_lost`, telling the algorithm (`skb_marked_lost`).
    pub(super) fn mark_lost(&mut self, now: Time, seq: u64) {
        if !self.sb.mark_lost(seq) {
            return;
        }
        self.lost += 1;
        let tx = self.sb.get(seq).tx;
        let seg = LostSegment {
            tx_in_flight: tx.in_flight,
            lost_at_send: tx.lost,
            lost_now: self.lost,
            is_app_limited: tx.app_limited,
        };
        let info = self.info(now);
        self.cc.segment_lost(&info, &mut self.w, &seg);
    }

    /// `tcp_rack_advance`: a segment sent at `tx_time` with `flags`, ending at `end_seq`,
    /// is delivered.
    pub(super) fn rack_advance(&mut self, now: Time, flags: u8, end_seq: u64, tx_time: Time) {
        let retransmitted = flags & (RETRANS | EVER_RETRANS) != 0;
        self.rack.advance(now.us(), retransmitted, end_seq, tx_time.us(), self.rtt.min_rtt_us());
    }

    /// `tcp_highest_sack_seq`: the end of the highest SACKed segment, or `snd_una`.
    pub(super) fn highest_sack_seq(&self) -> u64 {
        self.sack.highest_seq(self.sb.sacked_out, self.sb.snd_una)
    }

    /// `tcp_check_sack_reordering`: segment `low_seq`, below the highest SACKed one, was
    /// delivered without a retransmission.
    pub(super) fn check_sack_reordering(&mut self, low_seq: u64) {
        let fack = self.highest_sack_seq();
        self.reordering.on_sack_below(fack, low_seq);
    }

    /// `tcp_rate_check_app_limited`, run by `tcp_sendmsg_locked` before it queues the
    /// write: `unsent` tells whether earlier writes still wait to be sent.
    pub(super) fn check_app_limited(&mut self, unsent: bool) {
        if !unsent && self.tsq.wmem() == 0 && self.inflight() < self.w.cwnd && self.sb.lost_out <= self.sb.retrans_out {
            self.rate.app_limited = (self.delivered + self.inflight() as u64).max(1);
        }
    }

    /// Apply an algorithm's request to mark the connection app-limited now.
    pub(super) fn apply_app_limited_request(&mut self) {
        if std::mem::take(&mut self.w.mark_app_limited) {
            self.rate.app_limited = (self.delivered + self.inflight() as u64).max(1);
        }
    }

    /// The sender-side snapshot stored into each transmitted segment.
    pub(super) fn tx_snapshot(&self, in_flight_after: u32) -> TxSnapshot {
        TxSnapshot {
            delivered: self.delivered,
            delivered_ce: self.delivered_ce,
            lost: self.lost,
            in_flight: in_flight_after,
            ..Default::default()
        }
    }
}
