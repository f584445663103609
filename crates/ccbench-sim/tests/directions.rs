//! Flows in either direction: an up flow's data crosses the reverse bottleneck
//! (`[link.reverse]`) and its ACKs the forward one; a down flow's ACKs queue at the
//! reverse bottleneck behind the up flows' data, in one FIFO, as on a home uplink.

mod common;

use ccbench_sim::config::{BufferLimit, Direction, FlowConfig, ReverseLinkConfig, TraceConfig};
use ccbench_sim::{run, run_audited, RunOutput, Scenario};
use common::*;

const DOWN: u64 = 20 * MBIT;
const UP: u64 = 5 * MBIT;
const RTT: u64 = 40 * MS;

fn up(cca: &str) -> FlowConfig {
    FlowConfig { direction: Direction::Up, ..flow(cca) }
}

/// 20 Mbit/s down, 5 Mbit/s up, 40 ms, a BDP of buffer each way (the uplink's of its own
/// rate: 25,000 bytes).
fn home(flows: Vec<FlowConfig>, secs: u64) -> Scenario {
    let mut s = dumbbell(DOWN, RTT, BufferLimit::Bdp(1.0), flows);
    s.link.reverse = Some(ReverseLinkConfig::rate(UP, BufferLimit::Bdp(1.0)));
    s.duration_ns = secs * SEC;
    s
}

fn run_ok(s: &Scenario) -> RunOutput {
    run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"))
}

#[test]
fn an_upload_alone_fills_the_uplink_and_only_its_acks_cross_the_downlink() {
    for cca in ["cubic", "bbr"] {
        let out = run_ok(&home(vec![up(cca)], 20));
        let (f, link) = (&out.summary.flows[0], &out.summary.link);
        let reverse = link.reverse.as_ref().expect("the reverse link's summary");
        println!("{cca}: up {:.3} Mbit/s, uplink {:.3} busy", f.goodput_bps / 1e6, reverse.utilization);
        // Full segments: 1448 of every 1500 bytes on the uplink are payload.
        assert!(f.goodput_bps > 0.93 * payload_share_bps(UP), "{:.0}", f.goodput_bps);
        assert!(f.goodput_bps < payload_share_bps(UP) * 1.001, "{:.0}", f.goodput_bps);
        assert!(reverse.utilization > 0.95, "{}", reverse.utilization);
        // The downlink carries only ACKs: at most one per segment, 52 bytes each.
        let acks_bits = reverse.packets_forwarded as f64 * 52.0 * 8.0;
        assert!(link.utilization * DOWN as f64 * 20.0 <= acks_bits * 1.01, "{}", link.utilization);
        assert_eq!(link.drops, 0, "ACKs never fill the downlink");
    }
}

#[test]
fn a_saturating_upload_delays_the_downloads_acks_by_the_uplinks_queue() {
    // The uplink's queue holds up to its buffer, 25,000 bytes: 40 ms at 5 Mbit/s. Every
    // ACK of the download waits in it behind the upload's data.
    let full_ms = 25_000.0 * 8.0 / UP as f64 * 1e3;
    for cca in ["cubic", "bbr"] {
        let alone = run_ok(&home(vec![flow(cca)], 20));
        let both = run_ok(&home(vec![flow(cca), up(cca)], 20));
        let (a, d, u) = (&alone.summary.flows[0], &both.summary.flows[0], &both.summary.flows[1]);
        let reverse = both.summary.link.reverse.as_ref().expect("a reverse link");
        let waited = reverse.queue_delay_ms.mean;
        println!(
            "{cca}: download alone {:.2} Mbit/s rtt {:.1} ms; with the upload {:.2} Mbit/s rtt {:.1} ms (min {:.1}), \
             upload {:.2}, uplink queue {waited:.1} ms",
            a.goodput_bps / 1e6,
            a.rtt_ms.mean,
            d.goodput_bps / 1e6,
            d.rtt_ms.mean,
            d.rtt_ms.min,
            u.goodput_bps / 1e6,
        );
        assert!(waited > 0.25 * full_ms && waited < full_ms * 1.05, "{waited:.1} ms of {full_ms:.1}");
        // The download's RTT holds the uplink's queue on top of the base RTT.
        assert!(d.rtt_ms.mean > RTT as f64 / 1e6 + 0.8 * waited, "{:?}", d.rtt_ms);
        assert!(d.goodput_bps < a.goodput_bps);
        assert!(u.goodput_bps > 0.8 * payload_share_bps(UP));
    }
}

