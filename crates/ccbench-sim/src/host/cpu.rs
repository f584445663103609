//! When the sender's CPU may run, if that is fixed in advance, and how long a piece of
//! work keeps it busy: always, or the on/off intervals of a trace. Work that does not
//! fit in what is left of an on-interval continues in the next one. (A SCHED_DEADLINE
//! reservation, whose on-times follow the work, is `deadline.rs`.)

use super::config::CpuAvailability;
use crate::time::{Dur, Time};

#[derive(Clone, Debug)]
pub enum Availability {
    Always,
    /// Cumulative ends of the on/off intervals of one cycle: `ends[2k]` is where the
    /// k-th on-interval ends, `ends[2k+1]` where the following off-interval ends.
    Trace {
        ends: Vec<u64>,
        cycle: u64,
    },
}

impl Availability {
    pub fn new(cfg: &CpuAvailability) -> Availability {
        match cfg {
            CpuAvailability::Always => Availability::Always,
            CpuAvailability::Deadline { .. } => unreachable!("a deadline reservation is a DeadlineServer"),
            CpuAvailability::Trace { intervals_ns } => {
                let ends: Vec<u64> = intervals_ns
                    .iter()
                    .scan(0u64, |acc, &d| {
                        *acc += d;
                        Some(*acc)
                    })
                    .collect();
                let cycle = *ends.last().expect("validated: at least one pair");
                Availability::Trace { ends, cycle }
            }
        }
    }

    /// If the CPU is on at `t`: when that on-interval ends (None: never). If it is off:
    /// Err(when it comes back on).
    fn state_at(&self, t: Time) -> Result<Option<Time>, Time> {
        match self {
            Availability::Always => Ok(None),
            Availability::Trace { ends, cycle } => {
                let pos = t.ns() % cycle;
                let base = t.ns() - pos;
                // The interval holding `pos`: the first end beyond it.
                let i = ends.partition_point(|&e| e <= pos);
                if i % 2 == 0 {
                    Ok(Some(Time(base + ends[i])))
                } else if i + 1 == ends.len() {
                    Err(Time(base + cycle))
                } else {
                    Err(Time(base + ends[i]))
                }
            }
        }
    }

    /// End of the on-interval holding `t` (None if the CPU never goes off, or is off).
    pub fn on_until(&self, t: Time) -> Option<Time> {
        self.state_at(t).ok().flatten()
    }

    /// The first instant at or after `t` at which the CPU is on.
    pub fn next_on(&self, t: Time) -> Time {
        let mut t = t;
        loop {
            match self.state_at(t) {
                Ok(_) => return t,
                // A zero-length on-interval is skipped over.
                Err(on) => t = on,
            }
        }
    }

    /// When `work` of CPU time, started at `t` (on), is done: off-intervals pause it.
    pub fn finish(&self, t: Time, work: Dur) -> Time {
        let (mut t, mut left) = (t, work.ns());
        loop {
            match self.state_at(t) {
                Ok(None) => return t + Dur(left),
                Ok(Some(end)) => {
                    let room = end.since(t).ns();
                    if left < room {
                        return t + Dur(left);
                    }
                    left -= room;
                    t = end;
                    if left == 0 {
                        return t;
                    }
                }
                Err(on) => t = on,
            }
        }
    }

    /// Fraction of time the CPU is on, in the long run.
    pub fn share(&self) -> f64 {
        match self {
            Availability::Always => 1.0,
            Availability::Trace { ends, cycle } => {
                let on: u64 = ends
                    .iter()
                    .enumerate()
                    .map(|(i, &e)| if i % 2 == 0 { e - if i == 0 { 0 } else { ends[i - 1] } } else { 0 })
                    .sum();
                on as f64 / *cycle as f64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn trace_alternates_and_repeats() {
        // on 1, off 2, on 3, off 4: cycle 10 ms, share 0.4.
        let a = Availability::new(&CpuAvailability::Trace { intervals_ns: vec![MS, 2 * MS, 3 * MS, 4 * MS] });
        assert_eq!(a.next_on(Time(0)), Time(0));
        assert_eq!(a.next_on(Time(MS)), Time(3 * MS));
        assert_eq!(a.next_on(Time(6 * MS)), Time(10 * MS));
        assert_eq!(a.next_on(Time(12 * MS)), Time(13 * MS));
        assert_eq!(a.finish(Time(0), Dur(2 * MS)), Time(4 * MS));
        assert_eq!(a.finish(Time(5 * MS), Dur(2 * MS)), Time(11 * MS));
        assert!((a.share() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn always_on_never_waits() {
        let a = Availability::new(&CpuAvailability::Always);
        assert_eq!(a.next_on(Time(123)), Time(123));
        assert_eq!(a.finish(Time(123), Dur(7)), Time(130));
    }
}
