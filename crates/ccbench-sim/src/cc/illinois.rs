//! TCP Illinois as Linux implements it (`net/ipv4/tcp_illinois.c`, Linux 6.1; unchanged
//! in mainline since but for the `tcp_snd_cwnd` accessors).
//!
//! A loss-based AIMD whose increase α and decrease β follow the queueing delay. Once per
//! round trip, with d_a the round's mean RTT and d_m the largest RTT ever, both less the
//! smallest ever: α falls from 10 (d_a ≤ d_m/100) along α = k1/(k2 + d_a) to 0.3 at
//! d_a = d_m; β rises linearly from 1/8 (d_a ≤ d_m/10) to 1/2 (d_a ≥ 8·d_m/10). cwnd
//! grows by α/cwnd per ACK and a loss keeps (1 − β)·cwnd. Below `win_thresh` segments,
//! and after an RTO, α = 1 and β = 1/2 (Reno). Fixed point: α in 1/128, β in 1/64.

use super::params::{apply, Kind, Param, ParamError};
use super::reno::slow_start;
use super::*;
use serde::Serialize;

/// `ALPHA_SHIFT`, `ALPHA_SCALE`: α in 1/128.
const ALPHA_SHIFT: u32 = 7;
const ALPHA_SCALE: u32 = 1 << ALPHA_SHIFT;
/// `ALPHA_MIN`: 3·128/10 = 38 (0.297).
const ALPHA_MIN: u32 = (3 * ALPHA_SCALE) / 10;
/// `ALPHA_MAX`: 10.0.
const ALPHA_MAX: u32 = 10 * ALPHA_SCALE;
/// `ALPHA_BASE`: 1.0, Reno's.
const ALPHA_BASE: u32 = ALPHA_SCALE;
/// `RTT_MAX`: samples are capped so that `dm·ALPHA_MAX` fits in 32 bits (3.36 s).
const RTT_MAX: u32 = u32::MAX / ALPHA_MAX;
/// `BETA_SHIFT`, `BETA_SCALE`: β in 1/64.
const BETA_SHIFT: u32 = 6;
const BETA_SCALE: u32 = 1 << BETA_SHIFT;
/// `BETA_MIN`: 1/8.
const BETA_MIN: u32 = BETA_SCALE / 8;
/// `BETA_MAX`, `BETA_BASE`: 1/2.
const BETA_MAX: u32 = BETA_SCALE / 2;
const BETA_BASE: u32 = BETA_MAX;
/// `alpha`: d1 = d_m/100 bounds the low-delay zone.
const D1_DIVISOR: u32 = 100;
/// `beta`: d2 = d_m/10 and d3 = 8·d_m/10 bound β's linear part.
const D2_DIVISOR: u32 = 10;
const D3_NUMERATOR: u32 = 8;
/// `tcp_illinois_init`: baseRTT before any sample.
const RTT_UNSET: u32 = 0x7fff_ffff;

/// Illinois's module parameters (`/sys/module/tcp_illinois/parameters/*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IllinoisParams {
    /// `win_thresh`: below this cwnd (segments) α and β stay Reno's.
    pub win_thresh: u32,
    /// `theta`: rounds of low delay before α may return to its maximum.
    pub theta: u32,
}

impl Default for IllinoisParams {
    /// The kernel's module defaults.
    fn default() -> Self {
        IllinoisParams {
            win_thresh: 15, // tcp_illinois.c: win_thresh
            theta: 5,       // tcp_illinois.c: theta
        }
    }
}

impl IllinoisParams {
    /// What a scenario may override. `win_thresh` is an `int` compared with the unsigned
    /// cwnd (a negative value would act as a huge one); `theta` is reached by the `u8`
    /// counter `rtt_low`, which wraps past 255.
    pub const TABLE: &'static [Param<IllinoisParams>] = &[
        Param {
            name: "win_thresh",
            kernel: "tcp_illinois.c: win_thresh",
            meaning: "cwnd (segments) below which alpha = 1 and beta = 1/2, as Reno",
            kind: Kind::Integer,
            min: 0.0,
            max: i32::MAX as f64,
            field: |p| &mut p.win_thresh,
        },
        Param {
            name: "theta",
            kernel: "tcp_illinois.c: theta",
            meaning: "rounds of low delay before alpha returns to its maximum of 10",
            kind: Kind::Integer,
            min: 1.0,
            max: u8::MAX as f64,
            field: |p| &mut p.theta,
        },
    ];

    /// The defaults with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("illinois", Self::TABLE, IllinoisParams::default(), overrides)
    }
}

