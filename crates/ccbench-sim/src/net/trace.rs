//! Trace-driven capacity in Mahimahi's packet-delivery-opportunity format.
//!
//! A trace is a non-decreasing list of millisecond timestamps; each is one opportunity
//! to move [`OPPORTUNITY_BYTES`] bytes across the link. When the list ends it repeats,
//! shifted by its last timestamp, so a trace holding the single line `1` offers one
//! opportunity per millisecond: 1500 B x 8 x 1000 = 12 Mbit/s.
//!
//! Serving follows Mahimahi's `LinkQueue::rationalize`: an opportunity is a byte
//! budget. Queued packets take it in order; a packet leaves at the opportunity that
//! carries its last byte, and what it leaves of the budget goes to the packets queued
//! behind it at that instant (several ACKs share one opportunity; a packet larger than
//! the budget spans several). A budget nobody is queued to use is lost.

use crate::time::{Time, NS_PER_MS};

/// Bytes one delivery opportunity carries: a full-size packet on the wire (IPv4), as
/// Mahimahi's 1504-byte TUN frames are a 1500-byte IP packet plus 4 bytes of TUN header.
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// Longest accepted timestamp (about 115 days), so that times stay far from overflow.
pub const MAX_TIMESTAMP_MS: u64 = 10_000_000_000;

/// A validated opportunity schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Opportunity times within one period, in ns.
    at_ns: Vec<u64>,
    /// The last timestamp: the shift applied on each repetition.
    period_ns: u64,
}

impl Trace {
    /// Check a list of millisecond timestamps: not empty, non-decreasing, not all zero.
    pub fn from_ms(ms: &[u64]) -> Result<Trace, String> {
        let Some(&last) = ms.last() else {
            return Err("the trace is empty; it needs at least one timestamp".into());
        };
        if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!("timestamps decrease at entry {} ({} after {})", i + 2, ms[i + 1], ms[i]));
        }
        if last == 0 {
            return Err("every timestamp is 0: the trace must last a nonzero time".into());
        }
        if last > MAX_TIMESTAMP_MS {
            return Err(format!("timestamp {last} ms is too large (at most {MAX_TIMESTAMP_MS})"));
        }
        Ok(Trace { at_ns: ms.iter().map(|&m| m * NS_PER_MS).collect(), period_ns: last * NS_PER_MS })
    }

    /// Opportunities per period.
    pub fn len(&self) -> u64 {
        self.at_ns.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.at_ns.is_empty()
    }

    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    /// Long-run mean capacity in bit/s (rounded down): one period's bytes over its length.
    pub fn mean_bps(&self) -> u64 {
        (self.len() as u128 * OPPORTUNITY_BYTES as u128 * 8 * 1_000_000_000 / self.period_ns as u128) as u64
    }

    /// Time of opportunity number `i` (counted from the start, across repetitions).
    pub fn time_of(&self, i: u64) -> Time {
        let n = self.len();
        Time((i / n) * self.period_ns + self.at_ns[(i % n) as usize])
    }

    /// Index of the first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: Time) -> u64 {
        let n = self.len();
        // Start one repetition early: the last opportunity of repetition k shares its
        // instant with the first of k + 1 when the trace starts at 0.
        let mut rep = (t.ns() / self.period_ns).saturating_sub(1);
        loop {
            let base = rep * self.period_ns;
            let pos = self.at_ns.partition_point(|&a| base + a < t.ns()) as u64;
            if pos < n {
                return rep * n + pos;
            }
            rep += 1;
        }
    }

    /// Opportunities at instants in `[t0, t1)`.
    pub fn count_between(&self, t0: Time, t1: Time) -> u64 {
        if t1 <= t0 {
            return 0;
        }
        self.first_at_or_after(t1) - self.first_at_or_after(t0)
    }

    /// Capacity offered in `[t0, t1)`, in bits.
    pub fn bits_between(&self, t0: Time, t1: Time) -> u64 {
        self.count_between(t0, t1) * OPPORTUNITY_BYTES as u64 * 8
    }
}

/// The serving state of a trace-driven link.
#[derive(Clone, Debug)]
pub struct TraceServer {
    pub trace: Trace,
    /// When the trace starts (zero in the simulator; the measurement epoch in the
    /// emulator).
    origin: Time,
    /// The next unused opportunity: its index, its repetition's start (ns after the
    /// origin) and position in the trace, and its instant.
    next: u64,
    base_ns: u64,
    pos: usize,
    next_at: Time,
    /// Bytes left of the last opportunity taken, and its instant.
    budget: u32,
    budget_at: Time,
}

impl TraceServer {
    pub fn new(trace: Trace) -> TraceServer {
        let next_at = Time(trace.at_ns[0]);
        TraceServer {
            trace,
            origin: Time::ZERO,
            next: 0,
            base_ns: 0,
            pos: 0,
            next_at,
            budget: 0,
            budget_at: Time::ZERO,
        }
    }

    /// Restart the trace at `origin` (opportunities of the old start are dropped).
    pub fn restart_at(&mut self, origin: Time) {
        self.origin = origin;
        self.budget = 0;
        self.seek(0);
    }

    /// Make opportunity `i` the next one.
    fn seek(&mut self, i: u64) {
        let n = self.trace.len();
        self.next = i;
        self.base_ns = (i / n) * self.trace.period_ns;
        self.pos = (i % n) as usize;
        self.next_at = Time(self.origin.ns() + self.base_ns + self.trace.at_ns[self.pos]);
    }

