//! CUBIC as Linux implements it (`net/ipv4/tcp_cubic.c`, module version 2.3), with
//! HyStart in its µs form (the 2020 rework, Linux 5.7).
//!
//! The window follows W(t) = C·(t − K)³ + W_max after a reduction, evaluated one
//! min RTT ahead and turned into "ACKs per +1 segment" (`cnt`) for the stack's
//! additive-increase helper. Arithmetic is the kernel's fixed point: time in 1/1024 s
//! (`BICTCP_HZ`), C = bic_scale·10/1024, K from a table-and-Newton cube root; the epoch
//! clock runs on jiffies, RTTs in µs. The stack does the reductions themselves (PRR in
//! Recovery/CWR, cwnd = 1 on RTO); this file only supplies ssthresh and growth.

use super::params::{apply, Kind, Param, ParamError};
use super::reno::{cong_avoid_ai, slow_start};
use super::*;
use crate::time::usecs_to_jiffies;
use serde::Serialize;

/// `BICTCP_BETA_SCALE`: beta is a fraction of 1024.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: the cubic function's clock ticks 2^10 = 1024 times a second.
const BICTCP_HZ: u32 = 10;
/// `HYSTART_ACK_TRAIN`, `HYSTART_DELAY`: the bits of `hystart_detect`.
pub const HYSTART_ACK_TRAIN: u32 = 0x1;
pub const HYSTART_DELAY: u32 = 0x2;
/// `HYSTART_MIN_SAMPLES`: RTT samples in a round before the delay test runs.
const HYSTART_MIN_SAMPLES: u8 = 8;
/// `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`: clamp of the delay-test margin (µs).
const HYSTART_DELAY_MIN_US: u32 = 4_000;
const HYSTART_DELAY_MAX_US: u32 = 16_000;
/// `sk_gso_max_size` for an ordinary NIC (`GSO_MAX_SIZE`), used by `hystart_ack_delay`.
const GSO_MAX_SIZE: u64 = 65_536;
/// `hystart_ack_delay`: the TSO/GRO allowance is at most 1 ms.
const USEC_PER_MSEC: u64 = 1_000;
const USEC_PER_SEC: u64 = 1_000_000;
/// `bictcp_update`: when the target is at or below cwnd, grow by 1 per 100·cwnd ACKed.
const CNT_FLAT_FACTOR: u32 = 100;
/// `bictcp_update`: while W_max is unknown grow at least 5% per RTT (cnt ≤ 20).
const CNT_MAX_WITHOUT_WMAX: u32 = 20;
/// `bictcp_update`: at most 1 segment per 2 ACKed, i.e. ×1.5 per RTT (cnt ≥ 2).
const CNT_MIN: u32 = 2;

/// CUBIC's module parameters (`/sys/module/tcp_cubic/parameters/*`), with the kernel's
/// defaults. Overridable by name from a scenario file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CubicParams {
    // Growth and reduction.
    /// `beta`: multiplicative decrease, in 1/1024 (717 = 0.7002).
    pub beta: u32,
    /// `bic_scale`: C = bic_scale·10/1024 segments/s³ (41 → 0.4004).
    pub bic_scale: u32,
    /// `fast_convergence`: a loss below the previous W_max lowers W_max further.
    pub fast_convergence: bool,
    /// `tcp_friendliness`: never grow slower than an emulated AIMD flow.
    pub tcp_friendliness: bool,
    // Slow start.
    /// `initial_ssthresh` (segments); 0 leaves ssthresh infinite. Applied only with
    /// HyStart off, as in the kernel.
    pub initial_ssthresh: u32,
    /// `hystart`: hybrid slow start on.
    pub hystart: bool,
    /// `hystart_detect`: bitmask of `HYSTART_ACK_TRAIN` (1) and `HYSTART_DELAY` (2).
    pub hystart_detect: u32,
    /// `hystart_low_window`: HyStart is inactive below this cwnd (segments).
    pub hystart_low_window: u32,
    /// `hystart_ack_delta_us`: max gap between two ACKs of one train.
    pub hystart_ack_delta_us: u32,
}

