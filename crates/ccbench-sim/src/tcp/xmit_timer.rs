//! The retransmit timer (`icsk_retransmit_timer`) and which handler it runs
//! (`icsk_pending`): the RTO, the tail loss probe, RACK's reordering timeout or the
//! zero-window probe. It runs on the jiffy clock and fires as the kernel's timer wheel
//! runs it (`tcp_reset_xmit_timer`, `calc_wheel_index`).

use super::rtt::RTO_MAX;
use super::wake::{SenderTimer, Wake};
use crate::event::{timer_wheel_expiry, Schedule, Timer, TimerFire};
use crate::time::{Dur, Time, NS_PER_SEC};

/// `TCP_TIMEOUT_MIN_US`: slack added to RACK's reordering timer and the loss probe's.
pub const TIMEOUT_MIN: Dur = Dur::from_ms(2);

/// When a jiffy timer armed at `now` to expire `after` from it fires: in whole jiffies
/// (at most `TCP_RTO_MAX`), as the kernel's timer wheel rounds them
/// (`inet_csk_reset_xmit_timer`, `calc_wheel_index`).
pub fn jiffy_deadline(now: Time, after: Dur, hz: u32) -> Time {
    let tick = NS_PER_SEC / hz as u64;
    let jiffies = after.ns().div_ceil(tick).min(RTO_MAX.ns() / tick);
    let clk = now.ns() / tick;
    Time(timer_wheel_expiry(clk + jiffies, clk) * tick)
}

/// Which handler the retransmit timer runs (`icsk_pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XmitTimer {
    /// `ICSK_TIME_RETRANS`: the retransmission timeout.
    Rto,
    /// `ICSK_TIME_LOSS_PROBE`.
    LossProbe,
    /// `ICSK_TIME_REO_TIMEOUT`: RACK waits out the reordering window.
    ReoTimeout,
    /// `ICSK_TIME_PROBE0`: the zero-window probe.
    Probe0,
}

/// One connection's retransmit timer.
#[derive(Clone, Debug)]
pub struct RetransmitTimer {
    timer: Timer,
    /// The handler of the last arming; kept after the timer is cancelled or fires, as
    /// `icsk_pending` is.
    kind: XmitTimer,
    /// The kernel's timer frequency: the timer counts jiffies.
    hz: u32,
    /// The flow whose sender it wakes.
    flow: u32,
}

impl RetransmitTimer {
    pub fn new(hz: u32, flow: u32) -> RetransmitTimer {
        RetransmitTimer { timer: Timer::default(), kind: XmitTimer::Rto, hz, flow }
    }

    /// `tcp_reset_xmit_timer`: arm for `kind`, `when` from `now` plus the pending pacing
    /// delay, in whole jiffies (at most `TCP_RTO_MAX`) as the timer wheel rounds them.
    pub fn reset(&mut self, now: Time, kind: XmitTimer, when: Dur, pacing_delay: Dur, q: &mut impl Schedule<Wake>) {
        let at = jiffy_deadline(now, when + pacing_delay, self.hz);
        self.kind = kind;
        q.arm(&mut self.timer, at, Wake::Sender(self.flow, SenderTimer::Retransmit));
    }

    /// `inet_csk_clear_xmit_timer`.
    pub fn cancel(&mut self) {
        self.timer.cancel();
    }

    pub fn is_armed(&self) -> bool {
        self.timer.is_armed()
    }

    /// Armed for `kind`.
    pub fn is_pending(&self, kind: XmitTimer) -> bool {
        self.timer.is_armed() && self.kind == kind
    }

    /// The handler of the last arming, armed or not.
    pub fn kind(&self) -> XmitTimer {
        self.kind
    }

    /// When it fires, if armed (tests read it).
    #[cfg(test)]
    pub fn deadline(&self) -> Option<Time> {
        self.timer.deadline()
    }

    /// What the timer's heap entry popped at `now` means.
    pub fn fire(&mut self, now: Time) -> TimerFire {
        self.timer.fire(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventQueue;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_timer_fires_on_the_wheels_boundary_after_whole_jiffies() {
        let mut q: EventQueue<Wake> = EventQueue::default();
        let mut t = RetransmitTimer::new(1000, 7);
        // 300.5 ms rounds up to 301 jiffies; from 63 jiffies on the wheel's granularity
        // is 8: the next boundary after 1,301 is 1,304.
        t.reset(Time(1_000 * MS), XmitTimer::Rto, Dur(300 * MS + MS / 2), Dur::ZERO, &mut q);
        assert_eq!(t.deadline(), Some(Time(1_304 * MS)));
        assert_eq!(q.pop(), Some((Time(1_304 * MS), Wake::Sender(7, SenderTimer::Retransmit))));
        // A pacing delay pushes it out; a short timer is one jiffy late at the least.
        t.reset(Time(1_000 * MS), XmitTimer::LossProbe, Dur(10 * MS), Dur(5 * MS), &mut q);
        assert_eq!(t.deadline(), Some(Time(1_016 * MS)));
        assert!(t.is_pending(XmitTimer::LossProbe) && !t.is_pending(XmitTimer::Rto));
    }

    #[test]
    fn the_timer_is_capped_at_rto_max_and_keeps_its_kind_once_cancelled() {
        let mut q: EventQueue<Wake> = EventQueue::default();
        let mut t = RetransmitTimer::new(250, 0);
        t.reset(Time::ZERO, XmitTimer::ReoTimeout, Dur::from_secs(500), Dur::ZERO, &mut q);
        let at = t.deadline().unwrap();
        assert!(at >= Time(RTO_MAX.ns()) && at < Time(RTO_MAX.ns() + 60_000 * MS), "{at:?}");
        t.cancel();
        assert!(!t.is_armed() && !t.is_pending(XmitTimer::ReoTimeout));
        assert_eq!(t.kind(), XmitTimer::ReoTimeout);
        assert_eq!(t.fire(at), TimerFire::Stale);
    }
}
