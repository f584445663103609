//! CAIA Delay-Gradient (CDG) as Linux implements it (`net/ipv4/tcp_cdg.c`, Linux 6.1:
//! the µs clock `tcp_mstamp`, `tcp_reno_undo_cwnd`, the backoff drawn with
//! `get_random_u32`, `prandom_u32` before 6.1; mainline has not changed it since).
//!
//! Once per round trip (an ACK past the `snd_nxt` recorded at the previous round's end)
//! CDG takes the difference of the round's smallest and largest RTT samples from the
//! previous round's, sums these gradients over the last `window` rounds (a moving
//! average without the division), and, when the sum `g` is positive, backs off with
//! probability 1 − exp(−g·backoff_factor/10⁶): ssthresh = cwnd·backoff_beta/1024 and a
//! CWR reduction. A backoff that does not bring the delay down (`use_ineff` in a row
//! without a gradient ≤ −32 µs) is judged ineffectual and skipped, and a shadow window
//! remembers what Reno would hold so that a loss after backoffs halves that instead
//! (`use_shadow`). Slow start ends by a HyStart-like ACK-train or delay test. Otherwise
//! the window grows as Reno's.
//!
//! The backoff asks the stack for a CWR reduction (`Window::enter_cwr`, the kernel's
//! `tcp_enter_cwr` from `cong_avoid`), whose target is this `ssthresh`.

use super::cubic::{HYSTART_ACK_TRAIN, HYSTART_DELAY};
use super::params::{apply, Kind, Param, ParamError};
use super::reno::Reno;
use super::*;
use crate::base::rng::Rng;
use rand::RngCore;
use serde::Serialize;

/// `tcp_cdg_hystart_update`: ACKs closer than this (µs) belong to one train.
const ACK_TRAIN_GAP_US: u32 = 3000;
/// `tcp_cdg_hystart_update`: floor (µs) of the train length and of the delay threshold.
const HYSTART_FLOOR_US: u32 = 125;
/// `tcp_cdg_hystart_update`: RTT samples of a round before the delay test runs.
const HYSTART_MIN_SAMPLES: u16 = 8;
/// `tcp_cdg_grad`: a gradient sum this negative (µs) shows a backoff took effect.
const EFFECTUAL_GRAD_US: i32 = -32;
/// `tcp_cdg_grad`: `use_tolerance` rounds gradient sums to multiples of this (µs).
const TOLERANCE_US: i32 = 64;
/// `tcp_cdg_acked`: the most delayed ACKs the filter expects in a row.
const MAX_DELACK: u8 = 5;
/// `backoff_beta` is a fraction of this.
const BETA_SCALE: u32 = 1024;
/// `tcp_cdg_register`: the largest gradient window.
const MAX_WINDOW: u32 = 256;

/// `nexp_u32`: exp(−x)·65536 − 1 for x = 0 and x = 0.000256·2^(i−1), i = 1..16.
const NEXP_TABLE: [u16; 17] =
    [65535, 65518, 65501, 65468, 65401, 65267, 65001, 64470, 63422, 61378, 57484, 50423, 38795, 22965, 8047, 987, 14];

/// `nexp_u32`: exp(−ux/10⁶)·`u32::MAX` in the kernel's fixed point: the low 8 bits of
/// `ux` linearly, then one table factor per set bit above them; 0 from ux = 2^24 on.
pub fn nexp_u32(ux: u32) -> u32 {
    let mut msb = ux >> 8;
    if msb > u16::MAX as u32 {
        return 0;
    }
    let mut res = u32::MAX - (ux & 0xff) * (u32::MAX / 1_000_000);
    let mut i = 1;
    while msb != 0 {
        let y = NEXP_TABLE[if msb & 1 != 0 { i } else { 0 }] as u64 + 1;
        res = ((res as u64 * y) >> 16) as u32;
        i += 1;
        msb >>= 1;
    }
    res
}

/// `min_not_zero`.
fn min_not_zero(a: i32, b: i32) -> i32 {
    match (a, b) {
        (0, b) => b,
        (a, 0) => a,
        (a, b) => a.min(b),
    }
}

/// `DIV_ROUND_CLOSEST(x, d)` for a positive divisor: halves away from zero.
fn div_round_closest(x: i32, d: i32) -> i32 {
    if x > 0 {
        (x + d / 2) / d
    } else {
        (x - d / 2) / d
    }
}

