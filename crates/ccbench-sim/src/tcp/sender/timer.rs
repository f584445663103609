//! Arming the retransmit timer (`tcp/xmit_timer.rs`) for what it should run next: the
//! RTO (`tcp_rearm_rto`) or a loss probe (`tcp_schedule_loss_probe`, `tcp_set_xmit_timer`),
//! pushed out by pacing as `tcp_reset_xmit_timer` does.

use super::*;
use crate::tcp::io::Io;
use crate::tcp::tlp::Tlp;
use crate::tcp::xmit_timer::XmitTimer;

impl Sender {
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
}
