//! UDP flows and groups of arrivals in the emulator: each on a lane of its own after the
//! TCP flows', found by port, with its direction and access delay.

use super::test_support::{drain, tx};
use super::*;
use crate::wire::{build_tcp, build_udp};

const MS: u64 = 1_000_000;
const PORT: u16 = 20000;
/// Flow 0 (TCP), UDP flows 0 and 1 (lanes 1 and 2, sinks on PORT + 1 and PORT + 2), and
/// groups of arrivals 0 and 1 (lanes 3 and 4, listening on PORT + 3 and PORT + 4).
const UDP_DOWN: u16 = PORT + 1;
const UDP_UP: u16 = PORT + 2;
const GROUP_DOWN: u16 = PORT + 3;
const GROUP_UP: u16 = PORT + 4;

/// 12 Mbit/s down (1 ms per 1500-byte packet), 6 Mbit/s up, 20 ms; a TCP flow, a UDP
/// flow each way, and a group of arrivals each way, the down group 5 ms from the
/// bottleneck. `loss`: the downlink's random loss.
fn config(loss: f64) -> EmuConfig {
    EmuConfig::from_json(&json(loss, PORT)).unwrap()
}

fn json(loss: f64, base_port: u16) -> String {
    format!(
        r#"{{"scenario": {{"seed": 1, "duration_ns": 1000000000, "sample_interval_ns": 100000000,
            "link": {{"rate_bps": 12000000, "rtt_ns": 20000000, "buffer": {{"packets": 100}}, "loss": {loss},
                      "nic_rate_bps": 10000000000,
                      "reverse": {{"rate_bps": 6000000, "buffer": {{"packets": 100}}}}}},
            "flows": [{{"cca": "cubic"}}],
            "udp": [{{"rate_bps": 1000000}}, {{"rate_bps": 1000000, "direction": "up"}}],
            "arrivals": [
                {{"cca": "cubic", "rate_per_s": 10, "sizes": {{"fixed": 10000}}, "access_delay_ns": 5000000}},
                {{"cca": "cubic", "rate_per_s": 10, "sizes": {{"fixed": 10000}}, "direction": "up"}}]}},
           "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": {base_port}, "max_runtime_ns": 1}}"#
    )
}

#[test]
fn lanes_follow_the_flows_then_the_udp_flows_then_the_groups() {
    let cfg = config(0.0);
    assert_eq!((cfg.lanes(), cfg.no_flow_lane(), cfg.arrivals_lane(1)), (6, 5, 4));
    let names: Vec<String> = (0..6).map(|i| cfg.lane_name(i)).collect();
    assert_eq!(names, ["flows[0]", "udp[0]", "udp[1]", "arrivals[0]", "arrivals[1]", "packets of no flow"]);
    assert_eq!((0..6).map(|i| cfg.lane_up(i)).collect::<Vec<_>>(), [false, false, true, false, true, false]);
    assert_eq!((cfg.lane_access_ns(3), cfg.lane_access_ns(4)), (5 * MS, 0));
    // A datagram is its flow's from the side of its source only.
    assert_eq!((cfg.udp_lane(true, UDP_DOWN), cfg.udp_lane(false, UDP_DOWN)), (Some(1), None));
    assert_eq!((cfg.udp_lane(false, UDP_UP), cfg.udp_lane(true, UDP_UP)), (Some(2), None));
    assert_eq!((cfg.udp_lane(true, PORT), cfg.udp_lane(true, GROUP_DOWN)), (None, None));
    // TCP ports: the flow's and the groups', not the UDP flows'.
    let seg = |near, src, dst| cfg.segment(near, src, dst).map(|g| (g.lane, g.connection, g.from_sender));
    assert_eq!(seg(true, 40000, PORT), Some((0, 40000, true)));
    assert_eq!(seg(true, 40001, GROUP_DOWN), Some((3, 40001, true)));
    assert_eq!(seg(false, GROUP_DOWN, 40001), Some((3, 40001, false)));
    assert_eq!(seg(false, 40002, GROUP_UP), Some((4, 40002, true)));
    assert_eq!(seg(true, 40002, UDP_DOWN), None);
}

