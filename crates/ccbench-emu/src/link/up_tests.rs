//! Flows going up: data read from the receiver device through the reverse bottleneck,
//! ACKs from the sender device through the forward one.

use super::test_support::{drain, tx};
use super::*;
use crate::wire::build_tcp;

const MS: u64 = 1_000_000;
const PORT: u16 = 20000;
/// Flow 1 goes up: its receiver (near) listens on PORT + 1, its sender (far) connects
/// from this port.
const UP_SENDER_PORT: u16 = 40001;

/// 12 Mbit/s down (1 ms per 1500-byte packet), 6 Mbit/s up (2 ms) behind a buffer of
/// `reverse_packets`, 20 ms of base RTT; flow 0 goes down, flow 1 up. `link_extra`: more
/// `[link]` fields (JSON).
fn config_with(reverse_packets: u64, link_extra: &str) -> EmuConfig {
    let json = format!(
        r#"{{"scenario": {{"seed": 1, "duration_ns": 1000000000, "sample_interval_ns": 100000000,
            "link": {{"rate_bps": 12000000, "rtt_ns": 20000000, "buffer": {{"packets": 100}},
                      "nic_rate_bps": 10000000000,
                      "reverse": {{"rate_bps": 6000000, "buffer": {{"packets": {reverse_packets}}}}} {link_extra}}},
            "flows": [{{"cca": "cubic"}}, {{"cca": "cubic", "direction": "up"}}]}},
           "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": {PORT}, "max_runtime_ns": 1}}"#
    );
    EmuConfig::from_json(&json).unwrap()
}

fn config(link_extra: &str) -> EmuConfig {
    config_with(100, link_extra)
}

fn link() -> Link {
    Link::new(&config(""))
}

/// Segment `k` of the up flow's data, as its sender (far) writes it.
fn up_data(k: u32) -> Vec<u8> {
    build_tcp(UP_SENDER_PORT, PORT + 1, k * 1448, 1, TCP_ACK, 1448)
}

/// The up flow's ACK of `acked` bytes, as its receiver (near) writes it.
fn up_ack(acked: u32) -> Vec<u8> {
    build_tcp(PORT + 1, UP_SENDER_PORT, 1, acked, TCP_ACK, 0)
}

/// The down flow's ACK of `acked` bytes, as its receiver (far) writes it.
fn down_ack(acked: u32) -> Vec<u8> {
    build_tcp(PORT, 40000, 1, acked, TCP_ACK, 0)
}

#[test]
fn segments_are_told_apart_by_where_the_flows_sender_is() {
    let cfg = config("");
    let seg = |near, src, dst| cfg.segment(near, src, dst).map(|g| (g.lane, g.connection, g.from_sender));
    // The down flow: data near, ACKs far.
    assert_eq!(seg(true, 40000, PORT), Some((0, 40000, true)));
    assert_eq!(seg(false, PORT, 40000), Some((0, 40000, false)));
    // The up flow: data far, ACKs near; the sender's port tells its connections apart.
    assert_eq!(seg(false, UP_SENDER_PORT, PORT + 1), Some((1, UP_SENDER_PORT, true)));
    assert_eq!(seg(true, PORT + 1, UP_SENDER_PORT), Some((1, UP_SENDER_PORT, false)));
    // Where the receiver opens the connections, the sender listens on the flow's port.
    assert_eq!(seg(false, PORT + 1, 50000), Some((1, 50000, true)));
    assert_eq!(seg(true, 50000, PORT + 1), Some((1, 50000, false)));
    assert_eq!(seg(true, 50000, 50001), None);
}

