//! TCP Vegas as Linux implements it (`net/ipv4/tcp_vegas.c` and `tcp_vegas.h`, Linux
//! 6.1; unchanged in mainline since but for the `tcp_snd_cwnd` accessors).
//!
//! Once per round trip (when the ACK passes the `snd_nxt` recorded at the previous
//! round's end) Vegas compares the window with what the path carries at the base RTT:
//! `diff = cwnd·(rtt − baseRTT)/baseRTT` segments queued, with `rtt` the smallest RTT
//! sample of the round and `baseRTT` the smallest ever. In congestion avoidance it adds
//! a segment below `alpha`, removes one above `beta` and holds in between; in slow start
//! it leaves for avoidance (cwnd cut to the actual rate × baseRTT, + 1) once `diff`
//! exceeds `gamma`. With fewer than three samples in the round, or outside the Open
//! state, it behaves as Reno. Losses are Reno's (`tcp_reno_ssthresh`).
//!
//! [`VegasState`] is `struct vegas` with the hooks the kernel exports from this file
//! (`tcp_vegas_init`, `_pkts_acked`, `_state`, `_cwnd_event`): YeAH builds on them.

use super::params::{apply, Kind, Param, ParamError};
use super::reno::{slow_start, Reno};
use super::*;
use serde::Serialize;

/// `vegas_enable`, `tcp_vegas_init`: minRTT and baseRTT before any sample.
pub const RTT_UNSET: u32 = 0x7fff_ffff;
/// `tcp_vegas_cong_avoid`: a round with this many RTT samples or fewer is likely all
/// delayed ACKs, and Vegas leaves it to Reno.
pub const MIN_RTT_SAMPLES: u16 = 2;
/// `tcp_vegas_cong_avoid`: the window floor after an adjustment.
const MIN_CWND: u32 = 2;
/// The largest value of the kernel's `int` module parameters.
const INT_MAX: f64 = i32::MAX as f64;

/// Vegas's module parameters (`/sys/module/tcp_vegas/parameters/*`), in segments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VegasParams {
    /// `alpha`: below this many queued segments, grow by one per RTT.
    pub alpha: u32,
    /// `beta`: above this many queued segments, shrink by one per RTT.
    pub beta: u32,
    /// `gamma`: above this many queued segments, leave slow start.
    pub gamma: u32,
}

impl Default for VegasParams {
    /// The kernel's module defaults.
    fn default() -> Self {
        VegasParams {
            alpha: 2, // tcp_vegas.c: alpha
            beta: 4,  // tcp_vegas.c: beta
            gamma: 1, // tcp_vegas.c: gamma
        }
    }
}

impl VegasParams {
    /// What a scenario may override. The kernel holds `int`s and compares them with the
    /// unsigned `diff`, so a negative value would act as a huge one: the ranges stop at 0.
    pub const TABLE: &'static [Param<VegasParams>] = &[
        Param {
            name: "alpha",
            kernel: "tcp_vegas.c: alpha",
            meaning: "lower bound of segments queued in the network: below it cwnd grows by 1 per RTT",
            kind: Kind::Integer,
            min: 0.0,
            max: INT_MAX,
            field: |p| &mut p.alpha,
        },
        Param {
            name: "beta",
            kernel: "tcp_vegas.c: beta",
            meaning: "upper bound of segments queued in the network: above it cwnd shrinks by 1 per RTT",
            kind: Kind::Integer,
            min: 0.0,
            max: INT_MAX,
            field: |p| &mut p.beta,
        },
        Param {
            name: "gamma",
            kernel: "tcp_vegas.c: gamma",
            meaning: "segments queued in the network above which slow start ends",
            kind: Kind::Integer,
            min: 0.0,
            max: INT_MAX,
            field: |p| &mut p.gamma,
        },
    ];

    /// The defaults with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("vegas", Self::TABLE, VegasParams::default(), overrides)
    }
}

/// `tcp_current_ssthresh` (include/net/tcp.h): during a CWR/Recovery reduction the
/// threshold itself, otherwise at least 3/4 of cwnd.
pub fn current_ssthresh(c: &ConnInfo, w: &Window) -> u32 {
    if matches!(c.ca_state, CaState::Cwr | CaState::Recovery) {
        w.ssthresh
    } else {
        w.ssthresh.max((w.cwnd >> 1) + (w.cwnd >> 2))
    }
}

