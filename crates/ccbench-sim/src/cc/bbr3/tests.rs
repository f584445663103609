//! Scripted tests of BBRv3 and BBRv2: the algorithm driven through `CongestionControl`
//! with explicit ACKs, rate samples and lost segments at explicit times, each checked
//! against a closed form computed here from the constants of the google/bbr trees
//! (v3 net/ipv4/tcp_bbr.c, v2alpha net/ipv4/tcp_bbr2.c).
//!
//! The test path and the driver are those of the v1 tests (`bbr/testing.rs`).

use super::*;
use crate::base::rng;
use crate::cc::bbr::testing::*;
use crate::cc::{Algorithm, CaState, LostSegment};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------
// Closed forms of `bbr_tso_segs_generic`, `bbr_quantization_budget` and the loss cut
// `bbr_beta` (google/bbr v3 tcp_bbr.c); those of the pacing rate and the BDP are in
// `bbr/testing.rs`.

/// `bbr_tso_segs_generic`: rate/1024 bytes plus 64 KB halved per 512 µs of min RTT,
/// at most 64 KB - 1 - 320 bytes, in whole segments, at least 2.
fn tso_goal_closed(rate: u64, min_rtt_us: u64) -> u32 {
    let r = min_rtt_us / 512;
    let bonus = if r < 64 { 65_536 >> r } else { 0 };
    (((rate / 1024 + bonus).min(65_536 - 1 - 320) / MSS as u64) as u32).max(2)
}

/// v2/v3 quantization budget: max(target, 3 TSO bursts, 4), + 2 in PROBE_BW UP.
fn budget_closed(target: u32, rate: u64, min_rtt_us: u64, up: bool) -> u32 {
    target.max(3 * tso_goal_closed(rate, min_rtt_us)).max(4) + if up { 2 } else { 0 }
}

/// x x (1 - beta) with beta = 76/256: the kernel's 0.703 cut.
fn cut(x: u64) -> u64 {
    x * 180 / 256
}

fn params(v: Version, pairs: &[(&str, f64)]) -> Bbr3Params {
    Bbr3Params::from_overrides(v, &pairs.iter().map(|&(k, x)| (k.to_string(), x)).collect()).unwrap()
}

// ---------------------------------------------------------------------------------
// The driver (`bbr/testing.rs`) on a v2 or v3 connection.

type Drv = Driver<Bbr3>;

impl Driver<Bbr3> {
    fn with_path(v: Version, p: Bbr3Params, seed: u64, rtt_us: u64, gap_us: u64, per_ack: u32) -> Drv {
        Driver::start(Bbr3::new(v, p, rng::stream(seed, "bbr", 0)), rtt_us, gap_us, per_ack)
    }

    fn new(v: Version, p: Bbr3Params, seed: u64) -> Drv {
        Drv::with_path(v, p, seed, RTT_US, ACK_GAP_US, PER_ACK)
    }

    /// v3 (and v2) defaults without the ACK-aggregation allowance, so that cwnd targets
    /// are plain closed forms.
    fn v3() -> Drv {
        Drv::new(Version::V3, params(Version::V3, &[("extra_acked_gain", 0.0)]), 1)
    }

    fn v2() -> Drv {
        Drv::new(Version::V2, params(Version::V2, &[("extra_acked_gain", 0.0)]), 1)
    }

    /// Steady ACKs with one BDP in flight until PROBE_BW. With one BDP in flight DOWN
    /// is left for CRUISE on the same ACK.
    fn reach_probe_bw(&mut self) {
        self.ack_until(20 * ACKS_PER_ROUND, |d| d.cc.mode == Mode::ProbeBw);
    }

    /// Into PROBE_BW DOWN, staying there: the drain check sees one BDP in flight, the
    /// DOWN check (from `prior_in_flight`) a little more.
    fn reach_down(&mut self) {
        self.prior_in_flight = Some(BDP + 50);
        self.reach_probe_bw();
        assert_eq!(self.cc.phase, Phase::Down);
        self.prior_in_flight = None;
    }

    /// Through REFILL into UP, on the steady path.
    fn reach_up(&mut self) {
        self.reach_probe_bw();
        self.ack_until(200 * ACKS_PER_ROUND, |d| d.cc.phase == Phase::Up);
    }
}

// ---------------------------------------------------------------------------------
// Model closed forms

#[test]
fn v3_quantization_budget_is_a_floor_of_three_tso_bursts_plus_two_in_up() {
    let mut d = Drv::v3();
    d.cc.min_rtt_us = RTT_US;
    for rate in [0u64, 150_000, 22_398_750, 27_998_437, 1_000_000_000] {
        d.w.pacing_rate = rate;
        let tso = tso_goal_closed(rate, RTT_US);
        assert_eq!(d.cc.tso_segs_goal(&d.c, &d.w), tso, "rate {rate}");
        for target in [0u32, 3, 30, 100, 625] {
            assert_eq!(
                d.cc.quantization_budget(&d.c, &d.w, target),
                budget_closed(target, rate, RTT_US, false),
                "rate {rate} target {target}"
            );
        }
    }
    // 22.4 MB/s: 21 873 bytes per ms, 15 segments; the budget is max(x, 45).
    d.w.pacing_rate = 22_398_750;
    assert_eq!(d.cc.tso_segs_goal(&d.c, &d.w), 15);
    assert_eq!(d.cc.quantization_budget(&d.c, &d.w, 30), 45);
    assert_eq!(d.cc.quantization_budget(&d.c, &d.w, 100), 100, "v3 takes the max, v1 adds");
    d.w.pacing_rate = 0;
    assert_eq!(d.cc.quantization_budget(&d.c, &d.w, 1), 6, "at least 3 x 2 segments");
    // +2 only in PROBE_BW UP.
    d.w.pacing_rate = 22_398_750;
    d.cc.mode = Mode::ProbeBw;
    for (phase, extra) in [(Phase::Up, 2), (Phase::Down, 0), (Phase::Cruise, 0), (Phase::Refill, 0)] {
        d.cc.phase = phase;
        assert_eq!(d.cc.quantization_budget(&d.c, &d.w, 100), 100 + extra, "{phase:?}");
    }
    // Short paths get the 64 KB >> (min_rtt / 512 µs) bonus: 1 ms -> 32 KB more.
    d.cc.min_rtt_us = 1_000;
    assert_eq!(tso_goal_closed(22_398_750, 1_000), 37);
    assert_eq!(d.cc.tso_segs_goal(&d.c, &d.w), 37);
    d.cc.min_rtt_us = 200;
    assert_eq!(d.cc.tso_segs_goal(&d.c, &d.w), 45, "capped at 64 KB");
}

