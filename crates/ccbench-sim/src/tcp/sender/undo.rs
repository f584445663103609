//! Undo of spurious reductions and F-RTO, as net/ipv4/tcp_input.c does them: the state
//! saved when a reduction starts (`tcp_init_undo`), DSACK accounting (`tcp_check_dsack`,
//! `tcp_dsack_seen`, `tcp_sacktag_one`), the timestamp test (`tcp_packet_delayed`), the
//! four undo paths (`tcp_try_undo_recovery`, `_dsack`, `_partial`, `_loss`) and the Loss
//! state's ACK processing with F-RTO (`tcp_process_loss`, RFC 5682 as Linux implements it).

use super::recovery::Rexmit;
use super::*;
use crate::cc::CaState;
use crate::tcp::scoreboard::{EVER_RETRANS, RETRANS, SACKED};
use crate::time::Time;

/// What the stack remembers to undo a reduction that proves spurious.
#[derive(Clone, Debug, Default)]
pub(super) struct UndoState {
    /// `undo_marker`: `snd_una` when the reduction began; None = nothing to undo.
    pub marker: Option<u64>,
    /// `undo_retrans`: retransmissions not yet proven spurious by a DSACK; -1 = none sent
    /// yet (0 means "may undo now").
    pub retrans: i32,
    /// `retrans_stamp`: TSval (ms) of the episode's first retransmission; 0 = none.
    pub retrans_stamp: u32,
    /// `prior_ssthresh`: ssthresh to restore; 0 = the reduction cannot be undone (ECN).
    pub prior_ssthresh: u32,
    /// `tp->frto`: this Loss episode may still be found spurious by F-RTO.
    pub frto: bool,
    /// `dsack_dups`: segments reported duplicate so far.
    pub dsack_dups: u64,
    /// `rx_opt.rcv_tsecr` of the ACK being processed.
    pub rcv_tsecr: u32,
    /// `max_window`: the largest window the peer advertised, in bytes.
    pub max_window: u64,
}

/// The TCP timestamp clock (ms) at `t`: `tcp_skb_timestamp_ts` of a departure time.
pub(super) fn ts_ms(t: Time) -> u32 {
    (t.ns() / 1_000_000) as u32
}

impl SenderStats {
    /// Every undone reduction (the four undo counters).
    pub fn undos(&self) -> u64 {
        self.full_undo + self.partial_undo + self.dsack_undo + self.loss_undo
    }
}

impl Sender {
    /// `tcp_init_undo`.
    pub(super) fn init_undo(&mut self) {
        self.undo.marker = Some(self.sb.snd_una);
        self.undo.retrans = self.sb.retrans_out as i32;
        // A loss probe's retransmission holds no R bit (`__tcp_retransmit_skb`) but may
        // still be DSACKed.
        if self.tlp.retransmission_outstanding() {
            self.undo.retrans += 1;
        }
        if self.undo.retrans == 0 {
            self.undo.retrans = -1;
        }
    }

    /// The bookkeeping of `tcp_retransmit_skb` for `n` segments sent again at `tx_time`
    /// (not for loss probes, which go through `__tcp_retransmit_skb`).
    pub(super) fn note_retransmit(&mut self, n: u32, tx_time: Time) {
        if self.undo.retrans_stamp == 0 {
            self.undo.retrans_stamp = ts_ms(tx_time);
        }
        self.undo.retrans = self.undo.retrans.max(0) + n as i32;
    }

