//! Internal pacing with earliest departure times (EDT), as net/ipv4/tcp_output.c does it
//! without an fq qdisc: the next skb may leave at `tcp_wstamp_ns`, the clock advances by
//! each skb's airtime at `sk_pacing_rate` (`tcp_update_skb_after_send`), a socket whose
//! next departure is due later waits on the pacing hrtimer (`tcp_pacing_check`), and the
//! rate an algorithm without `cong_control` gets (`tcp_update_pacing_rate`).

use super::wake::{SenderTimer, Wake};
use crate::event::{Schedule, Timer, TimerFire};
use crate::time::{Dur, Time, NS_PER_SEC};

/// Segments sent before the EDT clock starts advancing.
const UNPACED_SEGS: u64 = 10;

/// One connection's pacing clock and timer.
#[derive(Clone, Debug)]
pub struct Pacing {
    /// The internal pacing timer paces this connection (`sk_pacing_status`).
    enabled: bool,
    /// `tcp_wstamp_ns`: the earliest departure time of the next skb.
    wstamp: Time,
    /// The pacing hrtimer (`tcp_pace_kick` wakes the socket).
    timer: Timer,
    /// The flow whose sender it wakes.
    flow: u32,
}

impl Pacing {
    pub fn new(enabled: bool, flow: u32) -> Pacing {
        Pacing { enabled, wstamp: Time::ZERO, timer: Timer::default(), flow }
    }

    /// Whether the connection is paced.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The earliest departure time of the next skb (`tcp_wstamp_ns`).
    pub fn wstamp(&self) -> Time {
        self.wstamp
    }

    /// The first data is written at `now`: nothing leaves before.
    pub fn start(&mut self, now: Time) {
        self.wstamp = now;
    }

    /// How long the next skb waits (what `tcp_reset_xmit_timer` adds to a timer armed
    /// with data held back by pacing); zero if unpaced.
    pub fn delay(&self, now: Time) -> Dur {
        if self.enabled {
            self.wstamp.since(now)
        } else {
            Dur::ZERO
        }
    }

    /// `tcp_pacing_check`: too early for the next skb? Then the pacing timer is armed for
    /// its departure.
    pub fn check(&mut self, now: Time, q: &mut impl Schedule<Wake>) -> bool {
        if !self.enabled || self.wstamp <= now {
            return false;
        }
        if !self.timer.is_armed() {
            q.arm(&mut self.timer, self.wstamp, Wake::Sender(self.flow, SenderTimer::Pacing));
        }
        true
    }

    /// The departure time of an skb handed over at `now` (`skb->tstamp`): the clock's, if
    /// later.
    pub fn departure(&mut self, now: Time) -> Time {
        self.wstamp = self.wstamp.max(now);
        self.wstamp
    }

    /// Whether an skb sent at `rate` (bytes per second) as `data_segs_out` segments have
    /// left moves the clock: paced, at a known rate, past the first segments.
    pub fn advances(&self, rate: u64, data_segs_out: u64) -> bool {
        self.enabled && rate > 0 && data_segs_out >= UNPACED_SEGS
    }

    /// `tcp_update_skb_after_send`: the next skb may leave the airtime of `bytes` at
    /// `rate` later, less up to half of it in lateness credit, the time the clock was
    /// behind at this send (`prior`, its value before; "take into account OS jitter").
    pub fn advance(&mut self, prior: Time, bytes: u64, rate: u64) {
        let mut len_ns = bytes * NS_PER_SEC / rate;
        let credit = self.wstamp.since(prior).ns();
        len_ns -= (len_ns / 2).min(credit);
        self.wstamp += Dur(len_ns);
    }

    /// What the timer's heap entry popped at `now` means.
    pub fn fire(&mut self, now: Time) -> TimerFire {
        self.timer.fire(now)
    }
}

/// `tcp_update_pacing_rate` for algorithms without `cong_control`, in bytes per second:
/// `ss_ratio` percent (200 by default) of cwnd (or what is out, if more) per SRTT in
/// early slow start (cwnd below half ssthresh), else `ca_ratio` percent (120). Before any
/// RTT sample (`srtt_us8` 0) the product itself.
pub fn cwnd_pacing_rate(
    mss: u32,
    cwnd: u32,
    ssthresh: u32,
    packets_out: u32,
    srtt_us8: u64,
    ratios: (u32, u32),
) -> u64 {
    let ratio = if cwnd < ssthresh / 2 { ratios.0 } else { ratios.1 } as u64;
    let mut rate = mss as u64 * ((1_000_000 / 100) << 3) * ratio;
    rate *= cwnd.max(packets_out) as u64;
    rate.checked_div(srtt_us8).unwrap_or(rate)
}

