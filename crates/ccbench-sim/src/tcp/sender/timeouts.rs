//! What the sender's timers do when they fire (net/ipv4/tcp_timer.c and its callers):
//! the retransmit timer runs the RTO (`tcp_retransmit_timer`, `tcp_enter_loss`), the loss
//! probe (`tcp_send_loss_probe`), RACK's reordering timeout (`tcp_rack_reo_timeout`) or
//! the zero-window probe; the pacing timer and TX completions let the socket write again
//! (`tcp_pace_kick`, `tcp_tsq_handler`).

use super::*;
use crate::cc::CaEvent;
use crate::event::{Schedule, TimerFire};
use crate::net::Ecn;
use crate::tcp::io::Io;
use crate::tcp::scoreboard::{RETRANS, SACKED};
use crate::tcp::wake::{SenderTimer, Wake};
use crate::tcp::write::NAGLE_OFF;
use crate::tcp::xmit_timer::XmitTimer;

/// `TCP_RESOURCE_PROBE_INTERVAL`: the retry of an RTO retransmission the local qdisc
/// refused (`tcp_retransmit_timer`).
const TCP_RESOURCE_PROBE_INTERVAL: Dur = Dur::from_ms(500);

impl Sender {
    /// Whether the heap entry of timer `which` popped at `now` means it expired (a
    /// superseded entry is dropped, a postponed one re-queued).
    pub fn timer_due(&mut self, now: Time, which: SenderTimer, q: &mut impl Schedule<Wake>) -> bool {
        let fire = match which {
            SenderTimer::Retransmit => self.xmit.fire(now),
            SenderTimer::Pacing => self.pacing.fire(now),
            SenderTimer::TxCompletion => self.tsq.fire(now),
        };
        match fire {
            TimerFire::Stale => false,
            TimerFire::Requeue(t) => {
                q.push(t, Wake::Sender(self.p.id, which));
                false
            }
            TimerFire::Expired => true,
        }
    }

    /// The handler of an expired timer, run when the CPU gets to it.
    pub fn on_timer_expired(&mut self, now: Time, which: SenderTimer, q: &mut impl Io) {
        match which {
            SenderTimer::Retransmit => match self.xmit.kind() {
                XmitTimer::Rto => self.retransmit_timer(now, q),
                XmitTimer::LossProbe => self.send_loss_probe(now, q),
                XmitTimer::ReoTimeout => self.rack_reo_timeout(now, q),
                XmitTimer::Probe0 => self.probe_timer(now, q),
            },
            // tcp_pace_kick / tcp_tsq_handler -> tcp_tsq_write
            SenderTimer::Pacing | SenderTimer::TxCompletion => {
                if self.sb.lost_out > self.sb.retrans_out && self.w.cwnd > self.inflight() {
                    self.xmit_retransmit_queue(now, q);
                }
                self.write_xmit(now, 0, self.write.nonagle(), q);
            }
        }
    }

    /// `tcp_retransmit_timer`: enter Loss, resend the head and back the RTO off.
    pub(super) fn retransmit_timer(&mut self, now: Time, q: &mut impl Io) {
        if self.sb.packets_out() == 0 {
            return;
        }
        self.stats.rto_count += 1;
        self.write_timeout(now);
        self.enter_loss(now);
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

    /// `tcp_enter_loss`: mark what is outstanding lost, reduce once per window (saving
    /// what an undo restores), cwnd = what is in flight + 1, and arm F-RTO.
    fn enter_loss(&mut self, now: Time) {
        // A timeout in Disorder after many SACKs: the reordering degree was over-estimated.
        if self.ca_state <= CaState::Disorder {
            self.reordering.on_timeout_in_disorder(self.sb.sacked_out);
        }
        let new_episode = self.ca_state <= CaState::Disorder
            || self.high_seq <= self.sb.snd_una
            || (self.ca_state == CaState::Loss && self.rto_retransmits == 0);
        self.timeout_mark_lost(now);
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
        self.ecn_queue_cwr = self.p.flow.ecn != Ecn::Off;
        // F-RTO (RFC 5682 3.1 step 1) unless recovery was already under way, except for a
        // repeated timeout of the same snd_una (3.2).
        self.undo.set_frto(self.p.tcp.frto != 0 && (new_recovery || self.rto_retransmits > 0));
    }

    /// `tcp_timeout_mark_lost`: all but segments sent too recently for RACK to judge
    /// (without SACK, the duplicate ACKs' count is forgotten first).
    fn timeout_mark_lost(&mut self, now: Time) {
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

    /// `tcp_rack_reo_timeout`: the reordering window has passed; what RACK now finds lost
    /// starts (or continues) Recovery and is retransmitted.
    pub(super) fn rack_reo_timeout(&mut self, now: Time, q: &mut impl Io) {
        let prior_inflight = self.inflight();
        let lost_before = self.lost;
        if let Some(when) = self.rack_detect_loss(now) {
            self.reset_xmit_timer(now, XmitTimer::ReoTimeout, when, q);
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
}
