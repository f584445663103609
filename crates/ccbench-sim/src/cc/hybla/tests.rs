//! Hybla's hooks driven ACK by ACK and checked against the closed forms of
//! `hybla_recalc_param` and `hybla_cong_avoid` (tcp_hybla.c), worked out by hand.

use super::*;

/// A connection whose srtt is `srtt_ms`, Hybla initialised on it.
fn flow(srtt_ms: u64) -> (Hybla, ConnInfo, Window) {
    flow_with(HyblaParams::default(), srtt_ms)
}

fn flow_with(p: HyblaParams, srtt_ms: u64) -> (Hybla, ConnInfo, Window) {
    let c = ConnInfo { srtt_us: srtt_ms * 1_000, is_cwnd_limited: true, ..ConnInfo::default() };
    let mut w = Window::new(10);
    let mut h = Hybla::new(p);
    h.init(&c, &mut w);
    (h, c, w)
}

fn acks(h: &mut Hybla, c: &ConnInfo, w: &mut Window, n: u32) {
    for _ in 0..n {
        h.cong_avoid(c, w, 1);
    }
}

#[test]
fn rho_is_srtt_over_rtt0_in_eighths() {
    // 600 ms / 25 ms = 24: rho_3ls = 8·600000/25000 = 192, rho² in 1/128 = 192²·2 = 73728
    // (576 segments); the window starts at rho = 24.
    let (h, _, w) = flow(600);
    assert_eq!((h.rho_3ls, h.rho, h.rho2_7ls, h.rho2), (192, 24, 73_728, 576));
    assert_eq!((w.cwnd, w.cwnd_clamp), (24, 65_535));
    // 40 ms: 8·40000/25000 = 12.8 → 12, rho = 1 (and 1.5 in eighths); cwnd starts at 1.
    let (h, _, w) = flow(40);
    assert_eq!((h.rho_3ls, h.rho, w.cwnd), (12, 1, 1));
    // 10 ms: 8·10/25 = 3.2 → floored at 8 (rho = 1): no slower than Reno.
    let (h, _, _) = flow(10);
    assert_eq!((h.rho_3ls, h.rho, h.rho2_7ls), (8, 1, 128));
    // rtt0 = 50 ms: 600/50 = 12.
    let (h, _, w) = flow_with(HyblaParams { rtt0: 50 }, 600);
    assert_eq!((h.rho_3ls, h.rho, w.cwnd), (96, 12, 12));
}

#[test]
fn slow_start_adds_two_to_the_rho_minus_one_per_ack() {
    // rho = 1.5 (40 ms): 2^1.5 − 1 = 1.83, in the kernel 2·181 − 128 = 234/128 per ACK.
    // After n ACKs from cwnd 1: 1 + floor(234·n / 128).
    let (mut h, c, mut w) = flow(40);
    for (n, want) in [(1, 2), (2, 4), (10, 19)] {
        let (mut h2, mut w2) = (h.clone(), w.clone());
        acks(&mut h2, &c, &mut w2, n);
        assert_eq!(w2.cwnd, want, "{n} ACKs: 1 + floor(234*{n}/128)");
    }
    // rho = 1 (10 ms): exactly Reno's +1 per ACK (2·128 − 128 = 128).
    let (mut h1, c1, mut w1) = flow(10);
    acks(&mut h1, &c1, &mut w1, 5);
    assert_eq!(w1.cwnd, 1 + 5);
    // A stretch ACK counts once: the increment is per call, not per segment.
    h.cong_avoid(&c, &mut w, 8);
    assert_eq!(w.cwnd, 2);
}

#[test]
fn slow_start_stops_at_ssthresh_and_the_clamp() {
    // rho = 24: 2^16 (capped) · 128 − 128 in 1/128 = 65535 segments on one ACK.
    let (mut h, c, mut w) = flow(600);
    w.ssthresh = 100;
    h.cong_avoid(&c, &mut w, 1);
    assert_eq!(w.cwnd, 100);
    let (mut h, c, mut w) = flow(600);
    h.cong_avoid(&c, &mut w, 1);
    assert_eq!(w.cwnd, 65_535, "24 + 65535, clamped at 65535");
}

