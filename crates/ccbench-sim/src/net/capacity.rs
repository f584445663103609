//! What serves the bottleneck queue: a rate (constant, or stepping at given times) or a
//! delivery-opportunity trace ([`super::trace`]).

use super::trace::TraceServer;
use crate::time::{Time, NS_PER_SEC};
use crate::units::BitRate;

/// A piecewise-constant rate: `steps[k]` holds from its time until the next step's.
/// The first step is at time zero.
#[derive(Clone, Debug)]
pub struct RateSchedule {
    steps: Vec<(Time, BitRate)>,
    /// The rate, when there are no steps (the fast path).
    constant: Option<BitRate>,
    /// What step times count from (zero in the simulator).
    origin: Time,
    /// The step in force at the latest serialization start (starts never go back).
    cur: usize,
}

impl RateSchedule {
    pub fn constant(rate: BitRate) -> RateSchedule {
        RateSchedule { steps: vec![(Time::ZERO, rate)], constant: Some(rate), origin: Time::ZERO, cur: 0 }
    }

    /// `rate` from time zero, then each `(at, rate)` step. Steps must be increasing in
    /// time and after zero (the scenario is validated before).
    pub fn new(rate: BitRate, steps: &[(Time, BitRate)]) -> RateSchedule {
        let mut all = vec![(Time::ZERO, rate)];
        all.extend_from_slice(steps);
        debug_assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        let constant = (all.len() == 1).then_some(rate);
        RateSchedule { steps: all, constant, origin: Time::ZERO, cur: 0 }
    }

    /// Start the schedule at `origin`: step times count from there (the initial rate
    /// holds before it).
    pub fn restart_at(&mut self, origin: Time) {
        self.origin = origin;
        self.cur = 0;
    }

    /// The rate, if it never changes.
    #[inline]
    pub fn constant_rate(&self) -> Option<BitRate> {
        self.constant
    }

    pub fn is_constant(&self) -> bool {
        self.constant.is_some()
    }

    /// The rate at time zero.
    pub fn initial(&self) -> BitRate {
        self.steps[0].1
    }

    /// When step `k` ends (the next one starts), in absolute time.
    fn end_of(&self, k: usize) -> Option<Time> {
        self.steps.get(k + 1).map(|s| self.origin + crate::time::Dur(s.0.ns()))
    }

    /// When serializing `bytes` that starts at `start` completes: the rate integrated
    /// over the steps it spans, rounded up to the nanosecond. Constant rate: exactly
    /// `start + tx_time(bytes)`.
    #[inline]
    pub fn finish(&mut self, start: Time, bytes: u32) -> Time {
        if let Some(rate) = self.constant {
            return start + rate.tx_time(bytes);
        }
        while self.end_of(self.cur).is_some_and(|e| e <= start) {
            self.cur += 1;
        }
        let (_, rate) = self.steps[self.cur];
        if self.end_of(self.cur).is_none() {
            return start + rate.tx_time(bytes);
        }
        // Work in bit-nanoseconds per second: a rate r (bit/s) moves r of them per ns.
        let mut need = bytes as u128 * 8 * NS_PER_SEC as u128;
        let mut t = start;
        let mut k = self.cur;
        loop {
            let r = self.steps[k].1.bps() as u128;
            match self.end_of(k) {
                Some(end) if r * (end.ns() - t.ns()) as u128 <= need => {
                    need -= r * (end.ns() - t.ns()) as u128;
                    t = end;
                    k += 1;
                }
                _ => return Time(t.ns() + need.div_ceil(r) as u64),
            }
        }
    }

    /// Capacity offered in `[t0, t1)`, in bits.
    pub fn bits_between(&self, t0: Time, t1: Time) -> f64 {
        let mut bits = 0.0;
        for (k, &(_, rate)) in self.steps.iter().enumerate() {
            let at = if k == 0 { Time::ZERO } else { self.end_of(k - 1).expect("step k") };
            let end = self.end_of(k).unwrap_or(Time::NEVER);
            let (a, b) = (at.max(t0), end.min(t1));
            if b > a {
                bits += rate.bps() as f64 * (b.ns() - a.ns()) as f64 / NS_PER_SEC as f64;
            }
        }
        bits
    }
}

/// The bottleneck's server.
#[derive(Clone, Debug)]
pub enum Capacity {
    Rate(RateSchedule),
    Trace(TraceServer),
}

impl Capacity {
    /// Start the trace or the rate schedule at `origin`.
    pub fn restart_at(&mut self, origin: Time) {
        match self {
            Capacity::Rate(r) => r.restart_at(origin),
            Capacity::Trace(s) => s.restart_at(origin),
        }
    }

    /// Capacity offered in `[t0, t1)`, in bits.
    pub fn bits_between(&self, t0: Time, t1: Time) -> f64 {
        match self {
            Capacity::Rate(r) => r.bits_between(t0, t1),
            Capacity::Trace(s) => s.bits_between(t0, t1) as f64,
        }
    }

    /// The rate when it never changes.
    pub fn constant_rate(&self) -> Option<BitRate> {
        match self {
            Capacity::Rate(r) if r.is_constant() => Some(r.initial()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn constant_rate_matches_tx_time() {
        let r = BitRate(12_000_000);
        let mut s = RateSchedule::constant(r);
        assert_eq!(s.finish(Time(5), 1500), Time(5) + r.tx_time(1500));
        assert_eq!(s.finish(Time(5), 77), Time(5) + r.tx_time(77));
    }

    #[test]
    fn a_packet_spanning_a_step_is_served_at_both_rates() {
        // 12 Mbit/s (1 ms per 1500 B) until 10 ms, then 24 Mbit/s.
        let mut s = RateSchedule::new(BitRate(12_000_000), &[(Time(10 * MS), BitRate(24_000_000))]);
        assert_eq!(s.finish(Time(0), 1500), Time(MS));
        // Half the bytes go at 12 Mbit/s by 10 ms, the other half in 0.25 ms.
        assert_eq!(s.finish(Time(9 * MS + MS / 2), 1500), Time(10 * MS + MS / 4));
        assert_eq!(s.finish(Time(20 * MS), 1500), Time(20 * MS + MS / 2));
        let bits = s.bits_between(Time(0), Time(20 * MS));
        assert!((bits - (12e6 * 0.01 + 24e6 * 0.01)).abs() < 1e-6, "{bits}");
    }
}
