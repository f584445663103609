//! Westwood+'s bandwidth estimate driven ACK by ACK (`tcp_westwood_ack`,
//! `westwood_update_window`, `westwood_acked_count`) and the window it sets after a
//! reduction (`tcp_westwood_event`), checked against numbers worked out by hand.

use super::*;

const HZ: u32 = 1000;
const MSS: u32 = 1448;
/// Jiffy at which the connection starts.
const J0: u32 = 100_000;

fn conn() -> ConnInfo {
    ConnInfo { jiffies: J0, hz: HZ, mss: MSS, is_cwnd_limited: true, ..ConnInfo::default() }
}

fn started() -> (Westwood, ConnInfo, Window) {
    let c = conn();
    let mut w = Window::new(10);
    let mut ww = Westwood::new();
    ww.init(&c, &mut w);
    (ww, c, w)
}

/// An ACK at jiffy `j` moving snd_una to `una` full segments, through the fast or slow
/// path, with an RTT sample of `rtt_ms`.
fn ack(ww: &mut Westwood, c: &mut ConnInfo, w: &mut Window, j: u32, una: u64, flags: u32, rtt_ms: i64) {
    c.jiffies = j;
    c.snd_una = una * c.mss as u64;
    ww.in_ack_event(c, w, flags);
    ww.pkts_acked(c, w, &AckSample { pkts_acked: 2, rtt_us: rtt_ms * 1000, in_flight: 0 });
}

/// One ACK of 2 segments per jiffy from J0+1 to J0+`last`, 40 ms RTT samples.
fn steady(ww: &mut Westwood, c: &mut ConnInfo, w: &mut Window, from: u32, last: u32) {
    for k in from..=last {
        ack(ww, c, w, J0 + k, 2 * k as u64, CA_ACK_WIN_UPDATE, 40);
    }
}

#[test]
fn before_any_sample_rtt_is_twenty_seconds() {
    let (ww, _, _) = started();
    assert_eq!((ww.rtt, ww.rtt_min, ww.bw_est), (20 * HZ, 20 * HZ, 0));
    assert_eq!(ww.bw_rttmin(MSS), 2, "no estimate: the floor of 2");
}

#[test]
fn the_first_window_fills_the_filters_the_next_is_smoothed() {
    let (mut ww, mut c, mut w) = started();
    // 2 segments (2896 bytes) per jiffy. The first ACK only sets snd_una (`first_ack`);
    // the window closes on the first ACK with delta > max(40, 50) = 50 jiffies, i.e.
    // at J0+51, before that ACK counts: ACKs J0+2..J0+50 give 49·2896 = 141904 bytes,
    // over 51 jiffies: 2782 bytes/jiffy in both filters.
    steady(&mut ww, &mut c, &mut w, 1, 50);
    assert_eq!(ww.bw_est, 0);
    steady(&mut ww, &mut c, &mut w, 51, 51);
    assert_eq!((ww.bw_ns_est, ww.bw_est, ww.bk), (2782, 2782, 2896));
    // Next window: ACKs J0+51..J0+101, 51·2896 / 51 = 2896; closed at J0+102.
    // bw_ns_est = (7·2782 + 2896) >> 3 = 22370 >> 3 = 2796;
    // bw_est = (7·2782 + 2796) >> 3 = 22270 >> 3 = 2783.
    steady(&mut ww, &mut c, &mut w, 52, 102);
    assert_eq!((ww.bw_ns_est, ww.bw_est), (2796, 2783));
    // min RTT 40 jiffies: estimate × min RTT = 2783·40 / 1448 = 76.9 → 76 segments.
    assert_eq!((ww.rtt_min, ww.bw_rttmin(MSS)), (40, 76));
}