/// `alpha` without its state: α for mean delay `da` and maximum delay `dm` above the
/// low-delay zone, α = (dm − d1)·αmax / ((dm − d1) + (da − d1)·(αmax − αmin)/αmin).
fn alpha_curve(da: u32, dm: u32) -> u32 {
    let d1 = dm / D1_DIVISOR;
    let (dm, da) = (dm - d1, da - d1);
    dm.wrapping_mul(ALPHA_MAX) / dm.wrapping_add(da.wrapping_mul(ALPHA_MAX - ALPHA_MIN) / ALPHA_MIN)
}

/// `beta`: 1/8 up to d2, 1/2 from d3, linear in between (in 1/64).
fn beta_curve(da: u32, dm: u32) -> u32 {
    let d2 = dm / D2_DIVISOR;
    if da <= d2 {
        return BETA_MIN;
    }
    let d3 = D3_NUMERATOR.wrapping_mul(dm) / D2_DIVISOR;
    if da >= d3 || d3 <= d2 {
        return BETA_MAX;
    }
    let num = (BETA_MIN.wrapping_mul(d3))
        .wrapping_sub(BETA_MAX.wrapping_mul(d2))
        .wrapping_add((BETA_MAX - BETA_MIN).wrapping_mul(da));
    num / (d3 - d2)
}

/// `struct illinois`.
#[derive(Clone, Debug)]
pub struct Illinois {
    p: IllinoisParams,
    /// `sum_rtt`, `cnt_rtt` (a `u16`): the current round's samples (µs).
    sum_rtt: u64,
    cnt_rtt: u16,
    /// `base_rtt`, `max_rtt`: the smallest and largest samples ever (µs).
    base_rtt: u32,
    max_rtt: u32,
    /// `end_seq`: snd_nxt at the round's start, in segments.
    end_seq: u64,
    /// `alpha` (1/128), `beta` (1/64).
    alpha: u32,
    beta: u32,
    /// `acked`: segments of the last ACK (a `u16`), counted by the next `cong_avoid`.
    acked: u16,
    /// `rtt_above`: the mean delay has left the low zone; `rtt_low`: rounds back in it.
    rtt_above: bool,
    rtt_low: u8,
    /// The last round's d_a and d_m (for `internals` only).
    da: u32,
    dm: u32,
}

impl Illinois {
    pub fn new(p: IllinoisParams) -> Self {
        Illinois {
            p,
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: RTT_UNSET,
            max_rtt: 0,
            end_seq: 0,
            alpha: ALPHA_MAX,
            beta: BETA_BASE,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
            da: 0,
            dm: 0,
        }
    }

    pub fn params(&self) -> &IllinoisParams {
        &self.p
    }

    /// `rtt_reset`: a new round from snd_nxt.
    fn rtt_reset(&mut self, c: &ConnInfo) {
        self.end_seq = c.snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt = 0;
    }

    /// `alpha`: the curve, with `theta` rounds of low delay before α returns to max.
    fn alpha(&mut self, da: u32, dm: u32) -> u32 {
        if da <= dm / D1_DIVISOR {
            if !self.rtt_above {
                return ALPHA_MAX;
            }
            self.rtt_low = self.rtt_low.wrapping_add(1);
            if (self.rtt_low as u32) < self.p.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        alpha_curve(da, dm)
    }

    /// `update_params`: once per round, α and β from the round's delays.
    fn update_params(&mut self, c: &ConnInfo, w: &Window) {
        if w.cwnd < self.p.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
        } else if self.cnt_rtt > 0 {
            // `max_delay`, `avg_delay` (the mean truncated to 32 bits, as the kernel's).
            let dm = self.max_rtt.wrapping_sub(self.base_rtt);
            let da = ((self.sum_rtt / self.cnt_rtt as u64) as u32).wrapping_sub(self.base_rtt);
            (self.da, self.dm) = (da, dm);
            self.alpha = self.alpha(da, dm);
            self.beta = beta_curve(da, dm);
        }
        self.rtt_reset(c);
    }

