//! BIC's hooks driven ACK by ACK and checked against `bictcp_update`'s search steps and
//! `bictcp_recalc_ssthresh`'s cut (tcp_bic.c), worked out by hand.

use super::*;

fn conn() -> ConnInfo {
    ConnInfo { hz: 1000, jiffies: 5_000, is_cwnd_limited: true, ..ConnInfo::default() }
}

/// A BIC flow in congestion avoidance at `cwnd` with W_max = `w_max` and a
/// segments-per-ACK estimate of `delayed_ack`/16.
fn avoiding(cwnd: u32, w_max: u32, delayed_ack: u32) -> (Bic, Window) {
    let mut cc = Bic::new(BicParams::default());
    cc.init(&conn(), &mut Window::new(cwnd));
    cc.last_max_cwnd = w_max;
    cc.delayed_ack = delayed_ack;
    let mut w = Window::new(cwnd);
    w.ssthresh = cwnd;
    (cc, w)
}

/// `cnt` for one update at `cwnd`.
fn cnt(cwnd: u32, w_max: u32, delayed_ack: u32) -> u32 {
    let (mut cc, _) = avoiding(cwnd, w_max, delayed_ack);
    cc.update(&conn(), cwnd);
    cc.cnt
}

/// `n` ACKs of one segment each.
fn acks(cc: &mut Bic, w: &mut Window, n: u32) {
    for _ in 0..n {
        cc.cong_avoid(&conn(), w, 1);
    }
}

fn params(pairs: &[(&str, f64)]) -> Result<BicParams, String> {
    BicParams::from_overrides(&pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()).map_err(|e| e.to_string())
}

#[test]
fn cnt_in_every_region_of_the_search() {
    // One segment per ACK (delayed_ack = 16), W_max = 240, B = 4, S_max = 16, smooth_part = 20.
    // Far below: dist = (240-100)/4 = 35 > 16 -> linear, cnt = 100/16 = 6.
    assert_eq!(cnt(100, 240, 16), 6);
    // Binary search: dist = (240-200)/4 = 10 -> cnt = 200/10 = 20.
    assert_eq!(cnt(200, 240, 16), 20);
    // Next to W_max: dist = 2/4 = 0 <= 1 -> cnt = 238*20/4 = 1190.
    assert_eq!(cnt(238, 240, 16), 1190);
    // Just past W_max (< 240 + B): cnt = 242*20/4 = 1210.
    assert_eq!(cnt(242, 240, 16), 1210);
    // Max probing (< 240 + 16*3 = 288): cnt = 250*3/(250-240) = 75.
    assert_eq!(cnt(250, 240, 16), 75);
    // Beyond: linear again, cnt = 300/16 = 18.
    assert_eq!(cnt(300, 240, 16), 18);
    // At or below low_window = 14: Reno, cnt = cwnd.
    assert_eq!(cnt(14, 240, 16), 14);
}

#[test]
fn cnt_is_per_ack_and_capped_while_w_max_is_unknown() {
    // Two segments per ACK (the initial 32/16): cnt halves, 200/10 = 20 -> 20*16/32 = 10.
    assert_eq!(cnt(200, 240, 32), 10);
    // Four per ACK: 20*16/64 = 5. At or below low_window cnt = cwnd, unscaled: 10.
    assert_eq!(cnt(200, 240, 64), 5);
    assert_eq!(cnt(10, 240, 64), 10);
    // No W_max yet: 1000/16 = 62 is capped at 20 (+5% per RTT), then per ACK 20*16/32 = 10.
    assert_eq!(cnt(1000, 0, 16), 20);
    assert_eq!(cnt(1000, 0, 32), 10);
    // Never zero: 300/16 = 18 at 300/16 segments per ACK gives 18*16/300 = 0 -> 1.
    assert_eq!(cnt(300, 240, 300), 1);
}

#[test]
fn linear_region_grows_max_increment_per_rtt() {
    // cwnd 100, W_max 300: cnt = cwnd/16 = 6 for cwnd 100..=111 (12 x 6 = 72 ACKs),
    // then 7 for 112..=127: the remaining 28 ACKs add 4. One window of 100 ACKs: +16.
    let (mut cc, mut w) = avoiding(100, 300, 16);
    acks(&mut cc, &mut w, 72);
    assert_eq!(w.cwnd, 112);
    acks(&mut cc, &mut w, 28);
    assert_eq!(w.cwnd, 116);
}

#[test]
fn binary_search_step_is_a_quarter_of_the_distance() {
    // cwnd 200, W_max 240. cnt: 200/((240-200)/4 = 10) = 20; 201..=204: dist = 39/4..36/4 = 9,
    // cnt = 201/9..204/9 = 22. So 200 -> 205 takes 20 + 4 x 22 = 108 ACKs.
    let (mut cc, mut w) = avoiding(200, 240, 16);
    acks(&mut cc, &mut w, 107);
    assert_eq!(w.cwnd, 204);
    acks(&mut cc, &mut w, 1);
    assert_eq!(w.cwnd, 205);
}

