//! Scripted tests of BBRv1: the algorithm driven through `CongestionControl` with
//! explicit ACKs and rate samples at explicit times, each checked against a closed form
//! computed here from the constants of net/ipv4/tcp_bbr.c.
//!
//! The test path and the driver are shared with the v2/v3 tests (`bbr/testing.rs`).

use super::model::*;
use super::testing::*;
use super::*;
use crate::base::rng;
use crate::cc::{Algorithm, CaState};
use crate::time::Dur;
use std::collections::{BTreeMap, BTreeSet};

// ---------------------------------------------------------------------------------
// Closed forms of v1's `bbr_tso_segs_goal` and `bbr_quantization_budget` (tcp_bbr.c);
// those of the pacing rate and the BDP are in `testing.rs`.

/// `bbr_tso_segs_goal`: min(rate / 1024, 64 KB - 1 - 320) bytes in whole segments, at
/// least 1 below 1.2 Mbit/s and 2 above, at most 127.
fn tso_goal_closed(rate: u64, mss: u32) -> u32 {
    let bytes = (rate / 1024).min(65_536 - 1 - 320);
    let floor = if rate < 150_000 { 1 } else { 2 };
    ((bytes / mss as u64) as u32).max(floor).min(127)
}

/// `bbr_quantization_budget`: + 3 TSO bursts, up to even, + 2 in PROBE_BW phase 0.
fn budget_closed(target: u32, pacing_rate: u64, phase0: bool) -> u32 {
    let x = target + 3 * tso_goal_closed(pacing_rate, MSS);
    let even = x + x % 2;
    even + if phase0 { 2 } else { 0 }
}

fn params(pairs: &[(&str, f64)]) -> BbrParams {
    BbrParams::from_overrides(&pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()).unwrap()
}

// ---------------------------------------------------------------------------------
// The driver (`testing.rs`) on a v1 connection.

type Drv = Driver<Bbr>;

impl Driver<Bbr> {
    fn new(p: BbrParams, seed: u64) -> Drv {
        Driver::start(Bbr::new(p, rng::stream(seed, "bbr", 0)), RTT_US, ACK_GAP_US, PER_ACK)
    }

    /// The defaults without the ACK-aggregation allowance, so that cwnd targets are
    /// plain closed forms (the allowance has a test of its own).
    fn with_defaults() -> Drv {
        Drv::new(params(&[("extra_acked_gain", 0.0)]), 1)
    }

    /// From init to PROBE_BW on the steady path with one BDP in flight.
    fn reach_probe_bw(&mut self) {
        self.ack_until(10 * ACKS_PER_ROUND, |d| d.cc.mode == Mode::ProbeBw);
    }
}

// ---------------------------------------------------------------------------------
// model.rs closed forms

#[test]
fn bdp_is_rounded_up_and_ten_segments_before_any_rtt() {
    assert_eq!(bdp(BW, RTT_US, BBR_UNIT), BDP);
    for g in [320, 192, 512, 640, 739, 88] {
        assert_eq!(bdp(BW, RTT_US, g), bdp_closed(g), "gain {g}/256");
    }
    // 625 x 739 / 256 = 1804.2 -> 1805; one fixed-point unit more bandwidth -> 626.
    assert_eq!(bdp(BW, RTT_US, 739), 1805);
    assert_eq!(bdp(BW + 1, RTT_US, BBR_UNIT), 626);
    assert_eq!(bdp(BW, u64::MAX, BBR_UNIT), INIT_CWND);
}

#[test]
fn pacing_rate_is_bw_times_gain_less_one_percent() {
    for g in [88, 192, 256, 320, 739] {
        assert_eq!(rate_bytes_per_sec(BW, MSS, g), pacing_rate_closed(BW_SEGS_PER_US, g), "gain {g}/256");
    }
    // 15 625 segments/s x 1448 B x 0.99 exactly.
    assert_eq!(rate_bytes_per_sec(BW, MSS, BBR_UNIT), 22_398_750);
}

#[test]
fn v1_quantization_budget_adds_three_tso_bursts_rounded_to_even_and_two_in_phase_0() {
    let mut d = Drv::with_defaults();
    // A pacing rate whose TSO goal is 3 segments: 3 x 1448 x 1024 bytes/s.
    for (rate, tso) in [(3 * 1448 * 1024u64, 3u32), (100_000, 1), (149_999, 1), (150_000, 2), (1_000_000_000, 45)] {
        assert_eq!(tso_segs_goal(&d.c, rate), tso, "rate {rate}");
        assert_eq!(tso_goal_closed(rate, MSS), tso);
        d.w.pacing_rate = rate;
        for target in [0u32, 1, 100, 101, 625] {
            assert_eq!(
                d.cc.quantization_budget(&d.c, &d.w, target),
                budget_closed(target, rate, false),
                "rate {rate} target {target}"
            );
        }
    }
    d.w.pacing_rate = 3 * 1448 * 1024;
    assert_eq!(d.cc.quantization_budget(&d.c, &d.w, 100), 110); // 100 + 9 -> 110
    d.cc.mode = Mode::ProbeBw;
    for idx in 0..CYCLE_LEN {
        d.cc.cycle_idx = idx;
        let expect = if idx == 0 { 112 } else { 110 };
        assert_eq!(d.cc.quantization_budget(&d.c, &d.w, 100), expect, "phase {idx}");
    }
    // The TSO goal is capped at 127 segments (a small MSS).
    d.c.mss = 100;
    assert_eq!(tso_segs_goal(&d.c, 1_000_000_000), 127);
}

