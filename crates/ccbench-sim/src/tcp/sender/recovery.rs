//! Loss detection and recovery: the CA state machine of `tcp_fastretrans_alert`, RACK
//! (tcp_recovery.c), PRR (`tcp_cwnd_reduction`), RTO (`tcp_retransmit_timer`,
//! `tcp_enter_loss`) and the tail loss probe (`tcp_schedule_loss_probe`).

use super::*;
use crate::cc::{CaEvent, CaState, INFINITE_SSTHRESH};
use crate::tcp::io::Io;
use crate::tcp::scoreboard::{RETRANS, SACKED};
use crate::tcp::tlp::{Tlp, TlpAck};
use crate::tcp::write::NAGLE_OFF;
use crate::tcp::xmit_timer::{XmitTimer, TIMEOUT_MIN};
use crate::time::{Dur, Time};

/// `TCP_RESOURCE_PROBE_INTERVAL`: the retry of an RTO retransmission the local qdisc
/// refused (`tcp_retransmit_timer`).
const TCP_RESOURCE_PROBE_INTERVAL: Dur = Dur::from_ms(500);

/// What `tcp_fastretrans_alert` asks the ACK path to send (`REXMIT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rexmit {
    None,
    /// Lost segments (`REXMIT_LOST`).
    Lost,
    /// New data, F-RTO's probe of a spurious timeout (`REXMIT_NEW`).
    New,
}

impl Sender {
    /// `tcp_set_ca_state`: tell the algorithm, then switch.
    pub(super) fn set_ca_state(&mut self, now: Time, state: CaState) {
        let info = self.info(now);
        self.cc.set_state(&info, &mut self.w, state);
        self.ca_state = state;
    }

    /// Arm the retransmit timer `when` from now on the jiffy clock, pushed out by any
    /// pending pacing delay (`tcp_reset_xmit_timer`).
    pub(super) fn reset_xmit_timer(&mut self, now: Time, kind: XmitTimer, when: Dur, q: &mut impl Io) {
        let pacing_delay = self.pacing.delay(now);
        self.xmit.reset(now, kind, when, pacing_delay, q);
    }

    /// Time left until the head segment's RTO would expire (`tcp_rto_delta_us`).
    fn rto_delta(&self, now: Time) -> i64 {
        let head = self.sb.head().map_or(now, |s| s.tx_time);
        (head.us() + self.rtt.rto.us()) as i64 - now.us() as i64
    }

    /// `tcp_rearm_rto`.
    pub(super) fn rearm_rto(&mut self, now: Time, q: &mut impl Io) {
        if self.sb.packets_out() == 0 {
            self.xmit.cancel();
            return;
        }
        let mut rto = self.rtt.rto;
        if self.xmit.is_pending(XmitTimer::ReoTimeout) || self.xmit.is_pending(XmitTimer::LossProbe) {
            rto = Dur::from_us(self.rto_delta(now).max(1) as u64);
        }
        self.xmit.cancel();
        self.reset_xmit_timer(now, XmitTimer::Rto, rto, q);
    }

    /// `tcp_set_xmit_timer`: a loss probe if one may be scheduled, else the RTO.
    pub(super) fn set_xmit_timer(&mut self, now: Time, q: &mut impl Io) {
        if !self.schedule_loss_probe(now, true, q) {
            self.rearm_rto(now, q);
        }
    }

