//! Our FIN in the sender (`tcp_send_fin`, net/ipv4/tcp_output.c): queued after the data
//! (`tcp/write.rs` places it), sent by `tcp_write_xmit` like data, resent by the RTO and
//! the loss probe like data; and the retransmission of a FIN that has a segment of its
//! own, which rides along with a short segment before it (`tcp_retrans_try_collapse`).
//! The socket states it moves are in `tcp/close.rs`.

use super::*;
use crate::tcp::chrono::Chrono;
use crate::tcp::io::Io;
use crate::tcp::write::NAGLE_OFF;

impl Sender {
    /// `tcp_send_fin`: queue the FIN after what was written and push it with Nagle off
    /// (`__tcp_push_pending_frames(.., TCP_NAGLE_OFF)`); a FIN that starts the write
    /// queue starts the busy chronograph (`tcp_add_write_queue_tail`). Once only.
    pub fn send_fin(&mut self, now: Time, q: &mut impl Io) {
        if self.write.fin_seg().is_some() {
            return;
        }
        if !self.started {
            self.started = true;
            self.pacing.start(now);
        }
        if !self.has_unsent() {
            self.chronos.start(now, Chrono::Busy);
        }
        self.write.queue_fin(self.snd_nxt());
        self.push_frames(now, NAGLE_OFF, q);
    }

    /// The segment that carries our FIN, once queued.
    pub fn fin_seg(&self) -> Option<u64> {
        self.write.fin_seg()
    }

    /// Our FIN has left at least once.
    pub fn fin_sent(&self) -> bool {
        self.write.fin_seg().is_some_and(|f| self.snd_nxt() > f)
    }

    /// The peer acknowledged our FIN.
    pub fn fin_acked(&self) -> bool {
        self.write.fin_seg().is_some_and(|f| self.sb.snd_una > f)
    }

    /// The end of a retransmission from `first` of at most `run` segments: a FIN of its
    /// own joins the skb before it only while that is shorter than one MSS
    /// (`__tcp_retransmit_skb` -> `tcp_retrans_try_collapse`, whose room is one MSS).
    pub(super) fn retrans_fin_cut(&self, first: u64, run: u64) -> u64 {
        let Some(fin) = self.write.fin_seg() else { return run };
        if fin <= first || fin >= first + run || self.write.seg_len(fin) > 0 {
            return run;
        }
        let before = self.write.seg_start(fin) - self.write.seg_start(first);
        if before < self.write.mss() as u64 {
            run
        } else {
            fin - first
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::scripted::{PeerAck, ScriptedParams, ScriptedSender};
    use crate::time::Time;

    const MS: u64 = 1_000_000;

    fn harness(snd_wnd: u64) -> ScriptedSender {
        ScriptedSender::new(&ScriptedParams { snd_wnd, ..Default::default() }).unwrap()
    }

    fn ack(h: &mut ScriptedSender, at_ms: u64, seg: u64, rwnd: u64) {
        h.receive(Time(at_ms * MS), &PeerAck { ack: seg, rwnd, ..Default::default() });
    }

    /// (stream offset, bytes, FIN, retransmission) of each skb sent since the last call.
    fn sent(h: &mut ScriptedSender) -> Vec<(u64, u64, bool, bool)> {
        h.take_sent().iter().map(|r| (r.start, r.bytes, r.fin, r.retrans)).collect()
    }

    #[test]
    fn a_fin_behind_sent_data_takes_a_segment_of_its_own_and_its_ack_acks_it() {
        let mut h = harness(20_000);
        h.write(Time(200 * MS), 3_000, false);
        assert_eq!(sent(&mut h), vec![(0, 2_000, false, false), (2_000, 1_000, false, false)]);
        h.shutdown(Time(200 * MS)); // `tcp_send_fin` with the data sent
        assert_eq!(sent(&mut h), vec![(3_000, 0, true, false)]);
        assert_eq!(h.sender.fin_seg(), Some(3));
        assert!(h.sender.fin_sent() && !h.sender.fin_acked());
        ack(&mut h, 300, 3, 20_000);
        assert!(!h.sender.fin_acked(), "the data is acknowledged, the FIN not");
        ack(&mut h, 310, 4, 20_000);
        assert!(h.sender.fin_acked());
    }

    #[test]
    fn a_fin_rides_on_data_the_peer_window_holds_back_and_needs_a_byte_of_window() {
        let mut h = harness(2_000);
        h.write(Time(200 * MS), 3_000, false);
        assert_eq!(sent(&mut h).iter().map(|s| s.1).sum::<u64>(), 2_000);
        h.close(Time(200 * MS), false);
        assert_eq!(sent(&mut h), vec![]);
        assert_eq!(h.sender.fin_seg(), Some(2), "on the unsent tail");
        // A window that ends with the data leaves no room for the FIN on it.
        ack(&mut h, 300, 1, 2_000);
        assert_eq!(sent(&mut h), vec![]);
        ack(&mut h, 310, 2, 2_000);
        assert_eq!(sent(&mut h), vec![(2_000, 1_000, true, false)]);
    }

    #[test]
    fn a_lone_fin_goes_past_a_full_cwnd() {
        let mut h = harness(1 << 20);
        h.write(Time(200 * MS), 10_000, false);
        assert_eq!(h.take_sent().iter().map(|r| r.segs).sum::<u32>(), 10);
        h.close(Time(200 * MS), false);
        assert_eq!(sent(&mut h), vec![(10_000, 0, true, false)], "tcp_cwnd_test's final FIN");
    }

    #[test]
    fn the_rto_and_the_loss_probe_resend_the_fin() {
        let mut h = harness(20_000);
        h.write(Time(200 * MS), 1_000, false);
        ack(&mut h, 300, 1, 20_000);
        h.take_sent();
        h.close(Time(400 * MS), false);
        assert_eq!(sent(&mut h), vec![(1_000, 0, true, false)]);
        // The loss probe first (2 srtt), then the RTO, each with the FIN alone.
        h.advance(Time(3_000 * MS));
        let again = sent(&mut h);
        assert!(again.len() >= 2 && again.iter().all(|&s| s == (1_000, 0, true, true)), "{again:?}");
        ack(&mut h, 3_100, 2, 20_000);
        assert!(h.sender.fin_acked());
        h.advance(Time(10_000 * MS));
        assert_eq!(sent(&mut h), vec![], "nothing left to resend");
    }

    #[test]
    fn a_lone_fin_is_resent_with_the_short_segment_before_it_but_not_a_full_one() {
        let mut h = harness(20_000);
        h.write(Time(200 * MS), 1_500, false);
        h.close(Time(200 * MS), false);
        assert_eq!(sent(&mut h), vec![(0, 1_500, false, false), (1_500, 0, true, false)]);
        // The loss probe resends the FIN; the RTO marks all lost and resends the head;
        // the ACK of it lets the short segment and the FIN go as one skb.
        h.advance(Time(1_000 * MS));
        assert_eq!(sent(&mut h), vec![(1_500, 0, true, true), (0, 1_000, false, true)]);
        ack(&mut h, 1_010, 1, 20_000);
        assert_eq!(sent(&mut h), vec![(1_000, 500, true, true)]);
        assert_eq!(h.sender.retrans_fin_cut(0, 3), 2, "a full segment before the FIN keeps it apart");
    }
}