#[test]
fn delayed_ack_ratio_follows_the_segments_per_ack() {
    let c = conn();
    let mut w = Window::new(10);
    let sample = |n| AckSample { pkts_acked: n, rtt_us: 40_000, in_flight: 10 };
    // One segment per ACK: 32 + 1 - 32/16 = 31, then 31 + 1 - 1 = 31 for good.
    let mut cc = Bic::new(BicParams::default());
    for _ in 0..5 {
        cc.pkts_acked(&c, &mut w, &sample(1));
        assert_eq!(cc.delayed_ack, 31);
    }
    // Four per ACK: +2 per ACK while 32 <= d < 48 (8 ACKs), +1 while 48 <= d < 64 (16 ACKs).
    let mut cc = Bic::new(BicParams::default());
    for _ in 0..23 {
        cc.pkts_acked(&c, &mut w, &sample(4));
    }
    assert_eq!(cc.delayed_ack, 63);
    cc.pkts_acked(&c, &mut w, &sample(4));
    cc.pkts_acked(&c, &mut w, &sample(4));
    assert_eq!(cc.delayed_ack, 64);
    // Outside Open the estimate holds.
    let recovering = ConnInfo { ca_state: CaState::Recovery, ..conn() };
    cc.pkts_acked(&recovering, &mut w, &sample(1));
    assert_eq!(cc.delayed_ack, 64);
}

#[test]
fn ssthresh_and_w_max_with_and_without_fast_convergence() {
    let c = conn();
    let mut cc = Bic::new(BicParams::default());
    // First loss at 100: W_max = 100, ssthresh = 100*819/1024 = 79.98 -> 79.
    assert_eq!(cc.ssthresh(&c, &Window::new(100)), 79);
    assert_eq!(cc.last_max_cwnd, 100);
    // Second loss below it, at 90: W_max = 90*(1024+819)/2048 = 80.99 -> 80;
    // ssthresh = 90*819/1024 = 71.98 -> 71.
    assert_eq!(cc.ssthresh(&c, &Window::new(90)), 71);
    assert_eq!(cc.last_max_cwnd, 80);
    // Without fast convergence W_max is the window at the loss.
    let mut cc = Bic::new(params(&[("fast_convergence", 0.0)]).unwrap());
    cc.ssthresh(&c, &Window::new(100));
    cc.ssthresh(&c, &Window::new(90));
    assert_eq!(cc.last_max_cwnd, 90);
    // At or below low_window (14) Reno's half, floor 2: 14 -> 7, 3 -> 2; 15 -> 15*819/1024 = 11.
    for (cwnd, want) in [(14, 7), (3, 2), (1, 2), (15, 11)] {
        assert_eq!(cc.ssthresh(&c, &Window::new(cwnd)), want, "cwnd {cwnd}");
    }
    // beta = 700: 100*700/1024 = 68.36 -> 68.
    let mut cc = Bic::new(params(&[("beta", 700.0)]).unwrap());
    assert_eq!(cc.ssthresh(&c, &Window::new(100)), 68);
}

#[test]
fn slow_start_hands_leftover_acks_to_the_search() {
    // cwnd 8, ssthresh 10, 5 ACKed: slow start to 10, 3 left; cnt = cwnd = 10 at or
    // below low_window (not scaled by the ACK ratio), so 3 < 10 waits in cwnd_cnt.
    let mut cc = Bic::new(BicParams::default());
    let mut w = Window::new(8);
    w.ssthresh = 10;
    cc.cong_avoid(&conn(), &mut w, 5);
    assert_eq!((w.cwnd, w.cwnd_cnt, cc.cnt), (10, 3, 10));
    // Not cwnd-limited: nothing moves.
    let idle = ConnInfo { is_cwnd_limited: false, ..conn() };
    cc.cong_avoid(&idle, &mut w, 50);
    assert_eq!((w.cwnd, w.cwnd_cnt), (10, 3));
}

#[test]
fn rto_forgets_w_max_and_the_ack_ratio_and_initial_ssthresh_applies() {
    let (mut cc, mut w) = avoiding(100, 240, 64);
    cc.set_state(&conn(), &mut w, CaState::Recovery);
    assert_eq!((cc.last_max_cwnd, cc.delayed_ack), (240, 64));
    cc.set_state(&conn(), &mut w, CaState::Loss);
    assert_eq!((cc.last_max_cwnd, cc.delayed_ack, cc.epoch_start), (0, 32, 0));

    let mut w = Window::new(10);
    Bic::new(BicParams::default()).init(&conn(), &mut w);
    assert_eq!(w.ssthresh, INFINITE_SSTHRESH);
    Bic::new(params(&[("initial_ssthresh", 50.0)]).unwrap()).init(&conn(), &mut w);
    assert_eq!(w.ssthresh, 50);
}

#[test]
fn undo_restores_the_prior_window() {
    let mut cc = Bic::new(BicParams::default());
    let c = ConnInfo { prior_cwnd: 80, ..conn() };
    assert_eq!(cc.undo_cwnd(&c, &Window::new(64)), 80);
    assert_eq!(cc.undo_cwnd(&c, &Window::new(90)), 90);
}

#[test]
fn parameters_override_by_name_and_reject_out_of_range() {
    let p = params(&[("max_increment", 32.0), ("low_window", 20.0), ("smooth_part", 10.0)]).unwrap();
    assert_eq!((p.max_increment, p.low_window, p.smooth_part), (32, 20, 10));
    // max_increment 32: cwnd 100, W_max 300 -> linear cnt = 100/32 = 3.
    let mut cc = Bic::new(p);
    cc.last_max_cwnd = 300;
    cc.delayed_ack = 16;
    cc.update(&conn(), 100);
    assert_eq!(cc.cnt, 3);
    assert_eq!(params(&[("beta", 1024.0)]).unwrap_err(), "beta: must be in [1, 1023], got 1024");
    assert_eq!(params(&[("max_increment", 0.0)]).unwrap_err(), "max_increment: must be in [1, 1000000], got 0");
    assert!(params(&[("alpha", 1.0)])
        .unwrap_err()
        .starts_with("alpha: not a parameter of bic; allowed: fast_convergence"));
}