/// CDG's module parameters (`/sys/module/tcp_cdg/parameters/*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CdgParams {
    /// `window`: rounds in the gradient's moving sum (a power of two ≤ 256).
    pub window: u32,
    /// `backoff_beta`: cwnd kept on a backoff, in 1/1024.
    pub backoff_beta: u32,
    /// `backoff_factor`: scales the gradient (µs) into the backoff probability's exponent.
    pub backoff_factor: u32,
    /// `hystart_detect`: 0 off, 1 ACK train, 2 delay, 3 both.
    pub hystart_detect: u32,
    /// `use_ineff`: backoffs in a row without effect before they stop (0: no limit).
    pub use_ineff: u32,
    /// `use_shadow`: a loss halves the shadow window when it is the larger.
    pub use_shadow: bool,
    /// `use_tolerance`: a loss while the queue is judged not full keeps cwnd.
    pub use_tolerance: bool,
}

impl Default for CdgParams {
    /// The kernel's module defaults.
    fn default() -> Self {
        CdgParams {
            window: 8,            // tcp_cdg.c: window
            backoff_beta: 724,    // tcp_cdg.c: backoff_beta = 0.7071 * 1024, truncated
            backoff_factor: 42,   // tcp_cdg.c: backoff_factor
            hystart_detect: 3,    // tcp_cdg.c: hystart_detect
            use_ineff: 5,         // tcp_cdg.c: use_ineff
            use_shadow: true,     // tcp_cdg.c: use_shadow
            use_tolerance: false, // tcp_cdg.c: use_tolerance
        }
    }
}

/// The largest value of the kernel's `uint` module parameters.
const UINT_MAX: f64 = u32::MAX as f64;

impl CdgParams {
    /// What a scenario may override. `window` and `backoff_beta` have the ranges
    /// `tcp_cdg_register` enforces (`window` must also be a power of two); the other
    /// `uint`s take any value, with the kernel's wrapping u32/u16 arithmetic.
    pub const TABLE: &'static [Param<CdgParams>] = &[
        Param {
            name: "window",
            kernel: "tcp_cdg.c: window",
            meaning: "rounds in the gradient's moving average (a power of two)",
            kind: Kind::Integer,
            min: 1.0,
            max: MAX_WINDOW as f64,
            field: |p| &mut p.window,
        },
        Param {
            name: "backoff_beta",
            kernel: "tcp_cdg.c: backoff_beta",
            meaning: "cwnd kept on a delay-gradient backoff, in 1/1024",
            kind: Kind::Integer,
            min: 0.0,
            max: BETA_SCALE as f64,
            field: |p| &mut p.backoff_beta,
        },
        Param {
            name: "backoff_factor",
            kernel: "tcp_cdg.c: backoff_factor",
            meaning: "backoff probability scale: P = 1 - exp(-gradient_us * backoff_factor / 1e6)",
            kind: Kind::Integer,
            min: 0.0,
            max: UINT_MAX,
            field: |p| &mut p.backoff_factor,
        },
        Param {
            name: "hystart_detect",
            kernel: "tcp_cdg.c: hystart_detect",
            meaning: "slow-start exit: 0 none, 1 ACK train, 2 delay increase, 3 both",
            kind: Kind::Integer,
            min: 0.0,
            max: (HYSTART_ACK_TRAIN | HYSTART_DELAY) as f64,
            field: |p| &mut p.hystart_detect,
        },
        Param {
            name: "use_ineff",
            kernel: "tcp_cdg.c: use_ineff",
            meaning: "backoffs in a row without a delay decrease before backoff stops (0: never stops)",
            kind: Kind::Integer,
            min: 0.0,
            max: UINT_MAX,
            field: |p| &mut p.use_ineff,
        },
        Param {
            name: "use_shadow",
            kernel: "tcp_cdg.c: use_shadow",
            meaning: "a loss after backoffs halves the shadow (Reno-like) window if it is larger",
            kind: Kind::Flag,
            min: 0.0,
            max: 1.0,
            field: |p| &mut p.use_shadow,
        },
        Param {
            name: "use_tolerance",
            kernel: "tcp_cdg.c: use_tolerance",
            meaning: "a loss while the gradients say the queue is not full keeps cwnd",
            kind: Kind::Flag,
            min: 0.0,
            max: 1.0,
            field: |p| &mut p.use_tolerance,
        },
    ];

    /// The defaults with named overrides applied (see `cc::params::apply`), and
    /// `window` a power of two (`tcp_cdg_register` refuses others with -EINVAL).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        let p = apply("cdg", Self::TABLE, CdgParams::default(), overrides)?;
        if !p.window.is_power_of_two() {
            let message = format!("must be a power of two in [1, {MAX_WINDOW}], got {}", p.window);
            return Err(ParamError { name: "window".into(), message });
        }
        Ok(p)
    }
}

