//! H-TCP's hooks checked against the paper's α(Δ) and adaptive β in the kernel's
//! fixed point (tcp_htcp.c), worked out by hand. HZ = 1000: a jiffy is 1 ms.

use super::*;
use crate::time::{Time, NS_PER_MS, NS_PER_SEC};

const T0: Time = Time(1_000 * NS_PER_SEC);

fn at(ms: u64, state: CaState) -> ConnInfo {
    let now = Time(T0.0 + ms * NS_PER_MS);
    ConnInfo {
        now,
        jiffies: now.jiffies(1000),
        hz: 1000,
        is_cwnd_limited: true,
        ca_state: state,
        ..ConnInfo::default()
    }
}

fn open(ms: u64) -> ConnInfo {
    at(ms, CaState::Open)
}

fn params(pairs: &[(&str, f64)]) -> Result<HtcpParams, String> {
    HtcpParams::from_overrides(&pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()).map_err(|e| e.to_string())
}

/// A flow initialised at T0.
fn fresh(p: HtcpParams) -> Htcp {
    let mut cc = Htcp::new(p);
    cc.init(&open(0), &mut Window::new(10));
    cc
}

/// α in 1/128 at `delta_ms` after the last congestion event, with `beta` and `min_rtt` (ms).
fn alpha(rtt_scaling: bool, beta: u8, min_rtt: u32, delta_ms: u64) -> u32 {
    let mut cc = fresh(params(&[("use_rtt_scaling", rtt_scaling as u8 as f64)]).unwrap());
    (cc.beta, cc.min_rtt) = (beta, min_rtt);
    cc.alpha_update(jiffies(&open(delta_ms)));
    cc.alpha
}

#[test]
fn alpha_follows_delta_since_the_last_congestion_event() {
    // Without RTT scaling, β = 0.5 (64): α = 2·factor·(128 − 64) = 128·factor, where
    // factor = 1 for Δ ≤ 1 s, else 1 + (10·d + (d/2)²/1000)/1000 with d = Δ − 1000 ms:
    //   Δ = 1.5 s: 1 + (5000 + 62)/1000 = 6    (paper: 1 + 10·0.5 + 0.25² = 6.06)
    //   Δ = 2 s:   1 + (10000 + 250)/1000 = 11  (paper: 11.25)
    //   Δ = 3 s:   1 + (20000 + 1000)/1000 = 22 (paper: 22)
    for (delta_ms, factor) in [(500, 1), (1000, 1), (1500, 6), (2000, 11), (3000, 22)] {
        assert_eq!(alpha(false, 64, 40, delta_ms), 128 * factor, "Δ = {delta_ms} ms");
    }
    // β = 0.8 (102) keeps the average rate: α = 2·22·(128 − 102) = 1144 (8.9 segments).
    assert_eq!(alpha(false, 102, 40, 3000), 1144);
}

#[test]
fn rtt_scaling_multiplies_alpha_by_min_rtt_over_100_ms() {
    // Δ = 3 s, factor 22; scale = (1000·8)/(10·min_rtt) clamped to [4, 80];
    // factor = 22·8/scale; α = 2·factor·64.
    //   40 ms:  scale 20, factor 176/20 = 8        -> 1024
    //   100 ms: scale 8,  factor 22                -> 2816
    //   200 ms: scale 4,  factor 44                -> 5632
    //   500 ms: scale 8000/5000 = 1 -> 4 (at most ×2), factor 44 -> 5632
    //   5 ms:   scale 160 -> 80, factor 176/80 = 2 -> 256
    for (min_rtt, want) in [(40, 1024), (100, 2816), (200, 5632), (500, 5632), (5, 256)] {
        assert_eq!(alpha(true, 64, min_rtt, 3000), want, "min RTT {min_rtt} ms");
    }
    // Δ < 1 s at 40 ms: factor 8/20 = 0 -> 1, α = 128.
    assert_eq!(alpha(true, 64, 40, 500), 128);
}

/// β after one `beta_update` with the mode switch on and no throughput change.
fn beta(min_rtt: u32, max_rtt: u32) -> u8 {
    let mut cc = fresh(HtcpParams::default());
    cc.modeswitch = true;
    cc.beta_update(min_rtt, max_rtt, 1000);
    cc.beta
}

#[test]
fn beta_adapts_to_min_over_max_rtt() {
    // (min << 7)/max: 40/50 -> 5120/50 = 102 (0.8); 40/60 -> 85; 40/100 -> 51 -> 64 (0.5);
    // 40/45 -> 113 -> 102. min RTT 10 ms is not above 10 ms: 64.
    for (min, max, want) in [(40, 50, 102), (40, 60, 85), (40, 100, 64), (40, 45, 102), (10, 11, 64)] {
        assert_eq!(beta(min, max), want, "{min}/{max}");
    }
}