    /// `tcp_any_retrans_done`.
    pub(super) fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0 || self.sb.head().is_some_and(|s| s.has(EVER_RETRANS))
    }

    /// `tcp_retrans_stamp_cleanup`.
    pub(super) fn retrans_stamp_cleanup(&mut self) {
        if !self.any_retrans_done() {
            self.undo.retrans_stamp = 0;
        }
    }

    /// `tcp_tsopt_ecr_before`: the ACK echoes a TSval older than that of a transmission
    /// at `tx_time` (the TSval is the departure time in ms, `tcp_skb_timestamp_ts`).
    pub(super) fn tsecr_before(&self, tx_time: Time) -> bool {
        let tsecr = self.undo.rcv_tsecr;
        tsecr != 0 && (tsecr.wrapping_sub(ts_ms(tx_time)) as i32) < 0
    }

    /// `tcp_packet_delayed`: the ACK echoes a timestamp older than the first
    /// retransmission, so the original was delivered (SACK peer: no retransmission at all
    /// also counts; without SACK the stamp is also cleared when Recovery is held at
    /// `high_seq`, so it proves nothing).
    fn packet_delayed(&self) -> bool {
        let stamp = self.undo.retrans_stamp;
        if stamp == 0 {
            return !self.is_reno();
        }
        let tsecr = self.undo.rcv_tsecr;
        tsecr != 0 && (tsecr.wrapping_sub(stamp) as i32) < 0
    }

    /// `tcp_may_undo`.
    fn may_undo(&self) -> bool {
        self.undo.marker.is_some() && (self.undo.retrans == 0 || self.packet_delayed())
    }

    /// `tcp_current_ssthresh`.
    pub(super) fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.w.ssthresh
        } else {
            self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2))
        }
    }

    /// `tcp_undo_cwnd_reduction`: the algorithm's `undo_cwnd`, ssthresh back up, and with
    /// `unmark_loss` every segment no longer considered lost.
    fn undo_cwnd_reduction(&mut self, now: Time, unmark_loss: bool) {
        if unmark_loss {
            self.sb.unmark_all_lost();
        }
        if self.undo.prior_ssthresh != 0 {
            let info = self.info(now);
            self.w.cwnd = self.cc.undo_cwnd(&info, &self.w);
            if self.undo.prior_ssthresh > self.w.ssthresh {
                self.w.ssthresh = self.undo.prior_ssthresh;
                self.ecn_queue_cwr = false; // tcp_ecn_withdraw_cwr
            }
        }
        self.undo.marker = None;
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
        if self.undo.marker.is_some() && self.undo.retrans == 0 {
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
        if self.undo.marker.is_none() || !self.packet_delayed() {
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

    /// `tcp_check_dsack`: is the first block a DSACK (below the cumulative ACK, or inside
    /// the second block)? Counts it (`tcp_dsack_seen`) and, for data already acknowledged,
    /// takes it off `undo_retrans`.
    pub(super) fn check_dsack(&mut self, ack: u64, blocks: &[(u64, u64)], flag: &mut u32) -> bool {
        let Some(&(start, end)) = blocks.first() else { return false };
        let below = start < ack;
        let inside_next = blocks.len() > 1 && end <= blocks[1].1 && start >= blocks[1].0;
        if !(below || inside_next) {
            return false;
        }
        // tcp_dsack_seen
        if start >= end {
            return false;
        }
        let segs = end - start;
        if segs * self.p.tcp.mss as u64 > self.undo.max_window.max(self.snd_wnd) {
            return false; // dubious: larger than any window
        }
        if self.tlp.is_dsack_of_probe(start, end) {
            *flag |= FLAG_DSACK_TLP;
        }
        self.undo.dsack_dups += segs;
        if self.undo.dsack_dups > self.stats.retransmits {
            return false; // nothing was retransmitted to be duplicated
        }
        *flag |= FLAG_DSACKING_ACK;
        self.stats.dsacks += 1;
        // A spurious retransmission is delivered (`sack_delivered`).
        self.delivered += segs;
        let prior_snd_una = self.sb.snd_una;
        if self.undo.retrans > 0 && end <= prior_snd_una && self.undo.marker.is_some_and(|m| end > m) {
            self.undo.retrans = (self.undo.retrans - segs as i32).max(0);
        }
        true
    }

    /// `tcp_sacktag_one` for a segment still queued that a DSACK block covers.
    pub(super) fn dsack_one(&mut self, now: Time, seq: u64, scan: &mut AckScan) -> u32 {
        let f = self.sb.get(seq).flags;
        if f & (RETRANS | EVER_RETRANS) != 0 {
            if self.undo.retrans > 0 && self.undo.marker.is_some_and(|m| seq + 1 > m) {
                self.undo.retrans -= 1;
            }
            if f & SACKED != 0 && seq < scan.reord {
                scan.reord = seq;
            }
        }
        if f & SACKED == 0 {
            self.sack_one(now, seq, scan)
        } else {
            0
        }
    }

    /// `tcp_process_loss`: an ACK in Loss. Undo if the RTO proves spurious; with F-RTO,
    /// send new data on the first ACK that advances `snd_una` and judge by the next one.
    pub(super) fn process_loss(&mut self, now: Time, flag: u32, num_dupack: u32) -> Rexmit {
        let recovered = self.sb.snd_una >= self.high_seq;
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_loss(now, false) {
            return Rexmit::None;
        }
        if self.undo.frto {
            // RFC 5682 3.1 step 3.b: never-retransmitted data (s)acked, so not all was lost.
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(now, true) {
                return Rexmit::None;
            }
            if self.snd_nxt() > self.high_seq {
                if flag & FLAG_DATA_SACKED != 0 || num_dupack > 0 {
                    self.undo.frto = false; // step 3.a: the loss was real
                }
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 && !recovered {
                self.high_seq = self.snd_nxt();
                // Step 2.b: send new data if the window allows, else recover as usual.
                if self.has_unsent() && self.wnd_end() > self.seg_start(self.snd_nxt()) {
                    return Rexmit::New;
                }
                self.undo.frto = false;
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