/// `struct vegas` (tcp_vegas.h). Sequence numbers are in segments, RTTs in µs + 1.
#[derive(Clone, Debug, Default)]
pub struct VegasState {
    /// `beg_snd_nxt`: snd_nxt when the current round began; an ACK past it ends the round.
    pub beg_snd_nxt: u64,
    /// `beg_snd_una`, `beg_snd_cwnd`: kept by YeAH only.
    pub beg_snd_una: u64,
    pub beg_snd_cwnd: u32,
    /// `doing_vegas_now`: Vegas adjusts cwnd this round (Open state).
    pub doing_vegas_now: bool,
    /// `cntRTT`: RTT samples in the current round (a `u16`, as in the kernel).
    pub cnt_rtt: u16,
    /// `minRTT`: the smallest sample of the current round.
    pub min_rtt: u32,
    /// `baseRTT`: the smallest sample since the last (re)start.
    pub base_rtt: u32,
}

impl VegasState {
    /// `vegas_enable`: sample from the next round on.
    fn enable(&mut self, c: &ConnInfo) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = c.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = RTT_UNSET;
    }

    /// `tcp_vegas_init`: forget baseRTT and start over.
    pub fn init(&mut self, c: &ConnInfo) {
        self.base_rtt = RTT_UNSET;
        self.enable(c);
    }

    /// `tcp_vegas_pkts_acked`: min-filter the sample into minRTT and baseRTT.
    pub fn pkts_acked(&mut self, s: &AckSample) {
        if s.rtt_us < 0 {
            return;
        }
        // + 1 so that neither RTT is ever 0 (`ack_sample.rtt_us` is an s32).
        let vrtt = (s.rtt_us as u32).wrapping_add(1);
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
    }

    /// `tcp_vegas_state`: on in Open (a fresh round), off in any other state.
    pub fn set_state(&mut self, c: &ConnInfo, new: CaState) {
        if new == CaState::Open {
            self.enable(c);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// `tcp_vegas_cwnd_event`: a restart after idle starts over.
    pub fn cwnd_event(&mut self, c: &ConnInfo, ev: CaEvent) {
        if matches!(ev, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.init(c);
        }
    }

    /// `after(ack, beg_snd_nxt)`: this ACK ends the round.
    pub fn round_ended(&self, c: &ConnInfo) -> bool {
        c.snd_una > self.beg_snd_nxt
    }

    /// The end of `tcp_vegas_cong_avoid`'s round: clear the round's samples.
    pub fn clear_samples(&mut self) {
        self.cnt_rtt = 0;
        self.min_rtt = RTT_UNSET;
    }

    /// The state for time series; an unset RTT reads 0.
    pub fn internals(&self, out: &mut Internals) {
        let rtt = |x: u32| if x == RTT_UNSET { 0.0 } else { x as f64 };
        out.insert("base_rtt_us", rtt(self.base_rtt));
        out.insert("min_rtt_us", rtt(self.min_rtt));
        out.insert("cnt_rtt", self.cnt_rtt as f64);
        out.insert("doing_vegas_now", self.doing_vegas_now as u8 as f64);
    }
}

/// `tcp_vegas`: the parameters, `struct vegas`, and the last round's figures (for
/// `internals` only).
#[derive(Clone, Debug)]
pub struct Vegas {
    p: VegasParams,
    v: VegasState,
    /// The last round's `diff` and `target_cwnd`.
    diff: u32,
    target_cwnd: u32,
}

impl Vegas {
    pub fn new(p: VegasParams) -> Self {
        Vegas { p, v: VegasState::default(), diff: 0, target_cwnd: 0 }
    }

    pub fn params(&self) -> &VegasParams {
        &self.p
    }

    /// The once-per-round adjustment of `tcp_vegas_cong_avoid`, with enough samples.
    fn adjust(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        let rtt = self.v.min_rtt;
        let base = self.v.base_rtt;
        // The window that would carry the round's actual rate at baseRTT, and the
        // segments queued beyond it.
        let target_cwnd = (w.cwnd as u64 * base as u64 / rtt as u64) as u32;
        let diff = w.cwnd.wrapping_mul(rtt.wrapping_sub(base)) / base;
        (self.diff, self.target_cwnd) = (diff, target_cwnd);

        if diff > self.p.gamma && w.in_slow_start() {
            // Too fast: match the actual rate (+1 for the truncation) and leave slow start.
            w.cwnd = w.cwnd.min(target_cwnd.wrapping_add(1));
            w.ssthresh = w.ssthresh.min(w.cwnd);
        } else if w.in_slow_start() {
            slow_start(w, acked);
        } else if diff > self.p.beta {
            w.cwnd = w.cwnd.wrapping_sub(1);
            w.ssthresh = w.ssthresh.min(w.cwnd);
        } else if diff < self.p.alpha {
            w.cwnd = w.cwnd.wrapping_add(1);
        }

        if w.cwnd < MIN_CWND {
            w.cwnd = MIN_CWND;
        } else if w.cwnd > w.cwnd_clamp {
            w.cwnd = w.cwnd_clamp;
        }
        w.ssthresh = current_ssthresh(c, w);
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    /// `tcp_vegas_init`.
    fn init(&mut self, c: &ConnInfo, _w: &mut Window) {
        self.v.init(c);
    }

    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        Reno.ssthresh(c, w)
    }

    /// `tcp_vegas_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if !self.v.doing_vegas_now {
            return Reno.cong_avoid(c, w, acked);
        }
        if self.v.round_ended(c) {
            self.v.beg_snd_nxt = c.snd_nxt;
            if self.v.cnt_rtt <= MIN_RTT_SAMPLES {
                Reno.cong_avoid(c, w, acked);
            } else {
                self.adjust(c, w, acked);
            }
            self.v.clear_samples();
        } else if w.in_slow_start() {
            slow_start(w, acked);
        }
    }

    /// `tcp_vegas_pkts_acked`.
    fn pkts_acked(&mut self, _c: &ConnInfo, _w: &mut Window, s: &AckSample) {
        self.v.pkts_acked(s);
    }

    /// `tcp_vegas_state`.
    fn set_state(&mut self, c: &ConnInfo, _w: &mut Window, new: CaState) {
        self.v.set_state(c, new);
    }

    /// `tcp_vegas_cwnd_event`.
    fn cwnd_event(&mut self, c: &ConnInfo, _w: &mut Window, ev: CaEvent) {
        self.v.cwnd_event(c, ev);
    }

    /// `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    fn internals(&self) -> Internals {
        let mut out = Internals::from([("diff", self.diff as f64), ("target_cwnd", self.target_cwnd as f64)]);
        self.v.internals(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection in Open, cwnd-limited, at sequence 0, with Vegas initialised.
    fn flow(cwnd: u32, ssthresh: u32) -> (Vegas, ConnInfo, Window) {
        let c = ConnInfo { is_cwnd_limited: true, ..ConnInfo::default() };
        let mut w = Window::new(cwnd);
        w.ssthresh = ssthresh;
        let mut cc = Vegas::new(VegasParams::default());
        cc.init(&c, &mut w);
        (cc, c, w)
    }

    /// One round: `n` ACKs each with an RTT sample of `rtt_us`, then an ACK that passes
    /// the round's right edge (acking `acked` segments) and runs `cong_avoid`.
    fn round(cc: &mut Vegas, c: &mut ConnInfo, w: &mut Window, rtt_us: i64, n: u32, acked: u32) {
        for _ in 0..n {
            cc.pkts_acked(c, w, &AckSample { pkts_acked: 1, rtt_us, in_flight: w.cwnd });
        }
        c.snd_una = c.snd_nxt + 1;
        c.snd_nxt = c.snd_una + w.cwnd as u64;
        cc.cong_avoid(c, w, acked);
    }

    /// A flow in avoidance at cwnd 20 whose baseRTT is 40 000 (samples of 39 999 µs + 1).
    fn avoidance_at_20() -> (Vegas, ConnInfo, Window) {
        let (mut cc, mut c, mut w) = flow(19, 19);
        // diff = 19·0/40000 = 0 < alpha: +1.
        round(&mut cc, &mut c, &mut w, 39_999, 3, 1);
        assert_eq!((w.cwnd, cc.v.base_rtt), (20, 40_000));
        (cc, c, w)
    }

    #[test]
    fn below_alpha_adds_one_segment() {
        let (mut cc, mut c, mut w) = avoidance_at_20();
        // rtt 41 000: diff = 20·1000/40000 = 0 < 2.
        round(&mut cc, &mut c, &mut w, 40_999, 3, 1);
        assert_eq!((w.cwnd, cc.diff), (21, 0));
        // rtt 43 000 at cwnd 21: diff = 21·3000/40000 = 1 (1.575) < 2.
        round(&mut cc, &mut c, &mut w, 42_999, 3, 1);
        assert_eq!((w.cwnd, cc.diff), (22, 1));
    }

    #[test]
    fn between_alpha_and_beta_holds() {
        for (rtt, diff) in [(44_000, 2), (46_000, 3), (48_000, 4)] {
            let (mut cc, mut c, mut w) = avoidance_at_20();
            // diff = 20·(rtt − 40000)/40000: 20·4000/40000 = 2, 20·6000/40000 = 3, 20·8000/40000 = 4.
            round(&mut cc, &mut c, &mut w, rtt - 1, 3, 1);
            assert_eq!((w.cwnd, cc.diff), (20, diff), "rtt {rtt}");
            // ssthresh: max(19, 20/2 + 20/4 = 15) = 19 (tcp_current_ssthresh).
            assert_eq!(w.ssthresh, 19);
        }
    }

    #[test]
    fn above_beta_removes_one_segment() {
        let (mut cc, mut c, mut w) = avoidance_at_20();
        // rtt 50 000: diff = 20·10000/40000 = 5 > 4: cwnd 19, ssthresh min(19, 19) = 19,
        // then max(19, 9 + 4) = 19.
        round(&mut cc, &mut c, &mut w, 49_999, 3, 1);
        assert_eq!((w.cwnd, w.ssthresh, cc.diff), (19, 19, 5));
        // rtt 80 000 at cwnd 19: diff = 19·40000/40000 = 19: cwnd 18, ssthresh 18.
        round(&mut cc, &mut c, &mut w, 79_999, 3, 1);
        assert_eq!((w.cwnd, w.ssthresh, cc.diff), (18, 18, 19));
    }

    #[test]
    fn the_round_takes_the_smallest_sample_and_base_rtt_the_smallest_ever() {
        let (mut cc, mut c, mut w) = avoidance_at_20();
        for rtt in [59_999, 45_999, 70_000] {
            cc.pkts_acked(&c, &mut w, &AckSample { pkts_acked: 1, rtt_us: rtt, in_flight: 20 });
        }
        // No sample (-1) changes nothing.
        cc.pkts_acked(&c, &mut w, &AckSample { pkts_acked: 1, rtt_us: -1, in_flight: 20 });
        assert_eq!((cc.v.min_rtt, cc.v.cnt_rtt, cc.v.base_rtt), (46_000, 3, 40_000));
        // diff = 20·6000/40000 = 3: hold.
        round(&mut cc, &mut c, &mut w, 0, 0, 1);
        assert_eq!((w.cwnd, cc.diff), (20, 3));
        assert_eq!((cc.v.min_rtt, cc.v.cnt_rtt), (RTT_UNSET, 0));
    }

    #[test]
    fn slow_start_ends_when_diff_exceeds_gamma() {
        let (mut cc, mut c, mut w) = flow(40, INFINITE_SSTHRESH);
        round(&mut cc, &mut c, &mut w, 39_999, 3, 1);
        // diff 0 ≤ gamma: slow start, +1 for the one segment ACKed.
        assert_eq!((w.cwnd, w.ssthresh), (41, INFINITE_SSTHRESH));
        // rtt 44 000 at cwnd 41: diff = 41·4000/40000 = 4 > 1; target = 41·40000/44000 =
        // 37 (37.27); cwnd = min(41, 38) = 38, ssthresh = 38 (3/4 of 38 is 28).
        round(&mut cc, &mut c, &mut w, 43_999, 3, 1);
        assert_eq!((w.cwnd, w.ssthresh, cc.diff, cc.target_cwnd), (38, 38, 4, 37));
        assert!(!w.in_slow_start());
    }

    #[test]
    fn within_a_round_only_slow_start_grows() {
        let (mut cc, mut c, mut w) = flow(10, INFINITE_SSTHRESH);
        c.snd_nxt = 10;
        cc.init(&c, &mut w);
        c.snd_una = 5; // not past beg_snd_nxt = 10
        cc.cong_avoid(&c, &mut w, 5);
        assert_eq!(w.cwnd, 15);
        w.ssthresh = 15;
        cc.cong_avoid(&c, &mut w, 100);
        assert_eq!((w.cwnd, w.cwnd_cnt), (15, 0));
    }

    #[test]
    fn too_few_samples_behave_as_reno() {
        let (mut cc, mut c, mut w) = flow(20, 20);
        w.cwnd_cnt = 19;
        // Two samples only: tcp_reno_cong_avoid, cwnd_cnt 19 + 1 = 20 = cwnd: +1.
        round(&mut cc, &mut c, &mut w, 99_999, 2, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt), (21, 0));
    }

    #[test]
    fn outside_open_it_is_reno_and_open_starts_a_fresh_round() {
        let (mut cc, mut c, mut w) = avoidance_at_20();
        cc.set_state(&c, &mut w, CaState::Disorder);
        assert!(!cc.v.doing_vegas_now);
        w.cwnd_cnt = 19;
        cc.cong_avoid(&c, &mut w, 1);
        assert_eq!(w.cwnd, 21, "Reno: one per cwnd ACKed");
        c.snd_nxt = 500;
        cc.set_state(&c, &mut w, CaState::Open);
        assert!(cc.v.doing_vegas_now);
        assert_eq!((cc.v.beg_snd_nxt, cc.v.cnt_rtt, cc.v.min_rtt, cc.v.base_rtt), (500, 0, RTT_UNSET, 40_000));
    }

    #[test]
    fn a_restart_forgets_base_rtt() {
        let (mut cc, c, mut w) = avoidance_at_20();
        cc.cwnd_event(&c, &mut w, CaEvent::CompleteCwr);
        assert_eq!(cc.v.base_rtt, 40_000);
        for ev in [CaEvent::TxStart, CaEvent::CwndRestart] {
            cc.v.base_rtt = 40_000;
            cc.cwnd_event(&c, &mut w, ev);
            assert_eq!(cc.v.base_rtt, RTT_UNSET);
        }
    }

    #[test]
    fn the_window_never_drops_below_two() {
        let (mut cc, mut c, mut w) = flow(2, 2);
        round(&mut cc, &mut c, &mut w, 39_999, 3, 1);
        // cwnd 3 after diff 0; then a huge queue: 3 − 1 = 2, again: 1 → 2.
        round(&mut cc, &mut c, &mut w, 399_999, 3, 1);
        round(&mut cc, &mut c, &mut w, 399_999, 3, 1);
        assert_eq!(w.cwnd, 2);
    }

    #[test]
    fn loss_halves_and_undo_restores() {
        let (mut cc, c, w) = flow(41, 41);
        assert_eq!(cc.ssthresh(&c, &w), 20); // 41 >> 1
        assert_eq!(cc.ssthresh(&c, &Window::new(3)), 2);
        let c = ConnInfo { prior_cwnd: 60, ..c };
        assert_eq!(cc.undo_cwnd(&c, &w), 60);
    }

    #[test]
    fn current_ssthresh_keeps_the_threshold_during_a_reduction() {
        let mut w = Window::new(40);
        w.ssthresh = 10;
        let c = ConnInfo { ca_state: CaState::Recovery, ..ConnInfo::default() };
        assert_eq!(current_ssthresh(&c, &w), 10);
        // Open: max(10, 20 + 10) = 30.
        assert_eq!(current_ssthresh(&ConnInfo::default(), &w), 30);
    }

    #[test]
    fn params_override_by_name_and_reject_out_of_range() {
        let one = |k: &str, x: f64| BTreeMap::from([(k.to_string(), x)]);
        let p = VegasParams::from_overrides(&one("beta", 6.0)).unwrap();
        assert_eq!(p, VegasParams { beta: 6, ..VegasParams::default() });
        let e = VegasParams::from_overrides(&one("alpha", -1.0)).unwrap_err();
        assert_eq!(e.to_string(), "alpha: must be in [0, 2147483647], got -1");
        let e = VegasParams::from_overrides(&one("delta", 1.0)).unwrap_err();
        assert_eq!(e.to_string(), "delta: not a parameter of vegas; allowed: alpha, beta, gamma");

        // A wider band holds where the default one would shrink: diff 5 ≤ beta 6.
        let (_, mut c, mut w) = avoidance_at_20();
        let mut cc = Vegas::new(p);
        cc.init(&c, &mut w);
        cc.v.base_rtt = 40_000;
        round(&mut cc, &mut c, &mut w, 49_999, 3, 1);
        assert_eq!((w.cwnd, cc.diff), (20, 5));
    }
}