#[test]
fn packets_in_net_at_edt_subtracts_what_departs_before_the_next_send() {
    let mut d = Drv::with_defaults();
    d.c.wstamp = d.c.now;
    assert_eq!(packets_in_net_at_edt(&d.c, BW, 100, 0), 100);
    assert_eq!(packets_in_net_at_edt(&d.c, BW, 100, 18), 118);
    // 640 µs at 1/64 segment per µs: 10 segments delivered before the next departure.
    d.c.wstamp = d.c.now + Dur::from_us(640);
    assert_eq!(packets_in_net_at_edt(&d.c, BW, 100, 0), 90);
    assert_eq!(packets_in_net_at_edt(&d.c, BW, 100, 18), 108);
    d.c.wstamp = d.c.now + Dur::from_secs(1);
    assert_eq!(packets_in_net_at_edt(&d.c, BW, 100, 0), 0);
}

// ---------------------------------------------------------------------------------
// STARTUP

#[test]
fn startup_paces_and_sizes_cwnd_at_the_high_gain() {
    let mut d = Drv::with_defaults();
    assert_eq!(d.cc.p.high_gain, 739, "2/ln 2 in /256");
    assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (739, 739));
    // Initial pacing: 2.885 x 10 segments / SRTT (bw truncated to the fixed point).
    let init_bw = 10 * BW_UNIT / RTT_US;
    assert!(d.w.pacing_rate.abs_diff(pacing_rate_closed(init_bw as f64 / BW_UNIT as f64, 739)) <= 1);
    let init = d.w.pacing_rate as f64;
    let nominal = 2.0 / std::f64::consts::LN_2 * 10.0 * MSS as f64 / 0.040 * 0.99;
    assert!((init / nominal - 1.0).abs() < 1e-3, "{init} vs {nominal}");
    // Two rounds of ACKs: the second round's samples are the path rate exactly.
    for _ in 0..2 * ACKS_PER_ROUND {
        d.ack();
    }
    assert_eq!(d.cc.mode, Mode::Startup);
    assert_eq!(d.cc.max_bw(), BW);
    assert_eq!(d.w.pacing_rate, pacing_rate_closed(BW_SEGS_PER_US, 739));
    assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (739, 739));
    // cwnd grows by what is ACKed while below the target ceil(2.885 x BDP) + budget,
    // and stops there: pin the target from both sides.
    let target = budget_closed(bdp_closed(739), d.w.pacing_rate, false);
    assert_eq!(bdp_closed(739), 1805);
    d.w.cwnd = target - 1;
    d.ack_full(ACK_GAP_US, 1, |_, _| {});
    assert_eq!(d.w.cwnd, target);
    d.ack_full(ACK_GAP_US, 1, |_, _| {});
    assert_eq!(d.w.cwnd, target, "STARTUP cwnd grew past its target");
    assert_eq!(d.cc.mode, Mode::Startup);
}

/// Per-round sample sizes: round r (1-based) is ACKs 125(r-1)+1 ..= 125 r, and its
/// first ACK is a round start. Every sample of round r delivers `per_round[r-1]`
/// segments over 40 ms. Returns the round in which the flow left STARTUP.
fn startup_exit_round(d: &mut Drv, per_round: &[i64], spike: Option<(usize, u64, i64)>) -> usize {
    d.c.inflight = 20 * BDP; // far above one BDP: stay in DRAIN once there
    for r in 1..=per_round.len() {
        for k in 1..=ACKS_PER_ROUND {
            let mut delivered = per_round[r - 1];
            if let Some((sr, sk, sd)) = spike {
                if sr == r && sk == k {
                    delivered = sd;
                }
            }
            d.ack_with(|rs, _| rs.delivered = delivered);
            assert_eq!(d.cc.round_start, k == 1, "round {r} ACK {k}");
            if d.cc.mode != Mode::Startup {
                assert_eq!(d.cc.mode, Mode::Drain);
                assert_eq!(k, 1, "left STARTUP inside round {r}, not at its start");
                return r;
            }
        }
    }
    panic!("never left STARTUP");
}

