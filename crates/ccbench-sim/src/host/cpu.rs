//! When the sender's CPU may run, if that is fixed in advance, and how long a piece of
//! work keeps it busy: always, or the on/off intervals of a trace. Work that does not
//! fit in what is left of an on-interval continues in the next one. (A SCHED_DEADLINE
//! reservation, whose on-times follow the work, is `deadline.rs`.)

use super::config::{CpuAvailability, MAX_COLD_SLOWDOWN};
use crate::time::{Dur, Time};

/// What is left of a task the CPU was taken away from: its own work, and the refill its
/// returns owe. Running pays both in proportion, as cold work runs slower, and the
/// refill owed is at most `MAX_COLD_SLOWDOWN - 1` times the work left, so a task gets
/// some of its work done in any time it runs, however often it is taken away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    work: u64,
    owed: u64,
}

impl Pending {
    pub fn new(work: u64) -> Pending {
        Pending { work, owed: 0 }
    }

    pub fn total(&self) -> u64 {
        self.work + self.owed
    }

    /// Runs `ns`, less than the total.
    pub fn run(&mut self, ns: u64) {
        let paid = (ns as u128 * self.owed as u128 / self.total().max(1) as u128) as u64;
        self.owed -= paid;
        self.work -= ns - paid;
    }

    /// The CPU comes back, owing `refill` more; gives back what was added.
    pub fn come_back(&mut self, refill: u64) -> u64 {
        let room = (MAX_COLD_SLOWDOWN - 1).saturating_mul(self.work).saturating_sub(self.owed);
        let added = refill.min(room);
        self.owed += added;
        added
    }
}

/// The CPU's returns to a piece of work it was taken away from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Returns {
    pub count: u64,
    /// CPU time the returns added to the work.
    pub refill_ns: u64,
}

impl Returns {
    /// One more return, which added `refill_ns` of work.
    pub fn add(&mut self, refill_ns: u64) {
        self.count += 1;
        self.refill_ns += refill_ns;
    }
}

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

    /// When `work` of CPU time, started at `t` (on), is done: off-intervals pause it,
    /// and each return after an off-interval of `d` adds `refill(d)` of work.
    pub fn finish(&self, t: Time, work: Dur, refill: impl Fn(u64) -> u64) -> (Time, Returns) {
        let (mut t, mut left) = (t, Pending::new(work.ns()));
        let mut returns = Returns::default();
        loop {
            match self.state_at(t) {
                Ok(None) => return (t + Dur(left.total()), returns),
                Ok(Some(end)) => {
                    let room = end.since(t).ns();
                    if left.total() <= room {
                        return (t + Dur(left.total()), returns);
                    }
                    left.run(room);
                    t = end;
                    let on = self.next_on(t);
                    returns.add(left.come_back(refill(on.since(t).ns())));
                    t = on;
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
        let free = |_| 0;
        assert_eq!(a.finish(Time(0), Dur(2 * MS), free).0, Time(4 * MS));
        assert_eq!(a.finish(Time(5 * MS), Dur(2 * MS), free).0, Time(11 * MS));
        // Coming back after the 2 ms off costs 0.5 ms more work: 1 + 1.5 from 3 ms.
        let (end, returns) = a.finish(Time(0), Dur(2 * MS), |off| off / 4);
        assert_eq!(end, Time(9 * MS / 2));
        assert_eq!(returns, Returns { count: 1, refill_ns: MS / 2 });
        assert!((a.share() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn a_task_taken_away_often_still_gets_its_work_done() {
        // On 1 us of every 10: each return would owe 90 us of refill, far more than the
        // CPU gives it, but the refill owed stays under 3 x the work left and is paid in
        // proportion, so 10 us of work ends.
        let a = Availability::new(&CpuAvailability::Trace { intervals_ns: vec![1_000, 9_000] });
        let (end, returns) = a.finish(Time(0), Dur(10_000), |off| off * 10);
        assert!(end < Time(1_000_000), "{end:?}");
        assert!(returns.count > 10 && returns.refill_ns > 0);
        let mut p = Pending::new(100);
        assert_eq!(p.come_back(1_000), 300);
        p.run(200);
        assert_eq!(p, Pending { work: 50, owed: 150 });
    }

    #[test]
    fn always_on_never_waits() {
        let a = Availability::new(&CpuAvailability::Always);
        assert_eq!(a.next_on(Time(123)), Time(123));
        assert_eq!(a.finish(Time(123), Dur(7), |_| 1), (Time(130), Returns::default()));
    }
}
