//! NV's hooks driven ACK by ACK and checked against the closed forms of `tcpnv_acked`,
//! `tcpnv_cong_avoid`, `tcpnv_state` and `tcpnv_recalc_ssthresh` (tcp_nv.c), worked out
//! by hand. mss = 1000 bytes, HZ = 1000 throughout.

use super::*;
use crate::base::rng::stream;

fn rng() -> Rng {
    stream(7, "nv-test", 0)
}

/// A cwnd-limited connection in Open at sequence 0, NV initialised at jiffy 0.
fn flow_with(p: NvParams, cwnd: u32, ssthresh: u32) -> (Nv, ConnInfo, Window) {
    let c = ConnInfo { mss: 1000, hz: 1000, is_cwnd_limited: true, ..ConnInfo::default() };
    let mut w = Window::new(cwnd);
    w.ssthresh = ssthresh;
    let mut cc = Nv::new(p, rng());
    cc.init(&c, &mut w);
    (cc, c, w)
}

fn flow(cwnd: u32, ssthresh: u32) -> (Nv, ConnInfo, Window) {
    flow_with(NvParams::default(), cwnd, ssthresh)
}

/// One ACK with an RTT sample, inside the current round.
fn sample(cc: &mut Nv, c: &ConnInfo, w: &mut Window, rtt_us: i64, in_flight: u32) {
    cc.pkts_acked(c, w, &AckSample { pkts_acked: 1, rtt_us, in_flight });
}

/// A round of `n` samples: `n − 1` inside it, then one ACK that passes its end
/// (`snd_una` one past `nv_rtt_start_seq`, `snd_nxt` a cwnd further).
fn round(cc: &mut Nv, c: &mut ConnInfo, w: &mut Window, rtt_us: i64, in_flight: u32, n: u32) {
    for _ in 1..n {
        sample(cc, c, w, rtt_us, in_flight);
    }
    c.snd_una = cc.rtt_start_seq + 1;
    c.snd_nxt = c.snd_una + w.cwnd as u64 * c.mss as u64;
    sample(cc, c, w, rtt_us, in_flight);
}

#[test]
fn the_rate_is_in_flight_bytes_over_the_averaged_rtt_in_100_bit_per_s() {
    let (mut cc, c, mut w) = flow(50, INFINITE_SSTHRESH);
    // First sample: avg = 40 000 µs; rate = 20·1000·80000/40000 = 40 000 (4 Mbit/s =
    // 20 000 B·8/0.04 s); nv_min_rtt = min(2·40000, 40000).
    sample(&mut cc, &c, &mut w, 40_000, 20);
    assert_eq!((cc.last_rtt, cc.rtt_max_rate, cc.min_rtt, cc.min_rtt_new), (40_000, 40_000, 40_000, 40_000));
    // avg = (60000·128 + 40000·128) >> 8 = 50 000; rate = 25 000·80000/50000 = 40 000.
    sample(&mut cc, &c, &mut w, 60_000, 25);
    assert_eq!((cc.last_rtt, cc.rtt_max_rate), (50_000, 40_000));
    // avg = (50001·128 + 50000·128) >> 8 = 12 800 128 >> 8 = 50 000 (50 000.5);
    // rate = 30 000·80000/50000 = 48 000, the new maximum.
    sample(&mut cc, &c, &mut w, 50_001, 30);
    assert_eq!((cc.last_rtt, cc.rtt_max_rate), (50_000, 48_000));
    // avg = (33333·128 + 50000·128) >> 8 = 10 666 624 >> 8 = 41 666; rate = 7000·80000/
    // 41666 = 13 440 (13 440.2), below the maximum; the minimum stays 40 000.
    sample(&mut cc, &c, &mut w, 33_333, 7);
    assert_eq!((cc.last_rtt, cc.rtt_max_rate, cc.min_rtt, cc.eval_call_cnt), (41_666, 48_000, 40_000, 4));
    assert_eq!(Nv::rate(7000, 41_666), 13_440);
    // No RTT sample, nothing in flight, or a state other than Open/Disorder: no sample.
    sample(&mut cc, &c, &mut w, -1, 30);
    sample(&mut cc, &c, &mut w, 10_000, 0);
    let c_rec = ConnInfo { ca_state: CaState::Recovery, ..c.clone() };
    sample(&mut cc, &c_rec, &mut w, 10_000, 30);
    assert_eq!((cc.last_rtt, cc.min_rtt, cc.eval_call_cnt), (41_666, 40_000, 4));
    let c_dis = ConnInfo { ca_state: CaState::Disorder, ..c };
    sample(&mut cc, &c_dis, &mut w, 10_000, 30);
    // (10000 + 41666)/2 = 25 833.
    assert_eq!((cc.last_rtt, cc.min_rtt, cc.eval_call_cnt), (25_833, 25_833, 5));
}

