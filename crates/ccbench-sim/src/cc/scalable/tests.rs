//! Scalable's hooks checked against a = 0.01, b = 1/8 (Kelly 2003; tcp_scalable.c),
//! worked out by hand.

use super::*;

fn conn() -> ConnInfo {
    ConnInfo { hz: 1000, is_cwnd_limited: true, ..ConnInfo::default() }
}

fn avoiding(cwnd: u32) -> Window {
    let mut w = Window::new(cwnd);
    w.ssthresh = cwnd;
    w
}

/// `n` ACKs of `acked` segments each.
fn acks(w: &mut Window, n: u32, acked: u32) {
    for _ in 0..n {
        Scalable.cong_avoid(&conn(), w, acked);
    }
}

#[test]
fn above_100_segments_cwnd_grows_one_percent_per_rtt() {
    // cwnd 1000: +1 per 100 ACKed, so one window of ACKs adds 10 (1000 -> 1010, 1%).
    let mut w = avoiding(1000);
    acks(&mut w, 1000, 1);
    assert_eq!((w.cwnd, w.cwnd_cnt), (1010, 0));
    // Stretch ACKs of 4: 250 ACKs carry the same 1000 segments.
    let mut w = avoiding(1000);
    acks(&mut w, 250, 4);
    assert_eq!((w.cwnd, w.cwnd_cnt), (1010, 0));
    // 20 windows (cwnd 1000 -> 1200 at +1 per 100): ~1.2x.
    let mut w = avoiding(1000);
    acks(&mut w, 20_000, 1);
    assert_eq!(w.cwnd, 1200);
}

#[test]
fn below_100_segments_it_is_reno() {
    // cwnd 50: +1 per 50 ACKed.
    let mut w = avoiding(50);
    acks(&mut w, 49, 1);
    assert_eq!(w.cwnd, 50);
    acks(&mut w, 1, 1);
    assert_eq!((w.cwnd, w.cwnd_cnt), (51, 0));
}

#[test]
fn a_loss_cuts_one_eighth() {
    // cwnd − cwnd >> 3: 1000 -> 875, 100 -> 88 (100 − 12), 7 -> 7 (7 >> 3 = 0), 2 -> 2, 1 -> 2.
    for (cwnd, want) in [(1000, 875), (100, 88), (7, 7), (2, 2), (1, 2)] {
        assert_eq!(Scalable.ssthresh(&conn(), &Window::new(cwnd)), want, "cwnd {cwnd}");
    }
}

#[test]
fn recovery_takes_the_same_number_of_rtts_at_any_large_window() {
    // After a cut to 7/8, regaining the window at 1% per RTT takes ln(8/7)/ln(1.01) ≈ 13.4
    // RTTs; per RTT of ACKs the window grows by floor((cnt + cwnd)/100). From 875 and from
    // 8750 the loss is regained after 14 windows of ACKs and not after 13.
    for cwnd in [1000, 10_000] {
        let mut w = avoiding(cwnd);
        w.cwnd = Scalable.ssthresh(&conn(), &w);
        w.ssthresh = w.cwnd;
        let mut rounds = 0;
        while w.cwnd < cwnd {
            let window = w.cwnd;
            acks(&mut w, window, 1);
            rounds += 1;
        }
        assert_eq!(rounds, 14, "from {cwnd}");
    }
}

#[test]
fn slow_start_hands_the_leftover_to_avoidance() {
    // cwnd 8, ssthresh 10, 5 ACKed: to 10, 3 left counted toward the next +1 (ai_w = 10).
    let mut w = Window::new(8);
    w.ssthresh = 10;
    Scalable.cong_avoid(&conn(), &mut w, 5);
    assert_eq!((w.cwnd, w.cwnd_cnt), (10, 3));
    // Not cwnd-limited: nothing moves.
    let idle = ConnInfo { is_cwnd_limited: false, ..conn() };
    Scalable.cong_avoid(&idle, &mut w, 50);
    assert_eq!((w.cwnd, w.cwnd_cnt), (10, 3));
}

#[test]
fn undo_restores_the_prior_window() {
    let c = ConnInfo { prior_cwnd: 80, ..conn() };
    assert_eq!(Scalable.undo_cwnd(&c, &Window::new(70)), 80);
    assert_eq!(Scalable.undo_cwnd(&c, &Window::new(90)), 90);
}

#[test]
fn it_takes_no_parameters() {
    let overrides = BTreeMap::from([("ai_cnt".to_string(), 50.0)]);
    let e = Algorithm::Scalable.build(&overrides, crate::base::rng::stream(1, "cc", 0)).err().unwrap();
    assert_eq!(e, "ai_cnt: scalable takes no parameters");
    assert!(Algorithm::Scalable.parameters().is_empty());
}