#[test]
fn headroom_is_inflight_hi_less_38_over_256_at_least_one_segment_and_floor_four() {
    let mut d = Drv::v3();
    assert_eq!(d.cc.inflight_with_headroom(), UNSET);
    for (hi, expect) in [(700u32, 597u32), (1000, 852), (100, 86), (10, 9), (5, 4), (4, 4)] {
        d.cc.inflight_hi = hi;
        let headroom = ((hi as u64 * 38) >> 8).max(1) as u32;
        assert_eq!(expect, (hi - headroom).max(4));
        assert_eq!(d.cc.inflight_with_headroom(), expect, "inflight_hi {hi}");
    }
}

#[test]
fn loss_is_too_high_above_5_over_256_of_the_flight() {
    let d = Drv::v3();
    assert_eq!(d.cc.p.loss_thresh, 5, "2% -> 5/256 = 1.95%");
    for tx in [100u32, 300, 625, 1000, 10_000] {
        let allowed = tx as u64 * 5 / 256;
        assert!(!d.cc.inflight_too_high(allowed, tx, 0, 0), "{allowed} of {tx}");
        assert!(d.cc.inflight_too_high(allowed + 1, tx, 0, 0), "{} of {tx}", allowed + 1);
    }
    // 19/1000 = 1.9% is fine, 20/1000 = 2.0% is above the kernel's 1.95%.
    assert!(!d.cc.inflight_too_high(19, 1000, 0, 0));
    assert!(d.cc.inflight_too_high(20, 1000, 0, 0));
    assert!(!d.cc.inflight_too_high(5, 0, 0, 0));
}

#[test]
fn probe_rtt_cwnd_is_half_a_bdp_at_least_four() {
    let mut d = Drv::v3();
    d.cc.min_rtt_us = RTT_US;
    d.cc.bw_hi = [BW, 0];
    assert_eq!(d.cc.probe_rtt_cwnd(), bdp_closed(128));
    assert_eq!(bdp_closed(128), 313, "ceil(312.5)");
    d.cc.bw_hi = [BW / 200, 0]; // a 3.1 segment BDP
    assert_eq!(d.cc.probe_rtt_cwnd(), 4);
}

// ---------------------------------------------------------------------------------
// STARTUP

#[test]
fn startup_gains_are_2_77_and_2_in_v3_and_2_89_twice_in_v2() {
    for (mut d, pacing, cwnd_gain) in [(Drv::v3(), 710u32, 512u32), (Drv::v2(), 739, 739)] {
        assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (pacing, cwnd_gain));
        for _ in 0..2 * ACKS_PER_ROUND {
            d.ack();
        }
        assert_eq!(d.cc.mode, Mode::Startup);
        assert_eq!(d.cc.max_bw(), BW);
        assert_eq!(d.w.pacing_rate, pacing_rate_closed(BW_SEGS_PER_US, pacing));
        // Pin the cwnd target: cwnd grows by what is ACKed below it, not at it.
        let target = budget_closed(bdp_closed(cwnd_gain), d.w.pacing_rate, RTT_US, false);
        d.w.cwnd = target;
        d.ack();
        assert_eq!(d.w.cwnd, target, "{:?}", d.cc.v);
        d.w.cwnd = target - 1;
        d.ack();
        assert_eq!(d.w.cwnd, target - 1 + PER_ACK);
        assert_eq!(d.cc.mode, Mode::Startup);
    }
    assert_eq!(bdp_closed(512), 1250);
    assert_eq!(bdp_closed(739), 1805);
}

/// Round r (1-based) is ACKs 125(r-1)+1 ..= 125 r; every sample of round r delivers
/// `per_round[r-1]` segments over 40 ms; `spike` replaces one sample. Returns the round
/// in whose first ACK the flow left STARTUP.
fn startup_exit_round(d: &mut Drv, per_round: &[i64], spike: Option<(usize, u64, i64)>) -> usize {
    d.c.inflight = 20 * BDP;
    for r in 1..=per_round.len() {
        for k in 1..=ACKS_PER_ROUND {
            let delivered = match spike {
                Some((sr, sk, sd)) if sr == r && sk == k => sd,
                _ => per_round[r - 1],
            };
            d.ack_with(|rs, _| rs.delivered = delivered);
            assert_eq!(d.cc.round_start, k == 1, "round {r} ACK {k}");
            if d.cc.mode != Mode::Startup {
                assert_eq!(d.cc.mode, Mode::Drain);
                assert_eq!(k, 1, "left STARTUP inside round {r}");
                return r;
            }
        }
    }
    panic!("never left STARTUP");
}

const FLAT: [i64; 14] = [100, 200, 400, 800, 800, 800, 800, 800, 800, 800, 800, 800, 800, 800];

#[test]
fn startup_ends_at_the_third_round_start_without_a_25_percent_sample() {
    for mut d in [Drv::v3(), Drv::v2()] {
        assert_eq!(startup_exit_round(&mut d, &FLAT, None), 7, "{:?}", d.cc.v);
        assert!(d.cc.full_bw_reached);
    }
    let mut d = Drv::v3();
    assert_eq!(startup_exit_round(&mut d, &[100, 200, 400, 800, 900, 990, 999, 999, 999], None), 7);
    assert!(d.cc.full_bw_now);
}

#[test]
fn v3_resets_the_plateau_count_on_any_25_percent_sample_v2_at_the_next_round_start() {
    // One sample of 1000 (= 1.25 x 800) in the middle of round 6. v3 takes it as the new
    // baseline at once (round starts 7, 8, 9 count: exit at 9); v2, like v1, compares the
    // filtered max at round 7's start (exit at 10).
    let mut d = Drv::v3();
    assert_eq!(startup_exit_round(&mut d, &FLAT, Some((6, 60, 1000))), 9);
    let mut d = Drv::v2();
    assert_eq!(startup_exit_round(&mut d, &FLAT, Some((6, 60, 1000))), 10);
    // Just below 25% changes nothing.
    let mut d = Drv::v3();
    assert_eq!(startup_exit_round(&mut d, &FLAT, Some((6, 60, 999))), 7);
}

