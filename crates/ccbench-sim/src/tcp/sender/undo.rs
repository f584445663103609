//! Undo of spurious reductions and F-RTO, as net/ipv4/tcp_input.c does them, on the state
//! `tcp/undo.rs` keeps: the four undo paths (`tcp_try_undo_recovery`, `_dsack`,
//! `_partial`, `_loss`), the undo itself (`tcp_undo_cwnd_reduction`) and the Loss state's
//! ACK processing with F-RTO (`tcp_process_loss`, RFC 5682 as Linux implements it).

use super::*;
use crate::cc::CaState;
use crate::time::Time;

impl Sender {
    /// `tcp_init_undo`.
    pub(super) fn init_undo(&mut self) {
        self.undo.init(self.sb.snd_una, self.sb.retrans_out, self.tlp.retransmission_outstanding());
    }

    /// `tcp_packet_delayed`.
    fn packet_delayed(&self) -> bool {
        self.undo.packet_delayed(&self.ts, self.is_reno())
    }

    /// `tcp_may_undo`.
    fn may_undo(&self) -> bool {
        self.undo.may_undo(&self.ts, self.is_reno())
    }

    /// `tcp_undo_cwnd_reduction`: the algorithm's `undo_cwnd`, ssthresh back up, and with
    /// `unmark_loss` every segment no longer considered lost.
    fn undo_cwnd_reduction(&mut self, now: Time, unmark_loss: bool) {
        if unmark_loss {
            self.sb.unmark_all_lost();
        }
        let prior_ssthresh = self.undo.prior_ssthresh();
        if prior_ssthresh != 0 {
            let info = self.info(now);
            self.w.cwnd = self.cc.undo_cwnd(&info, &self.w);
            if prior_ssthresh > self.w.ssthresh {
                self.w.ssthresh = prior_ssthresh;
                self.ecn_queue_cwr = false; // tcp_ecn_withdraw_cwr
            }
        }
        self.undo.close();
        self.rack.mark_advanced();
    }

    /// `tcp_try_undo_recovery`, on leaving Recovery or Loss with everything acknowledged.
    pub(super) fn try_undo_recovery(&mut self, now: Time) -> bool {
        if self.may_undo() {
            self.undo_cwnd_reduction(now, false);
            if self.ca_state == CaState::Loss {
                self.stats.loss_undo += 1;
            } else {
                self.stats.full_undo += 1;
            }
        }
        if self.non_sack_preventing_reopen() {
            return true;
        }
        self.set_ca_state(now, CaState::Open);
        false
    }

    /// `tcp_is_non_sack_preventing_reopen`: without SACK, hold the state until data
    /// above `high_seq` is acknowledged, so that duplicate ACKs of the retransmissions
    /// start no false fast retransmit (RFC 6582).
    fn non_sack_preventing_reopen(&mut self) -> bool {
        if self.is_reno() && self.sb.snd_una == self.high_seq {
            self.retrans_stamp_cleanup();
            return true;
        }
        false
    }

    /// `tcp_try_undo_dsack`: every retransmission was reported duplicate.
    pub(super) fn try_undo_dsack(&mut self, now: Time) -> bool {
        if self.undo.all_dsacked() {
            self.undo_cwnd_reduction(now, false);
            self.stats.dsack_undo += 1;
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss`: an RTO found spurious by timestamps, DSACKs or F-RTO.
    pub(super) fn try_undo_loss(&mut self, now: Time, frto_undo: bool) -> bool {
        if !(frto_undo || self.may_undo()) {
            return false;
        }
        self.undo_cwnd_reduction(now, true);
        self.stats.loss_undo += 1;
        if frto_undo {
            self.stats.spurious_rtos += 1;
        }
        self.rto_retransmits = 0;
        if self.non_sack_preventing_reopen() {
            return true;
        }
        // Without SACK only F-RTO's proof reopens; a timestamp undo leaves Loss to end
        // when high_seq is acknowledged.
        if frto_undo || !self.is_reno() {
            self.set_ca_state(now, CaState::Open);
        }
        true
    }

    /// `tcp_try_undo_partial`: a partial ACK in Recovery for data sent before the first
    /// retransmission. Returns true to stop processing the ACK (retransmissions still out).
    pub(super) fn try_undo_partial(&mut self, now: Time, prior_snd_una: u64) -> bool {
        if !self.undo.is_open() || !self.packet_delayed() {
            return false;
        }
        // The hole was filled by the delayed original, not the retransmission.
        self.check_sack_reordering(prior_snd_una);
        if self.sb.retrans_out > 0 {
            return true;
        }
        self.retrans_stamp_cleanup();
        self.undo_cwnd_reduction(now, true);
        self.stats.partial_undo += 1;
        self.try_keep_open(now);
        false
    }

    /// `tcp_process_loss`: an ACK in Loss. Undo if the RTO proves spurious; with F-RTO,
    /// send new data on the first ACK that advances `snd_una` and judge by the next one.
    pub(super) fn process_loss(&mut self, now: Time, flag: u32, num_dupack: u32) -> Rexmit {
        let recovered = self.sb.snd_una >= self.high_seq;
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_loss(now, false) {
            return Rexmit::None;
        }
        if self.undo.frto() {
            // RFC 5682 3.1 step 3.b: never-retransmitted data (s)acked, so not all was lost.
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(now, true) {
                return Rexmit::None;
            }
            if self.snd_nxt() > self.high_seq {
                if flag & FLAG_DATA_SACKED != 0 || num_dupack > 0 {
                    self.undo.set_frto(false); // step 3.a: the loss was real
                }
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 && !recovered {
                self.high_seq = self.snd_nxt();
                // Step 2.b: send new data if the window allows, else recover as usual.
                if self.has_unsent() && self.wnd_end() > self.write.seg_start(self.snd_nxt()) {
                    return Rexmit::New;
                }
                self.undo.set_frto(false);
            }
        }
        if recovered {
            self.try_undo_recovery(now);
            return Rexmit::None;
        }
        if self.is_reno() {
            // A duplicate ACK after F-RTO's new data means that data arrived: lower the
            // count in flight to clock out (re)transmissions.
            if self.snd_nxt() > self.high_seq && num_dupack > 0 {
                self.add_reno_sack(num_dupack, flag & FLAG_ECE != 0);
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 {
                self.reset_reno_sack();
            }
        }
        Rexmit::Lost
    }
}
