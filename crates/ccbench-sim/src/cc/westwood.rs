//! TCP Westwood+ as Linux implements it (`net/ipv4/tcp_westwood.c`, Linux 6.1), after
//! Mascolo et al., "TCP Westwood: bandwidth estimation for TCP" (MobiCom 2001) and
//! Grieco and Mascolo (CCR 2004) for the "+" (one sample per RTT).
//!
//! Growth is Reno's. What differs is the window after a loss: the ACK stream is turned
//! into a bandwidth estimate (bytes ACKed per RTT-long window, at least 50 ms, through
//! two 7/8 low-pass filters), and when a reduction ends (`CA_EVENT_COMPLETE_CWR`) cwnd
//! and ssthresh become estimate × min RTT instead of half the window; after an RTO
//! ssthresh does. A random loss on an uncongested link so costs little. The kernel's
//! units are kept: bytes (sequence numbers), bytes per jiffy, RTTs in jiffies.

use super::reno::Reno;
use super::*;
use crate::time::usecs_to_jiffies;

/// `TCP_WESTWOOD_RTT_MIN`: a bandwidth sample spans at least HZ/20 jiffies (50 ms).
const RTT_MIN_DIVISOR: u32 = 20;
/// `TCP_WESTWOOD_INIT_RTT`: 20·HZ jiffies, RTT and min RTT before any sample.
const INIT_RTT_SECS: u32 = 20;
/// `westwood_do_filter`: new = (7·old + sample) / 8.
const FILTER_OLD_WEIGHT: u32 = 7;
const FILTER_SHIFT: u32 = 3;
/// `tcp_westwood_bw_rttmin`: the window never set below 2 segments.
const MIN_CWND: u32 = 2;

/// `struct westwood`.
#[derive(Clone, Debug, Default)]
pub struct Westwood {
    /// The first filter's output and the estimate, bytes per jiffy.
    bw_ns_est: u32,
    bw_est: u32,
    /// Jiffy at which the current sample window began (`rtt_win_sx`).
    rtt_win_sx: u32,
    /// Bytes ACKed in the current window.
    bk: u32,
    /// `snd_una` when last accounted, bytes.
    snd_una: u32,
    /// Bytes the last ACK counted, and bytes counted ahead by duplicate ACKs.
    cumul_ack: u32,
    accounted: u32,
    /// Latest RTT sample and min RTT, jiffies.
    rtt: u32,
    rtt_min: u32,
    /// The next ACK sets `snd_una` (`first_ack`), and `rtt_min` (`reset_rtt_min`).
    first_ack: bool,
    reset_rtt_min: bool,
    /// `mss_cache`, kept for `internals`.
    mss: u32,
}

impl Westwood {
    pub fn new() -> Self {
        Westwood::default()
    }