/// Bytes whose airtime the EDT clock advances by after a burst of `payload`. With a
/// pacing stride S the idle time is S times that of the burst an unmodified kernel
/// would have sent, `goal` bytes (Vargas et al. eq. 2): a burst that reached S x the
/// goal keeps the pacing rate; one cut short by cwnd still idles the full stride (their
/// Table 2, strides 10-50).
pub fn stride_bytes(payload: u64, stride: u64, goal: u64) -> u64 {
    if stride == 1 {
        return payload;
    }
    stride * payload.min(goal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventQueue;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_clock_advances_by_each_skbs_airtime_less_lateness_credit() {
        let mut p = Pacing::new(true, 3);
        p.start(Time(100 * MS));
        // On time: 12,500 bytes at 12.5 MB/s take 1 ms.
        let prior = p.wstamp();
        assert_eq!(p.departure(Time(100 * MS)), Time(100 * MS));
        p.advance(prior, 12_500, 12_500_000);
        assert_eq!(p.wstamp(), Time(101 * MS));
        // Sent 0.3 ms late: 0.3 ms of credit. 2 ms late: at most half the airtime.
        let prior = p.wstamp();
        assert_eq!(p.departure(Time(101 * MS + 300_000)), Time(101 * MS + 300_000));
        p.advance(prior, 12_500, 12_500_000);
        assert_eq!(p.wstamp(), Time(102 * MS));
        let prior = p.wstamp();
        p.departure(Time(104 * MS));
        p.advance(prior, 12_500, 12_500_000);
        assert_eq!(p.wstamp(), Time(104 * MS + 500_000));
        assert!(!p.advances(12_500_000, 9) && p.advances(12_500_000, 10) && !p.advances(0, 10));
    }

    #[test]
    fn an_early_send_arms_the_pacing_timer_for_the_departure_time() {
        let mut q: EventQueue<Wake> = EventQueue::default();
        let mut p = Pacing::new(true, 3);
        p.start(Time(5 * MS));
        assert!(p.check(Time(4 * MS), &mut q));
        assert!(p.check(Time(4 * MS), &mut q), "still early; the timer is armed once");
        assert_eq!(q.pop(), Some((Time(5 * MS), Wake::Sender(3, SenderTimer::Pacing))));
        assert!(q.pop().is_none());
        assert_eq!(p.delay(Time(4 * MS)), Dur(MS));
        assert!(!p.check(Time(5 * MS), &mut q));
        let mut unpaced = Pacing::new(false, 3);
        unpaced.start(Time(5 * MS));
        assert!(!unpaced.check(Time(4 * MS), &mut q));
        assert_eq!(unpaced.delay(Time(4 * MS)), Dur::ZERO);
    }

    #[test]
    fn reno_and_cubic_pace_at_twice_cwnd_per_srtt_in_slow_start_then_at_1_2() {
        // 10 segments of 1,448 bytes per 100 ms (SRTT x 8 = 800,000 µs).
        assert_eq!(cwnd_pacing_rate(1448, 10, u32::MAX, 0, 800_000, (200, 120)), 289_600);
        assert_eq!(cwnd_pacing_rate(1448, 10, 20, 0, 800_000, (200, 120)), 173_760);
        // More out than cwnd (after a reduction) counts what is out.
        assert_eq!(cwnd_pacing_rate(1448, 10, 20, 20, 800_000, (200, 120)), 347_520);
        assert_eq!(cwnd_pacing_rate(1448, 10, 20, 0, 0, (200, 120)), 1448 * 80_000 * 120 * 10);
    }

    #[test]
    fn a_stride_idles_for_the_goal_it_multiplies() {
        assert_eq!(stride_bytes(3_000, 1, 2_000), 3_000);
        assert_eq!(stride_bytes(30_000, 10, 2_000), 20_000);
        assert_eq!(stride_bytes(1_000, 10, 2_000), 10_000);
    }
}