#[test]
fn the_first_event_halves_then_beta_adapts_and_max_rtt_fades() {
    let mut cc = fresh(HtcpParams::default());
    (cc.min_rtt, cc.max_rtt) = (40, 60);
    // First event: no mode switch yet -> β = 64, ssthresh = 100·64 >> 7 = 50.
    assert_eq!(cc.ssthresh(&open(500), &Window::new(100)), 50);
    // max RTT fades: 40 + 20·95/100 = 59.
    assert_eq!(cc.max_rtt, 59);
    // Second: β = (40 << 7)/59 = 86, ssthresh = 100·86 >> 7 = 67.
    assert_eq!(cc.ssthresh(&open(600), &Window::new(100)), 67);
    assert_eq!(cc.beta, 86);
}

#[test]
fn a_throughput_change_over_20_percent_resets_beta() {
    // 5·max_b must lie within [4, 6]·old_max_b.
    for (max_b, old_max_b, adaptive) in [(1190, 1000, true), (810, 1000, true), (1210, 1000, false), (790, 1000, false)]
    {
        let mut cc = fresh(HtcpParams::default());
        (cc.modeswitch, cc.max_b, cc.old_max_b) = (true, max_b, old_max_b);
        cc.beta_update(40, 50, 1000);
        let want = if adaptive { 102 } else { 64 };
        assert_eq!((cc.beta, cc.modeswitch, cc.old_max_b), (want, adaptive, max_b), "{max_b} vs {old_max_b}");
    }
    // Without the switch the change is ignored.
    let mut cc = fresh(params(&[("use_bandwidth_switch", 0.0)]).unwrap());
    (cc.modeswitch, cc.max_b, cc.old_max_b) = (true, 2000, 1000);
    cc.beta_update(40, 50, 1000);
    assert_eq!(cc.beta, 102);
}

#[test]
fn rtt_samples_set_min_and_max_rtt() {
    let mut cc = fresh(HtcpParams::default());
    let mut w = Window::new(10);
    let sample = |us| AckSample { pkts_acked: 1, rtt_us: us, in_flight: 10 };
    // 39.5 ms rounds up to 40 jiffies; max follows in Open, at most 20 ms higher a sample.
    cc.pkts_acked(&open(0), &mut w, &sample(39_500));
    assert_eq!((cc.min_rtt, cc.max_rtt), (40, 40));
    cc.pkts_acked(&open(1), &mut w, &sample(70_000));
    assert_eq!(cc.max_rtt, 40, "70 > 40 + 20: a spike");
    cc.pkts_acked(&open(2), &mut w, &sample(55_000));
    cc.pkts_acked(&open(3), &mut w, &sample(70_000));
    assert_eq!(cc.max_rtt, 70);
    cc.pkts_acked(&at(4, CaState::Recovery), &mut w, &sample(80_000));
    assert_eq!((cc.min_rtt, cc.max_rtt), (40, 70), "max RTT is not measured in Recovery");
    cc.pkts_acked(&open(5), &mut w, &sample(-1));
    assert_eq!((cc.min_rtt, cc.max_rtt), (40, 70));
}

#[test]
fn achieved_throughput_is_sampled_once_a_window_and_a_min_rtt_have_passed() {
    let mut cc = fresh(HtcpParams::default());
    let mut w = Window::new(100);
    cc.min_rtt = 40;
    // Leaving Recovery at 0 ms starts the interval.
    cc.pkts_acked(&at(0, CaState::Recovery), &mut w, &AckSample { pkts_acked: 0, rtt_us: -1, in_flight: 0 });
    // 10 ACKs of 10 segments, every 5 ms: at 50 ms, 100 ≥ cwnd − α = 99 and 50 ≥ 40 jiffies:
    // 100·1000/50 = 2000 segments/s, within 3 min RTTs of the event (50/40 = 1): min = max = Bi.
    let ten = AckSample { pkts_acked: 10, rtt_us: -1, in_flight: 100 };
    for i in 1..=10 {
        cc.pkts_acked(&open(5 * i), &mut w, &ten);
    }
    assert_eq!((cc.bi, cc.max_b, cc.min_b, cc.packetcount), (2000, 2000, 2000, 0));
    // Later (Δ = 250 ms > 3·40) 100 segments at 210..250 ms since the sample at 50 ms:
    // 100·1000/200 = 500; Bi = (3·2000 + 500)/4 = 1625; max stays 2000.
    for i in 1..=10 {
        cc.pkts_acked(&open(200 + 5 * i), &mut w, &ten);
    }
    assert_eq!((cc.bi, cc.max_b), (1625, 2000));
}

