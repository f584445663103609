//! TCP-NV ("New Vegas") as Linux implements it (`net/ipv4/tcp_nv.c`, Linux 6.1; later
//! kernels differ at most in the helper that draws the one random byte).
//!
//! NV estimates the rate each ACK shows, `in_flight` bytes over a moving average of the
//! RTT (in 100 bit/s: `in_flight · 80000 / avg_rtt`), keeps the largest of a round, and
//! once per round converts it into the window that rate needs at the minimum RTT
//! (`cwnd_by_slope = max_rate · min_rtt / (80000 · mss)`). Above that window plus
//! `nv_pad` segments it sees congestion and, given enough samples, cuts cwnd by 30% of
//! the excess and stops growing; at or below it minus `nv_pad_buffer` it lets cwnd grow
//! (Reno's +1 per RTT, slower after timeouts through `cwnd_growth_factor`). The minimum
//! RTT is the smallest averaged sample of the previous 3/4..5/4 × `nv_reset_period` s
//! (`nv_min_rtt`, refreshed from `nv_min_rtt_new`). A loss sets ssthresh to 80% of cwnd.
//!
//! The optional base RTT of the socket-ops BPF hook (`BPF_SOCK_OPS_BASE_RTT`) is absent,
//! as on a host without such a program: the RTT bounds it would set stay off.
//!
//! The simulator's `AckSample::in_flight` is the segments in flight before the ACK
//! (`prior_in_flight`); NV reads it in bytes (× mss). In 6.1 the stack passes
//! `mss · (delivered − rs.prior_delivered)`, the data delivered while the newest ACKed
//! segment was in flight: equal in a steady state, larger here while cwnd grows.
//! Sequence numbers (`snd_una`, `snd_nxt`) are whole segments, not bytes.

use super::params::{apply, Kind, Param, ParamError};
use super::reno::{cong_avoid_ai, slow_start};
use super::*;
use crate::base::rng::Rng;
use rand::Rng as _;
use serde::Serialize;

// The tunables of tcp_nv.c that are plain statics, not module parameters, in 6.1.
/// `nv_pad_buffer`: no growth within this many segments of `max_win`.
const NV_PAD_BUFFER: u32 = 2;
/// `nv_cong_dec_mult`: on congestion cwnd loses 30% (in 1/128: 30·128/100 = 38) of its
/// excess over `max_win`.
const NV_CONG_DEC_MULT: u32 = 30 * 128 / 100;
/// `nv_ssthresh_factor`: on congestion ssthresh = this · max_win / 8 (= max_win).
const NV_SSTHRESH_FACTOR: u32 = 8;
/// `nv_rtt_factor`: weight of a new sample in the RTT average, in 1/256 (one half).
const NV_RTT_FACTOR: u64 = 128;
/// `nv_loss_dec_factor`: on a loss ssthresh = cwnd · 819/1024 (80%).
const NV_LOSS_DEC_FACTOR: u32 = 819;
/// `nv_cwnd_growth_rate_neg`: after this many uncongested decisions a negative growth
/// factor (slower than Reno) rises by one.
const NV_CWND_GROWTH_RATE_NEG: u32 = 8;
/// `nv_cwnd_growth_rate_pos`: likewise for a factor ≥ 0; 0 keeps Reno's growth.
const NV_CWND_GROWTH_RATE_POS: u32 = 0;
/// `nv_dec_eval_min_calls`: samples needed before a cut in congestion avoidance.
const NV_DEC_EVAL_MIN_CALLS: u8 = 60;
/// `nv_inc_eval_min_calls`: samples needed before allowing growth.
const NV_INC_EVAL_MIN_CALLS: u8 = 20;
/// `nv_ssthresh_eval_min_calls`: samples needed before ending slow start.
const NV_SSTHRESH_EVAL_MIN_CALLS: u8 = 30;
/// `nv_stop_rtt_cnt`: rounds of growth allowed without a decision while cwnd is high.
const NV_STOP_RTT_CNT: u8 = 10;
/// `nv_rtt_min_cnt`: rounds before a congestion decision.
const NV_RTT_MIN_CNT: u8 = 2;