    /// `tcp_schedule_loss_probe` (`tcp_early_retrans` = 3).
    pub(super) fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool, q: &mut impl Io) -> bool {
        if !self.p.tcp.tlp
            || !self.p.tcp.sack
            || self.sb.packets_out() == 0
            || !matches!(self.ca_state, CaState::Open | CaState::Cwr)
        {
            return false;
        }
        let rto_left = if advancing_rto { self.rtt.rto.us() as i64 } else { self.rto_delta(now) };
        let (rto_min, rto_init) = (Dur(self.p.tcp.rto_min_ns), Dur(self.p.tcp.rto_init_ns));
        let timeout = Tlp::timeout(self.rtt.srtt_us(), self.sb.packets_out(), rto_min, rto_init, rto_left);
        self.xmit.cancel();
        self.reset_xmit_timer(now, XmitTimer::LossProbe, timeout, q);
        true
    }

    /// `tcp_send_loss_probe`: new data if the window allows, else the last segment again.
    pub(super) fn send_loss_probe(&mut self, now: Time, q: &mut impl Io) {
        let mut sent = false;
        if self.has_unsent() && self.rwnd_allows(self.snd_nxt()) {
            let before = self.sb.packets_out();
            self.write_xmit(now, 2, NAGLE_OFF, q);
            sent = self.sb.packets_out() > before;
        } else if !self.tlp.is_outstanding() && self.sb.packets_out() > 0 {
            let last = self.snd_nxt() - 1;
            if self.sb.get(last).flags & (SACKED | RETRANS) == 0 {
                self.tlp.resending(self.sb.get(last).tx.app_limited);
                sent = self.retransmit_tail_probe(now, last, q);
                self.tlp.resent(sent);
            }
        }
        if sent {
            self.tlp.sent(self.snd_nxt());
            self.stats.tlp_count += 1;
            self.xmit.cancel();
        }
        self.rearm_rto(now, q);
    }

    /// `tcp_process_tlp_ack`: did the probe repair a loss? Returns whether the ACK
    /// matches the probe's retransmission ambiguously (google/bbr tree:
    /// `rs->is_acking_tlp_retrans_seq`).
    pub(super) fn process_tlp_ack(&mut self, now: Time, ack: u64, flag: u32) -> bool {
        let progress = flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DATA_SACKED) != 0;
        match self.tlp.on_ack(ack, flag & FLAG_DSACK_TLP != 0, progress) {
            TlpAck::NotYet | TlpAck::Done => false,
            TlpAck::Ambiguous => true,
            TlpAck::Repaired => {
                // Tell the algorithm (google/bbr tree: CA_EVENT_TLP_RECOVERY), then a
                // CWR-style reduction.
                let info = self.info(now);
                self.cc.cwnd_event(&info, &mut self.w, CaEvent::TlpRecovery);
                self.init_cwnd_reduction(now);
                self.set_ca_state(now, CaState::Cwr);
                self.end_cwnd_reduction(now);
                self.try_keep_open(now);
                false
            }
        }
    }

    /// `tcp_init_cwnd_reduction`.
    pub(super) fn init_cwnd_reduction(&mut self, now: Time) {
        self.ecn_queue_cwr = self.p.flow.ecn != crate::net::Ecn::Off;
        self.high_seq = self.snd_nxt();
        self.tlp.end();
        self.w.cwnd_cnt = 0;
        self.prr.start(self.w.cwnd);
        let info = self.info(now);
        self.w.ssthresh = self.cc.ssthresh(&info, &self.w);
    }

    /// `tcp_end_cwnd_reduction`: cwnd = ssthresh, unless the algorithm owns cwnd or the
    /// reduction was undone.
    pub(super) fn end_cwnd_reduction(&mut self, now: Time) {
        let undoable = self.ca_state == CaState::Cwr || self.undo.is_open();
        if !self.cc.owns_cwnd() && self.w.ssthresh < INFINITE_SSTHRESH && undoable {
            self.w.cwnd = self.w.ssthresh;
        }
        let info = self.info(now);
        self.cc.cwnd_event(&info, &mut self.w, CaEvent::CompleteCwr);
    }

    /// `tcp_try_keep_open`: Disorder while anything is SACKed, lost or retransmitted.
    pub(super) fn try_keep_open(&mut self, now: Time) {
        let left_out = self.sb.sacked_out + self.sb.lost_out > 0 || self.any_retrans_done();
        let state = if left_out { CaState::Disorder } else { CaState::Open };
        if self.ca_state != state {
            self.set_ca_state(now, state);
            self.high_seq = self.snd_nxt();
        }
    }

    /// `tcp_try_to_open`: an ECN echo starts a CWR reduction (`tcp_enter_cwr`).
    fn try_to_open(&mut self, now: Time, flag: u32) {
        self.retrans_stamp_cleanup();
        if flag & FLAG_ECE != 0 {
            self.enter_cwr(now);
        }
        if self.ca_state != CaState::Cwr {
            self.try_keep_open(now);
        }
    }

    /// `tcp_enter_cwr`: a CWR reduction, unless one is under way (an ECN echo, or a
    /// packet the local qdisc refused).
    pub(super) fn enter_cwr(&mut self, now: Time) {
        self.undo.set_prior_ssthresh(0);
        if self.ca_state < CaState::Cwr {
            self.undo.close();
            self.init_cwnd_reduction(now);
            self.set_ca_state(now, CaState::Cwr);
        }
    }

    /// `tcp_enter_recovery`: save what an undo restores, then reduce (unless already).
    pub(super) fn enter_recovery(&mut self, now: Time, ece: bool) {
        self.retrans_stamp_cleanup();
        self.undo.set_prior_ssthresh(0);
        self.init_undo();
        if !matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            if !ece {
                self.undo.set_prior_ssthresh(self.current_ssthresh());
            }
            self.init_cwnd_reduction(now);
        }
        self.set_ca_state(now, CaState::Recovery);
    }

    /// `tcp_fastretrans_alert` (RACK-based, SACK peer). Returns what to send now.
    pub(super) fn fastretrans_alert(
        &mut self,
        now: Time,
        prior_snd_una: u64,
        num_dupack: u32,
        flag: &mut u32,
        q: &mut impl Io,
    ) -> Rexmit {
        let f = *flag;
        let ece = f & FLAG_ECE != 0;
        if ece {
            self.undo.set_prior_ssthresh(0);
        }
        // D. Exit Recovery or CWR once everything sent before it is acknowledged.
        if self.ca_state == CaState::Open {
            self.undo.clear_stamp();
        } else if self.sb.snd_una >= self.high_seq {
            match self.ca_state {
                CaState::Cwr if self.sb.snd_una != self.high_seq => {
                    self.end_cwnd_reduction(now);
                    self.set_ca_state(now, CaState::Open);
                }
                CaState::Recovery => {
                    if self.is_reno() {
                        self.reset_reno_sack();
                    }
                    if self.try_undo_recovery(now) {
                        return Rexmit::None;
                    }
                    self.end_cwnd_reduction(now);
                }
                _ => {}
            }
        }
        // E. Process the state.
        let mut rexmit = Rexmit::None;
        match self.ca_state {
            CaState::Recovery => {
                if f & FLAG_SND_UNA_ADVANCED == 0 {
                    if self.is_reno() {
                        self.add_reno_sack(num_dupack, ece);
                    }
                } else if self.try_undo_partial(now, prior_snd_una) {
                    return Rexmit::None;
                }
                if self.try_undo_dsack(now) {
                    self.try_to_open(now, f);
                }
                self.identify_packet_loss(now, flag, q);
                if self.ca_state != CaState::Recovery {
                    if self.sb.lost_out == 0 {
                        return Rexmit::None;
                    }
                    // The undo reverted Recovery, but loss is evident: a new episode.
                    self.enter_recovery(now, ece);
                }
                return Rexmit::Lost;
            }
            CaState::Loss => {
                rexmit = self.process_loss(now, f, num_dupack);
                self.identify_packet_loss(now, flag, q);
                if !(self.ca_state == CaState::Open || *flag & FLAG_LOST_RETRANS != 0) {
                    return rexmit;
                }
            }
            _ => {
                if self.is_reno() {
                    if f & FLAG_SND_UNA_ADVANCED != 0 {
                        self.reset_reno_sack();
                    }
                    self.add_reno_sack(num_dupack, ece);
                }
            }
        }
        if self.ca_state <= CaState::Disorder {
            self.try_undo_dsack(now);
        }
        self.identify_packet_loss(now, flag, q);
        if self.sb.lost_out == 0 {
            // tcp_time_to_recover (RACK): no loss proven.
            self.try_to_open(now, f);
            return rexmit;
        }
        self.enter_recovery(now, ece);
        Rexmit::Lost
    }

    /// `tcp_xmit_recovery`: after F-RTO's first ACK new data, else (or if none could go)
    /// the lost segments.
    pub(super) fn xmit_recovery(&mut self, now: Time, rexmit: Rexmit, q: &mut impl Io) {
        match rexmit {
            Rexmit::None => return,
            Rexmit::New => {
                self.write_xmit(now, 0, NAGLE_OFF, q);
                if self.snd_nxt() > self.high_seq {
                    return;
                }
                self.undo.set_frto(false);
            }
            Rexmit::Lost => {}
        }
        self.xmit_retransmit_queue(now, q);
    }

    /// `tcp_identify_packet_loss`: `tcp_newreno_mark_lost` without SACK, else
    /// `tcp_rack_mark_lost`.
    fn identify_packet_loss(&mut self, now: Time, flag: &mut u32, q: &mut impl Io) {
        if self.is_reno() {
            self.newreno_mark_lost(now, *flag & FLAG_SND_UNA_ADVANCED != 0);
            return;
        }
        if self.sb.is_empty() || !self.rack.take_advanced() {
            return;
        }
        let prior_retrans = self.sb.retrans_out;
        if let Some(remaining_us) = self.rack_detect_loss(now) {
            let when = Dur::from_us(remaining_us) + TIMEOUT_MIN;
            self.xmit.cancel();
            self.reset_xmit_timer(now, XmitTimer::ReoTimeout, when, q);
            *flag &= !FLAG_SET_XMIT_TIMER;
        }
        if prior_retrans > self.sb.retrans_out {
            *flag |= FLAG_LOST_RETRANS;
        }
    }

    /// `tcp_check_sack_reordering`: segment `low_seq`, below the highest SACKed one, was
    /// delivered without a retransmission.
    pub(super) fn check_sack_reordering(&mut self, low_seq: u64) {
        let fack = self.highest_sack_seq();
        self.reordering.on_sack_below(fack, low_seq);
    }

    /// `tcp_rack_detect_loss`, marking what it finds lost. Returns the longest time left
    /// for the others, if any.
    fn rack_detect_loss(&mut self, now: Time) -> Option<u64> {
        let in_recovery = self.ca_state >= CaState::Recovery;
        let (min_rtt, srtt) = (self.rtt.min_rtt_us(), self.rtt.srtt_us());
        let reo_wnd = self.rack.reo_wnd(&self.reordering, in_recovery, self.sb.sacked_out, min_rtt, srtt);
        let found = self.rack.detect_loss(&mut self.sb, now.us(), reo_wnd);
        for seq in found.lost {
            self.mark_lost(now, seq);
        }
        found.wait_us
    }

    /// `tcp_rack_reo_timeout`.
    pub(super) fn rack_reo_timeout(&mut self, now: Time, q: &mut impl Io) {
        let prior_inflight = self.inflight();
        let lost_before = self.lost;
        if let Some(remaining_us) = self.rack_detect_loss(now) {
            self.reset_xmit_timer(now, XmitTimer::ReoTimeout, Dur::from_us(remaining_us) + TIMEOUT_MIN, q);
        }
        if prior_inflight != self.inflight() {
            if self.ca_state != CaState::Recovery {
                self.enter_recovery(now, false);
                if !self.cc.owns_cwnd() {
                    self.cwnd_reduction(1, (self.lost - lost_before) as u32, 0);
                }
            }
            self.xmit_retransmit_queue(now, q);
        }
        if !self.xmit.is_pending(XmitTimer::ReoTimeout) {
            self.rearm_rto(now, q);
        }
    }

    /// `tcp_cwnd_reduction`: Proportional Rate Reduction (RFC 6937, PRR-SSRB).
    pub(super) fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, flag: u32) {
        let snd_una_advanced = flag & FLAG_SND_UNA_ADVANCED != 0;
        let (inflight, ssthresh) = (self.inflight(), self.w.ssthresh);
        if let Some(cwnd) = self.prr.cwnd(newly_acked_sacked, newly_lost, snd_una_advanced, inflight, ssthresh) {
            self.w.cwnd = cwnd;
        }
    }

    /// `tcp_retransmit_timer` -> `tcp_enter_loss`, saving what an undo restores.
    pub(super) fn retransmit_timer(&mut self, now: Time, q: &mut impl Io) {
        if self.sb.packets_out() == 0 {
            return;
        }
        self.stats.rto_count += 1;
        // A timeout in Disorder after many SACKs: the reordering degree was over-estimated.
        if self.ca_state <= CaState::Disorder {
            self.reordering.on_timeout_in_disorder(self.sb.sacked_out);
        }
        // Reduce ssthresh only once per window (`tcp_enter_loss`).
        let new_episode = self.ca_state <= CaState::Disorder
            || self.high_seq <= self.sb.snd_una
            || (self.ca_state == CaState::Loss && self.rto_retransmits == 0);
        // tcp_timeout_mark_lost: all but segments sent too recently for RACK to judge
        // (without SACK, the duplicate ACKs' count is forgotten first).
        if self.is_reno() {
            self.reset_reno_sack();
        }
        let head = self.sb.snd_una;
        let now_us = now.us();
        for seq in head..self.snd_nxt() {
            let s = self.sb.get(seq);
            if s.has(SACKED) {
                continue;
            }
            let recent = seq != head && self.rack.time_left(now_us, s.tx_time.us(), 0) > 0;
            if recent {
                continue;
            }
            self.mark_lost(now, seq);
        }
        let new_recovery = self.ca_state < CaState::Recovery;
        if new_episode {
            self.undo.set_prior_ssthresh(self.current_ssthresh());
            self.prr.set_prior_cwnd(self.w.cwnd);
            let info = self.info(now);
            self.w.ssthresh = self.cc.ssthresh(&info, &self.w);
            self.cc.cwnd_event(&info, &mut self.w, CaEvent::Loss);
            self.init_undo();
        }
        self.w.cwnd = self.inflight() + 1;
        self.w.cwnd_cnt = 0;
        self.set_ca_state(now, CaState::Loss);
        self.high_seq = self.snd_nxt();
        self.tlp.end();
        self.ecn_queue_cwr = self.p.flow.ecn != crate::net::Ecn::Off;
        // F-RTO (RFC 5682 3.1 step 1) unless recovery was already under way, except for a
        // repeated timeout of the same snd_una (3.2).
        self.undo.set_frto(self.p.tcp.frto != 0 && (new_recovery || self.rto_retransmits > 0));
        let sent = self.retransmit_head(now, q);
        self.rto_retransmits += 1;
        if !sent {
            // Local congestion: try again soon, without backing off.
            self.reset_xmit_timer(now, XmitTimer::Rto, TCP_RESOURCE_PROBE_INTERVAL, q);
            return;
        }
        self.rtt.on_timeout();
        let rto = self.rtt.rto;
        self.reset_xmit_timer(now, XmitTimer::Rto, rto, q);
    }
}
