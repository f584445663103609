//! CDG driven by scripted ACKs, against values worked out by hand from tcp_cdg.c.

use super::*;
use crate::base::rng;
use crate::time::Time;

fn cdg(p: CdgParams) -> Cdg {
    Cdg::new(p, rng::stream(1, "cc", 0))
}

fn with(pairs: &[(&str, f64)]) -> CdgParams {
    let m: BTreeMap<String, f64> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    CdgParams::from_overrides(&m).expect("valid overrides")
}

/// A cwnd-limited connection in Open at sequence 0 with CDG initialised.
fn flow(p: CdgParams, cwnd: u32, ssthresh: u32) -> (Cdg, ConnInfo, Window) {
    let c = ConnInfo { is_cwnd_limited: true, ..ConnInfo::default() };
    let mut w = Window::new(cwnd);
    w.ssthresh = ssthresh;
    let mut cc = cdg(p);
    cc.init(&c, &mut w);
    (cc, c, w)
}

fn sample(cc: &mut Cdg, c: &ConnInfo, w: &mut Window, pkts: u32, rtt_us: i64) {
    cc.pkts_acked(c, w, &AckSample { pkts_acked: pkts, rtt_us, in_flight: w.cwnd });
}

/// One round: single-segment ACKs with RTTs `rtts`, then an ACK past the round's edge.
fn round(cc: &mut Cdg, c: &mut ConnInfo, w: &mut Window, rtts: &[i64]) {
    for &r in rtts {
        sample(cc, c, w, 1, r);
    }
    c.snd_una = c.snd_nxt + 1;
    c.snd_nxt = c.snd_una + w.cwnd as u64;
    cc.cong_avoid(c, w, 1);
}

#[test]
fn nexp_follows_the_kernel_table() {
    // ux = 0: U32_MAX − 0, no table factor.
    assert_eq!(nexp_u32(0), 4_294_967_295);
    // ux = 256: msb = 1, factor v[1] + 1 = 65519: (2^32 − 1)·65519 >> 16 = 65519·65536 − 1.
    assert_eq!(nexp_u32(256), 4_293_853_183);
    // ux = 42 000 = 164·256 + 16: U32_MAX − 16·4294 = 4 294 898 591; msb 164 = 0b10100100
    // takes v[3], v[6], v[8]: ·65469 >> 16 = 4 290 507 749, ·65002 >> 16 = 4 255 547 862,
    // ·63423 >> 16 = 4 118 341 248.
    assert_eq!(nexp_u32(42_000), 4_118_341_248);
    // ux = 420 000 = 1640·256 + 160: 4 294 967 295 − 160·4294 = 4 294 280 255; msb
    // 1640 = 0b11001101000 takes v[4], v[6], v[7], v[10], v[11]: ·65402, ·65002,
    // ·64471, ·57485, ·50424 (each >> 16) = 2 822 050 075.
    assert_eq!(nexp_u32(420_000), 2_822_050_075);
    // The cut-off: from 2^24 on, 0.
    assert_eq!(nexp_u32(1 << 24), 0);
    assert_eq!(nexp_u32(u32::MAX), 0);
}

/// The probability of backing off at a gradient sum g (µs) is 1 − exp(−g·42/10⁶):
/// g = 1000: 1 − e^−0.042 = 0.0411; g = 10 000: 1 − e^−0.42 = 0.3430; g = 100 000:
/// 1 − e^−4.2 = 0.9850. The table agrees to 1e-4, and the seeded draws to 0.01 over
/// 20 000 trials (3σ of a binomial at p = 0.34 is 0.010).
#[test]
fn backoff_probability_is_one_minus_exp_of_the_gradient() {
    for (g, p) in [(1_000u32, 0.0411), (10_000, 0.3430), (100_000, 0.9850)] {
        let table = 1.0 - nexp_u32(g * 42) as f64 / 4_294_967_296.0;
        assert!((table - p).abs() < 1e-4, "g {g}: table {table:.5}, closed form {p}");
        // `use_ineff = 0`: every draw counts.
        let (mut cc, _, mut w) = flow(with(&[("use_ineff", 0.0)]), 100, 50);
        let n = 20_000;
        let mut hits = 0;
        for _ in 0..n {
            w.enter_cwr = false;
            hits += cc.backoff(&mut w, g) as u32;
        }
        let freq = hits as f64 / n as f64;
        assert!((freq - p).abs() < 0.01, "g {g}: backed off {freq:.4}, expected {p}");
    }
}