#[test]
fn an_up_flows_data_crosses_the_reverse_bottleneck_at_its_rate() {
    let mut link = link();
    link.begin(Time(0), Time(1000 * MS));
    drain(&mut link, Time(0));
    for k in 0..5 {
        link.arrive(Time(0), Side::Receiver, up_data(k));
    }
    let out = drain(&mut link, Time(100 * MS));
    // The far NIC (10 Gbit/s), 2 ms each at 6 Mbit/s, then 10 ms to the near receiver.
    let nic = tx(10_000_000_000, 1500);
    let expected: Vec<_> = (0..5).map(|k| (Side::Sender, Time(nic + (k + 1) * 2 * MS + 10 * MS), 1500)).collect();
    assert_eq!(out, expected);
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.flows[1].bottleneck_bytes, r.flows[1].data_packets_in), (5 * 1448, 5));
    assert_eq!((r.flows[0].bottleneck_bytes, r.link.packets_forwarded), (0, 0));
    let up = r.link.reverse.expect("the reverse link's totals");
    assert_eq!((up.packets_forwarded, up.wire_bytes_out), (5, 5 * 1500));
    // Its deliveries are not the forward bottleneck's, which the self-check measures.
    assert_eq!((r.check.packets_to_sender, r.check.packets_to_receiver, r.check.busy_bytes), (5, 0, 0));
}

#[test]
fn an_up_flows_acks_cross_the_forward_bottleneck_and_give_rtt_samples() {
    let mut link = link();
    link.begin(Time(0), Time(1000 * MS));
    link.arrive(Time(0), Side::Receiver, up_data(0));
    let data = drain(&mut link, Time(13 * MS));
    assert_eq!(data.len(), 1);
    link.arrive(Time(13 * MS), Side::Sender, up_ack(1449));
    let back = drain(&mut link, Time(100 * MS));
    // The near NIC, 52 bytes at 12 Mbit/s, 10 ms to the far sender.
    let at = 13 * MS + tx(10_000_000_000, 52) + tx(12_000_000, 52) + 10 * MS;
    assert_eq!(back, vec![(Side::Receiver, Time(at), 52)]);
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.flows[1].rtt_samples, r.flows[0].rtt_samples), (1, 0));
    assert!((r.flows[1].rtt_ms.mean - at as f64 / 1e6).abs() < 0.3, "{:?}", r.flows[1].rtt_ms);
    assert_eq!(r.flows[1].connections[0].port, UP_SENDER_PORT);
    // The ACK is no payload of the flow's, though it crossed the forward bottleneck.
    assert_eq!((r.link.packets_forwarded, r.flows[1].bottleneck_bytes), (1, 1448));
}

#[test]
fn a_down_flows_acks_queue_behind_an_up_flows_data() {
    let mut link = link();
    link.begin(Time(0), Time(1000 * MS));
    for k in 0..5 {
        link.arrive(Time(0), Side::Receiver, up_data(k));
    }
    // At 1 ms the first segment is on the wire and four wait: the ACK waits behind them.
    drain(&mut link, Time(MS));
    link.arrive(Time(MS), Side::Receiver, down_ack(1449));
    let out = drain(&mut link, Time(100 * MS));
    let ack_at = tx(10_000_000_000, 1500) + 5 * 2 * MS + tx(6_000_000, 52) + 10 * MS;
    let acks: Vec<_> = out.iter().filter(|d| d.2 == 52).collect();
    assert_eq!(acks, vec![&(Side::Sender, Time(ack_at), 52)]);
    // It left the reverse bottleneck after the five data packets.
    let data_last = out.iter().filter(|d| d.2 == 1500).map(|d| d.1).max().unwrap();
    assert!(data_last < Time(ack_at));
    let up = link.finish(Time(100 * MS)).link.reverse.expect("the reverse link's totals");
    assert_eq!(up.packets_forwarded, 6);
}