/// `struct cdg_minmax`: a round's smallest and largest RTT (µs), or a gradient of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinMax {
    pub min: i32,
    pub max: i32,
}

impl MinMax {
    /// `v64 != 0`: any sample taken.
    fn is_set(self) -> bool {
        self.min != 0 || self.max != 0
    }
}

/// `enum cdg_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CdgState {
    #[default]
    Unknown = 0,
    NonFull = 1,
    Full = 2,
    Backoff = 3,
}

/// `struct cdg` and the module parameters, with the random stream of the backoff draws.
pub struct Cdg {
    p: CdgParams,
    rng: Rng,
    /// `rtt`, `rtt_prev`: this round's and the previous round's RTT extremes.
    pub rtt: MinMax,
    pub rtt_prev: MinMax,
    /// `gradients`: the last `window` gradients (allocated once, `tcp_cdg_init`).
    pub gradients: Vec<MinMax>,
    /// `gsum`: their sum.
    pub gsum: MinMax,
    pub gfilled: bool,
    pub tail: u8,
    pub state: CdgState,
    /// `delack`: the delayed-ACK filter's count.
    pub delack: u8,
    /// `rtt_seq`: snd_nxt at the round's start, in segments.
    pub rtt_seq: u64,
    pub shadow_wnd: u32,
    pub backoff_cnt: u16,
    pub sample_cnt: u16,
    /// `delay_min`: the smallest round minimum seen in slow start (µs).
    pub delay_min: i32,
    /// `last_ack`, `round_start`: the ACK train (µs clock, u32).
    pub last_ack: u32,
    pub round_start: u32,
    /// The last gradient sum (µs) and the backoffs taken, for plots.
    pub grad: i32,
    pub backoffs: u64,
}

impl Cdg {
    pub fn new(p: CdgParams, rng: Rng) -> Cdg {
        // `tcp_cdg_init`: no gradient array when window is 1.
        let gradients = if p.window > 1 { vec![MinMax::default(); p.window as usize] } else { Vec::new() };
        Cdg {
            p,
            rng,
            rtt: MinMax::default(),
            rtt_prev: MinMax::default(),
            gradients,
            gsum: MinMax::default(),
            gfilled: false,
            tail: 0,
            state: CdgState::Unknown,
            delack: 0,
            rtt_seq: 0,
            shadow_wnd: 0,
            backoff_cnt: 0,
            sample_cnt: 0,
            delay_min: 0,
            last_ack: 0,
            round_start: 0,
            grad: 0,
            backoffs: 0,
        }
    }

    /// Zero the per-connection state, keeping the gradient array (`memset` in
    /// `tcp_cdg_cwnd_event`, CA_EVENT_CWND_RESTART; `tcp_cdg_init`).
    fn reset(&mut self, c: &ConnInfo, w: &Window) {
        self.gradients.iter_mut().for_each(|g| *g = MinMax::default());
        (self.rtt, self.rtt_prev, self.gsum) = (MinMax::default(), MinMax::default(), MinMax::default());
        (self.gfilled, self.tail, self.state, self.delack) = (false, 0, CdgState::Unknown, 0);
        (self.backoff_cnt, self.sample_cnt, self.delay_min) = (0, 0, 0);
        (self.last_ack, self.round_start, self.grad) = (0, 0, 0);
        self.rtt_seq = c.snd_nxt;
        self.shadow_wnd = w.cwnd;
    }