#[test]
fn v3_plateau_baseline_ignores_app_limited_samples_that_raise_the_max_filter() {
    // An app-limited sample of 1000 in round 6 is above the max, so it enters the
    // max-bw filter, but v3's plateau detector skips app-limited samples: exit at 7.
    // v2 compares the filtered max at the next round start and exits at 10.
    for (mut d, exit) in [(Drv::v3(), 7), (Drv::v2(), 10)] {
        d.c.inflight = 20 * BDP;
        let mut left = None;
        'rounds: for r in 1..=FLAT.len() {
            for k in 1..=ACKS_PER_ROUND {
                let spike = r == 6 && k == 60;
                d.ack_with(|rs, _| {
                    rs.delivered = if spike { 1000 } else { FLAT[r - 1] };
                    rs.is_app_limited = spike;
                });
                if spike {
                    assert_eq!(d.cc.max_bw(), (1000u64 << 24).div_ceil(RTT_US));
                }
                if d.cc.mode != Mode::Startup {
                    left = Some(r);
                    break 'rounds;
                }
            }
        }
        assert_eq!(left, Some(exit), "{:?}", d.cc.v);
    }
}

#[test]
fn steady_path_fills_the_pipe_a_round_earlier_in_v3_than_in_v2() {
    // Round 1 ramps up: v3 resets its baseline on each sample 25% above the last one,
    // the last time at 118 of 125 ACKs; round starts 2, 3, 4 then find no growth. v2
    // sets its baseline from the filtered max at the start of round 2 and counts round
    // starts 3, 4, 5.
    for (mut d, full_at) in [(Drv::v3(), 1 + 3 * ACKS_PER_ROUND), (Drv::v2(), 1 + 4 * ACKS_PER_ROUND)] {
        d.c.inflight = 3 * BDP;
        d.ack_until(10 * ACKS_PER_ROUND, |d| d.cc.full_bw_reached);
        assert_eq!(d.acks, full_at, "{:?}", d.cc.v);
        assert_eq!(d.cc.mode, Mode::Drain);
    }
}

#[test]
fn startup_ends_on_persistent_loss_after_six_lossy_acks_in_v3_eight_in_v2() {
    for (v, lossy_acks, exits) in
        [(Version::V3, 6, true), (Version::V3, 5, false), (Version::V2, 7, false), (Version::V2, 8, true)]
    {
        let mut d = Drv::new(v, params(v, &[("extra_acked_gain", 0.0)]), 1);
        d.c.inflight = 3 * BDP;
        d.c.ca_state = CaState::Recovery;
        // App-limited samples keep the plateau detector out of it. Loss rounds start at
        // ACKs 1, 126, 251; round 2 has `lossy_acks` ACKs with newly lost segments.
        for k in 1..=2 * ACKS_PER_ROUND {
            let lossy = k > 130 && k <= 130 + lossy_acks;
            d.ack_with(|rs, _| {
                rs.is_app_limited = true;
                rs.losses = lossy as u32;
            });
            assert!(!d.cc.full_bw_reached);
        }
        // The loss-round start: this sample saw 20 lost of 1000 in flight (> 1.95%).
        d.ack_with(|rs, _| {
            rs.is_app_limited = true;
            rs.lost = 20;
            rs.tx_in_flight = 1000;
        });
        assert!(d.cc.loss_round_start);
        assert_eq!(d.cc.full_bw_reached, exits, "{v:?} with {lossy_acks} lossy ACKs");
        if exits {
            assert_eq!(d.cc.mode, Mode::Drain);
            // inflight_hi = max(one BDP + budget, the most delivered in a sample).
            assert_eq!(d.cc.inflight_hi, BDP);
        } else {
            assert_eq!(d.cc.loss_events_in_round, 0, "count restarts each loss round");
        }
    }
}

// ---------------------------------------------------------------------------------
// DRAIN

fn in_drain(mut d: Drv) -> Drv {
    d.c.inflight = 3 * BDP;
    d.ack_until(10 * ACKS_PER_ROUND, |d| d.cc.mode != Mode::Startup);
    assert_eq!(d.cc.mode, Mode::Drain);
    d
}

#[test]
fn drain_paces_at_88_over_256_and_enters_probe_bw_down_at_one_bdp() {
    for (d, cwnd_gain) in [(Drv::v3(), 512u32), (Drv::v2(), 739)] {
        let mut d = in_drain(d);
        d.ack();
        assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (88, cwnd_gain));
        assert_eq!(d.w.pacing_rate, pacing_rate_closed(BW_SEGS_PER_US, 88));
        // Target: max(BDP, 3 TSO bursts) = 625 (no even rounding, no addition).
        assert_eq!(budget_closed(BDP, d.w.pacing_rate, RTT_US, false), BDP);
        d.prior_in_flight = Some(BDP + 50); // keep DOWN from moving on to CRUISE
        d.c.inflight = BDP + 1;
        d.ack();
        assert_eq!(d.cc.mode, Mode::Drain);
        // What departs before the EDT counts: 10 segments in 640 µs.
        d.c.inflight = BDP + 10;
        d.edt_lead_us = 576;
        d.ack();
        assert_eq!(d.cc.mode, Mode::Drain);
        d.edt_lead_us = 640;
        d.ack();
        assert_eq!(d.cc.mode, Mode::ProbeBw);
        assert_eq!(d.cc.phase, Phase::Down);
        assert_eq!(d.cc.cycle_us, d.now_us());
    }
}

// ---------------------------------------------------------------------------------
// PROBE_BW