    /// `westwood_filter`: the first sample fills both filters.
    fn filter(&mut self, delta: u32) {
        let sample = self.bk / delta;
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = low_pass(self.bw_ns_est, sample);
            self.bw_est = low_pass(self.bw_est, self.bw_ns_est);
        }
    }

    /// `westwood_update_window`: close the sample window once it spans more than
    /// max(RTT, 50 ms).
    fn update_window(&mut self, c: &ConnInfo) {
        // s32 in the kernel, compared as u32 against the window length.
        let delta = c.jiffies.wrapping_sub(self.rtt_win_sx);
        if self.first_ack {
            self.snd_una = c.snd_una as u32;
            self.first_ack = false;
        }
        if self.rtt != 0 && delta > self.rtt.max(c.hz / RTT_MIN_DIVISOR) {
            self.filter(delta);
            self.bk = 0;
            self.rtt_win_sx = c.jiffies;
        }
    }

    /// `update_rtt_min`.
    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
    }

    /// `westwood_acked_count`: bytes this slow-path ACK delivered. A duplicate ACK
    /// counts one MSS ahead (`accounted`); the cumulative ACK that follows subtracts
    /// what was counted ahead.
    fn acked_count(&mut self, c: &ConnInfo) -> u32 {
        let una = c.snd_una as u32;
        self.cumul_ack = una.wrapping_sub(self.snd_una);
        if self.cumul_ack == 0 {
            self.accounted = self.accounted.wrapping_add(c.mss);
            self.cumul_ack = c.mss;
        }
        if self.cumul_ack > c.mss {
            if self.accounted >= self.cumul_ack {
                self.accounted -= self.cumul_ack;
                self.cumul_ack = c.mss;
            } else {
                self.cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = una;
        self.cumul_ack
    }

    /// `tcp_westwood_bw_rttmin`: estimate × min RTT in segments, at least 2.
    fn bw_rttmin(&self, mss: u32) -> u32 {
        (self.bw_est.wrapping_mul(self.rtt_min) / mss.max(1)).max(MIN_CWND)
    }
}

/// `westwood_do_filter`.
fn low_pass(old: u32, sample: u32) -> u32 {
    FILTER_OLD_WEIGHT.wrapping_mul(old).wrapping_add(sample) >> FILTER_SHIFT
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    /// `tcp_westwood_init`.
    fn init(&mut self, c: &ConnInfo, _w: &mut Window) {
        *self = Westwood {
            rtt: INIT_RTT_SECS * c.hz,
            rtt_min: INIT_RTT_SECS * c.hz,
            rtt_win_sx: c.jiffies,
            snd_una: c.snd_una as u32,
            first_ack: true,
            reset_rtt_min: true,
            mss: c.mss,
            ..Westwood::default()
        };
    }

    /// `tcp_reno_ssthresh`: on entering Recovery the cut is Reno's; the estimate takes
    /// over when the reduction completes.
    fn ssthresh(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        Reno.ssthresh(c, w)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        Reno.cong_avoid(c, w, acked);
    }

    /// `tcp_westwood_ack`: count the bytes this ACK delivered toward the sample.
    fn in_ack_event(&mut self, c: &ConnInfo, _w: &mut Window, flags: u32) {
        self.update_window(c);
        if flags & CA_ACK_SLOWPATH != 0 {
            let acked = self.acked_count(c);
            self.bk = self.bk.wrapping_add(acked);
        } else {
            // `westwood_fast_bw`: header prediction saw a plain advancing ACK.
            let una = c.snd_una as u32;
            self.bk = self.bk.wrapping_add(una.wrapping_sub(self.snd_una));
            self.snd_una = una;
        }
        self.update_rtt_min();
    }

    fn has_in_ack_event(&self) -> bool {
        true
    }

    /// `tcp_westwood_pkts_acked`: the latest RTT sample, in jiffies.
    fn pkts_acked(&mut self, c: &ConnInfo, _w: &mut Window, s: &AckSample) {
        if s.rtt_us > 0 {
            self.rtt = usecs_to_jiffies(s.rtt_us as u64, c.hz) as u32;
        }
    }

    /// `tcp_westwood_event`: the reduction ends at estimate × min RTT; an RTO sets
    /// ssthresh there and takes the next RTT sample as the min RTT.
    fn cwnd_event(&mut self, c: &ConnInfo, w: &mut Window, ev: CaEvent) {
        match ev {
            CaEvent::CompleteCwr => {
                w.ssthresh = self.bw_rttmin(c.mss);
                w.cwnd = w.ssthresh;
            }
            CaEvent::Loss => {
                w.ssthresh = self.bw_rttmin(c.mss);
                self.reset_rtt_min = true;
            }
            _ => {}
        }
    }

    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn internals(&self) -> Internals {
        Internals::from([
            ("bw_est_bytes_per_jiffy", self.bw_est as f64),
            ("bw_ns_est_bytes_per_jiffy", self.bw_ns_est as f64),
            ("rtt_jiffies", self.rtt as f64),
            ("rtt_min_jiffies", self.rtt_min as f64),
            ("bw_rtt_min_segs", self.bw_rttmin(self.mss) as f64),
            ("bk_bytes", self.bk as f64),
        ])
    }
}

#[cfg(test)]
mod tests;