#[test]
fn the_ack_trace_form_is_the_reverse_link_with_a_trace_and_no_limit() {
    let opportunities_ms: Vec<u64> = (1..=1000).filter(|t| t % 3 != 0).collect();
    let mut old = dumbbell(DOWN, RTT, BufferLimit::Bdp(1.0), vec![flow("cubic")]);
    old.link.ack_trace = Some(TraceConfig { opportunities_ms: opportunities_ms.clone() });
    let mut new = old.clone();
    new.link.ack_trace = None;
    new.link.reverse = Some(ReverseLinkConfig {
        trace: Some(TraceConfig { opportunities_ms }),
        buffer: None,
        ..ReverseLinkConfig::rate(0, BufferLimit::Bdp(1.0))
    });
    let (a, b) = (run_ok(&old), run_ok(&new));
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.summary.flows[0].goodput_bps, b.summary.flows[0].goodput_bps);
    assert_eq!(a.summary.flows[0].rtt_ms.mean, b.summary.flows[0].rtt_ms.mean);
}

#[test]
fn a_path_and_its_mirror_give_the_same_flow() {
    // One download over 20 down / 5 up, and one upload over 5 down / 20 up: the same
    // path, the flow's direction swapped. They differ only by the near NIC's 42 ns for
    // each of the upload's ACKs and by where the access delay sits.
    let down = run_ok(&home(vec![flow("cubic")], 10));
    let mut mirror = dumbbell(UP, RTT, BufferLimit::Bdp(1.0), vec![up("cubic")]);
    mirror.link.reverse = Some(ReverseLinkConfig::rate(DOWN, BufferLimit::Bdp(1.0)));
    let m = run_ok(&mirror);
    let (a, b) = (&down.summary.flows[0], &m.summary.flows[0]);
    println!("down {:.4} Mbit/s, mirrored up {:.4}", a.goodput_bps / 1e6, b.goodput_bps / 1e6);
    assert!((a.goodput_bps / b.goodput_bps - 1.0).abs() < 0.01);
    assert!((a.rtt_ms.mean / b.rtt_ms.mean - 1.0).abs() < 0.02);
}

#[test]
fn flows_both_ways_keep_every_invariant_and_repeat_byte_for_byte() {
    let mut s = home(vec![flow("cubic"), up("bbr"), up("cubic"), flow("bbr3")], 10);
    s.link.reverse.as_mut().unwrap().loss = 0.01;
    s.flows[2].size_bytes = Some(100_000);
    s.flows[2].repeat = 3;
    s.flows[2].start_ns = 300 * MS;
    let a = run_audited(&s, 97).unwrap_or_else(|e| panic!("{e}"));
    let b = run_audited(&s, 97).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.trace_hash, b.trace_hash);
    let reverse = a.summary.link.reverse.as_ref().expect("a reverse link");
    // Random loss on the uplink takes the up flows' data, never the down flows' ACKs.
    assert!(reverse.drops_random > 0);
    let up_drops: u64 = [1, 2].iter().map(|&i| a.summary.flows[i].dropped).sum();
    assert!(up_drops >= reverse.drops_random, "{up_drops} < {}", reverse.drops_random);
    assert_eq!(a.summary.flows[2].downloads.as_ref().map(|d| d.len()), Some(3));
}

#[test]
fn the_link_series_has_the_uplinks_columns() {
    let out = run_ok(&home(vec![flow("cubic"), up("cubic")], 3));
    let link = &out.series.link;
    let util = column(link, "up_utilization");
    assert_eq!(util.len(), column(link, "utilization").len());
    assert!(util[10..].iter().all(|&u| u > 0.8), "{util:?}");
    assert!(column(link, "up_queue_bytes").iter().any(|&q| q > 0.0));
    // A path without a reverse bottleneck has none.
    let plain = run_ok(&dumbbell(DOWN, RTT, BufferLimit::Bdp(1.0), vec![flow("cubic")]));
    assert!(plain.series.link.column("up_utilization").is_none());
}

#[test]
fn an_up_flow_needs_a_reverse_bottleneck() {
    let s = dumbbell(DOWN, RTT, BufferLimit::Bdp(1.0), vec![up("cubic")]);
    let e = run(&s).expect_err("refused");
    assert_eq!(e.field, "flows[0].direction");
    let mut s = home(vec![flow("cubic")], 1);
    s.link.ack_trace = Some(TraceConfig { opportunities_ms: vec![1] });
    assert_eq!(run(&s).expect_err("refused").field, "link.reverse");
    let mut s = home(vec![flow("cubic")], 1);
    s.link.reverse.as_mut().unwrap().rate_bps = 0;
    assert_eq!(run(&s).expect_err("refused").field, "link.reverse.rate");
}
