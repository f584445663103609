//! TCP-NV on the whole simulator: alone on a 20 Mbit/s, 40 ms path with a one-BDP
//! buffer it fills the link with a short queue, repeats itself exactly, and with a deep
//! (4 BDP) buffer it keeps the queue far below Cubic's.
//! Run in release: `cargo test --release -p ccbench-sim --test cc_nv`.

mod common;

use ccbench_sim::config::BufferLimit;
use ccbench_sim::{run, RunOutput, Scenario};
use common::*;

const RATE: u64 = 20 * MBIT;
const RTT: u64 = 40 * MS;
const SECS: u64 = 20;

fn run_ok(s: &Scenario) -> RunOutput {
    run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"))
}

/// One bulk flow of `cca` on the path for `SECS` seconds, with a buffer of `bdps` BDPs.
fn single(cca: &str, bdps: f64) -> Scenario {
    let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(bdps), vec![flow(cca)]);
    s.duration_ns = SECS * SEC;
    s
}

/// Prints and returns the run's goodput (bit/s), retransmits, segments delivered and
/// mean queue delay (ms).
fn report(cca: &str, bdps: f64, out: &RunOutput) -> (f64, u64, u64, f64) {
    let f = &out.summary.flows[0];
    let l = &out.summary.link;
    let delivered = f.delivered_bytes / MSS;
    println!(
        "{cca}, {bdps} BDP: goodput {:.2} Mbit/s ({:.1}% of payload), retransmits {} of {delivered} segments, \
         queue delay mean {:.2} ms max {:.2} ms, drops {}",
        f.goodput_bps / 1e6,
        100.0 * f.goodput_bps / payload_share_bps(RATE),
        f.retransmits,
        l.queue_delay_ms.mean,
        l.queue_delay_ms.max,
        l.drops
    );
    (f.goodput_bps, f.retransmits, delivered, l.queue_delay_ms.mean)
}

/// A full one-BDP buffer holds 40 ms of queue (20 Mbit/s × 40 ms). NV aims at `nv_pad` =
/// 10 segments (6 ms) above the window its rate needs at the minimum RTT; that minimum
/// is re-taken every 3.75..6.25 s from a queue that never fully drains, so it drifts up
/// and the queue with it. Asserted: goodput at least 85% of the payload rate,
/// retransmissions at most 1% (slow start's overshoot fills the buffer once), mean queue
/// delay at most half the full buffer's (20 ms), and the same output from a second run.
#[test]
fn nv_fills_the_link_with_a_queue_well_under_the_buffer() {
    let s = single("nv", 1.0);
    let out = run_ok(&s);
    let (goodput, retrans, delivered, queue_ms) = report("nv", 1.0, &out);
    let payload = payload_share_bps(RATE);
    assert!(goodput >= 0.85 * payload, "goodput {goodput:.0} below 85% of {payload:.0}");
    assert!(retrans * 100 <= delivered, "{retrans} retransmits of {delivered} segments");
    assert!(queue_ms <= 20.0, "mean queue delay {queue_ms:.2} ms above half the buffer's 40 ms");

    let again = run_ok(&s);
    assert_eq!(out.trace_hash, again.trace_hash, "a second run differs");
    assert_eq!(
        serde_json::to_string(&out.summary).unwrap(),
        serde_json::to_string(&again.summary).unwrap(),
        "a second summary differs"
    );
}

/// With a 4-BDP buffer (160 ms of queue) Cubic fills it before every loss, while NV's
/// delay-based cuts hold its queue near its target, and slow start stops before the
/// buffer overflows. Asserted: NV fills the link (85%), its mean queue delay is at most
/// a quarter of Cubic's and under 20 ms, and it retransmits no more than Cubic.
#[test]
fn nv_keeps_a_deep_buffer_far_emptier_than_cubic() {
    let nv = report("nv", 4.0, &run_ok(&single("nv", 4.0)));
    let cubic = report("cubic", 4.0, &run_ok(&single("cubic", 4.0)));
    assert!(nv.0 >= 0.85 * payload_share_bps(RATE), "nv goodput {:.0}", nv.0);
    assert!(nv.3 * 4.0 <= cubic.3, "mean queue delay: nv {:.2} ms, cubic {:.2} ms", nv.3, cubic.3);
    assert!(nv.3 <= 20.0, "nv mean queue delay {:.2} ms", nv.3);
    assert!(nv.1 <= cubic.1, "retransmits: nv {}, cubic {}", nv.1, cubic.1);
}
