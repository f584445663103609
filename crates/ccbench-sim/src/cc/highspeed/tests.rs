//! HighSpeed's hooks driven ACK by ACK and checked against RFC 3649's table
//! (a(w), b(w)) and the kernel's per-ACK step, worked out by hand.

use super::*;

fn conn() -> ConnInfo {
    ConnInfo { hz: 1000, is_cwnd_limited: true, ..ConnInfo::default() }
}

/// A flow in congestion avoidance at `cwnd`.
fn avoiding(cwnd: u32) -> (HighSpeed, Window) {
    let mut cc = HighSpeed::new();
    let mut w = Window::new(cwnd);
    cc.init(&conn(), &mut w);
    w.ssthresh = cwnd;
    (cc, w)
}

/// `n` ACKs of `acked` segments each.
fn acks(cc: &mut HighSpeed, w: &mut Window, n: u32, acked: u32) {
    for _ in 0..n {
        cc.cong_avoid(&conn(), w, acked);
    }
}

#[test]
fn table_rows_and_the_resulting_ssthresh() {
    // (cwnd, a(w) = row + 1, ssthresh = cwnd - (cwnd*md >> 8)) after one ACK at cwnd:
    // 38: row 0 (<= 38), md 128: 38 - 4864/256 = 38 - 19 = 19.
    // 39: row 1 (38 < 39 <= 118), md 112: 39 - 4368/256 = 39 - 17 = 22.
    // 1000: row 7 (851 < 1000 <= 1058), md 83: 1000 - 83000/256 = 1000 - 324 = 676
    //       (RFC 3649 at w = 1058: a = 8, b = 0.33).
    // 100000: past the last row, 71 (89053), md 24: 100000 - 2400000/256 = 100000 - 9375 = 90625.
    for (cwnd, a, ssthresh) in [(38, 1, 19), (39, 2, 22), (1000, 8, 676), (100_000, 72, 90_625)] {
        let (mut cc, mut w) = avoiding(cwnd);
        acks(&mut cc, &mut w, 1, 1);
        assert_eq!(w.cwnd, cwnd, "one ACK adds a(w) = {a} < cwnd to cwnd_cnt only");
        assert_eq!(cc.internals()["ai"], a as f64, "cwnd {cwnd}");
        assert_eq!(cc.ssthresh(&conn(), &w), ssthresh, "cwnd {cwnd}");
    }
}

#[test]
fn a_loss_in_slow_start_halves_and_small_windows_keep_two() {
    // No avoidance step yet: row 0, md 128: 1000 - 500 = 500; 3 - 1 = 2; 1 - 0 -> floor 2.
    let mut cc = HighSpeed::new();
    for (cwnd, want) in [(1000, 500), (3, 2), (1, 2)] {
        assert_eq!(cc.ssthresh(&conn(), &Window::new(cwnd)), want, "cwnd {cwnd}");
    }
}

#[test]
fn growth_is_a_of_w_segments_per_window_of_acks() {
    // cwnd 1000, a = 8: each ACK adds 8 to cwnd_cnt, each +1 spends the cwnd it was at.
    // 1000 ACKs give 8000; 1000 + 1001 + ... + 1006 = 7021 buys 7, the 8th needs 1007 more.
    let (mut cc, mut w) = avoiding(1000);
    acks(&mut cc, &mut w, 1000, 1);
    assert_eq!((w.cwnd, w.cwnd_cnt), (1007, 8000 - 7021));
}

#[test]
fn up_to_38_segments_it_is_reno_and_counts_acks_not_segments() {
    // cwnd 20, a = 1: +1 on the 20th ACK; an ACK of 5 segments still counts once.
    let (mut cc, mut w) = avoiding(20);
    acks(&mut cc, &mut w, 19, 5);
    assert_eq!((w.cwnd, w.cwnd_cnt), (20, 19));
    acks(&mut cc, &mut w, 1, 5);
    assert_eq!((w.cwnd, w.cwnd_cnt), (21, 0));
}

#[test]
fn the_row_follows_the_window_down() {
    let (mut cc, mut w) = avoiding(1000);
    acks(&mut cc, &mut w, 1, 1);
    assert_eq!(cc.ai, 7);
    (w.cwnd, w.ssthresh) = (30, 30);
    acks(&mut cc, &mut w, 1, 1);
    assert_eq!(cc.ai, 0);
}

#[test]
fn slow_start_drops_the_leftover_and_the_clamp_stops_growth() {
    // cwnd 8, ssthresh 10, 5 ACKed: to 10; the other 3 are not carried into avoidance.
    let mut cc = HighSpeed::new();
    let mut w = Window::new(8);
    cc.init(&conn(), &mut w);
    w.ssthresh = 10;
    cc.cong_avoid(&conn(), &mut w, 5);
    assert_eq!((w.cwnd, w.cwnd_cnt), (10, 0));
    // init lowers the clamp to 2^32/128 - 1 = 33554431.
    assert_eq!(w.cwnd_clamp, 33_554_431);
    let (mut cc, mut w) = avoiding(50);
    w.cwnd_clamp = 50;
    acks(&mut cc, &mut w, 200, 1);
    assert_eq!((w.cwnd, w.cwnd_cnt), (50, 0));
    // Not cwnd-limited: nothing moves.
    let idle = ConnInfo { is_cwnd_limited: false, ..conn() };
    let (mut cc, mut w) = avoiding(20);
    cc.cong_avoid(&idle, &mut w, 1);
    assert_eq!(w.cwnd_cnt, 0);
}

#[test]
fn undo_restores_the_prior_window() {
    let mut cc = HighSpeed::new();
    let c = ConnInfo { prior_cwnd: 80, ..conn() };
    assert_eq!(cc.undo_cwnd(&c, &Window::new(64)), 80);
    assert_eq!(cc.undo_cwnd(&c, &Window::new(90)), 90);
}

#[test]
fn it_takes_no_parameters() {
    let overrides = BTreeMap::from([("ai".to_string(), 1.0)]);
    let e = Algorithm::HighSpeed.build(&overrides, crate::base::rng::stream(1, "cc", 0)).err().unwrap();
    assert_eq!(e, "ai: highspeed takes no parameters");
    assert!(Algorithm::HighSpeed.parameters().is_empty());
}
