//! A path whose MTU is below the hosts' (`link.mtu`), against what Linux does: with the
//! router's ICMP "fragmentation needed", the first window is lost, the MSS drops to the
//! path's (`tcp_v4_mtu_reduced`) and what was lost goes again at once in pieces
//! (`tcp_simple_retransmit`), with no RTO; as a black hole, nothing arrives until
//! black-hole detection (`tcp_mtu_probing` after `tcp_retries1` worth of retransmission
//! time) brings the MSS to `tcp_base_mss`, and probing climbs back to within
//! `tcp_probe_threshold` of the path; without `tcp_mtu_probing` the flow stays stuck.

mod common;

use ccbench_sim::config::BufferLimit;
use ccbench_sim::{run, run_audited, RunOutput, Scenario};
use common::*;

const RATE: u64 = 20 * MBIT;
const RTT: u64 = 40 * MS;
/// The hosts' MSS (1500-byte MTU, timestamps) and the path's MTU.
const HOST_MSS: u32 = 1448;
const PATH_MTU: u32 = 1400;
/// IPv4 and TCP headers with the timestamp option.
const HEADERS: u32 = 52;

fn narrow_path(cca: &str, black_hole: bool, probing: u8, secs: u64) -> Scenario {
    let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(1.0), vec![flow(cca)]);
    s.link.mtu_bytes = Some(PATH_MTU);
    s.link.mtu_black_hole = black_hole;
    s.tcp.mtu_probing = probing;
    s.duration_ns = secs * SEC;
    s
}

fn run_ok(s: &Scenario) -> RunOutput {
    run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"))
}

#[test]
fn an_icmp_brings_the_mss_to_the_path_and_the_first_window_goes_again_without_a_timeout() {
    for cca in ["cubic", "bbr"] {
        let out = run_ok(&narrow_path(cca, false, 0, 10));
        let f = &out.summary.flows[0];
        let m = f.path_mtu.expect("a path MTU is reported");
        println!("{cca}: {m:?}, goodput {:.2} Mbit/s, retransmits {}", f.goodput_bps / 1e6, f.retransmits);
        assert_eq!((m.final_snd_mss, m.final_pmtu), (PATH_MTU - HEADERS, PATH_MTU));
        // The initial window of 10 full segments is dropped and answered, no more.
        assert_eq!((m.mtu_dropped, m.icmp_sent), (10, 10));
        assert_eq!(f.rto_count, Some(0), "tcp_simple_retransmit resends at once");
        assert!(f.goodput_bps > 0.85 * RATE as f64, "{:.0}", f.goodput_bps);
    }
}

#[test]
fn later_connections_open_at_the_mss_the_route_learned() {
    // Three 1 MB downloads, each on a new connection: the ICMP's MTU stays in the route
    // (a route exception), so only the first connection's window is dropped.
    let mut s = narrow_path("cubic", false, 0, 30);
    s.flows[0].size_bytes = Some(1_000_000);
    s.flows[0].repeat = 3;
    s.flows[0].pause_ns = 100 * MS;
    let out = run_ok(&s);
    let f = &out.summary.flows[0];
    let m = f.path_mtu.expect("reported");
    assert_eq!((m.final_snd_mss, m.mtu_dropped, m.icmp_sent), (PATH_MTU - HEADERS, 10, 10));
    assert!(f.downloads.as_ref().is_some_and(|d| d.len() == 3 && d.iter().all(|d| d.completion_s.is_some())));
}

#[test]
fn a_black_hole_stalls_a_flow_without_probing() {
    let out = run_ok(&narrow_path("cubic", true, 0, 10));
    let f = &out.summary.flows[0];
    assert_eq!(f.delivered_bytes, 0);
    let m = f.path_mtu.expect("reported");
    assert_eq!((m.final_snd_mss, m.icmp_sent), (HOST_MSS, 0));
}

#[test]
fn black_hole_detection_starts_after_three_seconds_of_retransmissions_and_probing_climbs_back() {
    let s = narrow_path("cubic", true, 1, 20);
    let out = run_ok(&s);
    let f = &out.summary.flows[0];
    let m = f.path_mtu.expect("reported");
    println!("{m:?}, goodput {:.2} Mbit/s, RTOs {:?}", f.goodput_bps / 1e6, f.rto_count);
    // tcp_probe_threshold (8 bytes of MTU): the search ends just under the path.
    let best = PATH_MTU - HEADERS;
    assert!(m.final_snd_mss <= best && m.final_snd_mss + 8 > best, "{m:?}");
    // The retransmit timer fires at about 0.3, 0.8, 1.8 and 3.8 s; the last is the first
    // more than 3 s (15 x TCP_RTO_MIN) after the first retransmission.
    assert_eq!(f.rto_count, Some(4));
    // Nothing arrived in the first 3 s: 17 s at most of a 20 Mbit/s link.
    assert!(f.delivered_bytes as f64 <= 17.0 * RATE as f64 / 8.0);
    assert!(f.goodput_bps > 0.5 * RATE as f64, "{:.0}", f.goodput_bps);
}

#[test]
fn path_mtu_runs_are_deterministic_and_keep_the_invariants() {
    let mut s = narrow_path("bbr", true, 2, 15);
    s.flows.push(flow("cubic"));
    s.link.loss = 0.001;
    let a = run_audited(&s, 997).unwrap_or_else(|e| panic!("invariant: {e}"));
    let b = run_ok(&s);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
    assert!(b.summary.flows.iter().all(|f| f.delivered_bytes > 0));
}