impl Default for CubicParams {
    /// The kernel's module defaults.
    fn default() -> Self {
        CubicParams {
            beta: 717,                                         // tcp_cubic.c: beta
            bic_scale: 41,                                     // tcp_cubic.c: bic_scale
            fast_convergence: true,                            // tcp_cubic.c: fast_convergence
            tcp_friendliness: true,                            // tcp_cubic.c: tcp_friendliness
            initial_ssthresh: 0,                               // tcp_cubic.c: initial_ssthresh
            hystart: true,                                     // tcp_cubic.c: hystart
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY, // tcp_cubic.c: hystart_detect
            hystart_low_window: 16,                            // tcp_cubic.c: hystart_low_window
            hystart_ack_delta_us: 2_000,                       // tcp_cubic.c: hystart_ack_delta_us
        }
    }
}

impl CubicParams {
    /// What a scenario may override, with the ranges the fixed-point arithmetic of
    /// `cubictcp_register` and `bictcp_update` runs with.
    pub const TABLE: &'static [Param<CubicParams>] = &[
        Param {
            name: "beta",
            kernel: "tcp_cubic.c: beta",
            meaning: "multiplicative decrease in 1/1024 (717 = 0.7002); below 1024 so that beta_scale stays finite",
            kind: Kind::Integer,
            min: 1.0,
            max: (BETA_SCALE - 1) as f64,
            field: |p| &mut p.beta,
        },
        Param {
            name: "bic_scale",
            kernel: "tcp_cubic.c: bic_scale",
            meaning: "C = bic_scale*10/1024 segments/s^3 (41 = 0.4004)",
            kind: Kind::Integer,
            min: 1.0,
            max: 1024.0,
            field: |p| &mut p.bic_scale,
        },
        Param {
            name: "fast_convergence",
            kernel: "tcp_cubic.c: fast_convergence",
            meaning: "a loss below the previous W_max lowers W_max further",
            kind: Kind::Flag,
            min: 0.0,
            max: 1.0,
            field: |p| &mut p.fast_convergence,
        },
        Param {
            name: "tcp_friendliness",
            kernel: "tcp_cubic.c: tcp_friendliness",
            meaning: "never grow slower than an emulated Reno flow",
            kind: Kind::Flag,
            min: 0.0,
            max: 1.0,
            field: |p| &mut p.tcp_friendliness,
        },
        Param {
            name: "initial_ssthresh",
            kernel: "tcp_cubic.c: initial_ssthresh",
            meaning: "slow-start threshold in segments with HyStart off; 0 leaves it infinite",
            kind: Kind::Integer,
            min: 0.0,
            max: INFINITE_SSTHRESH as f64,
            field: |p| &mut p.initial_ssthresh,
        },
        Param {
            name: "hystart",
            kernel: "tcp_cubic.c: hystart",
            meaning: "hybrid slow start on",
            kind: Kind::Flag,
            min: 0.0,
            max: 1.0,
            field: |p| &mut p.hystart,
        },
        Param {
            name: "hystart_detect",
            kernel: "tcp_cubic.c: hystart_detect",
            meaning: "HyStart's exit tests, a bitmask: 1 = ACK train, 2 = delay increase",
            kind: Kind::Integer,
            min: 0.0,
            max: (HYSTART_ACK_TRAIN | HYSTART_DELAY) as f64,
            field: |p| &mut p.hystart_detect,
        },
        Param {
            name: "hystart_low_window",
            kernel: "tcp_cubic.c: hystart_low_window",
            meaning: "HyStart is inactive below this cwnd (segments)",
            kind: Kind::Integer,
            min: 0.0,
            max: 1e6,
            field: |p| &mut p.hystart_low_window,
        },
        Param {
            name: "hystart_ack_delta_us",
            kernel: "tcp_cubic.c: hystart_ack_delta_us",
            meaning: "the largest gap between two ACKs of one train (us)",
            kind: Kind::Integer,
            min: 0.0,
            max: 1e6,
            field: |p| &mut p.hystart_ack_delta_us,
        },
    ];

    /// The defaults with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("cubic", Self::TABLE, CubicParams::default(), overrides)
    }
}

/// `v[x] = cbrt(x << 18) - 1` for x in 0..64, hand-refined (tcp_cubic.c, Willy Tarreau):
/// the first guess of `cubic_root`.
const CBRT_GUESS: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168, 170, 173, 176, 179,
    181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224, 225, 227,
    229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
];