#[test]
fn the_reduction_ends_at_estimate_times_min_rtt() {
    let (mut ww, mut c, mut w) = started();
    steady(&mut ww, &mut c, &mut w, 1, 102);
    // Recovery starts with Reno's halving; its end sets cwnd = ssthresh = 76.
    w.cwnd = 200;
    w.ssthresh = ww.ssthresh(&c, &w);
    assert_eq!(w.ssthresh, 100);
    w.cwnd = 100;
    ww.cwnd_event(&c, &mut w, CaEvent::CompleteCwr);
    assert_eq!((w.cwnd, w.ssthresh), (76, 76));
    // A 60 ms sample leaves min RTT at 40 ...
    ack(&mut ww, &mut c, &mut w, J0 + 103, 206, CA_ACK_WIN_UPDATE, 60);
    ack(&mut ww, &mut c, &mut w, J0 + 104, 208, CA_ACK_WIN_UPDATE, 60);
    assert_eq!(ww.rtt_min, 40);
    // ... an RTO sets ssthresh only, and the next ACK takes the latest sample (60) as the
    // min RTT: the ACK's hook runs before its own sample (`tcp_ack` order).
    w.cwnd = 1;
    ww.cwnd_event(&c, &mut w, CaEvent::Loss);
    assert_eq!((w.cwnd, w.ssthresh), (1, 76));
    ack(&mut ww, &mut c, &mut w, J0 + 105, 210, CA_ACK_WIN_UPDATE, 45);
    assert_eq!(ww.rtt_min, 60);
    ack(&mut ww, &mut c, &mut w, J0 + 106, 212, CA_ACK_WIN_UPDATE, 45);
    assert_eq!(ww.rtt_min, 45);
}

#[test]
fn duplicate_acks_count_ahead_and_the_cumulative_ack_subtracts_it() {
    let slow = CA_ACK_SLOWPATH;
    let (mut ww, mut c, mut w) = started();
    // The first ACK sets snd_una and so moves nothing: on the slow path it counts as a
    // duplicate, one MSS ahead.
    ack(&mut ww, &mut c, &mut w, J0 + 1, 10, slow | CA_ACK_WIN_UPDATE, 40);
    assert_eq!((ww.bk, ww.accounted), (MSS, MSS));
    // Two duplicates: one MSS each, 3 MSS counted ahead in all.
    ack(&mut ww, &mut c, &mut w, J0 + 2, 10, slow, -1);
    ack(&mut ww, &mut c, &mut w, J0 + 3, 10, slow, -1);
    assert_eq!((ww.bk, ww.accounted), (3 * MSS, 3 * MSS));
    // A cumulative ACK of 2 segments (2896 <= 4344 ahead): one MSS, 1 MSS stays ahead.
    ack(&mut ww, &mut c, &mut w, J0 + 4, 12, slow | CA_ACK_WIN_UPDATE, 40);
    assert_eq!((ww.bk, ww.accounted), (4 * MSS, MSS));
    // An ACK of 3 segments (4344 > 1448 ahead): 4344 − 1448 = 2 MSS more.
    ack(&mut ww, &mut c, &mut w, J0 + 5, 15, slow | CA_ACK_WIN_UPDATE, 40);
    assert_eq!((ww.bk, ww.accounted), (6 * MSS, 0));
    // An ACK of exactly one segment counts it.
    ack(&mut ww, &mut c, &mut w, J0 + 6, 16, slow | CA_ACK_WIN_UPDATE, 40);
    assert_eq!((ww.bk, ww.accounted), (7 * MSS, 0));
}

#[test]
fn growth_and_undo_are_renos() {
    let (mut ww, mut c, mut w) = started();
    ww.cong_avoid(&c, &mut w, 3);
    assert_eq!(w.cwnd, 13, "slow start: +acked");
    w.ssthresh = 13;
    for _ in 0..13 {
        ww.cong_avoid(&c, &mut w, 1);
    }
    assert_eq!(w.cwnd, 14, "+1 per cwnd ACKed");
    c.prior_cwnd = 80;
    assert_eq!(ww.undo_cwnd(&c, &Window::new(40)), 80);
    assert!(ww.has_in_ack_event());
}

#[test]
fn there_are_no_parameters() {
    assert!(crate::cc::params::none("westwood", &BTreeMap::new()).is_ok());
    let e = crate::cc::params::none("westwood", &BTreeMap::from([("beta".to_string(), 1.0)])).unwrap_err();
    assert_eq!(e.to_string(), "beta: westwood takes no parameters");
}
