use super::*;
use crate::config::BufferLimit;
use crate::event::EventQueue;
use crate::net::aqm::{DropTail, Qdisc, QueueLimit};
use crate::net::capacity::{Capacity, RateSchedule};
use crate::net::loss::LossModel;
use crate::net::{Bottleneck, PathShape, PathWake};
use crate::time::Dur;
use crate::units::BitRate;

const MS: u64 = 1_000_000;

/// 12 Mbit/s (a 1500-byte packet a millisecond) behind a queue of `limit` packets, 20 ms
/// of base RTT, two lanes with a 1 Gbit/s NIC.
fn path(capacity: Capacity, limit: u64) -> Path {
    let shape = PathShape {
        nic_rate: BitRate(1_000_000_000),
        one_way: Dur::from_ms(10),
        access: vec![Dur::ZERO; 2],
        rtt_steps: Vec::new(),
    };
    let queue = Qdisc::DropTail(DropTail::new(QueueLimit::Packets(limit)));
    Path::new(shape, Bottleneck::new(capacity, queue, None, LossModel::None), None, Vec::new())
}

fn constant() -> Capacity {
    Capacity::Rate(RateSchedule::constant(BitRate(12_000_000)))
}

fn meter() -> LinkMeter {
    let link = crate::config::LinkConfig::new(12_000_000, 20 * MS, BufferLimit::Packets(100));
    let flows = vec![crate::tcp::FlowConfig::bulk("cubic"); 2];
    let s = Scenario {
        seed: 1,
        duration_ns: 1,
        sample_interval_ns: 0,
        link,
        flows,
        tcp: Default::default(),
        host: None,
        udp: Vec::new(),
        arrivals: Vec::new(),
    };
    LinkMeter::new(&s, 2)
}

fn data(flow: u32) -> Packet {
    Packet { flow, wire_bytes: 1500, payload: 1448, ..Packet::default() }
}

/// Hand `packets` to their lanes at `at` and run the path until `until`.
fn carry(p: &mut Path, m: &mut LinkMeter, q: &mut EventQueue<PathWake>, at: Time, packets: &[Packet], until: Time) {
    for &pkt in packets {
        p.send(at, pkt.flow, pkt, q);
    }
    while q.peek_time().is_some_and(|t| t <= until) {
        let (t, w) = q.pop().expect("peeked");
        p.handle(t, w, q, m);
    }
}

#[test]
fn a_sample_gives_the_links_row_and_each_lanes_throughput() {
    let (mut p, mut m, mut q) = (path(constant(), 100), meter(), EventQueue::default());
    carry(&mut p, &mut m, &mut q, Time::ZERO, &[data(0), data(0), data(0), data(1)], Time(50 * MS));
    let row = m.sample(Time(100 * MS), &p);
    assert_eq!((row.time_s, row.down.throughput_bps, row.down.capacity_bps), (0.1, 4.0 * 12_000.0 / 0.1, 12e6));
    assert!((row.down.utilization - 0.04).abs() < 1e-12, "{}", row.down.utilization);
    let lanes: Vec<f64> = m.lanes().iter().map(|l| l.throughput_bps).collect();
    assert_eq!(lanes, vec![3.0 * 1448.0 * 8.0 / 0.1, 1448.0 * 8.0 / 0.1]);
    // Nothing more: the next interval is empty, the totals keep the counts.
    let row = m.sample(Time(200 * MS), &p);
    assert_eq!((row.down.throughput_bps, row.down.queue_packets, m.lanes()[0].throughput_bps), (0.0, 0.0, 0.0));
    assert_eq!((m.lanes()[0].payload_out, m.lanes()[1].payload_out), (3 * 1448, 1448));
}

#[test]
fn drops_are_counted_per_lane_and_cumulatively_in_the_samples() {
    // One on the wire and two queued fit. Each lane's NIC spaces its packets by 12 µs:
    // the first of both lanes and lane 0's second fit, the next of each is dropped.
    let (mut p, mut m, mut q) = (path(constant(), 2), meter(), EventQueue::default());
    carry(&mut p, &mut m, &mut q, Time::ZERO, &[data(0), data(0), data(0), data(1), data(1)], Time(50 * MS));
    assert_eq!((m.lanes()[0].dropped, m.lanes()[1].dropped), (1, 1));
    assert_eq!(m.sample(Time(100 * MS), &p).down.drops, 2.0);
    let totals = m.totals(&p, Time(100 * MS));
    assert_eq!((totals.drops_overflow, totals.packets_forwarded, totals.wire_bytes_out), (2, 3, 4500));
    // A constant rate: the summary takes its rate over the run.
    assert!(totals.offered.is_none() && totals.ack_link.is_none());
}

#[test]
fn a_restart_counts_afresh_from_its_instant() {
    let (mut p, mut m, mut q) = (path(constant(), 100), meter(), EventQueue::default());
    carry(&mut p, &mut m, &mut q, Time::ZERO, &[data(0), data(1)], Time(50 * MS));
    m.restart(Time(500 * MS), &mut p);
    carry(&mut p, &mut m, &mut q, Time(500 * MS), &[data(1)], Time(550 * MS));
    let row = m.sample(Time(600 * MS), &p);
    assert!((row.time_s - 0.1).abs() < 1e-12, "{}", row.time_s);
    assert_eq!(row.down.throughput_bps, 12_000.0 / 0.1);
    assert_eq!((m.lanes()[0].payload_out, m.lanes()[1].payload_out), (0, 1448));
    assert_eq!(m.totals(&p, Time(600 * MS)).packets_forwarded, 1);
}

#[test]
fn rate_steps_give_what_they_offered_over_the_window() {
    // 12 Mbit/s, then 6 Mbit/s from 50 ms.
    let steps = RateSchedule::new(BitRate(12_000_000), &[(Time(50 * MS), BitRate(6_000_000))]);
    let (mut p, mut m, mut q) = (path(Capacity::Rate(steps), 100), meter(), EventQueue::default());
    carry(&mut p, &mut m, &mut q, Time::ZERO, &[data(0)], Time(50 * MS));
    let row = m.sample(Time(100 * MS), &p);
    assert_eq!(row.down.capacity_bps, 9e6);
    assert!((row.down.utilization - 12_000.0 / 900_000.0).abs() < 1e-12, "{}", row.down.utilization);
    let offered = m.totals(&p, Time(100 * MS)).offered.expect("rate steps");
    assert_eq!((offered.capacity_bits, offered.window_ns), (900_000.0, 100 * MS));
}