#[test]
fn avoidance_adds_rho_squared_over_cwnd_per_ack() {
    // rho² = 576: 73728/1000 = 73 per ACK in 1/128: two ACKs make 146 → +1, 18 left.
    let (mut h, c, mut w) = flow(600);
    w.cwnd = 1000;
    w.ssthresh = 1000;
    acks(&mut h, &c, &mut w, 1);
    assert_eq!((w.cwnd, h.cwnd_cents), (1000, 73));
    acks(&mut h, &c, &mut w, 1);
    assert_eq!((w.cwnd, h.cwnd_cents), (1001, 18));
    // Over a round of 1000 ACKs, dW/dack = rho²/W gives W² = 1000² + 2·576·1000, W = 1467.0.
    // The kernel floors each increment to 1/128 (at most 1000/128 = 7.8 segments lost).
    let (mut h, c, mut w) = flow(600);
    w.cwnd = 1000;
    w.ssthresh = 1000;
    acks(&mut h, &c, &mut w, 1000);
    assert!((1459..=1467).contains(&w.cwnd), "cwnd {} after one round", w.cwnd);
}

#[test]
fn small_rho_avoidance_is_reno_or_slower() {
    // rho = 1: 128/cwnd per ACK. cwnd 10: 12/128 per ACK, +1 after ceil(128/12) = 11 ACKs.
    let (mut h, c, mut w) = flow(10);
    w.cwnd = 10;
    w.ssthresh = 10;
    acks(&mut h, &c, &mut w, 10);
    assert_eq!(w.cwnd, 10);
    acks(&mut h, &c, &mut w, 1);
    assert_eq!((w.cwnd, h.cwnd_cents), (11, 132 - 128));
    // cwnd 200: the increment rounds to 0; snd_cwnd_cnt gives +1 per 200 ACKs.
    let (mut h, c, mut w) = flow(10);
    w.cwnd = 200;
    w.ssthresh = 200;
    acks(&mut h, &c, &mut w, 199);
    assert_eq!(w.cwnd, 200);
    acks(&mut h, &c, &mut w, 1);
    assert_eq!((w.cwnd, w.cwnd_cnt), (201, 0));
}

#[test]
fn a_smaller_srtt_recomputes_rho_a_larger_one_does_not() {
    let (mut h, mut c, mut w) = flow(600);
    w.ssthresh = w.cwnd;
    c.srtt_us = 900_000;
    h.cong_avoid(&c, &mut w, 1);
    assert_eq!(h.rho, 24);
    c.srtt_us = 300_000; // 300/25 = 12
    h.cong_avoid(&c, &mut w, 1);
    assert_eq!((h.rho, h.minrtt_us8), (12, 2_400_000));
    // Not cwnd-limited: rho still follows srtt, the window does not grow.
    c.is_cwnd_limited = false;
    c.srtt_us = 100_000;
    let before = w.cwnd;
    h.cong_avoid(&c, &mut w, 1);
    assert_eq!((h.rho, w.cwnd), (4, before));
}

#[test]
fn outside_open_it_grows_as_reno() {
    let (mut h, c, mut w) = flow(600);
    h.set_state(&c, &mut w, CaState::Disorder);
    h.cong_avoid(&c, &mut w, 3);
    assert_eq!(w.cwnd, 24 + 3, "Reno slow start: +acked");
    h.set_state(&c, &mut w, CaState::Open);
    w.ssthresh = 50;
    h.cong_avoid(&c, &mut w, 1);
    assert_eq!(w.cwnd, 50, "Hybla again: 2^24 capped, to ssthresh");
}

#[test]
fn ssthresh_halves_and_undo_restores() {
    let (mut h, mut c, w) = flow(600);
    assert_eq!(h.ssthresh(&c, &Window::new(101)), 50);
    assert_eq!(h.ssthresh(&c, &Window::new(3)), 2);
    c.prior_cwnd = 80;
    assert_eq!(h.undo_cwnd(&c, &Window::new(40)), 80);
    assert_eq!(h.undo_cwnd(&c, &w), 80);
}

#[test]
fn rtt0_overrides_by_name_within_its_range() {
    let one = |x: f64| BTreeMap::from([("rtt0".to_string(), x)]);
    assert_eq!(HyblaParams::from_overrides(&one(100.0)).unwrap().rtt0, 100);
    assert_eq!(HyblaParams::from_overrides(&one(4_294_967.0)).unwrap().rtt0, 4_294_967);
    for bad in [0.0, 4_294_968.0, 2.5] {
        assert!(HyblaParams::from_overrides(&one(bad)).is_err(), "rtt0 = {bad}");
    }
    assert!(HyblaParams::from_overrides(&BTreeMap::from([("beta".to_string(), 1.0)])).is_err());
}