#[test]
fn down_paces_at_0_906_in_v3_and_0_75_in_v2_and_cruises_at_one_bdp_and_headroom() {
    for (mut d, down_gain) in [(Drv::v3(), 232u32), (Drv::v2(), 192)] {
        d.reach_down();
        d.prior_in_flight = Some(BDP + 1);
        d.ack();
        assert_eq!(d.cc.phase, Phase::Down);
        assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (down_gain, 512));
        assert_eq!(d.w.pacing_rate, pacing_rate_closed(BW_SEGS_PER_US, down_gain));
        d.prior_in_flight = Some(BDP);
        d.ack();
        assert_eq!(d.cc.phase, Phase::Cruise, "{:?}", d.cc.v);
        assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (256, 512));
    }
    // With inflight_hi = 700 the headroom (597) binds before the BDP.
    let mut d = Drv::v3();
    d.reach_down();
    d.cc.inflight_hi = 700;
    d.prior_in_flight = Some(598);
    d.ack();
    assert_eq!(d.cc.phase, Phase::Down);
    d.prior_in_flight = Some(597);
    d.ack();
    assert_eq!(d.cc.phase, Phase::Cruise);
    assert_eq!(d.cc.inflight_hi, 700);
}

#[test]
fn cruise_probes_after_the_random_wait_or_the_reno_round_count() {
    let (mut by_time, mut by_rounds) = (0, 0);
    for seed in 0..40 {
        let mut d = Drv::new(Version::V3, params(Version::V3, &[("extra_acked_gain", 0.0)]), seed);
        d.reach_probe_bw();
        assert_eq!(d.cc.phase, Phase::Cruise);
        let t_down = d.cc.cycle_us;
        assert_eq!(t_down, d.now_us());
        let wait = d.cc.probe_wait_us;
        let r0 = d.cc.rounds_since_probe as u64;
        assert!((2_000_000..3_000_000).contains(&wait), "{wait}");
        assert!(r0 <= 1);
        // Time: the first ACK strictly after the wait. Rounds: min(63, 625) rounds
        // since the probe (with the 0 or 1 head start), one round every 40 ms from DOWN.
        let at_time = t_down + (wait / ACK_GAP_US + 1) * ACK_GAP_US;
        let at_rounds = t_down + (63 - r0) * RTT_US;
        let expect = at_time.min(at_rounds);
        if at_time < at_rounds {
            by_time += 1;
        } else {
            by_rounds += 1;
        }
        while d.now_us() + ACK_GAP_US < expect {
            d.ack();
            assert_eq!(d.cc.phase, Phase::Cruise, "seed {seed}");
        }
        d.ack();
        assert_eq!(d.cc.phase, Phase::Refill, "seed {seed}: wait {wait} µs, head start {r0}");
        assert_eq!(d.now_us(), expect);
        assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (256, 512));
    }
    assert!(by_time > 0 && by_rounds > 0, "time {by_time}, rounds {by_rounds}");
}

#[test]
fn reno_coexistence_probes_after_one_bdp_of_rounds_on_a_small_pipe() {
    // 1 segment per 1024 µs over 40.96 ms: exactly 40 segments of BDP, so a probe is
    // due after min(63, 40) rounds, long before the 2 s wait.
    let p = params(Version::V3, &[("extra_acked_gain", 0.0)]);
    let mut d = Drv::with_path(Version::V3, p, 3, 40_960, 1024, 1);
    d.ack_until(400, |d| d.cc.mode == Mode::ProbeBw);
    assert_eq!(d.cc.max_bw(), 1 << 14);
    assert_eq!(d.cc.phase, Phase::Cruise);
    let t_down = d.cc.cycle_us;
    let r0 = d.cc.rounds_since_probe as u64;
    d.ack_until(10_000, |d| d.cc.phase != Phase::Cruise);
    assert_eq!(d.cc.phase, Phase::Refill);
    assert_eq!(d.now_us(), t_down + (40 - r0) * 40_960);
}

#[test]
fn refill_lasts_one_round_then_up_probes_until_a_three_round_plateau_in_v3() {
    let mut d = Drv::v3();
    d.reach_probe_bw();
    d.cc.bw_lo = BW / 2; // a lower bound left from before: REFILL forgets it
    d.cc.inflight_lo = 500;
    d.ack_until(200 * ACKS_PER_ROUND, |d| d.cc.phase == Phase::Refill);
    assert_eq!((d.cc.bw_lo, d.cc.inflight_lo), (UNSET_BW, UNSET));
    let t_refill = d.now_us();
    d.ack_until(2 * ACKS_PER_ROUND, |d| d.cc.phase != Phase::Refill);
    assert_eq!(d.cc.phase, Phase::Up);
    assert_eq!(d.now_us(), t_refill + RTT_US);
    assert!(d.cc.bw_probe_samples);
    let t_up = d.now_us();
    d.ack_until(10 * ACKS_PER_ROUND, |d| {
        if d.cc.phase == Phase::Up {
            assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (320, 576));
        }
        d.cc.phase != Phase::Up
    });
    assert_eq!(d.cc.phase, Phase::Down);
    assert_eq!(d.now_us(), t_up + 3 * RTT_US, "three round starts without a 25% sample");
    assert_eq!(d.cc.cycle_us, d.now_us());
}

#[test]
fn v3_up_plateau_compares_samples_with_the_probe_start_not_the_max_filter() {
    // From REFILL on, samples of 400 per 40 ms: 0.64 of the max filter's 625. UP's
    // baseline is the sample at its start, so three round starts without a sample 25%
    // above it end the probe, although the max filter is far above 1.25 x 400.
    let mut d = Drv::v3();
    d.reach_probe_bw();
    let low = |rs: &mut RateSample, _: &mut ConnInfo| rs.delivered = 400;
    loop {
        d.ack_with(low);
        if d.cc.phase == Phase::Refill {
            break;
        }
        assert!(d.now_us() < T0.us() + 4_000_000, "no REFILL");
    }
    while d.cc.phase == Phase::Refill {
        d.ack_with(low);
    }
    assert_eq!(d.cc.phase, Phase::Up);
    assert_eq!(d.cc.full_bw, (400u64 << 24).div_ceil(RTT_US));
    assert_eq!(d.cc.max_bw(), BW);
    let t_up = d.now_us();
    while d.cc.phase == Phase::Up {
        assert!(d.now_us() < t_up + 10 * RTT_US, "UP did not end");
        d.ack_with(low);
    }
    assert_eq!(d.cc.phase, Phase::Down);
    assert_eq!(d.now_us(), t_up + 3 * RTT_US);
}