/// 20 segments in flight at 40 ms with a 40 ms minimum: cwnd_by_slope = 40 000 ·
/// 40 000 / (80 000 · 1000) = 20 segments, max_win = 20 + nv_pad 10 = 30.
const RTT: i64 = 40_000;
const INFLIGHT: u32 = 20;
const MAX_WIN: u32 = 30;

#[test]
fn slow_start_ends_after_two_rounds_and_thirty_samples() {
    // Two rounds of 10 samples: rtt_cnt 2 but only 20 samples (< 30): no decision.
    let (mut cc, mut c, mut w) = flow(50, INFINITE_SSTHRESH);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 10);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 10);
    assert_eq!((cc.cwnd_by_slope, cc.max_win), (20, MAX_WIN));
    assert_eq!((w.cwnd, w.ssthresh, cc.rtt_cnt, cc.eval_call_cnt), (50, INFINITE_SSTHRESH, 2, 20));
    // A third: 30 samples. ssthresh = 8·30 >> 3 = 30; the excess 50 − 30 = 20 > 2 loses
    // max(2, 20·38 >> 7 = 5) = 5 (5.9): cwnd 45; growth stops; the round starts over.
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 10);
    assert_eq!((w.cwnd, w.ssthresh), (45, 30));
    assert_eq!((cc.allow_growth, cc.rtt_cnt, cc.eval_call_cnt, cc.rtt_max_rate), (false, 0, 0, 0));
    cc.cong_avoid(&c, &mut w, 10);
    assert_eq!(w.cwnd, 45, "no growth after a congestion decision");

    // One round of 30 samples is not enough either (rtt_cnt 1 < nv_rtt_min_cnt 2).
    let (mut cc, mut c, mut w) = flow(50, INFINITE_SSTHRESH);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 30);
    assert_eq!((w.cwnd, cc.rtt_cnt), (50, 1));
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 1);
    assert_eq!((w.cwnd, w.ssthresh), (45, 30));
}

#[test]
fn the_cut_is_thirty_percent_of_the_excess_and_at_least_two() {
    // (cwnd, cwnd after): 32: excess 2 → cwnd = max_win 30; 33: 3·38 >> 7 = 0 → 2 → 31;
    // 130: 100·38 >> 7 = 29 (29.7) → 101.
    for (cwnd, after) in [(32, 30), (33, 31), (130, 101)] {
        let (mut cc, mut c, mut w) = flow(cwnd, INFINITE_SSTHRESH);
        round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 15);
        round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 15);
        assert_eq!((w.cwnd, w.ssthresh), (after, MAX_WIN), "cwnd {cwnd}");
    }
}

#[test]
fn in_avoidance_a_cut_waits_for_sixty_samples_and_growth_stops_after_ten_rounds() {
    let (mut cc, mut c, mut w) = flow(50, 40);
    // 10 rounds of 5 samples: 50 < 60, rtt_cnt 10 is not > 10: growth still allowed.
    for _ in 0..10 {
        round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 5);
    }
    assert_eq!((w.cwnd, cc.allow_growth, cc.rtt_cnt, cc.eval_call_cnt), (50, true, 10, 50));
    // The 11th: rtt_cnt 11 > nv_stop_rtt_cnt: growth stops, cwnd kept.
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 5);
    assert_eq!((w.cwnd, w.ssthresh, cc.allow_growth), (50, 40, false));
    // The 12th brings 60 samples: the cut, 50 → 45, ssthresh 30.
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 5);
    assert_eq!((w.cwnd, w.ssthresh, cc.eval_call_cnt), (45, 30, 0));
}