/// `NV_INIT_RTT`: no minimum RTT yet.
const NV_INIT_RTT: u32 = u32::MAX;
/// `NV_MIN_CWND`, `NV_MIN_CWND_GROW`, `NV_TSO_CWND_BOUND`: the per-connection floor
/// below which no decision is made starts at 4, grows by 2 per round seen by one ACK
/// only (TSO, LRO, coalescing), up to 81.
const NV_MIN_CWND: u8 = 4;
const NV_MIN_CWND_GROW: u8 = 2;
const NV_TSO_CWND_BOUND: u8 = 80;
/// `tcpnv_init`: the first min-RTT refresh comes 2 s in.
const FIRST_RESET_SECS: u32 = 2;
/// `tcpnv_acked`: the refresh period is `nv_reset_period · (384 + rand8) / 512` s.
const RESET_RAND_BASE: u64 = 384;
const RESET_RAND_SHIFT: u32 = 9;
/// `tcpnv_state`: the growth factor goes no lower than −8 (cwnd·256 per +1).
const GROWTH_FACTOR_MIN: i8 = -8;
/// `tcpnv_acked`: the rate is in 100 bit/s, 8·10^6 µs/s / 100 per byte·µs.
const RATE_SCALE: u64 = 80_000;
/// `tcpnv_cong_avoid`: the smallest AI divisor at a growth factor ≥ 0.
const AI_MIN_CNT: u32 = 4;

/// NV's module parameters (`/sys/module/tcp_nv/parameters/*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NvParams {
    /// `nv_pad`: segments queued in the network NV tolerates before cutting.
    pub nv_pad: u32,
    /// `nv_reset_period`: seconds between min-RTT refreshes (± 1/4, random).
    pub nv_reset_period: u32,
    /// `nv_min_cwnd`: NV's own cuts never take cwnd below this.
    pub nv_min_cwnd: u32,
}

impl Default for NvParams {
    /// The kernel's module defaults.
    fn default() -> Self {
        NvParams {
            nv_pad: 10,         // tcp_nv.c: nv_pad
            nv_reset_period: 5, // tcp_nv.c: nv_reset_period
            nv_min_cwnd: 2,     // tcp_nv.c: nv_min_cwnd
        }
    }
}

impl NvParams {
    /// The kernel takes any `int`. A negative pad or floor turns huge in the unsigned
    /// comparisons, and a floor of 0 lets a cut set cwnd to 0; the refresh interval
    /// `period · 639 · HZ` is an `int`, which holds periods up to 3360 s at HZ = 1000.
    pub const TABLE: &'static [Param<NvParams>] = &[
        Param {
            name: "nv_pad",
            kernel: "tcp_nv.c: nv_pad",
            meaning: "segments queued in the network above the rate's window before NV cuts cwnd",
            kind: Kind::Integer,
            min: 0.0,
            max: 1e6,
            field: |p| &mut p.nv_pad,
        },
        Param {
            name: "nv_reset_period",
            kernel: "tcp_nv.c: nv_reset_period",
            meaning: "seconds (randomised by ±1/4) over which the minimum RTT is taken before it is refreshed",
            kind: Kind::Integer,
            min: 1.0,
            max: 3360.0,
            field: |p| &mut p.nv_reset_period,
        },
        Param {
            name: "nv_min_cwnd",
            kernel: "tcp_nv.c: nv_min_cwnd",
            meaning: "segments below which NV's delay-based cuts never take cwnd",
            kind: Kind::Integer,
            min: 1.0,
            max: 1e6,
            field: |p| &mut p.nv_min_cwnd,
        },
    ];

    /// The defaults with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("nv", Self::TABLE, NvParams::default(), overrides)
    }
}