#[test]
fn v3_keeps_probing_while_inflight_hi_limits_cwnd_and_raises_it_faster_each_round() {
    let mut d = Drv::v3();
    d.reach_up();
    d.cc.inflight_hi = 700;
    d.c.is_cwnd_limited = true;
    let t_up = d.now_us();
    let mut rounds = 0;
    while d.now_us() < t_up + 6 * RTT_US {
        let cwnd_before = d.w.cwnd;
        d.ack();
        assert_eq!(d.cc.phase, Phase::Up, "the plateau detector is held while inflight_hi limits cwnd");
        assert_eq!(d.w.cwnd, d.cc.inflight_hi, "cwnd capped at inflight_hi in UP");
        if d.cc.round_start {
            // Round k of the probe: +1 to inflight_hi per cwnd / 2^(k-1) ACKed segments.
            rounds += 1;
            let k = d.cc.bw_probe_up_rounds;
            assert_eq!(k, rounds + 1);
            assert_eq!(d.cc.bw_probe_up_cnt, (cwnd_before >> (k - 1)).max(1), "round {k}");
        }
    }
    assert_eq!(rounds, 6);
    // About 0, 2, 4, 7, 14 and 28 segments in successive rounds.
    assert!(d.cc.inflight_hi > 750, "inflight_hi grew only to {}", d.cc.inflight_hi);
}

#[test]
fn v2_ends_up_at_1_25_bdp_in_flight_after_a_min_rtt_not_on_a_plateau() {
    let mut d = Drv::v2();
    d.reach_up();
    assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (320, 512));
    let t_up = d.cc.cycle_us;
    assert_eq!(t_up, d.now_us());
    d.ack();
    // Target 1.25 BDP + budget + 2; in the network at the EDT counts one TSO burst more.
    let rate = pacing_rate_closed(BW_SEGS_PER_US, 320);
    assert_eq!(d.w.pacing_rate, rate);
    let target = budget_closed(bdp_closed(320), rate, RTT_US, true);
    let tso = tso_goal_closed(rate, RTT_US);
    assert_eq!((target, tso), (784, 18));
    // Before a min_rtt, even far above the target: no.
    while d.now_us() + ACK_GAP_US <= t_up + RTT_US {
        d.ack_with(|rs, _| rs.prior_in_flight = 2 * BDP);
        assert_eq!(d.cc.phase, Phase::Up);
    }
    // Five rounds at one BDP: no plateau exit in v2.
    for _ in 0..5 * ACKS_PER_ROUND {
        d.ack();
        assert_eq!(d.cc.phase, Phase::Up);
    }
    d.ack_with(|rs, _| rs.prior_in_flight = target - tso - 1);
    assert_eq!(d.cc.phase, Phase::Up);
    d.ack_with(|rs, _| rs.prior_in_flight = target - tso);
    assert_eq!(d.cc.phase, Phase::Down);
}

/// In UP, one ACK later (so the window holds UP's pacing rate): the target inflight is
/// max(BDP, 3 TSO) + 2 = 627, and 0.7 of it is 627 x 180 / 256 = 440.
fn up_with_target() -> (Drv, u32) {
    let mut d = Drv::v3();
    d.reach_up();
    d.ack();
    assert_eq!(d.cc.phase, Phase::Up);
    let target = budget_closed(BDP, d.w.pacing_rate, RTT_US, true).min(d.w.cwnd);
    assert_eq!(target, 627);
    (d, cut(target as u64) as u32)
}

#[test]
fn up_ends_on_a_sample_with_more_than_2_percent_loss_and_sets_inflight_hi() {
    let (mut d, floor) = up_with_target();
    assert_eq!(floor, 440);
    // 19 of 1000 (1.9%): keep probing.
    d.ack_with(|rs, _| {
        rs.lost = 19;
        rs.tx_in_flight = 1000;
    });
    assert_eq!(d.cc.phase, Phase::Up);
    assert_eq!(d.cc.inflight_hi, UNSET);
    // 21 of 1000 (2.1%): inflight_hi = max(tx_in_flight, 0.7 x target), then DOWN.
    d.ack_with(|rs, _| {
        rs.lost = 21;
        rs.tx_in_flight = 1000;
    });
    assert_eq!(d.cc.phase, Phase::Down);
    assert_eq!(d.cc.inflight_hi, 1000);
    assert!(d.cc.prev_probe_too_high && !d.cc.bw_probe_samples);

    // A small flight: the 0.7 x target floor.
    let (mut d, floor) = up_with_target();
    d.ack_with(|rs, _| {
        rs.lost = 6; // 300 x 5/256 = 5.9
        rs.tx_in_flight = 300;
    });
    assert_eq!(d.cc.phase, Phase::Down);
    assert_eq!(d.cc.inflight_hi, floor);
}