#[test]
fn the_same_seed_draws_the_same_backoffs() {
    let draws = |seed| {
        let mut cc = Cdg::new(with(&[("use_ineff", 0.0)]), rng::stream(seed, "cc", 0));
        let mut w = Window::new(100);
        (0..64)
            .map(|_| {
                w.enter_cwr = false;
                cc.backoff(&mut w, 10_000)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(draws(7), draws(7));
    assert_ne!(draws(7), draws(8));
}

/// With window 8 the gradient is the sum of the last 8 per-round gradients, scaled by
/// 8/filled while fewer than 8 are in. Minima rising by 100, 300, 0, 200, 100, 100,
/// 100, 100, 500, then 0 give the sums 100, 400, 400, 600, 700, 800, 900, 1000 and
/// the gradients 100·8/1 = 800, 400·8/2 = 1600, 400·8/3 = 1066, 600·8/4 = 1200,
/// 700·8/5 = 1120, 800·8/6 = 1066, 900·8/7 = 1028, then 1000 (full: no scaling);
/// round 9 drops the first 100 and adds 500: 1400; round 10 drops 300, adds 0: 1100.
#[test]
fn gradient_is_the_moving_sum_over_the_window() {
    let mut cc = cdg(CdgParams::default());
    let steps = [100, 300, 0, 200, 100, 100, 100, 100, 500, 0];
    let expect = [800, 1600, 1066, 1200, 1120, 1066, 1028, 1000, 1400, 1100];
    let mut min = 40_000;
    cc.rtt = MinMax { min, max: 50_000 };
    for (k, (&d, &g)) in steps.iter().zip(&expect).enumerate() {
        cc.rtt_prev = cc.rtt;
        min += d;
        cc.rtt = MinMax { min, max: 50_000 };
        assert_eq!(cc.gradient(), g, "round {}", k + 1);
    }
    assert!(cc.gfilled);
}

#[test]
fn gradient_uses_the_maxima_when_the_minima_do_not_rise() {
    // window 1: no array, the round's own gradient.
    let mut cc = cdg(with(&[("window", 1.0)]));
    cc.rtt_prev = MinMax { min: 40_000, max: 60_000 };
    cc.rtt = MinMax { min: 40_000, max: 60_700 };
    assert_eq!(cc.gradient(), 700);
    cc.rtt_prev = cc.rtt;
    cc.rtt = MinMax { min: 39_990, max: 60_000 };
    assert_eq!(cc.gradient(), -700);
}

/// Ineffectual backoff: with a gradient of 400 000 µs (ux = 16.8·10⁶ ≥ 2^24, so
/// nexp = 0 and every draw but 0 backs off), use_ineff = 5 allows 5 backoffs in a
/// row; the 6th is refused. A round whose gradient sum falls to −32 µs or below shows
/// the backoffs worked and allows them again.
#[test]
fn ineffectual_backoffs_stop_after_use_ineff() {
    let (mut cc, _, mut w) = flow(CdgParams::default(), 100, 50);
    for k in 1..=5 {
        assert!(cc.backoff(&mut w, 400_000), "backoff {k}");
        assert_eq!(cc.backoff_cnt, k);
    }
    assert!(!cc.backoff(&mut w, 400_000));
    // window 8, first gradient: minima −5 µs, maxima −40 µs: gmax ≤ −32 resets.
    cc.rtt_prev = MinMax { min: 40_005, max: 50_040 };
    cc.rtt = MinMax { min: 40_000, max: 50_000 };
    cc.gradient();
    assert_eq!(cc.backoff_cnt, 0);
    assert!(cc.backoff(&mut w, 400_000));
}

/// A backoff at cwnd 100 asks the stack for a CWR reduction (`tcp_enter_cwr`), whose
/// target is ssthresh = 100·724 >> 10 = 70 (72 400/1024 = 70.7); the shadow window takes
/// 100. When the reduction completes (CA_EVENT_COMPLETE_CWR) a new round starts.
#[test]
fn a_backoff_asks_for_a_cwr_reduction_to_beta() {
    let (mut cc, mut c, mut w) = flow(CdgParams::default(), 100, 1000);
    c.snd_nxt = 100;
    assert!(cc.backoff(&mut w, 400_000));
    assert!(w.enter_cwr);
    assert_eq!((cc.ssthresh(&c, &w), cc.shadow_wnd, cc.state), (70, 100, CdgState::Backoff));
    c.snd_nxt = 170;
    cc.cwnd_event(&c, &mut w, CaEvent::CompleteCwr);
    assert_eq!((cc.state, cc.rtt_seq), (CdgState::Unknown, 170));
}

/// The shadow window: after a backoff at 100 (shadow 100, cwnd 70), Reno growth to 80
/// adds 10 to the shadow too (110). A loss then halves the larger: min(110/2, 80) = 55,
/// ssthresh max(2, 55, 80/2) = 55; without the shadow, 80/2 = 40.
#[test]
fn a_loss_after_backoffs_halves_the_shadow_window() {
    for (use_shadow, expect) in [(1.0, 55), (0.0, 40)] {
        let (mut cc, mut c, mut w) = flow(with(&[("use_shadow", use_shadow)]), 100, 100);
        assert!(cc.backoff(&mut w, 400_000));
        // The stack's reduction: ssthresh from the backoff, then cwnd down to it.
        w.ssthresh = cc.ssthresh(&c, &w);
        cc.cwnd_event(&c, &mut w, CaEvent::CompleteCwr);
        (w.cwnd, w.enter_cwr) = (w.ssthresh, false);
        // 10 rounds of congestion avoidance: +1 per cwnd ACKed, no new round (rtt empty).
        c.snd_nxt = 1_000_000;
        cc.rtt_seq = c.snd_nxt;
        while w.cwnd < 80 {
            cc.cong_avoid(&c, &mut w, 1);
        }
        assert_eq!(cc.shadow_wnd, 110);
        assert_eq!(cc.ssthresh(&c, &w), expect, "use_shadow {use_shadow}");
    }
}

#[test]
fn ssthresh_on_loss_and_after_backoff() {
    let (mut cc, c, _) = flow(CdgParams::default(), 10, 10);
    // Loss, shadow = cwnd: max(2, min(101/2, 101), 101/2) = 50.
    let mut w = Window::new(101);
    cc.shadow_wnd = 101;
    assert_eq!(cc.ssthresh(&c, &w), 50);
    // Backoff at cwnd 2: max(2, 2·724 >> 10 = 1) = 2.
    cc.state = CdgState::Backoff;
    w.cwnd = 2;
    assert_eq!(cc.ssthresh(&c, &w), 2);
    // use_tolerance: a loss while the queue is not full keeps cwnd.
    let (mut cc, c, _) = flow(with(&[("use_tolerance", 1.0)]), 10, 10);
    cc.state = CdgState::NonFull;
    assert_eq!(cc.ssthresh(&c, &Window::new(90)), 90);
}

#[test]
fn undo_restores_the_window_before_the_reduction() {
    let mut cc = cdg(CdgParams::default());
    let c = ConnInfo { prior_cwnd: 80, ..ConnInfo::default() };
    assert_eq!(cc.undo_cwnd(&c, &Window::new(40)), 80);
    assert_eq!(cc.undo_cwnd(&c, &Window::new(90)), 90);
}

/// A one-segment ACK after stretch ACKs is likely delayed: it may lower the minimum but
/// not raise the maximum.
#[test]
fn delayed_ack_filter() {
    let (mut cc, mut c, mut w) = flow(CdgParams::default(), 10, 10);
    c.packets_out = 10;
    c.inflight = 10;
    sample(&mut cc, &c, &mut w, 2, 40_000);
    assert_eq!((cc.rtt, cc.delack), (MinMax { min: 40_000, max: 40_000 }, 1));
    sample(&mut cc, &c, &mut w, 1, 45_000);
    assert_eq!((cc.rtt, cc.delack), (MinMax { min: 40_000, max: 40_000 }, 0));
    sample(&mut cc, &c, &mut w, 1, 45_000);
    assert_eq!(cc.rtt, MinMax { min: 40_000, max: 45_000 });
}

/// HyStart's ACK train: delay_min 40 000 µs gives a train limit of 20 000 µs. ACKs 1 ms
/// apart from t = 1 s: the first starts the train, the one at 1.020 s is not after
/// start + 20 000, the one at 1.021 s is: ssthresh = cwnd.
#[test]
fn hystart_ack_train_ends_slow_start() {
    let (mut cc, mut c, mut w) = flow(with(&[("hystart_detect", 1.0)]), 10, INFINITE_SSTHRESH);
    c.snd_nxt = 1_000_000; // no round ends
    cc.rtt_seq = c.snd_nxt;
    sample(&mut cc, &c, &mut w, 1, 40_000);
    let mut t_ms = 1000;
    while w.ssthresh == INFINITE_SSTHRESH {
        c.now = Time(t_ms * 1_000_000);
        cc.cong_avoid(&c, &mut w, 1);
        t_ms += 1;
        assert!(t_ms <= 1100, "no exit");
    }
    assert_eq!(t_ms - 1, 1021);
    // cwnd 10 + 21 ACKs of slow start before the exit.
    assert_eq!(w.ssthresh, 31);
}

/// ACKs 4 ms apart are no train (gap ≥ 3 ms): no exit.
#[test]
fn hystart_ack_train_needs_close_acks() {
    let (mut cc, mut c, mut w) = flow(with(&[("hystart_detect", 1.0)]), 10, INFINITE_SSTHRESH);
    c.snd_nxt = 1_000_000;
    cc.rtt_seq = c.snd_nxt;
    sample(&mut cc, &c, &mut w, 1, 40_000);
    for k in 0..100 {
        c.now = Time((1000 + 4 * k) * 1_000_000);
        cc.cong_avoid(&c, &mut w, 1);
    }
    assert_eq!(w.ssthresh, INFINITE_SSTHRESH);
}

/// HyStart's delay test: a first round at 40 000 µs sets delay_min; the threshold is
/// max(40 000 + 40 000/8, 125) = 45 000. In the next round the test runs from the 9th
/// ACK on: a minimum of 45 000 keeps slow start, 45 001 ends it.
#[test]
fn hystart_delay_increase_ends_slow_start() {
    for (rtt, exits) in [(45_000, false), (45_001, true)] {
        let (mut cc, mut c, mut w) = flow(with(&[("hystart_detect", 2.0)]), 10, INFINITE_SSTHRESH);
        round(&mut cc, &mut c, &mut w, &[40_000, 40_000]);
        assert_eq!((cc.delay_min, cc.sample_cnt), (40_000, 0));
        for k in 1..=9 {
            sample(&mut cc, &c, &mut w, 1, rtt);
            let before = w.cwnd;
            cc.cong_avoid(&c, &mut w, 1);
            let exited = w.ssthresh != INFINITE_SSTHRESH;
            assert_eq!(exited, exits && k == 9, "ack {k}, rtt {rtt}");
            if exited {
                assert_eq!(w.ssthresh, before);
            }
        }
    }
}

/// In avoidance, a rising delay sends CDG into a backoff sooner or later; flat delay
/// never does.
#[test]
fn rising_delay_backs_off_flat_delay_does_not() {
    let (mut cc, mut c, mut w) = flow(CdgParams::default(), 50, 50);
    for _ in 0..50 {
        round(&mut cc, &mut c, &mut w, &[40_000, 41_000]);
    }
    assert_eq!(cc.backoffs, 0);
    let mut rtt = 40_000;
    for _ in 0..50 {
        rtt += 1_000;
        round(&mut cc, &mut c, &mut w, &[rtt, rtt + 1_000]);
        if w.enter_cwr {
            break;
        }
    }
    // Gradient 8·1000 = 8000 µs: P = 1 − e^−0.336 = 0.29 per round.
    assert_eq!(cc.backoffs, 1);
    assert_eq!(cc.ssthresh(&c, &w), (w.cwnd * 724) >> 10);
}

#[test]
fn params_override_by_name_and_reject_out_of_range() {
    let p = with(&[("window", 16.0), ("backoff_beta", 512.0), ("use_shadow", 0.0)]);
    assert_eq!((p.window, p.backoff_beta, p.use_shadow), (16, 512, false));
    for (name, x) in [
        ("window", 3.0),
        ("window", 0.0),
        ("window", 512.0),
        ("backoff_beta", 1025.0),
        ("hystart_detect", 4.0),
        ("use_tolerance", 2.0),
        ("beta", 0.5),
    ] {
        let m = BTreeMap::from([(name.to_string(), x)]);
        let e = CdgParams::from_overrides(&m).expect_err("accepted");
        assert_eq!(e.name, name);
    }
    let built = Algorithm::Cdg.build(&BTreeMap::from([("backoff_factor".into(), 100.0)]), rng::stream(1, "cc", 0));
    assert_eq!(built.unwrap().params()["backoff_factor"], 100);
    let names: Vec<&str> = Algorithm::Cdg.parameters().iter().map(|d| d.name).collect();
    let expect =
        ["window", "backoff_beta", "backoff_factor", "hystart_detect", "use_ineff", "use_shadow", "use_tolerance"];
    assert_eq!(names, expect);
}
