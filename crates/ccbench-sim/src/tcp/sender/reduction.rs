//! Reductions of the congestion window (net/ipv4/tcp_input.c): one starts
//! (`tcp_init_cwnd_reduction`, `tcp_enter_cwr`), proceeds by PRR (`tcp_cwnd_reduction`,
//! on the counts `tcp/prr.rs` keeps) and ends (`tcp_end_cwnd_reduction`,
//! `tcp_try_keep_open`); and the restart after idle (`tcp_cwnd_restart`, tcp_output.c).

use super::*;
use crate::cc::{CaEvent, INFINITE_SSTHRESH};
use crate::net::Ecn;
use crate::tcp::scoreboard::EVER_RETRANS;
use crate::time::NS_PER_SEC;

impl Sender {
    /// `tcp_current_ssthresh`: during a reduction its target, else at least 3/4 cwnd.
    pub(super) fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.w.ssthresh
        } else {
            self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2))
        }
    }

    /// `tcp_any_retrans_done`.
    pub(super) fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0 || self.sb.head().is_some_and(|s| s.has(EVER_RETRANS))
    }

    /// `tcp_retrans_stamp_cleanup`.
    pub(super) fn retrans_stamp_cleanup(&mut self) {
        if !self.any_retrans_done() {
            self.undo.clear_stamp();
        }
    }

    /// `tcp_init_cwnd_reduction`.
    pub(super) fn init_cwnd_reduction(&mut self, now: Time) {
        self.ecn_queue_cwr = self.p.flow.ecn != Ecn::Off;
        self.high_seq = self.snd_nxt();
        self.tlp.end();
        self.w.cwnd_cnt = 0;
        self.prr.start(self.w.cwnd);
        let info = self.info(now);
        self.w.ssthresh = self.cc.ssthresh(&info, &self.w);
    }

    /// `tcp_cwnd_reduction`: the cwnd PRR allows after an ACK that delivered
    /// `newly_acked_sacked` and showed `newly_lost` lost.
    pub(super) fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, flag: u32) {
        let snd_una_advanced = flag & FLAG_SND_UNA_ADVANCED != 0;
        let (inflight, ssthresh) = (self.inflight(), self.w.ssthresh);
        if let Some(cwnd) = self.prr.cwnd(newly_acked_sacked, newly_lost, snd_una_advanced, inflight, ssthresh) {
            self.w.cwnd = cwnd;
        }
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

    /// `tcp_slow_start_after_idle_check` (run as a write queues data, `tcp_skb_entail`,
    /// and as a window update finds data waiting, `tcp_ack_update_window`): after more
    /// than an RTO with nothing sent, `tcp_cwnd_restart`.
    pub(super) fn slow_start_after_idle_check(&mut self, now: Time) {
        if !self.p.tcp.slow_start_after_idle || self.sb.packets_out() > 0 || self.cc.owns_cwnd() {
            return;
        }
        let tick = NS_PER_SEC / self.p.tcp.hz as u64;
        let delta = now.jiffies(self.p.tcp.hz) as i64 - self.last_send.jiffies(self.p.tcp.hz) as i64;
        let rto = (self.rtt.rto.ns() / tick) as i64;
        if delta > rto {
            self.cwnd_restart(now, delta, rto);
        }
    }

    /// `tcp_cwnd_restart`: halve cwnd per idle RTO, down to the initial window.
    fn cwnd_restart(&mut self, now: Time, mut delta: i64, rto: i64) {
        let info = self.info(now);
        self.cc.cwnd_event(&info, &mut self.w, CaEvent::CwndRestart);
        self.w.ssthresh = self.current_ssthresh();
        let restart = self.p.tcp.init_cwnd.min(self.w.cwnd);
        let mut cwnd = self.w.cwnd;
        loop {
            delta -= rto;
            if delta <= 0 || cwnd <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.w.cwnd = cwnd.max(restart);
        self.hold_overrides();
    }
}