#[test]
fn up_ends_on_a_lost_segment_whose_flight_crossed_2_percent() {
    let (mut d, floor) = up_with_target();
    d.lose(LostSegment { tx_in_flight: 1000, lost_at_send: 100, lost_now: 119, is_app_limited: false });
    assert_eq!(d.cc.phase, Phase::Up, "19 of 1000");
    assert_eq!(d.cc.inflight_hi, UNSET);
    d.lose(LostSegment { tx_in_flight: 1000, lost_at_send: 100, lost_now: 120, is_app_limited: false });
    assert_eq!(d.cc.phase, Phase::Down);
    assert_eq!(d.cc.inflight_hi, 1000, "crossing point 999 + 1");
    // Once per probe: a worse loss now changes nothing.
    d.lose(LostSegment { tx_in_flight: 2000, lost_at_send: 100, lost_now: 200, is_app_limited: false });
    assert_eq!(d.cc.inflight_hi, 1000);

    // The crossing point: with inflight_prev = tx - 1 and lost_prev = lost - 1, the
    // prefix p of the lost segment with (lost_prev + p) / (inflight_prev + p) = 2%:
    // p = (ceil(2% x inflight_prev) - lost_prev) / (1 - 2%), 0 if already crossed.
    for (tx, lost) in [(1000u32, 20u64), (1000, 40), (2000, 40), (5000, 98), (5000, 150)] {
        let (ip, lp) = ((tx - 1) as u64, lost - 1);
        let budget = (ip * 5).div_ceil(256);
        let p = if lp >= budget { 0.0 } else { (budget - lp) as f64 / (1.0 - 5.0 / 256.0) };
        let crossing = ip as u32 + p.floor() as u32;
        let (mut d, floor) = up_with_target();
        d.lose(LostSegment { tx_in_flight: tx, lost_at_send: 7, lost_now: 7 + lost, is_app_limited: false });
        assert_eq!(d.cc.phase, Phase::Down);
        assert_eq!(d.cc.inflight_hi, crossing.max(floor), "tx {tx} lost {lost}");
    }
    let (mut d, _) = up_with_target();
    d.lose(LostSegment { tx_in_flight: 1000, lost_at_send: 0, lost_now: 40, is_app_limited: false });
    assert_eq!(d.cc.inflight_hi, 999, "already past the threshold before this segment");

    let (mut d, _) = up_with_target();
    d.lose(LostSegment { tx_in_flight: 200, lost_at_send: 10, lost_now: 14, is_app_limited: false });
    assert_eq!(d.cc.phase, Phase::Down);
    assert_eq!(d.cc.inflight_hi, floor, "max(200, 440)");

    // An app-limited flight ends the probe but does not set the bound.
    let (mut d, _) = up_with_target();
    d.lose(LostSegment { tx_in_flight: 1000, lost_at_send: 100, lost_now: 140, is_app_limited: true });
    assert_eq!(d.cc.phase, Phase::Down);
    assert_eq!(d.cc.inflight_hi, UNSET);

    // Not probing: only the loss round is noted.
    let mut d = Drv::v3();
    d.reach_probe_bw();
    d.lose(LostSegment { tx_in_flight: 1000, lost_at_send: 100, lost_now: 200, is_app_limited: false });
    assert_eq!(d.cc.phase, Phase::Cruise);
    assert_eq!(d.cc.inflight_hi, UNSET);
    assert!(d.cc.loss_in_round);
    assert_eq!(d.cc.loss_round_delivered, d.c.delivered);
}

// ---------------------------------------------------------------------------------
// Loss response outside probes

#[test]
fn loss_rounds_cut_bw_lo_and_inflight_lo_to_max_of_latest_and_0_7_of_themselves() {
    let mut d = Drv::v3();
    d.reach_probe_bw();
    assert_eq!(d.cc.phase, Phase::Cruise);
    d.ack_until(2 * ACKS_PER_ROUND, |d| d.cc.loss_round_start);
    for _ in 1..ACKS_PER_ROUND {
        d.ack();
        assert!(!d.cc.loss_round_start);
    }
    let low: i64 = 300; // segments per 40 ms: bw_latest = ceil(300 x 2^24 / 40 000)
    let bw_latest = (300u64 << 24).div_ceil(RTT_US);
    assert_eq!(bw_latest, 125_830);
    // A loss round of low samples with one lossy ACK (only the next loss-round start
    // reacts), then three more of them and one without loss.
    let mut bw_lo = BW;
    let mut inflight_lo = 0u64;
    for round in 0..5 {
        let cwnd_before = d.w.cwnd as u64;
        d.ack_with(|rs, _| rs.delivered = low);
        assert!(d.cc.loss_round_start, "round {round}");
        if round == 0 {
            assert_eq!((d.cc.bw_lo, d.cc.inflight_lo), (UNSET_BW, UNSET), "no loss in the previous round");
        } else if round <= 3 {
            // Initialised to max_bw and cwnd, then cut.
            if round == 1 {
                inflight_lo = cwnd_before;
                assert_eq!(cwnd_before, 1250);
            }
            bw_lo = bw_latest.max(cut(bw_lo));
            inflight_lo = 300u64.max(cut(inflight_lo));
            assert_eq!(d.cc.bw_lo, bw_lo, "round {round}");
            assert_eq!(d.cc.inflight_lo as u64, inflight_lo, "round {round}");
            assert!(d.w.cwnd as u64 <= inflight_lo);
            assert_eq!(d.w.pacing_rate, pacing_rate_closed(bw_lo as f64 / (1u64 << 24) as f64, 256));
        } else {
            assert_eq!(d.cc.bw_lo, bw_lo, "no loss in round {round}: unchanged");
        }
        for k in 1..ACKS_PER_ROUND {
            let lossy = round < 3 && k == 50;
            d.ack_with(|rs, _| {
                rs.delivered = low;
                rs.losses = lossy as u32;
            });
            assert!(!d.cc.loss_round_start);
        }
    }
    // 262 144 -> 184 320 -> 129 600 -> 125 830 (the floor at bw_latest).
    assert_eq!(bw_lo, 125_830);
    assert_eq!(cut(BW), 184_320);
    assert_eq!(cut(184_320), 129_600);
    // inflight_lo 1250 -> 878 -> 617 -> 433.
    assert_eq!(inflight_lo, 433);
    assert_eq!(d.cc.phase, Phase::Cruise);
}

#[test]
fn loss_while_probing_up_leaves_the_lower_bounds_alone() {
    let (mut d, _) = up_with_target();
    d.ack_with(|rs, _| rs.losses = 1);
    for _ in 0..ACKS_PER_ROUND + 1 {
        d.ack();
    }
    assert_eq!(d.cc.phase, Phase::Up);
    assert_eq!((d.cc.bw_lo, d.cc.inflight_lo), (UNSET_BW, UNSET));
}

// ---------------------------------------------------------------------------------
// PROBE_RTT

fn first_ack_after_jiffies(from_us: u64, jiffies: u64) -> u64 {
    let j0 = from_us / 1000;
    let mut t = from_us;
    while t / 1000 <= j0 + jiffies {
        t += ACK_GAP_US;
    }
    t
}