    /// `tcp_cdg_hystart_update`: leave slow start (ssthresh = cwnd) at the end of an
    /// ACK train longer than half the minimum delay, or when the round's minimum RTT
    /// exceeds the smallest seen by 1/8.
    fn hystart_update(&mut self, c: &ConnInfo, w: &mut Window) {
        self.delay_min = min_not_zero(self.delay_min, self.rtt.min);
        if self.delay_min == 0 {
            return;
        }
        if self.p.hystart_detect & HYSTART_ACK_TRAIN != 0 && self.ack_train_ends(c) {
            w.ssthresh = w.cwnd;
            return;
        }
        if self.p.hystart_detect & HYSTART_DELAY != 0 {
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let d = self.delay_min as u32;
                let thresh = (d.wrapping_add(d / 8)).max(HYSTART_FLOOR_US) as i32;
                if self.rtt.min > thresh {
                    w.ssthresh = w.cwnd;
                }
            }
        }
    }

    /// The ACK-train half of `tcp_cdg_hystart_update` on the µs clock (`tcp_mstamp`,
    /// truncated to u32): a train restarts when not cwnd-limited, and ends slow start
    /// once it has lasted more than max(delay_min/2, 125) µs.
    fn ack_train_ends(&mut self, c: &ConnInfo) -> bool {
        let now_us = c.now.us() as u32;
        if self.last_ack == 0 || !c.is_cwnd_limited {
            self.last_ack = now_us;
            self.round_start = now_us;
        } else if (now_us.wrapping_sub(self.last_ack.wrapping_add(ACK_TRAIN_GAP_US)) as i32) < 0 {
            let base_owd = (self.delay_min as u32 / 2).max(HYSTART_FLOOR_US);
            self.last_ack = now_us;
            return (now_us.wrapping_sub(self.round_start.wrapping_add(base_owd)) as i32) > 0;
        }
        false
    }

    /// `tcp_cdg_grad`: this round's gradient into the moving sum; returns the sum (×
    /// window/filled while the window fills), from the minima if positive, else the
    /// maxima.
    fn gradient(&mut self) -> i32 {
        let mut gmin = self.rtt.min.wrapping_sub(self.rtt_prev.min);
        let mut gmax = self.rtt.max.wrapping_sub(self.rtt_prev.max);
        let window = self.p.window as i32;
        if !self.gradients.is_empty() {
            let old = self.gradients[self.tail as usize];
            self.gsum.min = self.gsum.min.wrapping_add(gmin.wrapping_sub(old.min));
            self.gsum.max = self.gsum.max.wrapping_add(gmax.wrapping_sub(old.max));
            self.gradients[self.tail as usize] = MinMax { min: gmin, max: gmax };
            self.tail = ((self.tail as u32 + 1) & (self.p.window - 1)) as u8;
            gmin = self.gsum.min;
            gmax = self.gsum.max;
        }
        let mut grad = if gmin > 0 { gmin } else { gmax };
        // Extrapolate while the window fills (`window == 1` keeps no array).
        if !self.gfilled {
            if self.tail == 0 {
                self.gfilled = true;
            } else {
                grad = grad.wrapping_mul(window) / self.tail as i32;
            }
        }
        if gmin <= EFFECTUAL_GRAD_US || gmax <= EFFECTUAL_GRAD_US {
            self.backoff_cnt = 0;
        }
        if self.p.use_tolerance {
            self.tolerance_state(gmin, gmax);
        }
        grad
    }

    /// The `use_tolerance` part of `tcp_cdg_grad`: the queue is full when the minima
    /// rise but the maxima do not, not full when both rise or the maxima fall.
    fn tolerance_state(&mut self, gmin: i32, gmax: i32) {
        let (gmin, gmax) = (div_round_closest(gmin, TOLERANCE_US), div_round_closest(gmax, TOLERANCE_US));
        if gmin > 0 && gmax <= 0 {
            self.state = CdgState::Full;
        } else if (gmin > 0 && gmax > 0) || gmax < 0 {
            self.state = CdgState::NonFull;
        }
    }

    /// `tcp_cdg_backoff`: back off with probability 1 − exp(−grad·backoff_factor/10⁶)
    /// unless `use_ineff` backoffs in a row went without effect.
    fn backoff(&mut self, w: &mut Window, grad: u32) -> bool {
        if self.rng.next_u32() <= nexp_u32(grad.wrapping_mul(self.p.backoff_factor)) {
            return false;
        }
        if self.p.use_ineff != 0 {
            self.backoff_cnt = self.backoff_cnt.wrapping_add(1);
            if self.backoff_cnt as u32 > self.p.use_ineff {
                return false;
            }
        }
        self.shadow_wnd = self.shadow_wnd.max(w.cwnd);
        self.state = CdgState::Backoff;
        self.backoffs += 1;
        w.enter_cwr = true;
        true
    }

    /// The round-end part of `tcp_cdg_cong_avoid`: a gradient once both rounds have
    /// samples, a new round, and maybe a backoff (then true).
    fn round_end(&mut self, c: &ConnInfo, w: &mut Window) -> bool {
        let mut grad = 0;
        if self.rtt_prev.is_set() {
            grad = self.gradient();
            self.grad = grad;
        }
        self.rtt_seq = c.snd_nxt;
        self.rtt_prev = self.rtt;
        self.rtt = MinMax::default();
        self.last_ack = 0;
        self.sample_cnt = 0;
        grad > 0 && self.backoff(w, grad as u32)
    }
}

