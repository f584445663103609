//! Loss recovery on an ACK: the CA state machine of `tcp_fastretrans_alert`
//! (net/ipv4/tcp_input.c), RACK's marking (`tcp_identify_packet_loss`,
//! `tcp_rack_mark_lost`, on `tcp/rack.rs`), entering Recovery, what the loss probe's ACK
//! shows (`tcp_process_tlp_ack`, on `tcp/tlp.rs`) and what recovery sends
//! (`tcp_xmit_recovery`).

use super::*;
use crate::cc::CaEvent;
use crate::tcp::io::Io;
use crate::tcp::scoreboard::SKB_END;
use crate::tcp::tlp::TlpAck;
use crate::tcp::write::NAGLE_OFF;
use crate::tcp::xmit_timer::{XmitTimer, TIMEOUT_MIN};
use crate::time::Dur;

impl Sender {
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
        if self.check_state_exit(now) {
            return Rexmit::None;
        }
        // E. Process the state.
        let mut rexmit = Rexmit::None;
        match self.ca_state {
            CaState::Recovery => return self.recovery_ack(now, f, prior_snd_una, num_dupack, flag, q),
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
        if self.probe_lost(now, q) {
            return Rexmit::None;
        }
        self.enter_recovery(now, ece);
        Rexmit::Lost
    }

    /// `tcp_fastretrans_alert`'s step D: CWR ends once data above `high_seq` is
    /// acknowledged, Recovery once everything up to it is (undone if it proves spurious,
    /// `tcp_try_undo_recovery`). True when that leaves nothing more to do for this ACK.
    fn check_state_exit(&mut self, now: Time) -> bool {
        if self.ca_state == CaState::Open {
            self.undo.clear_stamp();
            return false;
        }
        if self.sb.snd_una < self.high_seq {
            return false;
        }
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
                    return true;
                }
                self.end_cwnd_reduction(now);
            }
            _ => {}
        }
        false
    }

    /// `tcp_fastretrans_alert`'s step E in Recovery, for an ACK with flags `f`: a partial
    /// ACK may prove the reduction spurious (`tcp_try_undo_partial`), DSACKs may too;
    /// then RACK marks what it finds lost, and if an undo left Recovery while loss is
    /// evident, a new episode starts.
    fn recovery_ack(
        &mut self,
        now: Time,
        f: u32,
        prior_snd_una: u64,
        num_dupack: u32,
        flag: &mut u32,
        q: &mut impl Io,
    ) -> Rexmit {
        let ece = f & FLAG_ECE != 0;
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
        Rexmit::Lost
    }

    /// `tcp_identify_packet_loss`: `tcp_newreno_mark_lost` without SACK, else
    /// `tcp_rack_mark_lost`, which arms the reordering timer for segments not overdue
    /// yet. Flags a retransmission found lost again (`FLAG_LOST_RETRANS`).
    fn identify_packet_loss(&mut self, now: Time, flag: &mut u32, q: &mut impl Io) {
        if self.is_reno() {
            self.newreno_mark_lost(now, *flag & FLAG_SND_UNA_ADVANCED != 0);
            return;
        }
        if self.sb.is_empty() || !self.rack.take_advanced() {
            return;
        }
        let prior_retrans = self.sb.retrans_out;
        if let Some(when) = self.rack_detect_loss(now) {
            self.xmit.cancel();
            self.reset_xmit_timer(now, XmitTimer::ReoTimeout, when, q);
            *flag &= !FLAG_SET_XMIT_TIMER;
        }
        if prior_retrans > self.sb.retrans_out {
            *flag |= FLAG_LOST_RETRANS;
        }
    }

    /// `tcp_rack_detect_loss`, marking what it finds lost. Returns when the reordering
    /// timer should fire for the others, if any wait.
    pub(super) fn rack_detect_loss(&mut self, now: Time) -> Option<Dur> {
        let in_recovery = self.ca_state >= CaState::Recovery;
        let (min_rtt, srtt) = (self.rtt.min_rtt_us(), self.rtt.srtt_us());
        let reo_wnd = self.rack.reo_wnd(&self.reordering, in_recovery, self.sb.sacked_out, min_rtt, srtt);
        let found = self.rack.detect_loss(&mut self.sb, now.us(), reo_wnd);
        for seq in found.lost {
            self.mark_lost(now, seq);
        }
        found.wait_us.map(|us| Dur::from_us(us) + TIMEOUT_MIN)
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

    /// `tcp_simple_retransmit`: every skb whose segments are longer than the MSS is lost;
    /// the Loss state starts without touching cwnd ("the units changed"), and the lost
    /// data goes again, cut to the MSS.
    pub(super) fn simple_retransmit(&mut self, now: Time, q: &mut impl Io) {
        let mss = self.current_mss();
        let mut skb_start = self.sb.snd_una;
        let mut seglen = 0;
        for seq in self.sb.snd_una..self.snd_nxt() {
            let seg = *self.sb.get(seq);
            seglen = seglen.max(seg.len);
            if seg.has(SKB_END) || seq + 1 == self.snd_nxt() {
                if seglen > mss {
                    (skb_start..=seq).for_each(|s| self.mark_lost(now, s));
                }
                (skb_start, seglen) = (seq + 1, 0);
            }
        }
        if self.sb.lost_out == 0 {
            return;
        }
        if self.is_reno() {
            self.limit_reno_sacked();
        }
        if self.ca_state != CaState::Loss {
            self.high_seq = self.snd_nxt();
            self.w.ssthresh = self.current_ssthresh();
            self.undo.set_prior_ssthresh(0);
            self.undo.close();
            self.set_ca_state(now, CaState::Loss);
        }
        self.xmit_retransmit_queue(now, q);
    }

    /// `tcp_fastretrans_alert`'s MTU probe failure: loss found with the probe at the
    /// head; the search's top comes down, cwnd gets back the packet the probe took, and
    /// what is too large goes again (`tcp_simple_retransmit`), no reduction.
    pub(super) fn probe_lost(&mut self, now: Time, q: &mut impl Io) -> bool {
        let head = self.wire_seq(self.sb.snd_una);
        if self.ca_state >= CaState::Cwr || self.pmtu.probe_size == 0 || head != self.pmtu.probe_seq.0 {
            return false;
        }
        self.pmtu.probe_failed(now.jiffies(self.p.tcp.hz));
        self.w.cwnd += 1;
        self.simple_retransmit(now, q);
        true
    }
}