#[test]
fn v3_probe_rtt_every_five_seconds_at_half_a_bdp_exits_to_cruise() {
    let mut d = Drv::v3();
    d.reach_probe_bw();
    let mut before = 0;
    while d.cc.mode != Mode::ProbeRtt {
        assert!(d.now_us() < T0.us() + 20_000_000, "no PROBE_RTT in 20 s");
        assert!(!d.app_limited_requested);
        before = d.w.cwnd;
        d.ack();
    }
    assert_eq!(d.now_us(), first_ack_after_jiffies(T0.us(), 5_000), "5 s without a lower sample");
    assert_eq!(d.cc.prior_cwnd, before);
    assert_eq!(d.w.cwnd, 313, "max(4, 0.5 x 625) rounded up");
    assert!(d.app_limited_requested);
    assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (256, 256));
    for _ in 0..20 {
        d.ack();
        assert_eq!(d.w.cwnd, 313);
        assert!(d.cc.probe_rtt.done_stamp.is_none(), "inflight still one BDP");
    }
    d.c.inflight = 313;
    d.ack();
    let t1 = d.now_us();
    assert_eq!(d.cc.probe_rtt.done_stamp, Some(d.c.jiffies + 200));
    let expect = first_ack_after_jiffies(t1, 200).max(t1 + RTT_US);
    d.ack_until(10 * ACKS_PER_ROUND, |d| {
        assert!(d.app_limited_requested);
        d.cc.mode != Mode::ProbeRtt
    });
    assert_eq!(d.now_us(), expect);
    assert_eq!(d.cc.mode, Mode::ProbeBw);
    assert_eq!(d.cc.phase, Phase::Cruise);
    assert_eq!(d.cc.cycle_us, d.now_us(), "via DOWN: the probe clock restarts");
    assert_eq!(d.w.cwnd, (before + PER_ACK).min(bdp_closed(512)));
    // The next one 5 s after this exit.
    let exit = d.now_us();
    d.c.inflight = BDP;
    d.ack_until(20_000, |d| d.cc.mode == Mode::ProbeRtt);
    assert_eq!(d.now_us(), first_ack_after_jiffies(exit, 5_000));
}

#[test]
fn v3_probe_rtt_lasts_a_full_round_when_rounds_are_longer_than_200_ms() {
    let mut d = Drv::v3();
    d.reach_probe_bw();
    d.ack_until(20_000, |d| d.cc.mode == Mode::ProbeRtt);
    d.c.inflight = 300;
    d.round_us = 300_000;
    d.ack();
    let t1 = d.now_us();
    assert!(d.cc.probe_rtt.done_stamp.is_some());
    d.ack_until(2_000, |d| d.cc.mode != Mode::ProbeRtt);
    // The first ACK at least 300 ms after t1 (ACKs every 320 µs).
    assert_eq!(d.now_us(), t1 + 300_000u64.div_ceil(ACK_GAP_US) * ACK_GAP_US);
    assert_eq!(d.cc.phase, Phase::Cruise);
}

#[test]
fn probe_rtt_min_refreshes_on_lower_samples_only_in_v3_also_on_equal_ones_in_v2() {
    // v3: a strictly lower sample at 3 s postpones PROBE_RTT to 8 s.
    let mut d = Drv::v3();
    d.reach_probe_bw();
    while d.now_us() < T0.us() + 3_000_000 {
        d.ack();
    }
    d.ack_with(|rs, _| rs.rtt_us -= 1);
    let lower = d.now_us();
    d.ack_until(40_000, |d| d.cc.mode == Mode::ProbeRtt);
    assert_eq!(d.now_us(), first_ack_after_jiffies(lower, 5_000));
    // v2: samples equal to the minimum refresh it, so a constant RTT never probes...
    let mut d = Drv::v2();
    d.reach_probe_bw();
    while d.now_us() < T0.us() + 12_000_000 {
        d.ack();
        assert_ne!(d.cc.mode, Mode::ProbeRtt);
    }
    // ...and a slightly longer one does, 5 s after the last refresh.
    let last = d.now_us();
    d.rtt_us += 1;
    d.ack_until(40_000, |d| d.cc.mode == Mode::ProbeRtt);
    assert_eq!(d.now_us(), first_ack_after_jiffies(last, 5_000));
}

// ---------------------------------------------------------------------------------
// Undo

#[test]
fn undo_restores_the_bounds_saved_when_recovery_began() {
    let mut d = Drv::v3();
    d.reach_probe_bw();
    d.cc.bw_lo = BW;
    d.cc.inflight_lo = 1000;
    d.cc.inflight_hi = 800;
    d.w.cwnd = 1000;
    // Entering recovery: bbr_ssthresh saves cwnd and the loss-adapted bounds.
    d.w.ssthresh = d.cc.ssthresh(&d.c, &d.w);
    assert_eq!(d.cc.prior_cwnd, 1000);
    // The recovery cuts them (as adapt_lower_bounds and a probe's loss would).
    d.cc.bw_lo = cut(BW);
    d.cc.inflight_lo = 700;
    d.cc.inflight_hi = 600;
    d.w.cwnd = 1250;
    // The loss was spurious.
    let restored = d.cc.undo_cwnd(&d.c, &d.w);
    assert_eq!((d.cc.bw_lo, d.cc.inflight_lo, d.cc.inflight_hi), (BW, 1000, 800));
    assert_eq!(restored, 1000, "bbr_undo_cwnd returns prior_cwnd");
    assert!(!d.cc.loss_in_round);
    assert_eq!((d.cc.full_bw, d.cc.full_bw_cnt, d.cc.full_bw_now), (0, 0, false));
}

// ---------------------------------------------------------------------------------
// Parameters and randomness

#[test]
fn defaults_are_the_constants_of_each_tree() {
    let (v3, v2) = (Bbr3Params::defaults(Version::V3), Bbr3Params::defaults(Version::V2));
    assert_eq!(
        (
            v3.startup_pacing_gain,
            v3.startup_cwnd_gain,
            v3.probe_down_gain,
            v3.probe_up_cwnd_gain_extra,
            v3.full_loss_cnt
        ),
        (710, 512, 232, 64, 6)
    );
    assert_eq!(
        (
            v2.startup_pacing_gain,
            v2.startup_cwnd_gain,
            v2.probe_down_gain,
            v2.probe_up_cwnd_gain_extra,
            v2.full_loss_cnt
        ),
        (739, 739, 192, 0, 8)
    );
    for p in [&v3, &v2] {
        assert_eq!(
            (p.drain_gain, p.cwnd_gain, p.probe_up_gain, p.full_bw_thresh, p.full_bw_cnt),
            (88, 512, 320, 320, 3)
        );
        assert_eq!((p.loss_thresh, p.beta, p.inflight_headroom, p.probe_rtt_cwnd_gain), (5, 76, 38, 128));
        assert_eq!((p.probe_rtt_win_ms, p.probe_rtt_mode_ms, p.min_rtt_win_sec, p.cwnd_min_target), (5000, 200, 10, 4));
        assert_eq!((p.bw_probe_base_us, p.bw_probe_rand_us, p.bw_probe_max_rounds), (2_000_000, 1_000_000, 63));
    }
}