/// One ACK of `n` segments in Open: `pkts_acked`, then `cong_avoid`.
fn ack(cc: &mut Htcp, w: &mut Window, ms: u64, n: u32) {
    let s = AckSample { pkts_acked: n, rtt_us: -1, in_flight: w.cwnd };
    cc.pkts_acked(&open(ms), w, &s);
    cc.cong_avoid(&open(ms), w, n);
}

#[test]
fn cwnd_grows_alpha_segments_per_window() {
    // α = 1 (128): cwnd 10 grows on the ACK after cwnd_cnt reaches 10, the 11th.
    let mut cc = fresh(params(&[("use_bandwidth_switch", 0.0)]).unwrap());
    let mut w = Window::new(10);
    w.ssthresh = 10;
    for _ in 0..10 {
        ack(&mut cc, &mut w, 0, 1);
    }
    assert_eq!((w.cwnd, w.cwnd_cnt), (10, 10));
    ack(&mut cc, &mut w, 0, 1);
    assert_eq!((w.cwnd, w.cwnd_cnt), (11, 0));
    // α = 2 (256): 2·cwnd_cnt ≥ 11 once cwnd_cnt = 6: +1 on the 7th ACK.
    // (The last event 1.5 s ago, for the α the next increment computes.)
    cc.alpha = 256;
    cc.last_cong = jiffies(&open(0)).wrapping_sub(1500);
    for _ in 0..6 {
        ack(&mut cc, &mut w, 0, 1);
    }
    assert_eq!((w.cwnd, w.cwnd_cnt), (11, 6));
    ack(&mut cc, &mut w, 0, 1);
    assert_eq!(w.cwnd, 12);
    // The increment recomputed α: Δ = 1.5 s, factor 6, no RTT yet -> 2·6·64 = 768.
    assert_eq!(cc.alpha, 768);
    // A stretch ACK in Open counts all its segments.
    ack(&mut cc, &mut w, 0, 5);
    assert_eq!(w.cwnd_cnt, 5);
}

#[test]
fn slow_start_drops_the_leftover() {
    let mut cc = fresh(HtcpParams::default());
    let mut w = Window::new(8);
    w.ssthresh = 10;
    cc.cong_avoid(&open(0), &mut w, 5);
    assert_eq!((w.cwnd, w.cwnd_cnt), (10, 0));
}

#[test]
fn congestion_events_restart_delta_and_undo_restores_it() {
    let mut cc = fresh(HtcpParams::default());
    let mut w = Window::new(100);
    let start = cc.last_cong;
    cc.max_rtt = 70;
    // Recovery at 5 s: Δ restarts; undo puts it back.
    cc.set_state(&at(5000, CaState::Open), &mut w, CaState::Recovery);
    assert_eq!(cc.cong_time(jiffies(&open(5000))), 0);
    cc.max_rtt = 10;
    let c = ConnInfo { prior_cwnd: 120, ..open(5100) };
    assert_eq!(cc.undo_cwnd(&c, &w), 120);
    assert_eq!((cc.last_cong, cc.max_rtt, cc.undo_last_cong), (start, 70, 0));
    // Not undone: back in Open at 6 s, Δ counts from there.
    cc.set_state(&open(5500), &mut w, CaState::Recovery);
    cc.set_state(&open(6000), &mut w, CaState::Open);
    assert_eq!(cc.last_cong, jiffies(&open(6000)));
    assert_eq!(cc.undo_last_cong, 0);
    // Open again without an event in between leaves Δ alone.
    cc.set_state(&open(7000), &mut w, CaState::Open);
    assert_eq!(cc.last_cong, jiffies(&open(6000)));
}

#[test]
fn jiffies_start_300_s_before_they_wrap() {
    // At simulated time 0 the kernel clock reads 2^32 − 300·HZ.
    assert_eq!(jiffies(&ConnInfo { hz: 1000, ..ConnInfo::default() }), u32::MAX - 300_000 + 1);
    assert_eq!(jiffies(&ConnInfo { hz: 250, jiffies: 75_000, ..ConnInfo::default() }), 0);
}

#[test]
fn parameters_override_by_name_and_reject_out_of_range() {
    assert!(!params(&[("use_rtt_scaling", 0.0)]).unwrap().use_rtt_scaling);
    assert_eq!(params(&[("use_rtt_scaling", 2.0)]).unwrap_err(), "use_rtt_scaling: is a flag: must be 0 or 1, got 2");
    assert_eq!(
        params(&[("beta", 0.5)]).unwrap_err(),
        "beta: not a parameter of htcp; allowed: use_rtt_scaling, use_bandwidth_switch"
    );
}
