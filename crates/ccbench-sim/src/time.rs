//! Simulated time: integer nanoseconds. No code in the simulator reads a clock.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Time(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Dur(pub u64);

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_SEC: u64 = 1_000_000_000;

impl Time {
    pub const ZERO: Time = Time(0);
    pub const NEVER: Time = Time(u64::MAX);

    pub fn ns(self) -> u64 {
        self.0
    }
    /// Microseconds, truncated, as the kernel's `tcp_mstamp` clock.
    pub fn us(self) -> u64 {
        self.0 / NS_PER_US
    }
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_SEC as f64
    }
    /// Span since `earlier`, zero if `earlier` is later.
    pub fn since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
    /// The kernel's jiffies counter at this instant for a given HZ.
    pub fn jiffies(self, hz: u32) -> u32 {
        (self.0 / (NS_PER_SEC / hz as u64)) as u32
    }
}

/// `usecs_to_jiffies` (include/linux/jiffies.h), which rounds up, at `hz` ticks a second.
pub fn usecs_to_jiffies(us: u64, hz: u32) -> u64 {
    (us * hz as u64).div_ceil(1_000_000)
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const fn from_us(us: u64) -> Dur {
        Dur(us * NS_PER_US)
    }
    pub const fn from_ms(ms: u64) -> Dur {
        Dur(ms * NS_PER_MS)
    }
    pub const fn from_secs(s: u64) -> Dur {
        Dur(s * NS_PER_SEC)
    }
    pub const fn ns(self) -> u64 {
        self.0
    }
    pub fn us(self) -> u64 {
        self.0 / NS_PER_US
    }
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_SEC as f64
    }
    pub fn ms_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Dur> for Time {
    type Output = Time;
    fn sub(self, d: Dur) -> Time {
        Time(self.0.saturating_sub(d.0))
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.secs_f64())
    }
}