#[test]
fn between_max_win_minus_the_pad_buffer_and_max_win_nothing_changes() {
    // cwnd 29 and 30: 28 < cwnd ≤ 30, neither branch: the counters keep running.
    for cwnd in [29, 30] {
        let (mut cc, mut c, mut w) = flow(cwnd, 20);
        round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 70);
        round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 70);
        assert_eq!((w.cwnd, cc.eval_call_cnt, cc.rtt_cnt, cc.allow_growth), (cwnd, 140, 2, true));
    }
}

#[test]
fn timeouts_slow_growth_and_uncongested_rounds_restore_it() {
    let (mut cc, mut c, mut w) = flow(20, 10);
    cc.set_state(&c, &mut w, CaState::Loss);
    // Loss: growth off, factor 0 → −1.
    assert_eq!((cc.growth_factor, cc.allow_growth, cc.reset), (-1, false, true));
    cc.cong_avoid(&c, &mut w, 5);
    assert_eq!(w.cwnd, 20);
    c.snd_una = 100;
    cc.set_state(&c, &mut w, CaState::Open);
    assert_eq!((cc.reset, cc.rtt_start_seq, cc.last_snd_una, cc.last_rtt), (false, 100, 100, 0));
    // cwnd 20 ≤ 30 − 2: each round of 20 samples allows growth and counts one
    // uncongested decision; the 9th (> nv_cwnd_growth_rate_neg = 8) raises the factor.
    for _ in 0..8 {
        round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 20);
    }
    assert_eq!((cc.allow_growth, cc.no_cong_cnt, cc.growth_factor), (true, 8, -1));
    // At factor −1 cwnd grows by one per 20 << 1 = 40 segments ACKed.
    cc.cong_avoid(&c, &mut w, 39);
    assert_eq!(w.cwnd, 20);
    cc.cong_avoid(&c, &mut w, 1);
    assert_eq!(w.cwnd, 21);
    w.cwnd = 20;
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 20);
    assert_eq!((cc.no_cong_cnt, cc.growth_factor), (0, 0));
    // Factor 0: Reno's one per cwnd (at least 4) ACKed.
    w.cwnd_cnt = 0;
    cc.cong_avoid(&c, &mut w, 20);
    assert_eq!(w.cwnd, 21);
    // Nineteen samples are too few for a growth decision (nv_inc_eval_min_calls 20).
    let (mut cc, mut c, mut w) = flow(20, 10);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 19);
    assert_eq!((cc.no_cong_cnt, cc.eval_call_cnt), (0, 19));
}

#[test]
fn the_growth_factor_bottoms_out_at_minus_eight() {
    let (mut cc, c, mut w) = flow(3, 2);
    for _ in 0..10 {
        cc.set_state(&c, &mut w, CaState::Loss);
    }
    assert_eq!(cc.growth_factor, -8);
    // CWR and Recovery stop growth but leave the factor.
    cc.set_state(&c, &mut w, CaState::Recovery);
    cc.set_state(&c, &mut w, CaState::Cwr);
    assert_eq!((cc.growth_factor, cc.allow_growth), (-8, false));
    // At −8: one segment per 3·256 = 768 ACKed.
    cc.allow_growth = true;
    cc.cong_avoid(&c, &mut w, 767);
    assert_eq!(w.cwnd, 3);
    cc.cong_avoid(&c, &mut w, 1);
    assert_eq!(w.cwnd, 4);
    // At 0 and cwnd 3, the divisor is max(4, 3) = 4.
    let (mut cc, c, mut w) = flow(3, 2);
    cc.cong_avoid(&c, &mut w, 3);
    assert_eq!(w.cwnd, 3);
    cc.cong_avoid(&c, &mut w, 1);
    assert_eq!(w.cwnd, 4);
}

