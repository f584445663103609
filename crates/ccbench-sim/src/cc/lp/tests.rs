//! LP's hooks driven by scripted ACKs with timestamp options, checked against the
//! arithmetic of `tcp_lp_remote_hz_estimator`, `tcp_lp_owd_calculator`,
//! `tcp_lp_rtt_sample` and `tcp_lp_pkts_acked`, worked out by hand.

use super::*;
use crate::time::Time;

fn started() -> (Lp, ConnInfo, Window) {
    let c = ConnInfo { is_cwnd_limited: true, ..ConnInfo::default() };
    let mut w = Window::new(10);
    let mut lp = Lp::with_ts_offsets(0, 0);
    lp.init(&c, &mut w);
    (lp, c, w)
}

/// An ACK arriving at `now_ms` carrying TSval `tsval` and echoing `tsecr`.
fn ack(lp: &mut Lp, c: &mut ConnInfo, w: &mut Window, now_ms: u64, tsval: u32, tsecr: u32) {
    c.now = Time(now_ms * 1_000_000);
    c.rcv_tsval = tsval;
    c.rcv_tsecr = tsecr;
    let rtt_us = (now_ms as i64 - tsecr as i64) * 1000;
    lp.pkts_acked(c, w, &AckSample { pkts_acked: 1, rtt_us, in_flight: w.cwnd });
}

#[test]
fn remote_hz_is_a_64th_weighted_ratio_of_timestamp_steps() {
    let (mut lp, mut c, mut w) = started();
    // The first ACK only records the references.
    ack(&mut lp, &mut c, &mut w, 1040, 1020, 1000);
    assert_eq!((lp.remote_hz, lp.flag & LP_VALID_RHZ), (0, 0));
    // ΔTSval 10, ΔTSecr 10: 1000·10/10 = 1000, taken whole.
    ack(&mut lp, &mut c, &mut w, 1050, 1030, 1010);
    assert_eq!(lp.remote_hz, 1000);
    // 1000·20/10 = 2000: (64·1000 + 2000 − 1000) / 64 = 65000/64 = 1015.6 → 1015.
    ack(&mut lp, &mut c, &mut w, 1060, 1050, 1020);
    assert_eq!(lp.remote_hz, 1015);
    // 1000·5/10 = 500, from the whole-Hz estimate: 64·1015 + 500 − 1015 = 64445,
    // /64 = 1006.9 → 1006.
    ack(&mut lp, &mut c, &mut w, 1070, 1055, 1030);
    assert_eq!(lp.remote_hz, 1006);
    // An unchanged TSval gives no sample (the references still move).
    ack(&mut lp, &mut c, &mut w, 1080, 1055, 1040);
    assert_eq!((lp.remote_hz, lp.local_ref_time), (1006, 1040));
}

#[test]
fn early_congestion_halves_then_drops_to_one_within_inference() {
    let (mut lp, mut c, mut w) = started();
    ack(&mut lp, &mut c, &mut w, 1040, 1020, 1000);
    assert_eq!(w.cwnd, 10, "no OWD yet: within the (empty) threshold");
    // remote HZ 1000·9/10 = 900 (LP_RESOL/900 = 1): OWD = 1029 − 1010 = 19, the first
    // sample: min = max = 19, sowd = 19·8 = 152. Threshold 19 + 15·0/100 = 19, and 19 is
    // not below it: halve, 10 → 5. min = 152/8 = 19, max = 152/4 = 38.
    ack(&mut lp, &mut c, &mut w, 1049, 1029, 1010);
    assert_eq!((lp.remote_hz, lp.sowd, w.cwnd), (900, 152, 5));
    assert_eq!((lp.owd_min, lp.owd_max, lp.owd_max_rsv, lp.last_drop), (19, 38, 38, 1049));
    // Same OWD: threshold 19 + 15·19/100 = 21; inference 3·(1059 − 1020) = 117 ms and the
    // cut 10 ms ago: no growth.
    ack(&mut lp, &mut c, &mut w, 1059, 1039, 1020);
    assert_eq!((lp.remote_hz, lp.inference, lp.threshold()), (901, 117, 21));
    assert!(lp.flag & LP_WITHIN_INF != 0 && lp.flag & LP_WITHIN_THR != 0);
    lp.cong_avoid(&c, &mut w, 1);
    assert_eq!(w.cwnd, 5);
    // OWD 29: remote HZ (57664 + 2000 − 901)/64 = 918; sowd = 152 + 29 − 19 = 162 (20).
    ack(&mut lp, &mut c, &mut w, 1079, 1059, 1030);
    assert_eq!((lp.remote_hz, lp.sowd, w.cwnd), (918, 162, 5));
    // OWD 39 > max 38 and > rsv 38: max = 38, rsv = 39; sowd = 162 + 39 − 20 = 181 (22),
    // not below 21; 50 ms after the last cut, inside 3·(1099 − 1040) = 177 ms: cwnd 1.
    // Remote HZ (58752 + 2000 − 918)/64 = 934.9 → 934.
    ack(&mut lp, &mut c, &mut w, 1099, 1079, 1040);
    assert_eq!((lp.remote_hz, lp.sowd, w.cwnd), (934, 181, 1));
    assert_eq!((lp.owd_min, lp.owd_max, lp.owd_max_rsv, lp.last_drop), (22, 45, 45, 1099));
}

#[test]
fn a_remote_hz_above_1000_wraps_the_owd() {
    // The kernel's u32 arithmetic: 1000/2000 = 0, so OWD = 0 − TSecr = 2^32 − 1010.
    let (mut lp, mut c, mut w) = started();
    ack(&mut lp, &mut c, &mut w, 1040, 1020, 1000);
    ack(&mut lp, &mut c, &mut w, 1050, 1040, 1010);
    assert_eq!(lp.remote_hz, 2000);
    assert_eq!(lp.owd_min, 4_294_966_286);
    // sowd = OWD << 3 stored in 32 bits: −8080 mod 2^32.
    assert_eq!(lp.sowd, 4_294_959_216);
}

#[test]
fn outside_inference_growth_ssthresh_and_undo_are_renos() {
    let (mut lp, mut c, mut w) = started();
    lp.cong_avoid(&c, &mut w, 2);
    assert_eq!(w.cwnd, 12);
    assert_eq!(lp.ssthresh(&c, &Window::new(101)), 50);
    c.prior_cwnd = 80;
    assert_eq!(lp.undo_cwnd(&c, &Window::new(40)), 80);
}

#[test]
fn there_are_no_parameters() {
    assert!(crate::cc::params::none("lp", &BTreeMap::new()).is_ok());
    let e = crate::cc::params::none("lp", &BTreeMap::from([("beta".to_string(), 1.0)])).unwrap_err();
    assert_eq!(e.to_string(), "beta: lp takes no parameters");
}