#[test]
fn startup_ends_at_the_third_round_start_without_25_percent_growth() {
    // Doubling for four rounds (baseline 800 at the start of round 4), then flat:
    // round starts 5, 6 and 7 see no growth; the third of them ends STARTUP.
    let mut d = Drv::with_defaults();
    let r = startup_exit_round(&mut d, &[100, 200, 400, 800, 800, 800, 800, 800, 800, 800], None);
    assert_eq!(r, 7);
    assert!(d.cc.full_bw_reached);
    assert_eq!(d.cc.full_bw_cnt, 3);
    // Growth below 25% of the baseline (800 -> 999) does not count as growth.
    let mut d = Drv::with_defaults();
    assert_eq!(startup_exit_round(&mut d, &[100, 200, 400, 800, 900, 990, 999, 999, 999], None), 7);
    // Exactly 25% (800 -> 1000) is growth: a new baseline, three more round starts.
    let mut d = Drv::with_defaults();
    assert_eq!(startup_exit_round(&mut d, &[100, 200, 400, 800, 800, 1000, 1000, 1000, 1000, 1000], None), 9);
}

#[test]
fn startup_compares_the_filtered_max_once_per_round() {
    // One sample 25% above the baseline in the middle of round 6 enters the max filter;
    // v1 notices it at the next round start (7), which becomes the new baseline, and
    // leaves STARTUP at the third round start after it (10).
    let mut d = Drv::with_defaults();
    let r =
        startup_exit_round(&mut d, &[100, 200, 400, 800, 800, 800, 800, 800, 800, 800, 800, 800], Some((6, 60, 1000)));
    assert_eq!(r, 10);
}

#[test]
fn app_limited_round_starts_do_not_count_toward_a_full_pipe() {
    let mut d = Drv::with_defaults();
    d.c.inflight = 20 * BDP;
    let per_round = [100i64, 200, 400, 800, 800, 800, 800, 800];
    let mut exit = None;
    'rounds: for r in 1..=per_round.len() {
        for k in 1..=ACKS_PER_ROUND {
            // The round-5 start sample is app-limited.
            let app_limited = r == 5 && k == 1;
            d.ack_with(|rs, _| {
                rs.delivered = per_round[r - 1];
                rs.is_app_limited = app_limited;
            });
            if d.cc.mode != Mode::Startup {
                exit = Some(r);
                break 'rounds;
            }
        }
    }
    assert_eq!(exit, Some(8));
}

#[test]
fn steady_path_reaches_probe_bw_at_the_fifth_round_start() {
    // Round 1 ramps up to the path rate, round 2's start sets the baseline, round starts
    // 3, 4, 5 find no growth; with one BDP in flight DRAIN ends on the same ACK.
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    assert_eq!(d.acks, 1 + 4 * ACKS_PER_ROUND);
    assert_eq!(d.cc.rtt_cnt, 5);
    assert_eq!(d.w.ssthresh, budget_closed(BDP, pacing_rate_closed(BW_SEGS_PER_US, 739), false));
}

// ---------------------------------------------------------------------------------
// DRAIN

/// To DRAIN with far more than a BDP in flight.
fn in_drain() -> Drv {
    let mut d = Drv::with_defaults();
    d.c.inflight = 3 * BDP;
    d.ack_until(10 * ACKS_PER_ROUND, |d| d.cc.mode != Mode::Startup);
    assert_eq!(d.cc.mode, Mode::Drain);
    assert_eq!(d.acks, 1 + 4 * ACKS_PER_ROUND);
    d
}

#[test]
fn drain_paces_at_88_over_256_with_the_high_cwnd_gain() {
    let mut d = in_drain();
    assert_eq!(d.cc.p.drain_gain, 88);
    assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (88, 739));
    // Once the pipe is full the computed rate applies, even though it is lower.
    assert_eq!(d.w.pacing_rate, pacing_rate_closed(BW_SEGS_PER_US, 88));
    for _ in 0..ACKS_PER_ROUND {
        d.ack();
        assert_eq!(d.cc.mode, Mode::Drain);
        assert_eq!(d.w.pacing_rate, pacing_rate_closed(BW_SEGS_PER_US, 88));
    }
}