    /// Take the next opportunity (no division: opportunities are taken in order).
    fn advance(&mut self) {
        self.next += 1;
        self.pos += 1;
        if self.pos == self.trace.at_ns.len() {
            self.pos = 0;
            self.base_ns += self.trace.period_ns;
        }
        self.next_at = Time(self.origin.ns() + self.base_ns + self.trace.at_ns[self.pos]);
    }

    fn first_at_or_after(&self, t: Time) -> u64 {
        self.trace.first_at_or_after(Time(t.ns().saturating_sub(self.origin.ns())))
    }

    /// Capacity offered in `[t0, t1)`, in bits.
    pub fn bits_between(&self, t0: Time, t1: Time) -> u64 {
        if t1 <= t0 {
            return 0;
        }
        (self.first_at_or_after(t1) - self.first_at_or_after(t0)) * OPPORTUNITY_BYTES as u64 * 8
    }

    /// When a packet arriving at `now` to an idle link can first be served: now, if the
    /// opportunity taken at this very instant has bytes left, else the next opportunity.
    pub fn first_service(&mut self, now: Time) -> Time {
        if self.budget > 0 && self.budget_at == now {
            return now;
        }
        // Idle since: the opportunities in between are lost. Step over a few, search
        // beyond.
        let mut steps = 0;
        while self.next_at < now && steps < 16 {
            self.advance();
            steps += 1;
        }
        if self.next_at < now {
            let i = self.first_at_or_after(now);
            self.seek(i);
        }
        self.next_at
    }

    /// Bytes available at `now`: what is left of an opportunity taken at `now`, else a
    /// fresh opportunity if one falls at `now`; 0 when the link must wait.
    #[inline]
    pub fn budget_at(&mut self, now: Time) -> u32 {
        if self.budget_at != now {
            self.budget = 0;
        }
        if self.budget == 0 && self.next_at == now {
            self.advance();
            self.budget = OPPORTUNITY_BYTES;
            self.budget_at = now;
        }
        self.budget
    }

    /// Spend `bytes` (at most the budget) of the current opportunity.
    pub fn spend(&mut self, bytes: u32) {
        debug_assert!(bytes <= self.budget);
        self.budget -= bytes;
    }

    /// The instant of the next unused opportunity.
    pub fn next_opportunity(&self) -> Time {
        self.next_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = NS_PER_MS;

    #[test]
    fn a_single_line_one_is_twelve_megabit() {
        let t = Trace::from_ms(&[1]).unwrap();
        assert_eq!(t.mean_bps(), 12_000_000);
        assert_eq!((0..4).map(|i| t.time_of(i).ns()).collect::<Vec<_>>(), vec![MS, 2 * MS, 3 * MS, 4 * MS]);
        // [0, 1 s) holds the opportunities at 1..=999 ms; the one at 1 s starts the next second.
        assert_eq!(t.bits_between(Time::ZERO, Time(1000 * MS)), 999 * 12_000);
    }

    #[test]
    fn the_trace_repeats_shifted_by_its_last_timestamp() {
        let t = Trace::from_ms(&[0, 0, 3, 5]).unwrap();
        let times: Vec<u64> = (0..9).map(|i| t.time_of(i).ns() / MS).collect();
        assert_eq!(times, vec![0, 0, 3, 5, 5, 5, 8, 10, 10]);
        // The first opportunity at or after an instant, across the repetition boundary.
        assert_eq!(t.first_at_or_after(Time(5 * MS)), 3);
        assert_eq!(t.first_at_or_after(Time(5 * MS + 1)), 6);
        assert_eq!(t.first_at_or_after(Time(10 * MS)), 7);
        assert_eq!(t.first_at_or_after(Time::ZERO), 0);
        assert_eq!(t.count_between(Time::ZERO, Time(10 * MS)), 7);
        // 4 opportunities every 5 ms.
        assert_eq!(t.mean_bps(), 4 * 1500 * 8 * 200);
    }

    #[test]
    fn malformed_traces_are_refused() {
        assert!(Trace::from_ms(&[]).unwrap_err().contains("empty"));
        assert!(Trace::from_ms(&[0, 0]).unwrap_err().contains("nonzero"));
        assert!(Trace::from_ms(&[1, 3, 2]).unwrap_err().contains("entry 3"));
    }

    #[test]
    fn budgets_are_shared_within_an_opportunity_and_lost_after_it() {
        let mut s = TraceServer::new(Trace::from_ms(&[2, 2, 4]).unwrap());
        assert_eq!(s.first_service(Time(1)), Time(2 * MS));
        assert_eq!(s.budget_at(Time(2 * MS)), 1500);
        s.spend(1000);
        // The rest of the same opportunity is still there at the same instant ...
        assert_eq!(s.first_service(Time(2 * MS)), Time(2 * MS));
        assert_eq!(s.budget_at(Time(2 * MS)), 500);
        s.spend(500);
        // ... then the second opportunity at 2 ms.
        assert_eq!(s.budget_at(Time(2 * MS)), 1500);
        s.spend(100);
        // A packet arriving later cannot use what was left.
        assert_eq!(s.first_service(Time(3 * MS)), Time(4 * MS));
        assert_eq!(s.budget_at(Time(4 * MS)), 1500);
    }
}
