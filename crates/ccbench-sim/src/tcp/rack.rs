//! RACK loss detection (RFC 8985) as net/ipv4/tcp_recovery.c does it: the most recently
//! sent segment known delivered (`tcp_rack_advance`), the reordering window
//! (`tcp_rack_reo_wnd`), and the walk in send order that marks lost what was sent before
//! it and not delivered within an RTT plus that window (`tcp_rack_detect_loss`). Beside
//! it, the reordering the connection has seen (`tp->reordering`, `tp->reord_seen`), which
//! sets RACK's window and the duplicate-ACK threshold.

use super::scoreboard::Scoreboard;

/// `sysctl_tcp_reordering`: the initial reordering degree (the duplicate-ACK threshold).
pub const REORDERING: u32 = 3;
/// `sysctl_tcp_max_reordering`: the most reordering a connection will assume.
pub const MAX_REORDERING: u32 = 300;

/// `tp->rack`: the most recently sent segment known delivered.
#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// `rack.mstamp`: its (latest) transmission, µs.
    tx_us: u64,
    /// `rack.end_seq`: the segment after it.
    end_seq: u64,
    /// `rack.rtt_us`: the RTT of the latest delivery that advanced RACK.
    rtt_us: u64,
    /// `rack.advanced`: a delivery since the last loss detection.
    advanced: bool,
}

/// What one walk of `tcp_rack_detect_loss` found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RackLoss {
    /// Segments overdue: lost.
    pub lost: Vec<u64>,
    /// The longest time left (µs) for a segment sent before RACK's that is not overdue
    /// yet: the reordering timer waits for it.
    pub wait_us: Option<u64>,
}

impl Rack {
    /// Segment numbers moved (`tcp/write.rs`'s [`Remap`](super::write::Remap)).
    pub fn remap(&mut self, r: &super::write::Remap) {
        self.end_seq = r.map(self.end_seq);
    }

    /// `tcp_rack_advance`: segment `end_seq - 1`, sent at `tx_us` (`retransmitted` if it
    /// ever was), is delivered at `now_us`. A delivery sooner than the min RTT after a
    /// retransmission is ambiguous (the original may be what arrived) and is ignored.
    pub fn advance(&mut self, now_us: u64, retransmitted: bool, end_seq: u64, tx_us: u64, min_rtt_us: u64) {
        let rtt_us = now_us.saturating_sub(tx_us);
        if rtt_us < min_rtt_us && retransmitted {
            return;
        }
        self.advanced = true;
        self.rtt_us = rtt_us;
        // tcp_skb_sent_after: later send time, ties broken by the higher end sequence.
        if tx_us > self.tx_us || (tx_us == self.tx_us && end_seq > self.end_seq) {
            self.tx_us = tx_us;
            self.end_seq = end_seq;
        }
    }

    /// Whether a delivery advanced RACK since the last call (`tcp_rack_mark_lost` clears
    /// `rack.advanced` as it runs).
    pub fn take_advanced(&mut self) -> bool {
        std::mem::take(&mut self.advanced)
    }

    /// Have loss detection run on the next ACK (`tcp_undo_cwnd_reduction`: after an undo,
    /// what is no longer marked lost is judged again).
    pub fn mark_advanced(&mut self) {
        self.advanced = true;
    }

    /// Time left (µs, negative once overdue) before a segment sent at `tx_us` counts as
    /// lost at `now_us` with reordering window `reo_wnd_us` (`tcp_rack_skb_timeout`).
    pub fn time_left(&self, now_us: u64, tx_us: u64, reo_wnd_us: u64) -> i64 {
        (self.rtt_us + reo_wnd_us) as i64 - (now_us as i64 - tx_us as i64)
    }

    /// `tcp_rack_reo_wnd`: until reordering has been seen, zero in recovery
    /// (`in_recovery`) or past the reordering degree; else min RTT / 4, capped by SRTT
    /// (`reo_wnd_steps` stays 1: its DSACK-driven growth, `tcp_rack_update_reo_wnd`, is
    /// not modelled).
    pub fn reo_wnd(
        &self,
        reordering: &Reordering,
        in_recovery: bool,
        sacked_out: u32,
        min_rtt_us: u64,
        srtt_us: u64,
    ) -> u64 {
        if reordering.seen() == 0 && (in_recovery || sacked_out >= reordering.degree()) {
            return 0;
        }
        (min_rtt_us / 4).min(srtt_us)
    }

    /// `tcp_rack_detect_loss`: walk the outstanding transmissions in send order up to
    /// RACK's segment; those overdue by `now_us` with window `reo_wnd_us` are lost.
    pub fn detect_loss(&self, sb: &mut Scoreboard, now_us: u64, reo_wnd_us: u64) -> RackLoss {
        let mut found = RackLoss::default();
        let mut wait_max = 0i64;
        sb.prune_send_order();
        for seq in sb.send_order() {
            let tx_us = sb.get(seq).tx_time.us();
            let sent_before = self.tx_us > tx_us || (self.tx_us == tx_us && self.end_seq > seq + 1);
            if !sent_before {
                break;
            }
            let left = self.time_left(now_us, tx_us, reo_wnd_us);
            if left <= 0 {
                found.lost.push(seq);
            } else {
                wait_max = wait_max.max(left);
            }
        }
        found.wait_us = (wait_max > 0).then_some(wait_max as u64);
        found
    }
}

/// `tp->reordering` and `tp->reord_seen`: how far the path has been seen to reorder.
#[derive(Clone, Debug)]
pub struct Reordering {
    /// The reordering degree in segments.
    degree: u32,
    /// Reorderings seen.
    seen: u32,
}

impl Default for Reordering {
    fn default() -> Self {
        Reordering { degree: REORDERING, seen: 0 }
    }
}