#[test]
fn drain_ends_once_inflight_at_the_next_departure_fits_one_bdp_plus_budget() {
    let mut d = in_drain();
    d.ack();
    // The target uses the TSO goal of the previous ACK's (drain) pacing rate.
    let target = budget_closed(BDP, pacing_rate_closed(BW_SEGS_PER_US, 88), false);
    assert_eq!(target, 640, "625 + 3 x 5, even");
    d.c.inflight = target + 1;
    d.ack();
    assert_eq!(d.cc.mode, Mode::Drain);
    // 10 segments leave before the EDT 640 µs ahead (no TSO allowance below gain 1).
    d.c.inflight = target + 10;
    d.edt_lead_us = 9 * 64;
    d.ack();
    assert_eq!(d.cc.mode, Mode::Drain, "9 segments depart before the EDT: 641 > 640");
    d.edt_lead_us = 10 * 64;
    d.ack();
    assert_eq!(d.cc.mode, Mode::ProbeBw);
    assert_ne!(d.cc.cycle_idx, 1);

    let mut d = in_drain();
    d.ack();
    d.c.inflight = target;
    d.ack();
    assert_eq!(d.cc.mode, Mode::ProbeBw);
}

#[test]
fn probe_bw_starts_in_any_phase_but_the_0_75_one_uniformly() {
    let mut seen: BTreeMap<usize, u32> = BTreeMap::new();
    for seed in 0..700 {
        let mut d = Drv::new(params(&[("extra_acked_gain", 0.0)]), seed);
        d.reach_probe_bw();
        let idx = d.cc.cycle_idx;
        *seen.entry(idx).or_default() += 1;
        // The gain is that of the entry phase from the first ACK on.
        assert_eq!(d.cc.pacing_gain, d.cc.cycle_gain(idx));
        assert_eq!(d.cc.cycle_us, d.c.delivered_us);
    }
    eprintln!("entry phases over 700 seeds: {seen:?}");
    let phases: BTreeSet<usize> = seen.keys().copied().collect();
    assert_eq!(phases, BTreeSet::from([0, 2, 3, 4, 5, 6, 7]), "{seen:?}");
    // 700 draws over 7 phases: 100 expected each; a binomial sd of ~9.3.
    for (idx, n) in &seen {
        assert!((60..=140).contains(n), "phase {idx} drawn {n} times of 700: {seen:?}");
    }
}

// ---------------------------------------------------------------------------------
// PROBE_BW

#[test]
fn probe_bw_cycles_through_eight_phases_of_at_least_one_min_rtt() {
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    // Far above 1.25 BDP in flight: the probe ends after a min_rtt, the drain phase too.
    d.c.inflight = 4 * BDP;
    let gains = [320, 192, 256, 256, 256, 256, 256, 256];
    let mut idx = d.cc.cycle_idx;
    let mut start_us = d.cc.cycle_us;
    let mut changes = 0;
    // The first ACK whose delivered stamp is more than a min_rtt past the phase start.
    let phase_len_us = (RTT_US / ACK_GAP_US + 1) * ACK_GAP_US;
    assert_eq!(phase_len_us, 40_320);
    while changes < 20 {
        let prev_cwnd = d.w.cwnd;
        d.ack();
        if d.cc.cycle_idx != idx {
            assert_eq!(d.cc.cycle_idx, (idx + 1) % CYCLE_LEN);
            assert_eq!(d.c.delivered_us - start_us, phase_len_us, "phase {idx}");
            idx = d.cc.cycle_idx;
            start_us = d.c.delivered_us;
            assert_eq!(d.cc.cycle_us, start_us);
            changes += 1;
        }
        assert_eq!(d.cc.pacing_gain, gains[idx]);
        assert_eq!(d.cc.cwnd_gain, 512);
        assert_eq!(d.w.pacing_rate, pacing_rate_closed(BW_SEGS_PER_US, gains[idx]), "phase {idx}");
        // cwnd moves toward 2 BDP + budget (+2 in phase 0) by at most what is ACKed,
        // and is cut to it at once.
        let target = budget_closed(bdp_closed(512), d.w.pacing_rate, idx == 0);
        assert_eq!(d.w.cwnd, (prev_cwnd + PER_ACK).min(target), "phase {idx}");
    }
}

/// Steady ACKs with one BDP in flight until the cycle reaches `phase`.
fn at_phase(phase: usize) -> Drv {
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    d.c.inflight = 3 * BDP;
    d.ack_until(20 * ACKS_PER_ROUND, |d| d.cc.cycle_idx == phase);
    d.c.inflight = BDP;
    d
}

#[test]
fn probe_phase_outlasts_min_rtt_until_inflight_reaches_1_25_bdp() {
    let mut d = at_phase(0);
    let start = d.cc.cycle_us;
    // One BDP in flight never reaches the 1.25 target: the probe goes on.
    while d.c.delivered_us - start <= 5 * RTT_US {
        d.ack();
        assert_eq!(d.cc.cycle_idx, 0);
    }
    // Target: ceil(1.25 BDP) + budget at the probe's own rate, + 2 in phase 0; what is
    // in the network at the EDT counts one TSO burst more while the gain is above 1.
    let rate = pacing_rate_closed(BW_SEGS_PER_US, 320);
    assert_eq!(d.w.pacing_rate, rate);
    let target = budget_closed(bdp_closed(320), rate, true);
    let tso = tso_goal_closed(rate, MSS);
    assert_eq!((target, tso), (838, 18), "782 + 54, even, + 2");
    d.ack_with(|rs, _| rs.prior_in_flight = target - tso - 1);
    assert_eq!(d.cc.cycle_idx, 0);
    d.ack_with(|rs, _| rs.prior_in_flight = target - tso);
    assert_eq!(d.cc.cycle_idx, 1);
}

