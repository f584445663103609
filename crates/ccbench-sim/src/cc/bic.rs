//! BIC as Linux v6.1 implements it (`net/ipv4/tcp_bic.c`).
//!
//! Binary Increase Congestion control: after a loss the window searches between the
//! reduced window and the window at the loss (W_max). Far below W_max it grows by at
//! most `max_increment` segments per RTT; closer, by a quarter of the remaining
//! distance (`BICTCP_B` = 4) per RTT, slowing to `B/smooth_part` near W_max; past W_max
//! it probes for a new maximum, first slowly, then linearly again. The per-RTT step is
//! turned into "ACKs per +1 segment" (`cnt`) for the stack's additive-increase helper,
//! scaled by the measured segments-per-ACK ratio. At or below `low_window` it is Reno.
//! The stack does the reductions themselves (PRR in Recovery/CWR, cwnd = 1 on RTO).

use super::params::{apply, Kind, Param, ParamError};
use super::reno::{cong_avoid_ai, slow_start};
use super::*;
use serde::Serialize;

/// `BICTCP_BETA_SCALE`: beta is a fraction of 1024.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_B`: the binary search aims at (max + min) / B per step.
const BICTCP_B: u32 = 4;
/// `ACK_RATIO_SHIFT`: `delayed_ack` holds segments per ACK in 1/16.
const ACK_RATIO_SHIFT: u32 = 4;
/// `bictcp_reset`: the segments-per-ACK estimate starts at 2 (delayed ACKs).
const INITIAL_DELAYED_ACK: u32 = 2 << ACK_RATIO_SHIFT;
/// `bictcp_update`: while no W_max is known grow at least 5% per RTT (cnt ≤ 20).
const CNT_MAX_WITHOUT_WMAX: u32 = 20;

/// BIC's module parameters (`/sys/module/tcp_bic/parameters/*`), with the kernel's
/// defaults. Overridable by name from a scenario file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BicParams {
    /// `fast_convergence`: a loss below the previous W_max lowers W_max further.
    pub fast_convergence: bool,
    /// `max_increment`: the largest step of the search, segments per RTT (S_max).
    pub max_increment: u32,
    /// `low_window`: at or below this cwnd BIC grows and cuts like Reno.
    pub low_window: u32,
    /// `beta`: multiplicative decrease in 1/1024 (819 = 0.7998).
    pub beta: u32,
    /// `initial_ssthresh` (segments); 0 leaves ssthresh infinite.
    pub initial_ssthresh: u32,
    /// `smooth_part`: RTTs spent from W_max − B to W_max (S_min = B / smooth_part).
    pub smooth_part: u32,
}

impl Default for BicParams {
    /// The kernel's module defaults.
    fn default() -> Self {
        BicParams {
            fast_convergence: true, // tcp_bic.c: fast_convergence
            max_increment: 16,      // tcp_bic.c: max_increment
            low_window: 14,         // tcp_bic.c: low_window
            beta: 819,              // tcp_bic.c: beta
            initial_ssthresh: 0,    // tcp_bic.c: initial_ssthresh
            smooth_part: 20,        // tcp_bic.c: smooth_part
        }
    }
}

impl BicParams {
    /// What a scenario may override, with the ranges `bictcp_update` and
    /// `bictcp_recalc_ssthresh` run with.
    pub const TABLE: &'static [Param<BicParams>] = &[
        Param {
            name: "fast_convergence",
            kernel: "tcp_bic.c: fast_convergence",
            meaning: "a loss below the previous W_max lowers W_max further",
            kind: Kind::Flag,
            min: 0.0,
            max: 1.0,
            field: |p| &mut p.fast_convergence,
        },
        // 6.1 takes 0 and then divides by it; mainline later bounds it to [1, INT_MAX]
        // (`max_increment_set`). Both reject 0 here.
        Param {
            name: "max_increment",
            kernel: "tcp_bic.c: max_increment",
            meaning: "largest search step, segments per RTT; at least 1 (bictcp_update divides by it)",
            kind: Kind::Integer,
            min: 1.0,
            max: 1e6,
            field: |p| &mut p.max_increment,
        },
        Param {
            name: "low_window",
            kernel: "tcp_bic.c: low_window",
            meaning: "at or below this cwnd (segments) BIC grows and halves like Reno",
            kind: Kind::Integer,
            min: 0.0,
            max: 1e6,
            field: |p| &mut p.low_window,
        },
        Param {
            name: "beta",
            kernel: "tcp_bic.c: beta",
            meaning: "multiplicative decrease in 1/1024 (819 = 0.7998); below 1024 so that a loss reduces",
            kind: Kind::Integer,
            min: 1.0,
            max: (BETA_SCALE - 1) as f64,
            field: |p| &mut p.beta,
        },
        Param {
            name: "initial_ssthresh",
            kernel: "tcp_bic.c: initial_ssthresh",
            meaning: "initial slow-start threshold in segments; 0 leaves it infinite",
            kind: Kind::Integer,
            min: 0.0,
            max: INFINITE_SSTHRESH as f64,
            field: |p| &mut p.initial_ssthresh,
        },
        Param {
            name: "smooth_part",
            kernel: "tcp_bic.c: smooth_part",
            meaning: "RTTs from W_max - B to W_max: near W_max grow B/smooth_part segments per RTT",
            kind: Kind::Integer,
            min: 0.0,
            max: 1e6,
            field: |p| &mut p.smooth_part,
        },
    ];

    /// The defaults with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("bic", Self::TABLE, BicParams::default(), overrides)
    }
}