#[test]
fn a_full_reverse_queue_counts_the_up_flows_drops_not_the_down_flows() {
    // The reverse link's own buffer: 1 on the wire + 2 queued.
    let mut link = Link::new(&config_with(2, ""));
    link.begin(Time(0), Time(1000 * MS));
    for k in 0..5 {
        link.arrive(Time(0), Side::Receiver, up_data(k));
    }
    drain(&mut link, Time(MS));
    link.arrive(Time(MS), Side::Receiver, down_ack(1449));
    let out = drain(&mut link, Time(100 * MS));
    assert_eq!(out.iter().filter(|d| d.2 == 1500).count(), 3);
    assert_eq!(link.packets_held(), 0);
    let r = link.finish(Time(100 * MS));
    // Two of the data and the ACK were dropped; only the data are the up flow's drops.
    assert_eq!((r.flows[1].dropped, r.flows[0].dropped), (2, 0));
    assert_eq!(r.link.reverse.expect("the reverse link's totals").drops_overflow, 3);
}

#[test]
fn an_up_flows_oversized_data_is_answered_on_its_senders_device() {
    let mut link = Link::new(&config(r#", "mtu_bytes": 1400"#));
    link.begin(Time(0), Time(1000 * MS));
    let big = up_data(0);
    link.arrive(Time(0), Side::Receiver, big.clone());
    let mut out = Vec::new();
    while let Some(d) = link.poll(Time(100 * MS)) {
        out.push(d);
    }
    assert_eq!(out.len(), 1);
    // No access delay: at once, to the far sender.
    assert_eq!((out[0].to, out[0].due), (Side::Receiver, Time(0)));
    assert_eq!(out[0].bytes, wire::frag_needed(&big, 1400).unwrap());
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.flows[1].mtu_dropped, r.flows[1].icmp_sent), (1, 1));
}

#[test]
fn an_up_flow_needs_a_reverse_link() {
    let json = r#"{"scenario": {"seed": 1, "duration_ns": 1000000000,
            "link": {"rate_bps": 12000000, "rtt_ns": 20000000, "buffer": {"packets": 100}},
            "flows": [{"cca": "cubic", "direction": "up"}]},
           "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": 20000, "max_runtime_ns": 1}"#;
    let e = EmuConfig::from_json(json).unwrap_err();
    assert!(e.contains("flows[0]") && e.contains("link.reverse"), "{e}");
}

#[test]
fn captures_take_an_up_flow_at_the_reverse_bottleneck() {
    use ccbench_sim::observe::capture::CaptureSpec;
    let dir = std::env::temp_dir().join(format!("ccbench-emu-capture-up-{}", std::process::id()));
    let spec = CaptureSpec { points: Point::ALL.to_vec(), flows: Some(vec![1]), dir: dir.clone() };
    let mut link = link().with_capture(EmuCapture::open(&spec, 0).unwrap());
    link.begin(Time(0), Time(1000 * MS));
    link.arrive(Time(0), Side::Receiver, up_data(0));
    drain(&mut link, Time(13 * MS));
    link.arrive(Time(13 * MS), Side::Sender, up_ack(1449));
    drain(&mut link, Time(100 * MS));
    assert_eq!(link.finish_capture(), None);
    // (time, captured length, original length) of each record.
    let read = |p: Point| {
        let b = std::fs::read(p.file_in(&dir)).unwrap();
        let mut out = Vec::new();
        let mut at = 24;
        while at < b.len() {
            let word = |o: usize| u32::from_le_bytes(b[at + o..at + o + 4].try_into().unwrap()) as u64;
            out.push((word(0) * 1_000_000_000 + word(4), word(12)));
            at += 16 + word(8) as usize;
        }
        out
    };
    let nic = tx(10_000_000_000, 1500);
    let ack_back = 13 * MS + tx(10_000_000_000, 52) + tx(12_000_000, 52) + 10 * MS;
    // The sender (far) writes the data and gets the ACK; its router is beside it.
    assert_eq!(read(Point::Sender), vec![(0, 1500), (ack_back, 52)]);
    assert_eq!(read(Point::BottleneckIn), vec![(nic, 1500), (ack_back, 52)]);
    assert_eq!(read(Point::BottleneckOut), vec![(nic + 2 * MS, 1500), (ack_back, 52)]);
    assert_eq!(read(Point::Receiver), vec![(nic + 12 * MS, 1500), (13 * MS, 52)]);
    std::fs::remove_dir_all(&dir).unwrap();
}