#[test]
fn probe_phase_ends_early_on_loss_only_after_a_min_rtt() {
    let mut d = at_phase(0);
    let start = d.cc.cycle_us;
    d.ack_with(|rs, _| rs.losses = 1);
    assert_eq!(d.cc.cycle_idx, 0, "a loss inside the first min_rtt does not end the probe");
    while d.c.delivered_us + ACK_GAP_US - start <= RTT_US {
        d.ack_with(|rs, _| rs.losses = 1);
        assert_eq!(d.cc.cycle_idx, 0);
    }
    d.ack();
    assert_eq!(d.cc.cycle_idx, 0, "no loss, inflight below target");
    d.ack_with(|rs, _| rs.losses = 1);
    assert_eq!(d.cc.cycle_idx, 1);
}

#[test]
fn drain_phase_ends_at_one_bdp_in_flight_or_after_a_min_rtt() {
    // inflight <= target ends it at once.
    let mut d = at_phase(1);
    d.ack_with(|rs, _| rs.prior_in_flight = 10 * BDP);
    let rate = pacing_rate_closed(BW_SEGS_PER_US, 192);
    assert_eq!(d.w.pacing_rate, rate);
    let target = budget_closed(BDP, rate, false);
    assert_eq!(target, 658, "625 + 3 x 11, even");
    d.ack_with(|rs, _| rs.prior_in_flight = target + 1);
    assert_eq!(d.cc.cycle_idx, 1);
    d.ack_with(|rs, _| rs.prior_in_flight = target);
    assert_eq!(d.cc.cycle_idx, 2);
    // Above target it lasts exactly until the delivered clock passes a min_rtt.
    let mut d = at_phase(1);
    let start = d.cc.cycle_us;
    d.c.inflight = 2 * BDP;
    d.ack_until(2 * ACKS_PER_ROUND, |d| d.cc.cycle_idx != 1);
    assert_eq!(d.cc.cycle_idx, 2);
    assert_eq!(d.c.delivered_us - start, 40_320);
}

#[test]
fn probe_bw_cwnd_includes_the_ack_aggregation_allowance() {
    // A perfectly smooth ACK clock of 5 segments per ACK at the estimated rate: each ACK
    // starts a new aggregation epoch with 5 segments "extra", so the allowance is 5.
    let mut d = Drv::new(BbrParams::default(), 1);
    d.reach_probe_bw();
    for _ in 0..12 * ACKS_PER_ROUND {
        d.ack();
    }
    for _ in 0..3 * ACKS_PER_ROUND {
        let prev = d.w.cwnd;
        d.ack();
        assert_eq!(d.cc.aggregation.extra_acked(), PER_ACK);
        let target = budget_closed(bdp_closed(512) + PER_ACK, d.w.pacing_rate, d.cc.cycle_idx == 0);
        assert_eq!(d.w.cwnd, (prev + PER_ACK).min(target));
    }
}

// ---------------------------------------------------------------------------------
// PROBE_RTT

/// The first steady ACK time (µs after `from_us`) at which the jiffies clock has moved
/// strictly more than `jiffies` past `from_us`'s jiffy.
fn first_ack_after_jiffies(from_us: u64, jiffies: u64) -> u64 {
    let j0 = from_us / 1000;
    let mut t = from_us;
    while t / 1000 <= j0 + jiffies {
        t += ACK_GAP_US;
    }
    t
}

#[test]
fn probe_rtt_starts_ten_seconds_after_the_last_strictly_lower_rtt_sample() {
    // Every sample equals min_rtt (Linux >= 5.10: equal samples do not refresh it).
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    let expect = first_ack_after_jiffies(T0.us(), 10_000);
    d.ack_until(200_000, |d| d.cc.mode == Mode::ProbeRtt);
    assert_eq!(d.now_us(), expect, "entered {} µs after init", d.now_us() - T0.us());

    // A strictly lower sample at 6 s restarts the 10 s.
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    while d.now_us() < T0.us() + 6_000_000 {
        d.ack();
    }
    d.ack_with(|rs, _| rs.rtt_us = RTT_US as i64 - 1);
    assert_eq!(d.cc.min_rtt_us, RTT_US - 1);
    let lower_at = d.now_us();
    let expect = first_ack_after_jiffies(lower_at, 10_000);
    d.ack_until(200_000, |d| d.cc.mode == Mode::ProbeRtt);
    assert_eq!(d.now_us(), expect);
}

