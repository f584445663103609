//! Unresponsive UDP flows against closed forms: one alone crosses the path with the
//! delay of its parts, one above the link's rate loses the excess, and TCP flows share
//! what it leaves.

mod common;

use ccbench_sim::config::{BufferLimit, Direction, OnOff, ReverseLinkConfig, UdpFlowConfig};
use ccbench_sim::{run, run_audited, RunOutput, Scenario};
use common::*;

const RATE: u64 = 20 * MBIT;
const RTT: u64 = 40 * MS;

fn with_udp(flows: Vec<ccbench_sim::config::FlowConfig>, udp: Vec<UdpFlowConfig>, secs: u64) -> Scenario {
    let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(1.0), flows);
    s.udp = udp;
    s.duration_ns = secs * SEC;
    s
}

fn run_ok(s: &Scenario) -> RunOutput {
    run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"))
}

#[test]
fn a_datagram_on_an_idle_path_takes_the_sum_of_its_delays() {
    // 1 Mbit/s beside a window-limited TCP flow that keeps the queue empty: every
    // datagram takes the NIC's 1.2 us, the bottleneck's 600 us and half the RTT.
    let mut small = flow("cubic");
    small.rwnd_bytes = 20_000;
    let out = run_ok(&with_udp(vec![small], vec![UdpFlowConfig::constant(MBIT)], 5));
    let u = &out.summary.udp[0];
    let one_way_ms = 0.0012 + 0.6 + 20.0;
    println!("{:?}", u.one_way_delay_ms);
    assert!((u.one_way_delay_ms.min - one_way_ms).abs() < 1e-6, "{:?}", u.one_way_delay_ms);
    assert!(u.one_way_delay_ms.p99 < one_way_ms + 1.3, "at most two packets ahead of it");
    assert_eq!((u.dropped, u.loss), (0, 0.0));
    // 1 Mbit/s of 1500-byte packets: one every 12 ms, 417 in 5 s.
    assert_eq!(u.sent_packets, 417);
    assert!((u.offered_bps / MBIT as f64 - 1.0).abs() < 0.001, "{}", u.offered_bps);
}

#[test]
fn a_flood_above_the_links_rate_loses_the_excess() {
    // 30 Mbit/s into 20: in the long run a third is dropped.
    let out = run_ok(&with_udp(vec![flow("cubic")], vec![UdpFlowConfig::constant(30 * MBIT)], 20));
    let u = &out.summary.udp[0];
    println!("offered {:.2} delivered {:.2} loss {:.4}", u.offered_bps / 1e6, u.delivered_bps / 1e6, u.loss);
    assert!((u.offered_bps / 30e6 - 1.0).abs() < 0.001);
    assert!(u.delivered_bps < RATE as f64 && u.delivered_bps > 0.9 * RATE as f64, "{}", u.delivered_bps);
    assert!((u.loss - 1.0 / 3.0).abs() < 0.03, "{}", u.loss);
    // The queue stays full: each datagram waits for a buffer's worth (40 ms).
    assert!(u.one_way_delay_ms.p50 > 20.0 + 35.0, "{:?}", u.one_way_delay_ms);
}

#[test]
fn tcp_flows_share_what_constant_rate_udp_leaves() {
    for cca in ["cubic", "bbr"] {
        let out = run_ok(&with_udp(vec![flow(cca)], vec![UdpFlowConfig::constant(5 * MBIT)], 30));
        let (f, u) = (&out.summary.flows[0], &out.summary.udp[0]);
        let left = payload_share_bps(RATE - 5 * MBIT);
        println!("{cca}: tcp {:.2} Mbit/s of {:.2}; udp loss {:.4}", f.goodput_bps / 1e6, left / 1e6, u.loss);
        assert!(f.goodput_bps > 0.9 * left && f.goodput_bps < 1.01 * left, "{}", f.goodput_bps);
        assert!(u.delivered_bps > 0.95 * 5e6, "{}", u.delivered_bps);
    }
}

