//! Loss recovery with a peer that does not SACK (`tcp_is_reno`): every duplicate ACK
//! stands for one segment that left the network, counted in `sacked_out` without
//! knowing which (tcp_input.c, `tcp_add_reno_sack` and its neighbours). The head is
//! marked lost after `reordering` duplicate ACKs, and again at every partial ACK in
//! Recovery (NewReno, RFC 6582); RACK and tail loss probes need SACK and stay off.

use super::Sender;
use crate::cc::CaState;
use crate::tcp::scoreboard::LOST;
use crate::time::Time;

impl Sender {
    /// `tcp_add_reno_sack`: `num_dupack` more segments left the network.
    pub(super) fn add_reno_sack(&mut self, num_dupack: u32, ece: bool) {
        if num_dupack == 0 {
            return;
        }
        let prior_sacked = self.sb.sacked_out;
        self.sb.sacked_out += num_dupack;
        self.check_reno_reordering(0);
        // tcp_count_delivered
        let delivered = self.sb.sacked_out.saturating_sub(prior_sacked) as u64;
        self.delivered += delivered;
        if ece {
            self.delivered_ce += delivered;
        }
    }

    /// `tcp_remove_reno_sacks`: a cumulative ACK of `acked` segments; one filled the
    /// hole, the others were counted by duplicate ACKs already.
    pub(super) fn remove_reno_sacks(&mut self, acked: u32) {
        if acked > 0 {
            self.delivered += acked.saturating_sub(self.sb.sacked_out).max(1) as u64;
            self.sb.sacked_out = self.sb.sacked_out.saturating_sub(acked - 1);
        }
        self.check_reno_reordering(acked);
    }

    /// `tcp_reset_reno_sack`.
    pub(super) fn reset_reno_sack(&mut self) {
        self.sb.sacked_out = 0;
    }

    /// `tcp_check_reno_reordering`: more duplicate ACKs than segments beyond the holes
    /// means the path reordered; the degree becomes the window's size.
    fn check_reno_reordering(&mut self, addend: u32) {
        if !self.limit_reno_sacked() {
            return;
        }
        self.reordering.on_dupacks_beyond_holes(self.sb.packets_out() + addend);
    }

    /// `tcp_limit_reno_sacked`: at least one hole stays (or every lost segment).
    pub(super) fn limit_reno_sacked(&mut self) -> bool {
        let packets_out = self.sb.packets_out();
        let holes = self.sb.lost_out.max(1).min(packets_out);
        if self.sb.sacked_out + holes > packets_out {
            self.sb.sacked_out = packets_out - holes;
            return true;
        }
        false
    }

    /// `tcp_newreno_mark_lost`: the head is lost after `reordering` duplicate ACKs, or
    /// at a partial ACK in Recovery.
    pub(super) fn newreno_mark_lost(&mut self, now: Time, snd_una_advanced: bool) {
        let due = (self.ca_state < CaState::Recovery && self.sb.sacked_out >= self.reordering.degree())
            || (self.ca_state == CaState::Recovery && snd_una_advanced);
        if !due || self.sb.is_empty() {
            return;
        }
        let head = self.sb.snd_una;
        if !self.sb.get(head).has(LOST) {
            self.mark_lost(now, head);
        }
    }
}