    /// Avoidance: +α/cwnd per segment, counted in `cwnd_cnt`.
    fn increase(&mut self, w: &mut Window) {
        w.cwnd_cnt = w.cwnd_cnt.wrapping_add(self.acked as u32);
        self.acked = 1;
        let delta = w.cwnd_cnt.wrapping_mul(self.alpha) >> ALPHA_SHIFT;
        if delta >= w.cwnd {
            w.cwnd = w.cwnd.wrapping_add(delta / w.cwnd).min(w.cwnd_clamp);
            w.cwnd_cnt = 0;
        }
    }
}

impl CongestionControl for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }

    /// `tcp_illinois_init`.
    fn init(&mut self, c: &ConnInfo, _w: &mut Window) {
        *self = Illinois::new(self.p.clone());
        self.rtt_reset(c);
    }

    /// `tcp_illinois_ssthresh`: keep (1 − β)·cwnd.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        let decr = w.cwnd.wrapping_mul(self.beta) >> BETA_SHIFT;
        w.cwnd.wrapping_sub(decr).max(MIN_SSTHRESH)
    }

    /// `tcp_illinois_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if c.snd_una > self.end_seq {
            self.update_params(c, w);
        }
        if !c.is_cwnd_limited {
            return;
        }
        if w.in_slow_start() {
            slow_start(w, acked);
        } else {
            self.increase(w);
        }
    }

    /// `tcp_illinois_acked`: the round's sum and count, and the extremes ever.
    fn pkts_acked(&mut self, _c: &ConnInfo, _w: &mut Window, s: &AckSample) {
        self.acked = s.pkts_acked as u16;
        if s.rtt_us < 0 {
            return;
        }
        let rtt = (s.rtt_us as u32).min(RTT_MAX);
        self.base_rtt = self.base_rtt.min(rtt);
        self.max_rtt = self.max_rtt.max(rtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
        self.sum_rtt += rtt as u64;
    }

    /// `tcp_illinois_state`: an RTO resets α and β to Reno's.
    fn set_state(&mut self, c: &ConnInfo, _w: &mut Window, new: CaState) {
        if new == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(c);
        }
    }

    /// `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    fn internals(&self) -> Internals {
        Internals::from([
            ("alpha", self.alpha as f64 / ALPHA_SCALE as f64),
            ("beta", self.beta as f64 / BETA_SCALE as f64),
            ("avg_delay_us", self.da as f64),
            ("max_delay_us", self.dm as f64),
            ("base_rtt_us", if self.base_rtt == RTT_UNSET { 0.0 } else { self.base_rtt as f64 }),
            ("max_rtt_us", self.max_rtt as f64),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(p: IllinoisParams, cwnd: u32, ssthresh: u32) -> (Illinois, ConnInfo, Window) {
        let c = ConnInfo { is_cwnd_limited: true, ..ConnInfo::default() };
        let mut w = Window::new(cwnd);
        w.ssthresh = ssthresh;
        let mut cc = Illinois::new(p);
        cc.init(&c, &mut w);
        (cc, c, w)
    }

    fn sample(cc: &mut Illinois, c: &ConnInfo, w: &mut Window, rtt_us: i64) {
        cc.pkts_acked(c, w, &AckSample { pkts_acked: 1, rtt_us, in_flight: w.cwnd });
    }

    /// A round: the samples, then an ACK past its right edge runs `cong_avoid`.
    fn round(cc: &mut Illinois, c: &mut ConnInfo, w: &mut Window, rtts: &[i64]) {
        for &r in rtts {
            sample(cc, c, w, r);
        }
        c.snd_una = c.snd_nxt + 1;
        c.snd_nxt = c.snd_una + w.cwnd as u64;
        cc.cong_avoid(c, w, 1);
    }

    #[test]
    fn alpha_follows_the_delay_curve() {
        // dm = 10 000, d1 = 100. da = 5000: da − d1 = 4900, dm − d1 = 9900:
        // 9900·1280 / (9900 + 4900·1242/38 = 9900 + 160152) = 12 672 000 / 170 052 = 74 (0.58).
        assert_eq!(alpha_curve(5_000, 10_000), 74);
        // da = dm: 12 672 000 / (9900 + 9900·1242/38 = 9900 + 323573) = 38 = ALPHA_MIN.
        assert_eq!(alpha_curve(10_000, 10_000), 38);
        // da = 1000: 12 672 000 / (9900 + 900·1242/38 = 9900 + 29415) = 322 (2.5).
        assert_eq!(alpha_curve(1_000, 10_000), 322);
    }

    #[test]
    fn beta_is_linear_between_a_tenth_and_eight_tenths_of_the_max_delay() {
        // dm = 10 000: d2 = 1000, d3 = 8000.
        assert_eq!(beta_curve(1_000, 10_000), 8);
        assert_eq!(beta_curve(8_000, 10_000), 32);
        assert_eq!(beta_curve(9_000, 10_000), 32);
        // Midway, 4500: (8·8000 − 32·1000 + 24·4500)/7000 = 140 000/7000 = 20.
        assert_eq!(beta_curve(4_500, 10_000), 20);
        // 5000: (64 000 − 32 000 + 120 000)/7000 = 21 (21.7).
        assert_eq!(beta_curve(5_000, 10_000), 21);
        // dm so small that d3 ≤ d2: 1/2.
        assert_eq!(beta_curve(1, 1), 32);
    }

    #[test]
    fn one_round_sets_alpha_and_beta_from_its_mean_delay() {
        let (mut cc, mut c, mut w) = flow(IllinoisParams::default(), 100, 100);
        // base 40 000, max 50 000, the round's mean 45 000: da = 5000, dm = 10 000.
        round(&mut cc, &mut c, &mut w, &[40_000, 50_000]);
        assert_eq!((cc.alpha, cc.beta, cc.da, cc.dm), (74, 21, 5_000, 10_000));
        // ssthresh keeps 100 − (100·21 >> 6 = 32) = 68.
        assert_eq!(cc.ssthresh(&c, &w), 68);
        // A quiet round (mean 40 050 ≤ base + d1): alpha stays 74 for theta − 1 = 4 rounds.
        for _ in 0..4 {
            round(&mut cc, &mut c, &mut w, &[40_050]);
            assert_eq!((cc.alpha, cc.beta), (74, 8));
        }
        round(&mut cc, &mut c, &mut w, &[40_050]);
        assert_eq!(cc.alpha, ALPHA_MAX, "the 5th low-delay round");
        // ssthresh with beta 1/8: 100 − (800 >> 6 = 12) = 88.
        assert_eq!(cc.ssthresh(&c, &w), 88);
    }

    #[test]
    fn avoidance_adds_alpha_over_cwnd_per_ack() {
        // alpha 10: delta = cnt·1280 >> 7 = 10·cnt reaches cwnd 100 at the 10th ACK.
        let (mut cc, c, mut w) = flow(IllinoisParams::default(), 100, 100);
        for n in 1..=10 {
            sample(&mut cc, &c, &mut w, 40_000);
            cc.cong_avoid(&c, &mut w, 1);
            assert_eq!(w.cwnd, if n < 10 { 100 } else { 101 }, "ACK {n}");
        }
        // alpha 1 (an RTO resets it): +1 per 101 ACKs.
        cc.set_state(&c, &mut w, CaState::Loss);
        for _ in 0..100 {
            cc.cong_avoid(&c, &mut w, 1);
        }
        assert_eq!((w.cwnd, w.cwnd_cnt), (101, 100));
        cc.cong_avoid(&c, &mut w, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt), (102, 0));
    }

    #[test]
    fn a_stretch_ack_counts_its_segments_once() {
        let (mut cc, c, mut w) = flow(IllinoisParams::default(), 100, 100);
        cc.pkts_acked(&c, &mut w, &AckSample { pkts_acked: 7, rtt_us: 40_000, in_flight: 100 });
        cc.cong_avoid(&c, &mut w, 7);
        assert_eq!(w.cwnd_cnt, 7);
        // A second cong_avoid without pkts_acked counts 1.
        cc.cong_avoid(&c, &mut w, 7);
        assert_eq!(w.cwnd_cnt, 8);
    }

    #[test]
    fn small_windows_use_reno_values_and_slow_start_is_renos() {
        let (mut cc, mut c, mut w) = flow(IllinoisParams::default(), 14, 14);
        round(&mut cc, &mut c, &mut w, &[40_000, 50_000]);
        assert_eq!((cc.alpha, cc.beta), (ALPHA_BASE, BETA_BASE), "cwnd 14 < win_thresh 15");
        assert_eq!(cc.ssthresh(&c, &w), 7);
        let (mut cc, c, mut w) = flow(IllinoisParams::default(), 10, 50);
        cc.cong_avoid(&c, &mut w, 4);
        assert_eq!(w.cwnd, 14);
        let c = ConnInfo { is_cwnd_limited: false, ..c };
        cc.cong_avoid(&c, &mut w, 4);
        assert_eq!(w.cwnd, 14);
    }

    #[test]
    fn samples_are_capped_at_rtt_max() {
        let (mut cc, c, mut w) = flow(IllinoisParams::default(), 100, 100);
        sample(&mut cc, &c, &mut w, 10_000_000);
        // u32::MAX / 1280 = 3 355 443.
        assert_eq!((cc.max_rtt, cc.sum_rtt), (3_355_443, 3_355_443));
        sample(&mut cc, &c, &mut w, -1);
        assert_eq!(cc.cnt_rtt, 1);
    }

    #[test]
    fn ssthresh_floor_and_undo() {
        let (mut cc, c, _) = flow(IllinoisParams::default(), 3, 3);
        // 3 − (3·32 >> 6 = 1) = 2; 2 − 1 = 1 → 2.
        assert_eq!(cc.ssthresh(&c, &Window::new(3)), 2);
        assert_eq!(cc.ssthresh(&c, &Window::new(2)), 2);
        let c = ConnInfo { prior_cwnd: 90, ..c };
        assert_eq!(cc.undo_cwnd(&c, &Window::new(60)), 90);
    }

    #[test]
    fn params_override_by_name_and_reject_out_of_range() {
        let one = |k: &str, x: f64| BTreeMap::from([(k.to_string(), x)]);
        let p = IllinoisParams::from_overrides(&one("theta", 2.0)).unwrap();
        assert_eq!(p, IllinoisParams { theta: 2, ..IllinoisParams::default() });
        assert_eq!(
            IllinoisParams::from_overrides(&one("theta", 256.0)).unwrap_err().to_string(),
            "theta: must be in [1, 255], got 256"
        );
        assert!(IllinoisParams::from_overrides(&one("win_thresh", -1.0)).is_err());
        // theta 2: one quiet round waits, the second restores alpha 10.
        let (mut cc, mut c, mut w) = flow(p, 100, 100);
        round(&mut cc, &mut c, &mut w, &[40_000, 50_000]);
        round(&mut cc, &mut c, &mut w, &[40_050]);
        assert_eq!(cc.alpha, 74);
        round(&mut cc, &mut c, &mut w, &[40_050]);
        assert_eq!(cc.alpha, ALPHA_MAX);
        // win_thresh 200: a 100-segment window is "small".
        let (mut cc, mut c, mut w) = flow(IllinoisParams::from_overrides(&one("win_thresh", 200.0)).unwrap(), 100, 100);
        round(&mut cc, &mut c, &mut w, &[40_000, 50_000]);
        assert_eq!((cc.alpha, cc.beta), (ALPHA_BASE, BETA_BASE));
    }
}