#[test]
fn udp_goes_up_through_the_reverse_link_and_is_reported_there() {
    let mut s = with_udp(
        vec![flow("cubic")],
        vec![UdpFlowConfig { direction: Direction::Up, ..UdpFlowConfig::constant(2 * MBIT) }],
        10,
    );
    s.link.reverse = Some(ReverseLinkConfig::rate(5 * MBIT, BufferLimit::Bdp(1.0)));
    let out = run_ok(&s);
    let (u, reverse) = (&out.summary.udp[0], out.summary.link.reverse.as_ref().expect("a reverse link"));
    // 2 Mbit/s of 1500-byte packets and the download's ACKs (a 52-byte ACK per two
    // segments at most: under 0.7 Mbit/s) through the 5 Mbit/s uplink.
    let udp_share = u.delivered_bps / 5e6;
    assert!(reverse.utilization > udp_share && reverse.utilization < udp_share + 0.15, "{}", reverse.utilization);
    assert_eq!(u.dropped, 0);
    assert!(u.one_way_delay_ms.min >= 20.0 + 2.4, "the uplink serializes a packet in 2.4 ms");
}

#[test]
fn on_off_and_stepping_sources_repeat_byte_for_byte_and_keep_every_invariant() {
    let on_off = Some(OnOff { on_ns: 200 * MS, off_ns: 300 * MS, exponential: true });
    let udp = vec![
        UdpFlowConfig { on_off, ..UdpFlowConfig::constant(8 * MBIT) },
        UdpFlowConfig {
            start_ns: 500 * MS,
            stop_ns: Some(4 * SEC),
            payload_bytes: 200,
            rate_schedule: vec![ccbench_sim::config::RateStep { at_ns: 2 * SEC, rate_bps: 12 * MBIT }],
            ..UdpFlowConfig::constant(MBIT)
        },
    ];
    let s = with_udp(vec![flow("cubic"), flow("bbr")], udp, 5);
    let (a, b) = (run_audited(&s, 101).unwrap(), run_audited(&s, 101).unwrap());
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.summary.udp[0].sent_packets, b.summary.udp[0].sent_packets);
    // The second sends 1 Mbit/s for 1.5 s and 12 Mbit/s for 2 s, in 228-byte packets.
    let expected = (1.5 * 1e6 + 2.0 * 12e6) / (228.0 * 8.0);
    assert!((a.summary.udp[1].sent_packets as f64 / expected - 1.0).abs() < 0.001);
    let seeded = Scenario { seed: 2, ..s.clone() };
    assert_ne!(run_ok(&seeded).summary.udp[0].sent_packets, a.summary.udp[0].sent_packets);
    // The schedule other engines send by is the simulated source's.
    for (k, u) in a.summary.udp.iter().enumerate() {
        let runs = ccbench_sim::udp_schedule(&s, k);
        assert_eq!(runs.iter().map(|r| r.count).sum::<u64>(), u.sent_packets, "udp[{k}]");
    }
}

#[test]
fn bad_udp_values_are_named() {
    let bad = |u: UdpFlowConfig| run(&with_udp(vec![flow("cubic")], vec![u], 1)).expect_err("refused").field;
    assert_eq!(bad(UdpFlowConfig::constant(0)), "udp[0].rate");
    assert_eq!(bad(UdpFlowConfig { stop_ns: Some(0), ..UdpFlowConfig::constant(MBIT) }), "udp[0].stop");
    assert_eq!(bad(UdpFlowConfig { payload_bytes: 70_000, ..UdpFlowConfig::constant(MBIT) }), "udp[0].size");
    let on_off = Some(OnOff { on_ns: 0, off_ns: 1, exponential: false });
    assert_eq!(bad(UdpFlowConfig { on_off, ..UdpFlowConfig::constant(MBIT) }), "udp[0].on_off");
    assert_eq!(bad(UdpFlowConfig { direction: Direction::Up, ..UdpFlowConfig::constant(MBIT) }), "udp[0].direction");
}
