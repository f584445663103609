//! Time: `CLOCK_MONOTONIC` nanoseconds, and the sampling schedule of a run.
//!
//! Every time the agent writes is in nanoseconds after the run's epoch t0. In `send`
//! mode t0 comes from the host (the kernel engine's namespaces share one monotonic
//! clock); in `serve` mode, inside a guest whose clock is not the host's, t0 is the
//! agent's own monotonic time when it reads `go`.

/// `CLOCK_MONOTONIC` in nanoseconds, the clock of Python's `time.monotonic_ns`.
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Samples at t0 + k x interval (k >= 1) strictly before the end at t0 + duration; the
/// closing sample is taken separately when the run ends (as the simulator does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    t0: i64,
    interval: i64,
    end: i64,
    next: i64,
}

impl Schedule {
    /// `interval_ns` must be positive (the configuration checks it).
    pub fn new(t0: i64, interval_ns: i64, duration_ns: i64) -> Schedule {
        assert!(interval_ns > 0, "sampling interval must be positive");
        Schedule { t0, interval: interval_ns, end: t0 + duration_ns, next: t0 + interval_ns }
    }

    pub fn t0(&self) -> i64 {
        self.t0
    }

    /// Absolute end of the run.
    pub fn end(&self) -> i64 {
        self.end
    }

    /// The sample times (relative to t0) that are due at `now`, oldest first, each
    /// returned once. A late wake-up returns every missed time, so the series has no gaps.
    pub fn due(&mut self, now: i64) -> Vec<i64> {
        let mut out = Vec::new();
        while self.next < self.end && now >= self.next {
            out.push(self.next - self.t0);
            self.next += self.interval;
        }
        out
    }

    /// When something next falls due: the next sample or the end.
    pub fn wake(&self) -> i64 {
        self.next.min(self.end)
    }

    pub fn ended(&self, now: i64) -> bool {
        now >= self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fall_on_the_grid_before_the_end() {
        let mut s = Schedule::new(1_000, 100, 350);
        assert_eq!(s.due(1_099), Vec::<i64>::new());
        assert_eq!(s.wake(), 1_100);
        assert_eq!(s.due(1_100), vec![100]);
        assert_eq!(s.due(1_100), Vec::<i64>::new());
        // Late by two intervals: both missed times, on the grid, not the wake-up time.
        assert_eq!(s.due(1_333), vec![200, 300]);
        assert_eq!(s.wake(), 1_350);
        assert!(!s.ended(1_349));
        assert!(s.ended(1_350));
        // No sample at or after the end: the closing sample is the caller's.
        assert_eq!(s.due(10_000), Vec::<i64>::new());
    }

    #[test]
    fn a_duration_on_the_grid_has_no_sample_at_the_end() {
        let mut s = Schedule::new(0, 100, 300);
        assert_eq!(s.due(300), vec![100, 200]);
    }

    #[test]
    fn the_monotonic_clock_advances() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = monotonic_ns();
        assert!(b - a >= 2_000_000 && a > 0);
    }
}