#[test]
fn probe_rtt_holds_four_segments_for_200_ms_and_a_round_then_restores_cwnd() {
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    let mut before = d.w.cwnd;
    while d.cc.mode != Mode::ProbeRtt {
        assert!(d.now_us() < T0.us() + 20_000_000, "no PROBE_RTT in 20 s");
        assert!(!d.app_limited_requested);
        before = d.w.cwnd;
        d.ack();
    }
    assert_eq!(d.cc.prior_cwnd, before, "cwnd saved on entry");
    assert!(before > 1000);
    assert_eq!(d.w.cwnd, 4);
    assert!(d.app_limited_requested);
    assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (256, 256));
    // Inflight still above 4: no timer yet.
    for _ in 0..50 {
        d.ack_with(|rs, _| rs.is_app_limited = true);
        assert_eq!(d.w.cwnd, 4);
        assert!(d.app_limited_requested);
        assert!(d.cc.probe_rtt.done_stamp.is_none());
    }
    d.c.inflight = 4;
    d.ack_with(|rs, _| rs.is_app_limited = true);
    let t1 = d.now_us();
    assert_eq!(d.cc.probe_rtt.done_stamp, Some(d.c.jiffies + 200));
    // Exit: the first ACK that is both a round (40 ms) and more than 200 jiffies after t1.
    let expect = first_ack_after_jiffies(t1, 200).max(t1 + RTT_US);
    while d.cc.mode == Mode::ProbeRtt {
        assert!(d.now_us() < T0.us() + 20_000_000, "PROBE_RTT never ended");
        let cwnd_before = d.w.cwnd;
        assert_eq!(cwnd_before, 4);
        d.ack_with(|rs, _| rs.is_app_limited = true);
        if d.cc.mode == Mode::ProbeRtt {
            assert!(d.app_limited_requested);
        }
    }
    assert_eq!(d.now_us(), expect);
    assert!(d.now_us() - t1 > 200_000);
    // The exit ACK still asks for the app-limited mark (it runs before the exit, as in
    // bbr_update_min_rtt); the next one does not.
    assert!(d.app_limited_requested);
    assert_eq!(d.cc.mode, Mode::ProbeBw);
    assert_ne!(d.cc.cycle_idx, 1);
    // cwnd restored to the saved value (then + acked, capped by the target).
    let target = budget_closed(bdp_closed(512), d.w.pacing_rate, d.cc.cycle_idx == 0);
    assert_eq!(d.w.cwnd, (before + PER_ACK).min(target));
    // min_rtt_stamp restarted: the next PROBE_RTT is 10 s after the exit.
    let exit = d.now_us();
    let next = first_ack_after_jiffies(exit, 10_000);
    d.c.inflight = BDP;
    d.ack();
    assert!(!d.app_limited_requested);
    d.ack_until(200_000, |d| d.cc.mode == Mode::ProbeRtt);
    assert_eq!(d.now_us(), next);
}

#[test]
fn probe_rtt_lasts_a_full_round_when_rounds_are_longer_than_200_ms() {
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    d.ack_until(200_000, |d| d.cc.mode == Mode::ProbeRtt);
    d.c.inflight = 4;
    d.round_us = 300_000;
    d.ack_with(|rs, _| rs.is_app_limited = true);
    let t1 = d.now_us();
    d.ack_until(10_000, |d| d.cc.mode != Mode::ProbeRtt);
    // The first ACK at least 300 ms after t1 (ACKs every 320 µs).
    assert_eq!(d.now_us(), t1 + 300_000u64.div_ceil(ACK_GAP_US) * ACK_GAP_US);
}

#[test]
fn probe_rtt_returns_to_startup_if_the_pipe_was_never_full() {
    // App-limited samples: the plateau detector never runs, the pipe is never full.
    let mut d = Drv::with_defaults();
    while d.cc.mode != Mode::ProbeRtt {
        assert!(d.now_us() < T0.us() + 20_000_000, "no PROBE_RTT in 20 s");
        assert_eq!(d.cc.mode, Mode::Startup);
        d.app_limited_ack();
    }
    assert!(!d.cc.full_bw_reached);
    assert_eq!(d.now_us(), first_ack_after_jiffies(T0.us(), 10_000));
    // Before the pipe is full the pacing rate only rises: PROBE_RTT's gain of 1 does
    // not lower it.
    let startup_rate = pacing_rate_closed(BW_SEGS_PER_US, 739);
    assert_eq!(d.w.pacing_rate, startup_rate);
    assert_eq!(d.w.cwnd, 4);
    d.c.inflight = 4;
    while d.cc.mode == Mode::ProbeRtt {
        assert!(d.now_us() < T0.us() + 20_000_000, "PROBE_RTT never ended");
        d.app_limited_ack();
        assert_eq!(d.w.pacing_rate, startup_rate);
    }
    assert_eq!(d.cc.mode, Mode::Startup);
    assert_eq!((d.cc.pacing_gain, d.cc.cwnd_gain), (739, 739));
}