/// `cubic_root` (tcp_cubic.c): a table lookup on the top bits, then one Newton-Raphson
/// step, in the kernel's 32-bit arithmetic (average error 0.195%, so K is the kernel's,
/// not the exact cube root).
pub fn cubic_root(a: u64) -> u32 {
    if a < 64 {
        return (CBRT_GUESS[a as usize] as u32 + 35) >> 6;
    }
    // fls64(a) * 84 / 256 - 1 ≈ fls64(a) / 3 - 1.
    let b = (((64 - a.leading_zeros()) * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let mut x = ((CBRT_GUESS[shift] as u32 + 10) << b) >> 6;
    // x = (2x + a / x²) / 3, with x·(x−1) for x² and 341/1024 for 1/3.
    x = (2 * x).wrapping_add((a / (x as u64 * (x as u64 - 1))) as u32);
    (x.wrapping_mul(341)) >> 10
}

/// `after(a, b)` on 32-bit wrapping counters.
fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `struct bictcp` plus the constants `cubictcp_register` derives from the parameters.
#[derive(Clone, Debug)]
pub struct Cubic {
    p: CubicParams,
    /// `beta_scale` = 8·(1024 + beta)/3/(1024 − beta) in integer arithmetic (15).
    beta_scale: u32,
    /// `cube_rtt_scale` = bic_scale·10 (410): C in 1/1024.
    cube_rtt_scale: u32,
    /// `cube_factor` = 2^40 / cube_rtt_scale: turns W_max − cwnd into K³ in 1/1024 s.
    cube_factor: u64,

    /// ACKed segments per +1 segment of cwnd.
    cnt: u32,
    /// W_max (`last_max_cwnd`); 0 = unknown.
    last_max_cwnd: u32,
    /// cwnd and jiffy of the last `cnt` computation.
    last_cwnd: u32,
    last_time: u32,
    /// The plateau of the cubic function (`bic_origin_point`).
    origin: u32,
    /// Time from epoch start to the plateau, 1/1024 s (`bic_K`).
    k: u32,
    /// Minimum RTT seen since the last reset, µs (0 = none yet).
    delay_min_us: u32,
    /// Jiffy at which the current growth epoch began; 0 = no epoch.
    epoch_start: u32,
    /// Segments ACKed since the last emulated-AIMD increment.
    ack_cnt: u32,
    /// The emulated AIMD window (`tcp_cwnd`).
    tcp_cwnd: u32,
    /// The last computed target (kept only for `internals`).
    target: u32,

    // HyStart.
    found: bool,
    sample_cnt: u8,
    /// µs timestamps (`tcp_mstamp` truncated to 32 bits) of the round start and of the
    /// last ACK of the current train.
    round_start_us: u32,
    last_ack_us: u32,
    /// snd_nxt at the round start: the round ends when snd_una passes it.
    end_seq: u64,
    /// Min RTT of the current round, µs.
    curr_rtt_us: u32,
}

impl Cubic {
    /// `p` must be in the ranges `CubicParams::from_overrides` enforces (beta < 1024,
    /// bic_scale > 0).
    pub fn new(p: CubicParams) -> Self {
        let beta_scale = 8 * (BETA_SCALE + p.beta) / 3 / (BETA_SCALE - p.beta);
        let cube_rtt_scale = p.bic_scale * 10;
        let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale as u64;
        Cubic {
            p,
            beta_scale,
            cube_rtt_scale,
            cube_factor,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin: 0,
            k: 0,
            delay_min_us: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            target: 0,
            found: false,
            sample_cnt: 0,
            round_start_us: 0,
            last_ack_us: 0,
            end_seq: 0,
            curr_rtt_us: u32::MAX,
        }
    }

    pub fn params(&self) -> &CubicParams {
        &self.p
    }

    /// `bictcp_reset`: forget W_max, the epoch, delay_min and whether HyStart fired.
    fn reset(&mut self) {
        let fresh = Cubic::new(self.p.clone());
        // The HyStart round itself survives (the kernel's memset stops before it).
        *self = Cubic {
            sample_cnt: self.sample_cnt,
            round_start_us: self.round_start_us,
            last_ack_us: self.last_ack_us,
            end_seq: self.end_seq,
            curr_rtt_us: self.curr_rtt_us,
            ..fresh
        };
    }

    /// `bictcp_hystart_reset`: start a HyStart round now.
    fn hystart_reset(&mut self, c: &ConnInfo) {
        self.round_start_us = c.now.us() as u32;
        self.last_ack_us = self.round_start_us;
        self.end_seq = c.snd_nxt;
        self.curr_rtt_us = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `bictcp_update`: recompute `cnt` for the current cwnd.
    fn update(&mut self, c: &ConnInfo, cwnd: u32, acked: u32) {
        let now = c.jiffies;
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);

        // Nothing changed and less than HZ/32 elapsed: keep cnt.
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (c.hz / 32) as i32 {
            return;
        }
        // The cubic part runs at most once per jiffy within an epoch; a reduction
        // clears epoch_start, which forces it.
        if self.epoch_start == 0 || now != self.last_time {
            self.cubic_cnt(c, cwnd, acked);
        }
        if self.p.tcp_friendliness {
            self.friendly_cap(cwnd);
        }
        self.cnt = self.cnt.max(CNT_MIN);
    }

    /// The cubic function proper: target = origin ± C·|t − K|³ at t one delay_min ahead.
    fn cubic_cnt(&mut self, c: &ConnInfo, cwnd: u32, acked: u32) {
        let now = c.jiffies;
        self.last_cwnd = cwnd;
        self.last_time = now;

        if self.epoch_start == 0 {
            self.epoch_start = now;
            self.ack_cnt = acked;
            self.tcp_cwnd = cwnd;
            if self.last_max_cwnd <= cwnd {
                self.k = 0;
                self.origin = cwnd;
            } else {
                self.k = cubic_root(self.cube_factor * (self.last_max_cwnd - cwnd) as u64);
                self.origin = self.last_max_cwnd;
            }
        }

        // t in 1/1024 s: jiffies since the epoch began, plus delay_min rounded up to
        // whole jiffies. The kernel sign-extends the 32-bit difference into 64 bits.
        let since_epoch = now.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
        let t = since_epoch.wrapping_add(usecs_to_jiffies(self.delay_min_us as u64, c.hz));
        let t = (t << BICTCP_HZ) / c.hz as u64;
        let k = self.k as u64;
        let offs = t.abs_diff(k);
        let cube = (self.cube_rtt_scale as u64).wrapping_mul(offs).wrapping_mul(offs).wrapping_mul(offs);
        let delta = (cube >> (10 + 3 * BICTCP_HZ)) as u32;
        self.target = if t < k { self.origin.wrapping_sub(delta) } else { self.origin.wrapping_add(delta) };

        self.cnt = if self.target > cwnd { cwnd / (self.target - cwnd) } else { CNT_FLAT_FACTOR.wrapping_mul(cwnd) };
        if self.last_max_cwnd == 0 && self.cnt > CNT_MAX_WITHOUT_WMAX {
            self.cnt = CNT_MAX_WITHOUT_WMAX;
        }
    }

    /// TCP-friendly region: advance the emulated AIMD window (+1 per beta_scale/8·cwnd
    /// ACKed, ≈ 3(1−β)/(1+β) per RTT) and grow at least as fast as it.
    fn friendly_cap(&mut self, cwnd: u32) {
        let acks_per_increment = cwnd.wrapping_mul(self.beta_scale) >> 3;
        if acks_per_increment > 0 && self.ack_cnt > acks_per_increment {
            // The kernel's loop "while ack_cnt > d: ack_cnt -= d; tcp_cwnd++", in closed form.
            let increments = (self.ack_cnt - 1) / acks_per_increment;
            self.ack_cnt -= increments * acks_per_increment;
            self.tcp_cwnd = self.tcp_cwnd.wrapping_add(increments);
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
    }

    /// `hystart_ack_delay`: allowance for TSO/GRO aggregation, in µs.
    fn hystart_ack_delay(c: &ConnInfo) -> u32 {
        if c.pacing_rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * USEC_PER_SEC / c.pacing_rate).min(USEC_PER_MSEC) as u32
    }

    /// `hystart_update`: leave slow start (ssthresh = cwnd) on a long ACK train or an
    /// RTT increase within the round.
    fn hystart_update(&mut self, c: &ConnInfo, w: &mut Window, delay_us: u32) {
        if c.snd_una > self.end_seq {
            self.hystart_reset(c);
        }
        if w.cwnd < self.p.hystart_low_window {
            return;
        }

        if self.p.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = c.now.us() as u32;
            if (now.wrapping_sub(self.last_ack_us) as i32) <= self.p.hystart_ack_delta_us as i32 {
                self.last_ack_us = now;
                let mut threshold = self.delay_min_us.wrapping_add(Self::hystart_ack_delay(c));
                // An unpaced sender's train is the classic "longer than min RTT / 2";
                // pacing may spread slow-start packets over the whole RTT.
                if !c.paced {
                    threshold >>= 1;
                }
                // Unsigned comparison, as in the kernel (s32 promoted against u32).
                if now.wrapping_sub(self.round_start_us) > threshold {
                    self.found = true;
                    w.ssthresh = w.cwnd;
                }
            }
        }

        if self.p.hystart_detect & HYSTART_DELAY != 0 {
            self.curr_rtt_us = self.curr_rtt_us.min(delay_us);
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let margin = (self.delay_min_us >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
                if self.curr_rtt_us > self.delay_min_us.wrapping_add(margin) {
                    self.found = true;
                    w.ssthresh = w.cwnd;
                }
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// `cubictcp_init`.
    fn init(&mut self, c: &ConnInfo, w: &mut Window) {
        self.reset();
        if self.p.hystart {
            self.hystart_reset(c);
        }
        if !self.p.hystart && self.p.initial_ssthresh != 0 {
            w.ssthresh = self.p.initial_ssthresh;
        }
    }

    /// `cubictcp_recalc_ssthresh`: end the epoch, remember W_max (lowered further by
    /// fast convergence when this loss came below the previous one), cut to β·cwnd.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        self.epoch_start = 0;
        self.last_max_cwnd = if w.cwnd < self.last_max_cwnd && self.p.fast_convergence {
            w.cwnd.wrapping_mul(BETA_SCALE + self.p.beta) / (2 * BETA_SCALE)
        } else {
            w.cwnd
        };
        (w.cwnd.wrapping_mul(self.p.beta) / BETA_SCALE).max(MIN_SSTHRESH)
    }

    /// `cubictcp_cong_avoid`.
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
        self.update(c, w.cwnd, acked);
        cong_avoid_ai(w, self.cnt, acked);
    }

    /// `cubictcp_acked`: delay_min, then HyStart while in slow start.
    fn pkts_acked(&mut self, c: &ConnInfo, w: &mut Window, s: &AckSample) {
        if s.rtt_us < 0 {
            return;
        }
        // The first second of an epoch follows a reduction: its RTTs are inflated by
        // the queue that caused it.
        if self.epoch_start != 0 && (c.jiffies.wrapping_sub(self.epoch_start) as i32) < c.hz as i32 {
            return;
        }
        let delay_us = (s.rtt_us as u32).max(1);
        if self.delay_min_us == 0 || self.delay_min_us > delay_us {
            self.delay_min_us = delay_us;
        }
        if !self.found && w.in_slow_start() && self.p.hystart {
            self.hystart_update(c, w, delay_us);
        }
    }

    /// `cubictcp_state`: an RTO forgets everything learned.
    fn set_state(&mut self, c: &ConnInfo, _w: &mut Window, new: CaState) {
        if new == CaState::Loss {
            self.reset();
            self.hystart_reset(c);
        }
    }

    /// `cubictcp_cwnd_event`: after an idle period, shift the epoch by the idle time so
    /// the curve resumes where it stopped.
    fn cwnd_event(&mut self, c: &ConnInfo, _w: &mut Window, ev: CaEvent) {
        if ev != CaEvent::TxStart {
            return;
        }
        let now = c.jiffies;
        // now − lsndtime in jiffies, taken from simulated time so that it does not
        // matter where the stack's jiffies counter starts.
        let idle = c.now.jiffies(c.hz).wrapping_sub(c.lsndtime.jiffies(c.hz)) as i32;
        if self.epoch_start != 0 && idle > 0 {
            self.epoch_start = self.epoch_start.wrapping_add(idle as u32);
            if after(self.epoch_start, now) {
                self.epoch_start = now;
            }
        }
    }

    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    fn internals(&self) -> Internals {
        Internals::from([
            ("w_max", self.last_max_cwnd as f64),
            ("origin", self.origin as f64),
            ("target", self.target as f64),
            ("k_s", self.k as f64 / (1u32 << BICTCP_HZ) as f64),
            ("epoch_start_jiffies", self.epoch_start as f64),
            ("delay_min_us", self.delay_min_us as f64),
            ("hystart_found", self.found as u8 as f64),
            ("cnt", self.cnt as f64),
            ("tcp_cwnd", self.tcp_cwnd as f64),
        ])
    }
}

#[cfg(test)]
mod tests;
