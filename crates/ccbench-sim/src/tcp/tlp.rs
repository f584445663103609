//! The tail loss probe (RFC 8985 section 7) as net/ipv4/tcp_output.c and tcp_input.c do
//! it: when to probe (`tcp_schedule_loss_probe`), the episode a probe opens
//! (`tp->tlp_high_seq`, `tp->tlp_retrans`) and what its ACK shows
//! (`tcp_process_tlp_ack`). Sending the probe (`tcp_send_loss_probe`) is the sender's.

use super::xmit_timer::TIMEOUT_MIN;
use crate::time::Dur;

/// The probe episode under way, if any.
#[derive(Clone, Debug, Default)]
pub struct Tlp {
    /// `tlp_high_seq`: `snd_nxt` when the probe left; None: no probe outstanding.
    high_seq: Option<u64>,
    /// `tlp_retrans`: the probe resent the last segment (rather than new data).
    retrans: bool,
    /// The google/bbr tree's `tlp_orig_data_app_limited`: that segment's original
    /// transmission was app-limited.
    orig_data_app_limited: bool,
}

/// What an ACK at or beyond the probe shows (`tcp_process_tlp_ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlpAck {
    /// No probe, or not yet acknowledged.
    NotYet,
    /// The episode ends without a loss to answer.
    Done,
    /// The probe repaired a tail loss: a CWR-style reduction follows, which ends the
    /// episode (`tcp_init_cwnd_reduction` clears `tlp_high_seq`).
    Repaired,
    /// An ACK of exactly the probe's retransmission that moved something: it cannot tell
    /// the original from the probe (the google/bbr tree's `is_acking_tlp_retrans_seq`).
    Ambiguous,
}

impl Tlp {
    /// Segment numbers moved.
    pub fn remap(&mut self, r: &super::write::Remap) {
        self.high_seq = self.high_seq.map(|s| r.map(s));
    }

    /// `tcp_schedule_loss_probe`'s timeout (PTO): twice SRTT plus `TCP_TIMEOUT_MIN`, or
    /// plus `rto_min` with one segment out (for the peer's delayed ACK); the initial RTO
    /// before any RTT sample; and never later than the RTO would fire, `rto_left_us`.
    pub fn timeout(srtt_us: u64, packets_out: u32, rto_min: Dur, rto_init: Dur, rto_left_us: i64) -> Dur {
        let mut timeout = if srtt_us > 0 {
            let extra = if packets_out == 1 { rto_min } else { TIMEOUT_MIN };
            Dur::from_us(2 * srtt_us) + extra
        } else {
            rto_init
        };
        if rto_left_us > 0 {
            timeout = timeout.min(Dur::from_us(rto_left_us as u64));
        }
        timeout
    }

    /// A probe is outstanding (`tp->tlp_high_seq != 0`).
    pub fn is_outstanding(&self) -> bool {
        self.high_seq.is_some()
    }

    /// A probe that resent a segment is outstanding: `tcp_init_undo` counts it as a
    /// retransmission (it holds no R bit, but a DSACK may still report it).
    pub fn retransmission_outstanding(&self) -> bool {
        self.high_seq.is_some() && self.retrans
    }

    /// A DSACK of `start..end` reports the probe itself as a duplicate (`FLAG_DSACK_TLP`).
    pub fn is_dsack_of_probe(&self, start: u64, end: u64) -> bool {
        end - start == 1 && self.high_seq == Some(end)
    }

    /// The google/bbr tree's `tlp_orig_data_app_limited`.
    pub fn orig_data_app_limited(&self) -> bool {
        self.orig_data_app_limited
    }

    /// The probe is about to resend the last segment, whose original transmission was
    /// `orig_app_limited`.
    pub fn resending(&mut self, orig_app_limited: bool) {
        self.orig_data_app_limited = orig_app_limited;
    }

    /// Whether that resend left (`tlp_retrans`).
    pub fn resent(&mut self, sent: bool) {
        self.retrans = sent;
    }

    /// A probe left, `snd_nxt` after it.
    pub fn sent(&mut self, snd_nxt: u64) {
        self.high_seq = Some(snd_nxt);
    }

    /// End the episode (a cwnd reduction or an RTO starts).
    pub fn end(&mut self) {
        self.high_seq = None;
    }

    /// `tcp_process_tlp_ack` for an ACK of `ack`: a DSACK of the probe itself
    /// (`dsack_of_probe`) or an ACK that moved nothing (`progress`: `snd_una` advanced,
    /// new data or window, or a SACK) ends the episode; an ACK beyond the probe shows it
    /// repaired a loss.
    pub fn on_ack(&mut self, ack: u64, dsack_of_probe: bool, progress: bool) -> TlpAck {
        let Some(high) = self.high_seq else { return TlpAck::NotYet };
        if ack < high {
            return TlpAck::NotYet;
        }
        if !self.retrans || dsack_of_probe {
            self.high_seq = None;
            TlpAck::Done
        } else if ack > high {
            TlpAck::Repaired
        } else if !progress {
            self.high_seq = None;
            TlpAck::Done
        } else {
            TlpAck::Ambiguous
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTO_MIN: Dur = Dur::from_ms(200);
    const RTO_INIT: Dur = Dur::from_secs(1);

    #[test]
    fn the_probe_waits_two_srtt_plus_slack_and_never_past_the_rto() {
        // SRTT 100 ms, several segments out: 200 + 2 ms.
        assert_eq!(Tlp::timeout(100_000, 5, RTO_MIN, RTO_INIT, 300_000), Dur::from_ms(202));
        // One segment out: 200 + 200 ms, cut to the 300 ms the RTO has left.
        assert_eq!(Tlp::timeout(100_000, 1, RTO_MIN, RTO_INIT, 300_000), Dur::from_ms(300));
        // The RTO already overdue sets no bound; no SRTT yet: the initial RTO.
        assert_eq!(Tlp::timeout(100_000, 1, RTO_MIN, RTO_INIT, -5), Dur::from_ms(400));
        assert_eq!(Tlp::timeout(0, 3, RTO_MIN, RTO_INIT, 0), RTO_INIT);
    }

    #[test]
    fn an_ack_beyond_a_resent_probe_shows_a_repaired_loss() {
        let mut t = Tlp::default();
        t.resending(true);
        t.resent(true);
        t.sent(10);
        assert!(t.retransmission_outstanding() && t.orig_data_app_limited());
        assert_eq!(t.on_ack(9, false, true), TlpAck::NotYet);
        assert_eq!(t.on_ack(10, false, true), TlpAck::Ambiguous, "the original or the probe");
        assert_eq!(t.on_ack(11, false, true), TlpAck::Repaired);
        assert!(t.is_outstanding(), "the reduction ends the episode");
        t.end();
        assert_eq!(t.on_ack(11, false, true), TlpAck::NotYet);
    }

    #[test]
    fn a_dsack_of_the_probe_or_a_duplicate_ack_ends_the_episode_without_a_reduction() {
        let mut t = Tlp::default();
        t.resent(true);
        t.sent(10);
        assert!(t.is_dsack_of_probe(9, 10) && !t.is_dsack_of_probe(8, 10));
        assert_eq!(t.on_ack(12, true, true), TlpAck::Done);
        assert!(!t.is_outstanding());
        t.sent(20);
        assert_eq!(t.on_ack(20, false, false), TlpAck::Done);
        // A probe of new data repairs nothing by retransmission.
        let mut t = Tlp::default();
        t.sent(5);
        assert!(!t.retransmission_outstanding());
        assert_eq!(t.on_ack(7, false, true), TlpAck::Done);
    }
}