// ---------------------------------------------------------------------------------
// Loss recovery

#[test]
fn recovery_conserves_packets_for_one_round_then_restores_cwnd() {
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    for _ in 0..ACKS_PER_ROUND {
        d.ack();
    }
    // A known cwnd below the target, saved by the ssthresh hook on entering recovery.
    d.w.cwnd = 1000;
    d.enter_recovery();
    assert_eq!(d.cc.prior_cwnd, 1000);
    // First ACK in recovery: 3 lost, 5 delivered, 600 left in flight.
    d.c.inflight = 600;
    d.ack_with(|rs, _| rs.losses = 3);
    let t_rec = d.now_us();
    assert_eq!(d.w.cwnd, 600 + PER_ACK, "cwnd = inflight + acked");
    assert!(d.cc.packet_conservation);
    // Conservation: cwnd = max(cwnd - losses, inflight + acked) for one round.
    d.c.inflight = 590;
    d.ack();
    assert_eq!(d.w.cwnd, 605);
    d.ack_with(|rs, _| rs.losses = 2);
    assert_eq!(d.w.cwnd, 603);
    d.c.inflight = 700;
    d.ack();
    assert_eq!(d.w.cwnd, 705, "a larger flight raises cwnd to inflight + acked");
    d.c.inflight = 590;
    while d.now_us() + ACK_GAP_US < t_rec + RTT_US {
        d.ack();
        assert_eq!(d.w.cwnd, 705);
        assert!(d.cc.packet_conservation);
    }
    // The round ends: back to growth by acked (minus losses) toward the target.
    d.ack();
    assert_eq!(d.now_us(), t_rec + RTT_US);
    assert!(!d.cc.packet_conservation);
    assert_eq!(d.w.cwnd, 710);
    d.ack_with(|rs, _| rs.losses = 2);
    assert_eq!(d.w.cwnd, 713);
    // Leaving recovery restores the saved cwnd.
    d.c.ca_state = CaState::Open;
    d.ack();
    assert_eq!(d.w.cwnd, 1000 + PER_ACK);
}

#[test]
fn losses_are_deducted_from_cwnd_outside_recovery_too() {
    let mut d = Drv::with_defaults();
    d.reach_probe_bw();
    d.w.cwnd = 1000;
    d.ack_with(|rs, _| rs.losses = 7);
    assert_eq!(d.w.cwnd, 1000 - 7 + PER_ACK);
}

// ---------------------------------------------------------------------------------
// Parameters and randomness

#[test]
fn cwnd_gain_override_is_rounded_to_the_kernel_fixed_point() {
    let p = params(&[("cwnd_gain", 2.5), ("extra_acked_gain", 0.0)]);
    assert_eq!(p.cwnd_gain, 640);
    let mut d = Drv::new(p, 1);
    d.reach_probe_bw();
    for _ in 0..2 * ACKS_PER_ROUND {
        d.ack();
    }
    assert_eq!(d.cc.cwnd_gain, 640);
    assert_eq!(bdp_closed(640), 1563);
    for _ in 0..ACKS_PER_ROUND {
        let prev = d.w.cwnd;
        d.ack();
        assert_eq!(d.w.cwnd, (prev + PER_ACK).min(budget_closed(1563, d.w.pacing_rate, d.cc.cycle_idx == 0)));
    }
}

#[test]
fn defaults_are_the_kernel_constants() {
    let p = BbrParams::default();
    assert_eq!((p.high_gain, p.drain_gain, p.cwnd_gain, p.probe_gain, p.probe_drain_gain), (739, 88, 512, 320, 192));
    assert_eq!(
        (p.cycle_rand, p.bw_rtts, p.min_rtt_win_sec, p.probe_rtt_mode_ms, p.cwnd_min_target),
        (7, 10, 10, 200, 4)
    );
    assert_eq!((p.full_bw_thresh, p.full_bw_cnt), (320, 3));
    assert_eq!(
        (p.lt_intvl_min_rtts, p.lt_loss_thresh, p.lt_bw_ratio, p.lt_bw_diff, p.lt_bw_max_rtts),
        (4, 50, 32, 500, 48)
    );
}

