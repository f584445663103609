//! DCTCP on the whole simulator: with the bottleneck marking above a threshold, the
//! queue stays near the threshold and the link full, where loss-based algorithms fill
//! the buffer. Run in release: `cargo test --release -p ccbench-sim --test cc_dctcp`.

mod common;

use ccbench_sim::config::BufferLimit;
use ccbench_sim::{run, RunOutput, Scenario};
use common::*;

const RATE: u64 = 100 * MBIT;
const RTT: u64 = 10 * MS;

/// One flow of `cca` for 10 s on 100 Mbit/s, 10 ms, a 1 BDP buffer that marks ECN above
/// 0.2 BDP (DCTCP's K above C·RTT/7, Alizadeh et al. 2010, §3.4).
fn marked_link(cca: &str) -> Scenario {
    let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(1.0), vec![flow(cca)]);
    s.link.ecn_threshold = Some(BufferLimit::Bdp(0.2));
    s
}

fn run_ok(s: &Scenario) -> RunOutput {
    run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"))
}

#[test]
fn dctcp_keeps_the_queue_near_the_marking_threshold_with_the_link_full() {
    let out = run_ok(&marked_link("dctcp"));
    let (f, link) = (&out.summary.flows[0], &out.summary.link);
    println!(
        "dctcp: goodput {:.1} Mbit/s, utilisation {:.3}, queue delay mean {:.2} ms p95 {:.2} ms, marks {}, drops {}, retransmits {}",
        f.goodput_bps / 1e6,
        link.utilization,
        link.queue_delay_ms.mean,
        link.queue_delay_ms.p95,
        link.ecn_marks,
        link.drops,
        f.retransmits
    );
    assert!(f.goodput_bps >= 0.9 * payload_share_bps(RATE), "goodput {:.0}", f.goodput_bps);
    assert!(link.ecn_marks > 0);
    // The threshold is 2 ms of queue at 100 Mbit/s; the sawtooth's peaks stay below the
    // 1 BDP buffer's 10 ms by far, so nothing is dropped after slow start.
    assert!(link.queue_delay_ms.mean < 3.0, "mean queue delay {:.2} ms", link.queue_delay_ms.mean);
    assert!(link.queue_delay_ms.p95 < 5.0, "p95 queue delay {:.2} ms", link.queue_delay_ms.p95);
    assert_eq!(link.drops, 0);
    let alpha = flow_series(&out, 0, "cc_dctcp_alpha");
    let settled: Vec<f64> = alpha.iter().filter(|s| s.0 > 2.0).map(|s| s.1).collect();
    let mean_alpha = mean(&settled);
    // At equilibrium a window of W ~ BDP + K segments sees about one RTT of marks out of
    // a sawtooth of a few segments: alpha is small, well below 1 (the start's value).
    assert!(mean_alpha > 0.0 && mean_alpha < 0.5, "mean alpha {mean_alpha:.3}");
}

#[test]
fn cubic_on_the_same_link_fills_the_buffer_without_ecn() {
    let dctcp = run_ok(&marked_link("dctcp")).summary.link.queue_delay_ms.mean;
    let cubic = run_ok(&marked_link("cubic")).summary.link.queue_delay_ms.mean;
    assert!(cubic > 3.0 * dctcp, "cubic {cubic:.2} ms against dctcp {dctcp:.2} ms");
}

#[test]
fn dctcp_without_marks_reacts_to_loss_as_reno() {
    let mut s = marked_link("dctcp");
    s.link.ecn_threshold = None;
    let dctcp = run_ok(&s).summary;
    s.flows = vec![flow("reno")];
    let reno = run_ok(&s).summary;
    let (d, r) = (&dctcp.flows[0], &reno.flows[0]);
    assert_eq!(d.delivered_bytes, r.delivered_bytes, "alpha only matters when segments are marked");
    assert_eq!(d.retransmits, r.retransmits);
}

#[test]
fn the_same_scenario_gives_the_same_run() {
    let a = run_ok(&marked_link("dctcp"));
    let b = run_ok(&marked_link("dctcp"));
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
}