impl CongestionControl for Cdg {
    fn name(&self) -> &'static str {
        "cdg"
    }

    /// `tcp_cdg_init`.
    fn init(&mut self, c: &ConnInfo, w: &mut Window) {
        self.reset(c, w);
    }

    /// `tcp_cdg_ssthresh`: cwnd·beta after a backoff; cwnd itself for a loss while the
    /// queue is not full (`use_tolerance`); otherwise half of cwnd, or of the shadow
    /// window when that is larger (`use_shadow`).
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        let cwnd = w.cwnd;
        if self.state == CdgState::Backoff {
            return MIN_SSTHRESH.max(cwnd.wrapping_mul(self.p.backoff_beta.min(BETA_SCALE)) >> 10);
        }
        if self.state == CdgState::NonFull && self.p.use_tolerance {
            return cwnd;
        }
        self.shadow_wnd = (self.shadow_wnd >> 1).min(cwnd);
        if self.p.use_shadow {
            return MIN_SSTHRESH.max(self.shadow_wnd).max(cwnd >> 1);
        }
        MIN_SSTHRESH.max(cwnd >> 1)
    }

    /// `tcp_cdg_cong_avoid` (the stack calls it outside a reduction only).
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if w.in_slow_start() && self.p.hystart_detect != 0 {
            self.hystart_update(c, w);
        }
        if c.snd_una > self.rtt_seq && self.rtt.is_set() && self.round_end(c, w) {
            return;
        }
        if !c.is_cwnd_limited {
            self.shadow_wnd = self.shadow_wnd.min(w.cwnd);
            return;
        }
        let prior = w.cwnd;
        Reno.cong_avoid(c, w, acked);
        let incr = w.cwnd.wrapping_sub(prior);
        self.shadow_wnd = self.shadow_wnd.max(self.shadow_wnd.wrapping_add(incr));
    }

    /// `tcp_cdg_acked`: the round's RTT extremes, through Hayes' delayed-ACK filter: with
    /// nothing SACKed, a one-segment ACK after stretch ACKs may only lower the minimum.
    /// `tp->sacked_out == 0` is read as `packets_out == inflight` (exact unless segments
    /// are also marked lost or retransmitted).
    fn pkts_acked(&mut self, c: &ConnInfo, _w: &mut Window, s: &AckSample) {
        if s.rtt_us <= 0 {
            return;
        }
        let rtt_us = s.rtt_us.min(i32::MAX as i64) as i32;
        if c.packets_out == c.inflight {
            if s.pkts_acked == 1 && self.delack > 0 {
                self.rtt.min = self.rtt.min.min(rtt_us);
                self.delack -= 1;
                return;
            } else if s.pkts_acked > 1 && self.delack < MAX_DELACK {
                self.delack += 1;
            }
        }
        self.rtt.min = min_not_zero(self.rtt.min, rtt_us);
        self.rtt.max = self.rtt.max.max(rtt_us);
    }

    /// `tcp_cdg_cwnd_event`.
    fn cwnd_event(&mut self, c: &ConnInfo, w: &mut Window, ev: CaEvent) {
        match ev {
            CaEvent::CwndRestart => self.reset(c, w),
            CaEvent::CompleteCwr => {
                self.state = CdgState::Unknown;
                self.rtt_seq = c.snd_nxt;
                self.rtt_prev = self.rtt;
                self.rtt = MinMax::default();
            }
            _ => {}
        }
    }

    // `undo_cwnd`: the kernel's ops use `tcp_reno_undo_cwnd`, the trait's default.

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    fn internals(&self) -> Internals {
        let mut m = Internals::new();
        m.insert("state", self.state as u8 as f64);
        m.insert("grad_us", self.grad as f64);
        m.insert("shadow_wnd", self.shadow_wnd as f64);
        m.insert("backoff_cnt", self.backoff_cnt as f64);
        m.insert("backoffs", self.backoffs as f64);
        m.insert("delay_min_us", self.delay_min as f64);
        m
    }
}

#[cfg(test)]
mod tests;