#[test]
fn slow_start_grows_per_segment_and_spends_the_rest_in_avoidance() {
    let (mut cc, c, mut w) = flow(10, 14);
    // 10 + 4 reaches ssthresh 14; the other 6 go to cwnd_cnt (6 < 14).
    cc.cong_avoid(&c, &mut w, 10);
    assert_eq!((w.cwnd, w.cwnd_cnt), (14, 6));
    // Not cwnd-limited: nothing.
    let c2 = ConnInfo { is_cwnd_limited: false, ..c };
    cc.cong_avoid(&c2, &mut w, 100);
    assert_eq!(w.cwnd, 14);
}

#[test]
fn the_minimum_rtt_is_refreshed_every_reset_period() {
    let (mut cc, mut c, mut w) = flow(50, 40);
    cc.ca_min_cwnd = 20;
    // tcpnv_init: the first refresh at 2·HZ = 2000 jiffies.
    assert_eq!(cc.min_rtt_reset_jiffies, 2000);
    sample(&mut cc, &c, &mut w, 40_000, 10);
    c.jiffies = 1999;
    sample(&mut cc, &c, &mut w, 60_000, 10); // avg 50 000
    assert_eq!((cc.min_rtt, cc.min_rtt_new), (40_000, 40_000));
    c.jiffies = 2000;
    sample(&mut cc, &c, &mut w, 60_000, 10); // avg 55 000
                                             // The period's minimum 40 000 becomes nv_min_rtt, the next period starts empty,
                                             // the TSO floor halves (20 → 10), and the next refresh is 5·(384 + r)·1000 >> 9
                                             // jiffies on, r the first random byte: between 3750 and 6240.
    assert_eq!((cc.min_rtt, cc.min_rtt_new, cc.ca_min_cwnd), (40_000, NV_INIT_RTT, 10));
    let r: u8 = rng().gen();
    let next = 2000 + ((5 * (384 + r as u32) * 1000) >> 9);
    assert_eq!(cc.min_rtt_reset_jiffies, next);
    assert!((2000 + 3750..=2000 + 6240).contains(&next));
    // The next period sees only the queued RTT: 57 500, 58 750.
    c.jiffies = next - 1;
    sample(&mut cc, &c, &mut w, 60_000, 10);
    assert_eq!((cc.min_rtt, cc.min_rtt_new), (40_000, 57_500));
    c.jiffies = next;
    sample(&mut cc, &c, &mut w, 60_000, 10);
    assert_eq!((cc.min_rtt, cc.min_rtt_new, cc.ca_min_cwnd), (57_500, NV_INIT_RTT, 5));
    // A third refresh: 5/2 = 2, floored at NV_MIN_CWND 4.
    c.jiffies = cc.min_rtt_reset_jiffies;
    sample(&mut cc, &c, &mut w, 60_000, 10);
    assert_eq!(cc.ca_min_cwnd, 4);
}

#[test]
fn rounds_seen_by_a_single_ack_raise_the_tso_floor_by_two_up_to_81() {
    let (mut cc, mut c, mut w) = flow(100, 50);
    // One ACK for 3 = floor − 1 segments ends the round: 4 + 2 = 6, the round stretched
    // 6 segments past snd_nxt (103 + 6), growth allowed. Sequence numbers are bytes.
    (c.snd_una, c.snd_nxt) = (3_000, 103_000);
    sample(&mut cc, &c, &mut w, RTT, INFLIGHT);
    assert_eq!((cc.ca_min_cwnd, cc.rtt_start_seq, cc.eval_call_cnt), (6, 109_000, 0));
    // After k such rounds: min(4 + 2k, 81); 38 → 80, 39 → 81, then no more.
    for _ in 1..38 {
        round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 1);
    }
    assert_eq!(cc.ca_min_cwnd, 80);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 1);
    assert_eq!(cc.ca_min_cwnd, 81);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 1);
    assert_eq!((cc.ca_min_cwnd, cc.eval_call_cnt), (81, 1));
    // Fewer than floor − 1 = 3 segments ACKed since the last sample: no raise (a round
    // with one sample of 20 segments, too few for any decision).
    let (mut cc, mut c, mut w) = flow(100, 50);
    c.snd_una = 2_000;
    sample(&mut cc, &c, &mut w, RTT, INFLIGHT);
    assert_eq!((cc.ca_min_cwnd, cc.rtt_cnt, cc.eval_call_cnt), (4, 1, 1));
}