/// `struct bictcp`.
#[derive(Clone, Debug)]
pub struct Bic {
    p: BicParams,
    /// ACKed segments per +1 segment of cwnd.
    cnt: u32,
    /// W_max; 0 = unknown.
    last_max_cwnd: u32,
    /// cwnd and jiffy of the last `cnt` computation.
    last_cwnd: u32,
    last_time: u32,
    /// Jiffy at which the current growth epoch began; 0 = no epoch.
    epoch_start: u32,
    /// Segments per ACK in 1/16, an EWMA with gain 1/16.
    delayed_ack: u32,
}

impl Bic {
    /// `p` must be in the ranges `BicParams::from_overrides` enforces (max_increment > 0).
    pub fn new(p: BicParams) -> Self {
        Bic {
            p,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            epoch_start: 0,
            delayed_ack: INITIAL_DELAYED_ACK,
        }
    }

    pub fn params(&self) -> &BicParams {
        &self.p
    }

    /// `bictcp_reset`.
    fn reset(&mut self) {
        *self = Bic::new(self.p.clone());
    }

    /// `bictcp_update`: recompute `cnt` for `cwnd` (at most every HZ/32 while cwnd holds).
    fn update(&mut self, c: &ConnInfo, cwnd: u32) {
        let now = c.jiffies;
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (c.hz / 32) as i32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        if self.epoch_start == 0 {
            self.epoch_start = now;
        }
        if cwnd <= self.p.low_window {
            self.cnt = cwnd;
            return;
        }
        self.cnt = self.search_cnt(cwnd);
        if self.last_max_cwnd == 0 && self.cnt > CNT_MAX_WITHOUT_WMAX {
            self.cnt = CNT_MAX_WITHOUT_WMAX;
        }
        // Per ACK, not per segment: scale by the segments-per-ACK ratio.
        self.cnt = (self.cnt << ACK_RATIO_SHIFT).checked_div(self.delayed_ack).unwrap_or(0).max(1);
    }

    /// The step of `bictcp_update` as ACKs per +1: binary search below W_max, max
    /// probing above it, linear where the step would exceed `max_increment`.
    fn search_cnt(&self, cwnd: u32) -> u32 {
        let (w_max, s_max, smooth) = (self.last_max_cwnd, self.p.max_increment, self.p.smooth_part);
        if cwnd < w_max {
            let dist = (w_max - cwnd) / BICTCP_B;
            if dist > s_max {
                cwnd / s_max
            } else if dist <= 1 {
                cwnd.wrapping_mul(smooth) / BICTCP_B
            } else {
                cwnd / dist
            }
        } else if cwnd < w_max.wrapping_add(BICTCP_B) {
            cwnd.wrapping_mul(smooth) / BICTCP_B
        } else if cwnd < w_max.wrapping_add(s_max.wrapping_mul(BICTCP_B - 1)) {
            cwnd.wrapping_mul(BICTCP_B - 1) / (cwnd - w_max)
        } else {
            cwnd / s_max
        }
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    /// `bictcp_init`.
    fn init(&mut self, _c: &ConnInfo, w: &mut Window) {
        self.reset();
        if self.p.initial_ssthresh != 0 {
            w.ssthresh = self.p.initial_ssthresh;
        }
    }

    /// `bictcp_recalc_ssthresh`: end the epoch, remember W_max (lowered further by fast
    /// convergence when this loss came below the previous one), cut to beta·cwnd (to
    /// half at or below `low_window`).
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        self.epoch_start = 0;
        self.last_max_cwnd = if w.cwnd < self.last_max_cwnd && self.p.fast_convergence {
            w.cwnd.wrapping_mul(BETA_SCALE + self.p.beta) / (2 * BETA_SCALE)
        } else {
            w.cwnd
        };
        if w.cwnd <= self.p.low_window {
            (w.cwnd >> 1).max(MIN_SSTHRESH)
        } else {
            (w.cwnd.wrapping_mul(self.p.beta) / BETA_SCALE).max(MIN_SSTHRESH)
        }
    }

    /// `bictcp_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if !c.is_cwnd_limited {
            return;
        }
        let mut acked = acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked);
            if acked == 0 {
                return;
            }
        }
        self.update(c, w.cwnd);
        cong_avoid_ai(w, self.cnt, acked);
    }

    /// `bictcp_acked`: in Open, delayed_ack += pkts_acked − delayed_ack/16.
    fn pkts_acked(&mut self, c: &ConnInfo, _w: &mut Window, s: &AckSample) {
        if c.ca_state == CaState::Open {
            self.delayed_ack =
                self.delayed_ack.wrapping_add(s.pkts_acked.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT));
        }
    }

    /// `bictcp_state`: an RTO forgets W_max and the ACK ratio.
    fn set_state(&mut self, _c: &ConnInfo, _w: &mut Window, new: CaState) {
        if new == CaState::Loss {
            self.reset();
        }
    }

    /// `tcp_reno_undo_cwnd`, as tcp_bic.c's ops name it.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    fn internals(&self) -> Internals {
        Internals::from([
            ("w_max", self.last_max_cwnd as f64),
            ("cnt", self.cnt as f64),
            ("acks_ratio", self.delayed_ack as f64 / (1u32 << ACK_RATIO_SHIFT) as f64),
            ("epoch_start_jiffies", self.epoch_start as f64),
        ])
    }
}

#[cfg(test)]
mod tests;