impl Reordering {
    /// The degree in segments (`tcpi_reordering`).
    pub fn degree(&self) -> u32 {
        self.degree
    }

    /// Reorderings seen (`tcpi_reord_seen`).
    pub fn seen(&self) -> u32 {
        self.seen
    }

    /// The degree grew past the initial one (`tcp_may_raise_cwnd`'s test).
    pub fn beyond_initial(&self) -> bool {
        self.degree > REORDERING
    }

    /// `tcp_check_sack_reordering`: segment `low_seq` was delivered without a
    /// retransmission below `fack`, the end of the highest SACKed segment, so the path
    /// reorders: count it, and widen the degree to the distance if that is larger.
    pub fn on_sack_below(&mut self, fack: u64, low_seq: u64) {
        if low_seq >= fack {
            return;
        }
        let metric = fack - low_seq;
        if metric > self.degree as u64 {
            self.degree = metric.min(MAX_REORDERING as u64) as u32;
        }
        self.seen += 1;
    }

    /// `tcp_check_reno_reordering`: more duplicate ACKs than could be holes; the degree
    /// becomes `window`, the segments out.
    pub fn on_dupacks_beyond_holes(&mut self, window: u32) {
        self.degree = window.min(MAX_REORDERING);
        self.seen += 1;
    }

    /// `tcp_enter_loss`: a timeout after `sacked_out` SACKed segments, in Open or
    /// Disorder. As many as the initial degree mean the degree was over-estimated.
    pub fn on_timeout_in_disorder(&mut self, sacked_out: u32) {
        if sacked_out >= REORDERING {
            self.degree = self.degree.min(REORDERING);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::scoreboard::Seg;
    use crate::time::Time;

    const MS: u64 = 1_000;

    /// Segments 0..n sent 1 ms apart from t = 0.
    fn sent(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::default();
        for seq in 0..n {
            sb.push_new(Seg { tx_time: Time(seq * MS * 1_000), len: 1000, xmits: 1, ..Default::default() });
        }
        sb
    }

    #[test]
    fn rack_follows_the_latest_sent_delivery_and_ignores_an_ambiguous_one() {
        let mut r = Rack::default();
        r.advance(50 * MS, false, 4, 3 * MS, 40 * MS);
        assert!(r.take_advanced() && !r.take_advanced());
        // An earlier transmission delivered later moves the RTT, not the segment.
        r.advance(60 * MS, false, 2, MS, 40 * MS);
        assert_eq!((r.tx_us, r.end_seq, r.rtt_us), (3 * MS, 4, 59 * MS));
        // Same send time (one skb): the higher end wins.
        r.advance(60 * MS, false, 5, 3 * MS, 40 * MS);
        assert_eq!(r.end_seq, 5);
        // A retransmission "delivered" within the min RTT: the original arrived.
        r.advance(70 * MS, true, 9, 65 * MS, 40 * MS);
        assert_eq!((r.tx_us, r.end_seq, r.rtt_us), (3 * MS, 5, 57 * MS));
    }

    #[test]
    fn segments_sent_before_the_delivered_one_are_lost_once_an_rtt_and_the_window_pass() {
        let mut sb = sent(6);
        let mut r = Rack::default();
        // Segment 4 (sent at 4 ms) is delivered at 44 ms: RTT 40 ms.
        r.advance(44 * MS, false, 5, 4 * MS, 40 * MS);
        // At 44 ms with a 2 ms window: 0 and 1 are overdue (40 + 2 - (44 - tx) <= 0),
        // 2 has no time left either, 3 has 1 ms left; 4 and 5 were not sent before.
        let found = r.detect_loss(&mut sb, 44 * MS, 2 * MS);
        assert_eq!(found, RackLoss { lost: vec![0, 1, 2], wait_us: Some(MS) });
        // Without a window 3 is overdue too: nothing to wait for.
        assert_eq!(r.detect_loss(&mut sb, 44 * MS, 0).wait_us, None);
        assert_eq!(r.time_left(44 * MS, 3 * MS, 0), -(MS as i64));
    }

    #[test]
    fn the_reordering_window_opens_once_reordering_is_seen() {
        let r = Rack::default();
        let mut reo = Reordering::default();
        assert_eq!(r.reo_wnd(&reo, true, 0, 40 * MS, 50 * MS), 0, "in recovery, before any reordering");
        assert_eq!(r.reo_wnd(&reo, false, 3, 40 * MS, 50 * MS), 0, "at the duplicate-ACK threshold");
        assert_eq!(r.reo_wnd(&reo, false, 2, 40 * MS, 50 * MS), 10 * MS, "min RTT / 4");
        reo.on_sack_below(10, 5);
        assert_eq!(r.reo_wnd(&reo, true, 9, 40 * MS, 8 * MS), 8 * MS, "capped by SRTT");
    }

    #[test]
    fn reordering_grows_to_the_distance_seen_and_a_timeout_resets_it() {
        let mut reo = Reordering::default();
        reo.on_sack_below(7, 7);
        assert_eq!((reo.degree(), reo.seen()), (3, 0), "not below the highest SACK");
        reo.on_sack_below(7, 5);
        assert_eq!((reo.degree(), reo.seen()), (3, 1), "2 segments: within the degree");
        reo.on_sack_below(1_000, 0);
        assert_eq!((reo.degree(), reo.seen()), (MAX_REORDERING, 2));
        assert!(reo.beyond_initial());
        reo.on_timeout_in_disorder(2);
        assert_eq!(reo.degree(), MAX_REORDERING);
        reo.on_timeout_in_disorder(3);
        assert_eq!((reo.degree(), reo.seen()), (REORDERING, 2));
        reo.on_dupacks_beyond_holes(4);
        assert_eq!((reo.degree(), reo.seen()), (4, 3));
    }
}