#[test]
fn unknown_or_malformed_parameters_are_errors_that_name_the_allowed_ones() {
    let one = |k: &str, v: f64| BTreeMap::from([(k.to_string(), v)]);
    let err =
        Algorithm::Bbr.build(&one("cwnd_gian", 2.0), rng::stream(1, "bbr", 0)).err().expect("unknown name accepted");
    assert!(err.contains("cwnd_gian"), "{err}");
    for name in [
        "high_gain",
        "drain_gain",
        "cwnd_gain",
        "probe_gain",
        "probe_drain_gain",
        "full_bw_thresh",
        "extra_acked_gain",
        "cycle_rand",
        "bw_rtts",
        "min_rtt_win_sec",
        "probe_rtt_mode_ms",
        "cwnd_min_target",
        "full_bw_cnt",
        "extra_acked_win_rtts",
        "lt_sampling",
        "lt_intvl_min_rtts",
        "lt_bw_max_rtts",
    ] {
        assert!(err.contains(name), "'{name}' missing from: {err}");
        assert!(BbrParams::from_overrides(&one(name, 1.0)).is_ok(), "{name}");
    }
    assert!(BbrParams::from_overrides(&one("full_bw_cnt", 2.5)).is_err(), "counts are whole numbers");
    assert!(BbrParams::from_overrides(&one("cwnd_gain", -1.0)).is_err());
    assert!(BbrParams::from_overrides(&one("cwnd_gain", f64::NAN)).is_err());
    assert!(Algorithm::Bbr.build(&one("cwnd_gain", 2.5), rng::stream(1, "bbr", 0)).is_ok());
}

#[test]
fn the_random_entry_phase_is_a_function_of_the_seed() {
    let c = ConnInfo::default();
    let phases = |seed: u64| {
        let mut cc = Bbr::new(BbrParams::default(), rng::stream(seed, "bbr", 0));
        cc.mode = Mode::ProbeBw; // each call restarts the cycle, as leaving lt_bw does
        (0..64)
            .map(|_| {
                cc.reset_probe_bw_mode(&c);
                cc.cycle_idx
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(phases(7), phases(7));
    assert_ne!(phases(7), phases(8));
    assert!(phases(7).iter().all(|&i| i != 1));
    // cycle_rand = 1: always phase 7 - 0 + 1 = 0, the probe.
    let mut cc = Bbr::new(params(&[("cycle_rand", 1.0)]), rng::stream(1, "bbr", 0));
    cc.mode = Mode::ProbeBw;
    for _ in 0..16 {
        cc.reset_probe_bw_mode(&c);
        assert_eq!(cc.cycle_idx, 0);
    }
}

// ---------------------------------------------------------------------------------
// The 2BRobust option

#[test]
fn inflight_deficit_paces_at_high_gain_below_one_bdp_unless_app_limited() {
    let high = BbrParams::default().high_gain;
    let mut c = ConnInfo { packets_out: BDP - 1, ..ConnInfo::default() };
    assert_eq!(inflight_deficit_gain(&c, BW, RTT_US, 320, high), high);
    c.packets_out = BDP;
    assert_eq!(inflight_deficit_gain(&c, BW, RTT_US, 320, high), 320);
    c.packets_out = BDP - 1;
    c.app_limited = true;
    assert_eq!(inflight_deficit_gain(&c, BW, RTT_US, 320, high), 320);
    c.app_limited = false;
    assert_eq!(inflight_deficit_gain(&c, BW, u64::MAX, 320, high), 320, "no RTT sample yet");
    // STARTUP's own gain is never lowered.
    assert_eq!(inflight_deficit_gain(&c, BW, RTT_US, 800, high), 800);

    // Driven: in PROBE_BW the patched flow's pacing gain follows the deficit.
    let mut d = Drv::new(params(&[("extra_acked_gain", 0.0), ("inflight_deficit", 1.0)]), 1);
    d.c.packets_out = BDP;
    d.reach_probe_bw();
    d.ack_with(|_, c| c.packets_out = BDP / 2);
    assert_eq!(d.cc.pacing_gain, high);
    d.ack_with(|_, c| c.packets_out = BDP + 10);
    assert!(d.cc.pacing_gain < high);
    // Mainline ignores the deficit.
    let mut d = Drv::with_defaults();
    d.c.packets_out = BDP;
    d.reach_probe_bw();
    d.ack_with(|_, c| c.packets_out = BDP / 2);
    assert!(d.cc.pacing_gain < high);
}

#[test]
fn mode_moves_are_those_of_bbr_main() {
    use Mode::*;
    let all = [Startup, Drain, ProbeBw, ProbeRtt];
    let legal = [
        (Startup, Drain),
        (Drain, ProbeBw),
        (ProbeBw, ProbeBw),
        (ProbeRtt, ProbeBw),
        (ProbeRtt, Startup),
        (Startup, ProbeRtt),
        (Drain, ProbeRtt),
        (ProbeBw, ProbeRtt),
    ];
    crate::cc::transitions::assert_moves(&all, &legal, Mode::can_move_to);
}