/// `after_eq` on 32-bit jiffies (`time_after_eq`).
fn time_after_eq(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

/// `struct tcpnv`, with the random stream behind `get_random_bytes` and the last
/// round's window figures (for `internals` only).
#[derive(Clone, Debug)]
pub struct Nv {
    p: NvParams,
    rng: Rng,
    /// `nv_min_rtt_reset_jiffies`: when `min_rtt_new` replaces `min_rtt`.
    min_rtt_reset_jiffies: u32,
    /// `cwnd_growth_factor`: < 0 grows slower than Reno (one per cwnd·2^−f ACKed).
    growth_factor: i8,
    /// `nv_allow_cwnd_growth`, `nv_reset`, `nv_catchup` (the last is never set in 6.1).
    allow_growth: bool,
    reset: bool,
    catchup: bool,
    /// `nv_eval_call_cnt`: samples since the last decision (saturates at 255).
    eval_call_cnt: u8,
    /// `ca->nv_min_cwnd`: the per-connection TSO floor, not the module parameter.
    ca_min_cwnd: u8,
    /// `nv_rtt_cnt`: rounds since the last decision (saturates at 255).
    rtt_cnt: u8,
    /// `nv_last_rtt`: the RTT average in µs (0 = none since the last reset).
    last_rtt: u32,
    /// `nv_min_rtt`, `nv_min_rtt_new` in µs.
    min_rtt: u32,
    min_rtt_new: u32,
    /// `nv_base_rtt`, `nv_lower_bound_rtt`: from the BPF hook; 0 here (off).
    base_rtt: u32,
    lower_bound_rtt: u32,
    /// `nv_rtt_max_rate`: the round's largest rate, in 100 bit/s.
    rtt_max_rate: u32,
    /// `nv_rtt_start_seq`: the round ends when `snd_una` passes it (segments).
    rtt_start_seq: u64,
    /// `nv_last_snd_una` (segments).
    last_snd_una: u64,
    /// `nv_no_cong_cnt`: consecutive uncongested decisions.
    no_cong_cnt: u32,
    /// The last round's `cwnd_by_slope` and `max_win`.
    cwnd_by_slope: u32,
    max_win: u32,
}

impl Nv {
    /// NV with `rng` as the source of `get_random_bytes`.
    pub fn new(p: NvParams, rng: Rng) -> Self {
        Nv {
            p,
            rng,
            min_rtt_reset_jiffies: 0,
            growth_factor: 0,
            allow_growth: true,
            reset: false,
            catchup: false,
            eval_call_cnt: 0,
            ca_min_cwnd: NV_MIN_CWND,
            rtt_cnt: 0,
            last_rtt: 0,
            min_rtt: NV_INIT_RTT,
            min_rtt_new: NV_INIT_RTT,
            base_rtt: 0,
            lower_bound_rtt: 0,
            rtt_max_rate: 0,
            rtt_start_seq: 0,
            last_snd_una: 0,
            no_cong_cnt: 0,
            cwnd_by_slope: 0,
            max_win: 0,
        }
    }

    pub fn params(&self) -> &NvParams {
        &self.p
    }

    /// `tcpnv_reset`: forget the round and the RTT average.
    fn reset_round(&mut self, c: &ConnInfo) {
        self.reset = false;
        self.no_cong_cnt = 0;
        self.rtt_cnt = 0;
        self.last_rtt = 0;
        self.rtt_max_rate = 0;
        self.rtt_start_seq = c.snd_una;
        self.eval_call_cnt = 0;
        self.last_snd_una = c.snd_una;
    }

    /// `nv_get_bounded_rtt`: clamp to [lower_bound_rtt, base_rtt] where those are set.
    fn bounded_rtt(&self, rtt: u32) -> u32 {
        if self.lower_bound_rtt > 0 && rtt < self.lower_bound_rtt {
            self.lower_bound_rtt
        } else if self.base_rtt > 0 && rtt > self.base_rtt {
            self.base_rtt
        } else {
            rtt
        }
    }

    /// `tcpnv_acked`: the moving average (half old, half new); the first sample since a
    /// reset also sets `nv_min_rtt` to twice itself.
    fn average_rtt(&mut self, rtt_us: i64) -> u32 {
        // `ack_sample.rtt_us` is an s32, here ≥ 0.
        let rtt = rtt_us as i32 as u32;
        let avg = if self.last_rtt > 0 {
            ((rtt as u64 * NV_RTT_FACTOR + self.last_rtt as u64 * (256 - NV_RTT_FACTOR)) >> 8) as u32
        } else {
            self.min_rtt = rtt << 1;
            rtt
        };
        self.last_rtt = avg;
        avg
    }

    /// `tcpnv_acked`: the rate in 100 bit/s, `in_flight` bytes · 8·10^6 / (avg_rtt · 100),
    /// truncated to 32 bits.
    fn rate(in_flight_bytes: u32, avg_rtt: u32) -> u32 {
        (in_flight_bytes as u64 * RATE_SCALE / avg_rtt.max(1) as u64) as u32
    }

    /// `tcpnv_acked`: every `nv_reset_period` s (± 1/4) the minimum of the period ending
    /// becomes `nv_min_rtt`, and the TSO floor halves (not below 4).
    fn refresh_min_rtt(&mut self, c: &ConnInfo) {
        if !time_after_eq(c.jiffies, self.min_rtt_reset_jiffies) {
            return;
        }
        self.min_rtt = self.min_rtt_new;
        self.min_rtt_new = NV_INIT_RTT;
        let rand: u8 = self.rng.gen();
        let ticks = (self.p.nv_reset_period as u64 * (RESET_RAND_BASE + rand as u64) * c.hz as u64) >> RESET_RAND_SHIFT;
        self.min_rtt_reset_jiffies = c.jiffies.wrapping_add(ticks as u32);
        self.ca_min_cwnd = (self.ca_min_cwnd / 2).max(NV_MIN_CWND);
    }

    /// `tcpnv_acked`: a round seen by a single ACK means the window is too small to
    /// measure (TSO, LRO, coalescing): raise the TSO floor, lengthen the round, grow.
    fn raise_tso_floor(&mut self, c: &ConnInfo, bytes_acked: u64) -> bool {
        let floor = self.ca_min_cwnd;
        let mss = c.mss as u64;
        if self.eval_call_cnt != 1 || bytes_acked < (floor as u64 - 1) * mss || floor > NV_TSO_CWND_BOUND {
            return false;
        }
        self.ca_min_cwnd = (floor + NV_MIN_CWND_GROW).min(NV_TSO_CWND_BOUND + 1);
        self.rtt_start_seq = c.snd_nxt + self.ca_min_cwnd as u64 * mss;
        self.eval_call_cnt = 0;
        self.allow_growth = true;
        true
    }

    /// `tcpnv_acked`, cwnd above `max_win`: with enough rounds and samples, stop growth,
    /// set ssthresh to `max_win` and cut cwnd by 30% of the excess (at least 2), or to
    /// `max_win` when within 2 of it. Returns whether the decision was made.
    fn congested(&mut self, w: &mut Window, max_win: u32) -> bool {
        if self.rtt_cnt < NV_RTT_MIN_CNT {
            return false;
        } else if w.ssthresh == INFINITE_SSTHRESH {
            if self.eval_call_cnt < NV_SSTHRESH_EVAL_MIN_CALLS {
                return false;
            }
        } else if self.eval_call_cnt < NV_DEC_EVAL_MIN_CALLS {
            if self.allow_growth && self.rtt_cnt > NV_STOP_RTT_CNT {
                self.allow_growth = false;
            }
            return false;
        }
        self.allow_growth = false;
        w.ssthresh = NV_SSTHRESH_FACTOR.wrapping_mul(max_win) >> 3;
        let excess = w.cwnd - max_win;
        if excess > 2 {
            let dec = (excess.wrapping_mul(NV_CONG_DEC_MULT) >> 7).max(2);
            w.cwnd = w.cwnd.wrapping_sub(dec);
        } else if NV_CONG_DEC_MULT > 0 {
            w.cwnd = max_win;
        }
        if self.growth_factor > 0 {
            self.growth_factor = 0;
        }
        self.no_cong_cnt = 0;
        true
    }

    /// `tcpnv_acked`, cwnd well below `max_win`: with enough samples, allow growth, and
    /// after `nv_cwnd_growth_rate_*` such decisions in a row speed it up by one step.
    /// Returns whether the decision was made.
    fn uncongested(&mut self) -> bool {
        if self.eval_call_cnt < NV_INC_EVAL_MIN_CALLS {
            return false;
        }
        self.allow_growth = true;
        self.no_cong_cnt = self.no_cong_cnt.wrapping_add(1);
        let step = if self.growth_factor < 0 {
            NV_CWND_GROWTH_RATE_NEG != 0 && self.no_cong_cnt > NV_CWND_GROWTH_RATE_NEG
        } else {
            NV_CWND_GROWTH_RATE_POS != 0 && self.no_cong_cnt > NV_CWND_GROWTH_RATE_POS
        };
        if step {
            self.growth_factor = self.growth_factor.saturating_add(1);
            self.no_cong_cnt = 0;
        }
        true
    }

    /// `tcpnv_acked` at the end of a round: compare cwnd with the window the round's
    /// best rate needs at the minimum RTT, plus `nv_pad`.
    fn end_round(&mut self, c: &ConnInfo, w: &mut Window, bytes_acked: u64) {
        self.rtt_start_seq = c.snd_nxt;
        self.rtt_cnt = self.rtt_cnt.saturating_add(1);
        if self.raise_tso_floor(c, bytes_acked) {
            return;
        }
        let slope_div = RATE_SCALE * c.mss.max(1) as u64;
        self.cwnd_by_slope = (self.rtt_max_rate as u64 * self.min_rtt as u64 / slope_div) as u32;
        let max_win = self.cwnd_by_slope.wrapping_add(self.p.nv_pad);
        self.max_win = max_win;
        let decided = if w.cwnd > max_win {
            self.congested(w, max_win)
        } else if w.cwnd <= max_win.wrapping_sub(NV_PAD_BUFFER) {
            self.uncongested()
        } else {
            false
        };
        if !decided {
            return;
        }
        self.eval_call_cnt = 0;
        self.rtt_cnt = 0;
        self.rtt_max_rate = 0;
        if w.cwnd < self.p.nv_min_cwnd {
            w.cwnd = self.p.nv_min_cwnd;
        }
    }
}

impl CongestionControl for Nv {
    fn name(&self) -> &'static str {
        "nv"
    }

    /// `tcpnv_init`. The BPF base-RTT hook answers nothing: no RTT bounds.
    fn init(&mut self, c: &ConnInfo, _w: &mut Window) {
        self.reset_round(c);
        self.base_rtt = 0;
        self.lower_bound_rtt = 0;
        self.allow_growth = true;
        self.min_rtt_reset_jiffies = c.jiffies.wrapping_add(FIRST_RESET_SECS.wrapping_mul(c.hz));
        self.min_rtt = NV_INIT_RTT;
        self.min_rtt_new = NV_INIT_RTT;
        self.ca_min_cwnd = NV_MIN_CWND;
        self.catchup = false;
        self.growth_factor = 0;
    }

    /// `tcpnv_recalc_ssthresh`: 80% of cwnd, at least 2.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        (w.cwnd.wrapping_mul(NV_LOSS_DEC_FACTOR) >> 10).max(MIN_SSTHRESH)
    }

    /// `tcpnv_cong_avoid`: slow start, then +1 per cwnd·2^−f ACKed (f < 0) or per
    /// max(4, cwnd·2^−f) (f ≥ 0), only while NV allows growth.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if !c.is_cwnd_limited || !self.allow_growth {
            return;
        }
        let mut acked = acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked);
            if acked == 0 {
                return;
            }
        }
        let cnt = if self.growth_factor < 0 {
            w.cwnd << self.growth_factor.unsigned_abs()
        } else {
            // Factors > 0 need `nv_cwnd_growth_rate_pos` > 0, never so in 6.1.
            w.cwnd.checked_shr(self.growth_factor as u32).unwrap_or(0).max(AI_MIN_CNT)
        };
        cong_avoid_ai(w, cnt, acked);
    }

    /// `tcpnv_acked`: the per-ACK rate and min-RTT bookkeeping, and once per round the
    /// congestion decision. Only in Open and Disorder, only with an RTT sample.
    fn pkts_acked(&mut self, c: &ConnInfo, w: &mut Window, s: &AckSample) {
        if s.rtt_us < 0 || !matches!(c.ca_state, CaState::Open | CaState::Disorder) {
            return;
        }
        if self.catchup && w.cwnd >= self.p.nv_min_cwnd {
            self.catchup = false;
            self.allow_growth = false;
        }
        let bytes_acked = c.snd_una.wrapping_sub(self.last_snd_una);
        self.last_snd_una = c.snd_una;
        if s.in_flight == 0 {
            return;
        }
        let avg_rtt = self.average_rtt(s.rtt_us);
        let rate = Self::rate(s.in_flight.wrapping_mul(c.mss), avg_rtt);
        self.rtt_max_rate = self.rtt_max_rate.max(rate);
        self.eval_call_cnt = self.eval_call_cnt.saturating_add(1);
        let bounded = self.bounded_rtt(avg_rtt);
        self.min_rtt = self.min_rtt.min(bounded);
        self.min_rtt_new = self.min_rtt_new.min(bounded);
        self.refresh_min_rtt(c);
        if self.rtt_start_seq < c.snd_una {
            self.end_round(c, w, bytes_acked);
        }
    }

    /// `tcpnv_state`: back in Open after a reduction, start over; entering a reduction,
    /// stop growth, and on a timeout slow the growth down one step (to −8 at most).
    fn set_state(&mut self, c: &ConnInfo, _w: &mut Window, new: CaState) {
        if new == CaState::Open && self.reset {
            self.reset_round(c);
        } else if matches!(new, CaState::Loss | CaState::Cwr | CaState::Recovery) {
            self.reset = true;
            self.allow_growth = false;
            if new == CaState::Loss {
                if self.growth_factor > 0 {
                    self.growth_factor = 0;
                }
                if NV_CWND_GROWTH_RATE_NEG != 0 && self.growth_factor > GROWTH_FACTOR_MIN {
                    self.growth_factor -= 1;
                }
            }
        }
    }

    /// `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    /// The RTTs read 0 while unset; the rate in Mbit/s.
    fn internals(&self) -> Internals {
        let rtt = |x: u32| if x == NV_INIT_RTT { 0.0 } else { x as f64 };
        Internals::from([
            ("min_rtt_us", rtt(self.min_rtt)),
            ("min_rtt_new_us", rtt(self.min_rtt_new)),
            ("avg_rtt_us", self.last_rtt as f64),
            ("max_rate_mbps", self.rtt_max_rate as f64 * 100.0 / 1e6),
            ("cwnd_by_slope", self.cwnd_by_slope as f64),
            ("max_win", self.max_win as f64),
            ("growth_factor", self.growth_factor as f64),
            ("allow_growth", self.allow_growth as u8 as f64),
            ("tso_min_cwnd", self.ca_min_cwnd as f64),
        ])
    }
}

#[cfg(test)]
mod tests;
