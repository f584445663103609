//! The chronographs behind `tcpi_busy_time`, `tcpi_rwnd_limited` and
//! `tcpi_sndbuf_limited` (tcp_output.c, `tcp_chrono_start`/`tcp_chrono_stop`): jiffies
//! spent with data to send, split by what held it back. One chronograph runs at a time,
//! the most specific limit taking precedence.

use crate::time::Time;

/// `enum tcp_chrono`, in precedence order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Chrono {
    #[default]
    Unspec,
    /// Data queued or in flight.
    Busy,
    /// The peer's window stops new data (`tcp_snd_wnd_test` failed in `tcp_write_xmit`).
    RwndLimited,
    /// The send buffer is full (not reached here: the application model never blocks).
    SndbufLimited,
}

#[derive(Clone, Debug)]
pub struct Chronos {
    /// The kernel's timer frequency: the clocks count jiffies (`tcp_jiffies32`).
    hz: u32,
    kind: Chrono,
    /// Jiffies when `kind` started (`chrono_start`).
    start: u32,
    /// Jiffies accumulated per kind, Busy first (`chrono_stat`).
    stat: [u32; 3],
}

impl Chronos {
    pub fn new(hz: u32) -> Chronos {
        Chronos { hz, kind: Chrono::Unspec, start: 0, stat: [0; 3] }
    }

    /// `tcp_chrono_set`: bank the running chronograph's time, start `kind`.
    fn set(&mut self, now: Time, kind: Chrono) {
        let now = now.jiffies(self.hz);
        if self.kind != Chrono::Unspec {
            self.stat[self.kind as usize - 1] += now.wrapping_sub(self.start);
        }
        self.start = now;
        self.kind = kind;
    }

    /// `tcp_chrono_start`: `kind` runs if it takes precedence over the running one.
    pub fn start(&mut self, now: Time, kind: Chrono) {
        if kind > self.kind {
            self.set(now, kind);
        }
    }

    /// `tcp_chrono_stop`: nothing queued or in flight stops the clock; otherwise the end
    /// of the running condition falls back to Busy.
    pub fn stop(&mut self, now: Time, kind: Chrono, queues_empty: bool) {
        if queues_empty && self.kind != Chrono::Unspec {
            self.set(now, Chrono::Unspec);
        } else if kind == self.kind {
            self.set(now, Chrono::Busy);
        }
    }

    /// `tcp_get_info_chrono_stats`: (busy time, rwnd-limited, sndbuf-limited) in µs; the
    /// busy time includes the limited times.
    pub fn info_us(&self, now: Time) -> (u64, u64, u64) {
        let now = now.jiffies(self.hz);
        let mut us = [0u64; 3];
        for (i, t) in us.iter_mut().enumerate() {
            let mut jiffies = self.stat[i] as u64;
            if self.kind as usize == i + 1 {
                jiffies += now.wrapping_sub(self.start) as u64;
            }
            *t = jiffies * (1_000_000 / self.hz as u64);
        }
        (us.iter().sum(), us[1], us[2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Time {
        Time(t * 1_000_000)
    }

    #[test]
    fn limited_time_counts_as_busy_and_the_highest_condition_runs() {
        let mut c = Chronos::new(250);
        c.start(ms(40), Chrono::Busy);
        c.start(ms(60), Chrono::RwndLimited);
        c.start(ms(80), Chrono::Busy); // lower precedence: ignored
        assert_eq!(c.info_us(ms(160)), (120_000, 100_000, 0));
        c.stop(ms(160), Chrono::RwndLimited, false); // the window opened, data in flight
        c.stop(ms(200), Chrono::Busy, true); // everything acknowledged
                                             // Stopped: later reads add nothing.
        assert_eq!(c.info_us(ms(362)), (160_000, 100_000, 0));
    }
}