#[test]
fn a_loss_keeps_eighty_percent_and_undo_restores() {
    let (mut cc, c, _) = flow(10, 10);
    // (cwnd·819) >> 10: 100 → 81 900/1024 = 79 (79.98); 10 → 7 (7.998); 2 → 1 → 2.
    for (cwnd, want) in [(100, 79), (10, 7), (2, 2), (1, 2)] {
        assert_eq!(cc.ssthresh(&c, &Window::new(cwnd)), want, "cwnd {cwnd}");
    }
    let c = ConnInfo { prior_cwnd: 60, ..c };
    assert_eq!(cc.undo_cwnd(&c, &Window::new(40)), 60);
    assert_eq!(cc.undo_cwnd(&c, &Window::new(70)), 70);
}

#[test]
fn params_override_by_name_and_reject_out_of_range() {
    let one = |k: &str, x: f64| BTreeMap::from([(k.to_string(), x)]);
    // nv_pad 20: max_win 40, and cwnd 35 ≤ 38 is uncongested where 30 would cut.
    let p = NvParams::from_overrides(&one("nv_pad", 20.0)).unwrap();
    assert_eq!(p, NvParams { nv_pad: 20, ..NvParams::default() });
    let (mut cc, mut c, mut w) = flow_with(p, 35, 20);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 30);
    assert_eq!((cc.max_win, w.cwnd, cc.no_cong_cnt), (40, 35, 1));
    // nv_min_cwnd 48: the cut 50 → 45 stops at 48.
    let p = NvParams::from_overrides(&one("nv_min_cwnd", 48.0)).unwrap();
    let (mut cc, mut c, mut w) = flow_with(p, 50, INFINITE_SSTHRESH);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 15);
    round(&mut cc, &mut c, &mut w, RTT, INFLIGHT, 15);
    assert_eq!((w.cwnd, w.ssthresh), (48, 30));
    // nv_reset_period 10: the refresh interval is 10·(384 + r)·1000 >> 9.
    let p = NvParams::from_overrides(&one("nv_reset_period", 10.0)).unwrap();
    let (mut cc, mut c, mut w) = flow_with(p, 50, 40);
    c.jiffies = 2000;
    sample(&mut cc, &c, &mut w, RTT, INFLIGHT);
    let r: u8 = rng().gen();
    assert_eq!(cc.min_rtt_reset_jiffies, 2000 + ((10 * (384 + r as u32) * 1000) >> 9));

    let e = NvParams::from_overrides(&one("nv_pad", -1.0)).unwrap_err();
    assert_eq!(e.to_string(), "nv_pad: must be in [0, 1000000], got -1");
    let e = NvParams::from_overrides(&one("nv_reset_period", 0.0)).unwrap_err();
    assert_eq!(e.to_string(), "nv_reset_period: must be in [1, 3360], got 0");
    // The plain statics of tcp_nv.c are not module parameters.
    let e = NvParams::from_overrides(&one("nv_pad_buffer", 2.0)).unwrap_err();
    assert_eq!(e.to_string(), "nv_pad_buffer: not a parameter of nv; allowed: nv_pad, nv_reset_period, nv_min_cwnd");
}

#[test]
fn registered_as_nv() {
    let a = Algorithm::from_name("nv").unwrap();
    assert_eq!(a, Algorithm::Nv);
    let names: Vec<&str> = a.parameters().iter().map(|d| d.name).collect();
    assert_eq!(names, ["nv_pad", "nv_reset_period", "nv_min_cwnd"]);
    let cc = a.instance(&BTreeMap::from([("nv_pad".to_string(), 4.0)]), rng()).unwrap();
    assert_eq!(cc.name(), "nv");
    assert_eq!(cc.params()["nv_pad"], 4);
}