#[test]
fn datagrams_queue_with_the_flows_data_and_count_as_their_flows() {
    let mut link = Link::new(&config(0.0));
    link.begin(Time(0), Time(1000 * MS));
    drain(&mut link, Time(0));
    link.arrive(Time(0), Side::Sender, build_tcp(40000, PORT, 0, 1, TCP_ACK, 1448));
    link.arrive(Time(0), Side::Sender, build_udp(40000, UDP_DOWN, 1472));
    let out = drain(&mut link, Time(100 * MS));
    // Behind the TCP segment, 1 ms each at 12 Mbit/s, then 10 ms to the receiver.
    let nic = tx(10_000_000_000, 1500);
    assert_eq!(out[1], (Side::Receiver, Time(nic + 2 * MS + 10 * MS), 1500));
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.udp[0].datagrams_in, r.udp[0].dropped, r.udp[1].datagrams_in), (1, 0, 0));
    // Its payload is the UDP flow's, not the TCP flow's, whose RTT samples it leaves alone.
    assert_eq!((r.flows[0].bottleneck_bytes, r.flows[0].data_packets_in), (1448, 1));
    assert_eq!((r.link.packets_forwarded, r.link.wire_bytes_out), (2, 3000));
}

#[test]
fn an_up_flows_datagrams_cross_the_reverse_bottleneck() {
    let mut link = Link::new(&config(0.0));
    link.begin(Time(0), Time(1000 * MS));
    drain(&mut link, Time(0));
    link.arrive(Time(0), Side::Receiver, build_udp(40000, UDP_UP, 1472));
    // From the wrong side, a datagram to that port is of no flow: base delays only.
    link.arrive(Time(0), Side::Sender, build_udp(40000, UDP_UP, 100));
    let out = drain(&mut link, Time(100 * MS));
    let nic = tx(10_000_000_000, 1500);
    assert!(out.contains(&(Side::Sender, Time(nic + 2 * MS + 10 * MS), 1500)), "{out:?}");
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.udp[1].datagrams_in, r.udp[0].datagrams_in), (1, 0));
    let up = r.link.reverse.expect("the reverse link's totals");
    assert_eq!((up.packets_forwarded, up.wire_bytes_out), (1, 1500));
}

#[test]
fn random_loss_takes_datagrams_as_data_and_counts_them_as_their_flows_drops() {
    let mut link = Link::new(&config(0.5));
    link.begin(Time(0), Time(10_000 * MS));
    drain(&mut link, Time(0));
    for k in 0..1000u64 {
        link.arrive(Time(k * MS), Side::Sender, build_udp(40000, UDP_DOWN, 1472));
        drain(&mut link, Time(k * MS));
    }
    drain(&mut link, Time(2000 * MS));
    let r = link.finish(Time(2000 * MS));
    let (u, l) = (&r.udp[0], &r.link);
    assert!((400..600).contains(&u.dropped), "{}", u.dropped);
    assert_eq!((u.datagrams_in, l.drops_random, l.packets_forwarded), (1000, u.dropped, 1000 - u.dropped));
}

#[test]
fn an_arrivals_connection_takes_its_groups_lane_and_access_delay() {
    let mut link = Link::new(&config(0.0));
    link.begin(Time(0), Time(1000 * MS));
    drain(&mut link, Time(0));
    link.arrive(Time(0), Side::Sender, build_tcp(40001, GROUP_DOWN, 0, 1, TCP_ACK, 1448));
    let out = drain(&mut link, Time(100 * MS));
    // The group's 5 ms access delay before the bottleneck.
    assert_eq!(out, vec![(Side::Receiver, Time(5 * MS + tx(10_000_000_000, 1500) + MS + 10 * MS), 1500)]);
    link.arrive(Time(20 * MS), Side::Receiver, build_tcp(GROUP_DOWN, 40001, 1, 1449, TCP_ACK, 0));
    // Back: through the reverse bottleneck, 10 ms one way and 5 ms of access.
    let back = 20 * MS + tx(6_000_000, 52) + 10 * MS + 5 * MS;
    assert_eq!(drain(&mut link, Time(100 * MS)), vec![(Side::Sender, Time(back), 52)]);
    // An up group's data crosses the reverse bottleneck.
    link.arrive(Time(40 * MS), Side::Receiver, build_tcp(40002, GROUP_UP, 0, 1, TCP_ACK, 1448));
    drain(&mut link, Time(100 * MS));
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.flows.len(), r.flows[0].bottleneck_bytes, r.flows[0].rtt_samples), (1, 0, 0));
    assert_eq!(r.link.packets_forwarded, 1);
    assert_eq!(r.link.reverse.expect("the reverse link's totals").packets_forwarded, 2);
}

#[test]
fn the_ports_must_fit_above_the_base_port() {
    // Five lanes of traffic: from 65,530 they fit, from 65,531 they reach the last port.
    assert!(EmuConfig::from_json(&json(0.0, u16::MAX - 5)).is_ok());
    let e = EmuConfig::from_json(&json(0.0, u16::MAX - 4)).unwrap_err();
    assert!(e.contains("fit in the ports above base_port"), "{e}");
}