#[test]
fn overrides_are_rounded_to_256ths_and_unknown_names_are_errors() {
    // Real numbers round to the nearest 256th: the nominal beta 0.3 becomes 77/256,
    // one more than the tree's 76/256 default (which truncates 76.8).
    let p = params(Version::V3, &[("cwnd_gain", 2.5), ("beta", 0.3)]);
    assert_eq!((p.cwnd_gain, p.beta), (640, 77));
    let one = |k: &str, x: f64| BTreeMap::from([(k.to_string(), x)]);
    for (alg, name) in [(Algorithm::Bbr3, "bbr3"), (Algorithm::Bbr2, "bbr2")] {
        let err = alg.build(&one("cwnd_gian", 2.0), rng::stream(1, "bbr", 0)).err().expect("unknown name accepted");
        assert!(err.starts_with(&format!("cwnd_gian: not a parameter of {name}; allowed: ")), "{err}");
        for allowed in [
            "startup_pacing_gain",
            "cwnd_gain",
            "probe_down_gain",
            "beta",
            "loss_thresh",
            "bw_probe_max_rounds",
            "probe_rtt_win_ms",
        ] {
            assert!(err.contains(allowed), "'{allowed}' missing from: {err}");
        }
        assert!(alg.build(&one("cwnd_gain", 2.5), rng::stream(1, "bbr", 0)).is_ok());
    }
    assert!(Bbr3Params::from_overrides(Version::V3, &one("beta", 1.0)).is_err());
    assert!(Bbr3Params::from_overrides(Version::V3, &one("full_bw_cnt", 1.5)).is_err());
    assert!(Bbr3Params::from_overrides(Version::V3, &one("cwnd_gain", -2.0)).is_err());

    // A 2.5 cwnd gain moves the CRUISE cwnd target to ceil(2.5 BDP).
    let mut d = Drv::new(Version::V3, params(Version::V3, &[("cwnd_gain", 2.5), ("extra_acked_gain", 0.0)]), 1);
    d.reach_probe_bw();
    for _ in 0..ACKS_PER_ROUND {
        let prev = d.w.cwnd;
        d.ack();
        assert_eq!(d.cc.phase, Phase::Cruise);
        assert_eq!(d.w.cwnd, (prev + PER_ACK).min(bdp_closed(640)));
    }
    assert_eq!(d.w.cwnd, 1563);
}

#[test]
fn probe_waits_are_a_function_of_the_seed() {
    let draws = |seed: u64| {
        let mut cc = Bbr3::new(Version::V3, Bbr3Params::defaults(Version::V3), rng::stream(seed, "bbr", 0));
        let c = ConnInfo::default();
        (0..64)
            .map(|_| {
                cc.start_probe_down(&c);
                (cc.rounds_since_probe, cc.probe_wait_us)
            })
            .collect::<Vec<_>>()
    };
    let a = draws(11);
    assert_eq!(a, draws(11));
    assert_ne!(a, draws(12));
    assert!(a.iter().all(|&(r, w)| r <= 1 && (2_000_000..3_000_000).contains(&w)));
    assert!(a.iter().any(|&(r, _)| r == 0) && a.iter().any(|&(r, _)| r == 1));
}

// ---------------------------------------------------------------------------------
// Loss probes (google/bbr v3: `is_acking_tlp_retrans_seq`, `CA_EVENT_TLP_RECOVERY`)

#[test]
fn an_ack_that_may_be_for_a_tlp_retransmission_keeps_the_latest_delivery_filter() {
    for (v, kept) in [(Version::V3, true), (Version::V2, false)] {
        let mut d = Drv::new(v, params(v, &[("extra_acked_gain", 0.0)]), 1);
        d.reach_probe_bw();
        d.ack_until(2 * ACKS_PER_ROUND, |d| d.cc.loss_round_start);
        d.cc.bw_latest = u64::MAX / 2;
        d.cc.inflight_latest = u32::MAX / 2;
        // At the next loss-round start the filter restarts from that ACK's sample, unless
        // the ACK may be for a loss probe's retransmission (v3): then it carries on.
        let mut started = false;
        for _ in 0..2 * ACKS_PER_ROUND {
            d.ack_with(|rs, _| rs.is_acking_tlp_retrans_seq = true);
            if d.cc.loss_round_start {
                started = true;
                break;
            }
        }
        assert!(started);
        assert_eq!(d.cc.bw_latest == u64::MAX / 2, kept, "{v:?}: bw_latest kept");
        assert_eq!(d.cc.inflight_latest == u32::MAX / 2, kept, "{v:?}: inflight_latest kept");
    }
}

#[test]
fn a_loss_repaired_by_a_tlp_probe_is_a_loss_of_the_round_in_v3() {
    for (v, noted) in [(Version::V3, true), (Version::V2, false)] {
        let mut d = Drv::new(v, params(v, &[("extra_acked_gain", 0.0)]), 1);
        d.reach_probe_bw();
        d.ack_until(2 * ACKS_PER_ROUND, |d| d.cc.loss_round_start);
        assert!(!d.cc.loss_in_round);
        d.cc.cwnd_event(&d.c, &mut d.w, CaEvent::TlpRecovery);
        assert_eq!(d.cc.loss_in_round, noted, "{v:?}: bbr_note_loss");
        if noted {
            assert_eq!(d.cc.loss_round_delivered, d.c.delivered);
        }
    }
}

#[test]
fn phase_moves_are_those_of_the_probe_bw_cycle() {
    use Phase::*;
    let all = [Up, Down, Cruise, Refill];
    let legal = [
        (Down, Cruise),
        (Down, Refill),
        (Cruise, Refill),
        (Refill, Up),
        (Up, Down),
        (Down, Down),
        (Cruise, Down),
        (Refill, Down),
    ];
    crate::cc::transitions::assert_moves(&all, &legal, Phase::can_move_to);
}
