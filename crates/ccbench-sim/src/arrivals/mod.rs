//! Open-loop arrivals: new connections of an algorithm arriving on their own schedule (a
//! Poisson process at a rate or a load, or times given), each carrying a transfer whose
//! size is drawn from a distribution; judged by flow completion time (FCT) and its
//! slowdown against the same transfer alone on the empty path.

pub mod config;
pub mod sizes;

pub use config::ArrivalsConfig;
pub use sizes::{SizeSampler, Sizes};

use crate::base::rng::{self, Rng};
use crate::time::{Dur, Time};
use rand::Rng as _;

/// When a group's connections arrive, and how large each is.
pub struct ArrivalProcess {
    times: Times,
    sizes: SizeSampler,
    size_rng: Rng,
    stop: Time,
}

enum Times {
    /// Exponential gaps of this mean (ns).
    Poisson { mean_gap_ns: f64, rng: Rng },
    /// Given instants, and the next one's index.
    Listed { at: Vec<u64>, next: usize },
}

impl ArrivalProcess {
    /// Group `k` of `cfg`, at `rate_per_s` if Poisson, on streams of `seed`; nothing
    /// arrives at or after `end`.
    pub fn new(cfg: &ArrivalsConfig, rate_per_s: f64, seed: u64, k: u64, end: Time) -> ArrivalProcess {
        let times = match &cfg.times_ns {
            Some(at) => Times::Listed { at: at.clone(), next: 0 },
            None => Times::Poisson { mean_gap_ns: 1e9 / rate_per_s, rng: rng::stream(seed, "arrivals", k) },
        };
        ArrivalProcess {
            times,
            sizes: cfg.sizes.sampler(),
            size_rng: rng::stream(seed, "arrival-sizes", k),
            stop: cfg.stop_ns.map_or(end, Time).min(end),
        }
    }

    /// The arrival after `t` (the first, from the group's start), if before the stop.
    pub fn next_after(&mut self, t: Time) -> Option<Time> {
        let at = match &mut self.times {
            Times::Poisson { mean_gap_ns, rng } => {
                let gap = -(1.0 - rng.gen::<f64>()).ln() * *mean_gap_ns;
                t + Dur(gap.round() as u64)
            }
            Times::Listed { at, next } => {
                let x = *at.get(*next)?;
                *next += 1;
                Time(x)
            }
        };
        (at < self.stop).then_some(at)
    }

    /// The next arrival's transfer size.
    pub fn size(&mut self) -> u64 {
        self.sizes.draw(&mut self.size_rng)
    }

    /// Every arrival after `start` (ns from the run's start) with its size, as the
    /// simulator opens them: for engines that open real connections.
    pub fn schedule(mut self, start: Time) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = self.next_after(start);
        while let Some(t) = at {
            out.push((t.ns(), self.size()));
            at = self.next_after(t);
        }
        out
    }
}
