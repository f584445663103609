//! CAIA Delay-Gradient (CDG) on the whole simulator: alone on a 20 Mbit/s, 40 ms path
//! with a one-BDP buffer it fills the link with a shorter queue than Cubic, and its
//! probabilistic backoffs come from the run's seeded stream: the same seed repeats the
//! run exactly, another seed may not.
//! Run in release: `cargo test --release -p ccbench-sim --test cc_cdg`.

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

/// One bulk flow of `cca` alone for `SECS` seconds on a one-BDP buffer, seed `seed`.
fn single(cca: &str, seed: u64) -> Scenario {
    let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(1.0), vec![flow(cca)]);
    s.duration_ns = SECS * SEC;
    s.seed = seed;
    s
}

/// Prints and returns (goodput share of the payload rate, retransmitted %, mean queue
/// delay in ms).
fn figures(cca: &str, out: &RunOutput) -> (f64, f64, f64) {
    let f = &out.summary.flows[0];
    let l = &out.summary.link;
    let share = f.goodput_bps / payload_share_bps(RATE);
    let retrans_pct = 100.0 * f.retransmits as f64 / (f.delivered_bytes as f64 / MSS as f64);
    println!(
        "{cca}: goodput {:.2} Mbit/s ({:.1}% of payload), retransmits {} ({retrans_pct:.2}%), \
         queue delay mean {:.2} ms max {:.2} ms, drops {}",
        f.goodput_bps / 1e6,
        100.0 * share,
        f.retransmits,
        l.queue_delay_ms.mean,
        l.queue_delay_ms.max,
        l.drops
    );
    (share, retrans_pct, l.queue_delay_ms.mean)
}

/// The common checks, plus CDG's fact: it backs off on a rising delay gradient before
/// the buffer fills. Goodput at least 85% of the payload rate, retransmissions at most
/// 1% of the segments delivered, some delay-gradient backoffs taken, and a mean queue
/// delay at most a quarter of Cubic's on the same path and at most 10 ms (a quarter of
/// the 40 ms a full one-BDP buffer holds). Cubic fills the buffer up to each loss.
#[test]
fn cdg_fills_the_link_with_a_shorter_queue_than_cubic() {
    let out = run_ok(&single("cdg", 1));
    let (share, retrans_pct, queue_ms) = figures("cdg", &out);
    assert!(share >= 0.85, "cdg: goodput {:.1}% of the payload rate", 100.0 * share);
    assert!(retrans_pct <= 1.0, "cdg: {retrans_pct:.2}% retransmitted");
    let backoffs = flow_series(&out, 0, "cc_backoffs").last().map_or(0.0, |p| p.1);
    println!("cdg: {backoffs} backoffs");
    assert!(backoffs >= 1.0, "cdg never backed off");
    let cubic = run_ok(&single("cubic", 1));
    let (_, _, cubic_ms) = figures("cubic", &cubic);
    assert!(queue_ms <= 10.0, "cdg: mean queue delay {queue_ms:.2} ms");
    assert!(queue_ms * 4.0 <= cubic_ms, "cdg {queue_ms:.2} ms vs cubic {cubic_ms:.2} ms");
}

/// The backoff draws come from the run's seeded stream: the same seed gives the same
/// run, byte for byte; another seed draws other backoffs (there is no other randomness
/// on this path), so its run differs.
#[test]
fn cdg_is_deterministic_with_the_seed() {
    let (a, b) = (run_ok(&single("cdg", 1)), run_ok(&single("cdg", 1)));
    assert_eq!(a.trace_hash, b.trace_hash, "a second run differs");
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
    let other = run_ok(&single("cdg", 2));
    figures("cdg seed 2", &other);
    assert_ne!(a.trace_hash, other.trace_hash, "seed 2 drew the same backoffs as seed 1");
}
