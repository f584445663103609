//! Delay-based and delay-assisted algorithms (Vegas, Veno, Illinois, YeAH) on the
//! whole simulator: each fills a 20 Mbit/s, 40 ms path with a one-BDP buffer, repeats
//! itself exactly, and shows the behaviour it is known for.
//! Run in release: `cargo test --release -p ccbench-sim --test cc_delay_based`.

mod common;

use ccbench_sim::config::{BufferLimit, FlowConfig};
use ccbench_sim::{run, RunOutput, Scenario};
use common::*;

const RATE: u64 = 20 * MBIT;
const RTT: u64 = 40 * MS;
/// One full segment's time on the wire at 20 Mbit/s: 1500·8/20e6 s = 0.6 ms.
const SEGMENT_MS: f64 = 0.6;
const SECS: u64 = 20;

fn run_ok(s: &Scenario) -> RunOutput {
    run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"))
}

/// One bulk flow of `cca` on the path for `SECS` seconds, with a buffer of `buffer`.
fn single(cca: &str, buffer: BufferLimit) -> Scenario {
    let mut s = dumbbell(RATE, RTT, buffer, vec![flow(cca)]);
    s.duration_ns = SECS * SEC;
    s
}

/// The common checks: goodput at least 85% of the payload rate, retransmissions at most
/// `max_retrans_pct` % of the segments delivered, and the same output from a second run.
/// Prints and returns the run.
fn fills_the_link(cca: &str, max_retrans_pct: f64) -> RunOutput {
    let s = single(cca, BufferLimit::Bdp(1.0));
    let out = run_ok(&s);
    let f = &out.summary.flows[0];
    let l = &out.summary.link;
    let payload = payload_share_bps(RATE);
    let segments = f.delivered_bytes as f64 / MSS as f64;
    let retrans_pct = 100.0 * f.retransmits as f64 / segments;
    println!(
        "{cca}: goodput {:.2} Mbit/s ({:.1}% of payload), retransmits {} ({retrans_pct:.2}%), \
         queue delay mean {:.2} ms max {:.2} ms, drops {}",
        f.goodput_bps / 1e6,
        100.0 * f.goodput_bps / payload,
        f.retransmits,
        l.queue_delay_ms.mean,
        l.queue_delay_ms.max,
        l.drops
    );
    assert!(f.goodput_bps >= 0.85 * payload, "{cca}: goodput {:.0} below 85% of {payload:.0}", f.goodput_bps);
    assert!(retrans_pct <= max_retrans_pct, "{cca}: {retrans_pct:.2}% retransmitted");

    let again = run_ok(&s);
    assert_eq!(out.trace_hash, again.trace_hash, "{cca}: a second run differs");
    assert_eq!(
        serde_json::to_string(&out.summary).unwrap(),
        serde_json::to_string(&again.summary).unwrap(),
        "{cca}: a second summary differs"
    );
    out
}

/// Vegas aims at alpha..beta = 2..4 segments queued, i.e. 1.2..2.4 ms of queue at
/// 20 Mbit/s, against up to 40 ms for a full one-BDP buffer (20 Mbit/s × 40 ms =
/// 100 kB). Its mean queue delay must stay below 8 segments' worth (4.8 ms, twice beta,
/// room for slow start's overshoot), and at most a quarter of Reno's on the same path.
#[test]
fn vegas_fills_the_link_with_a_short_queue() {
    let out = fills_the_link("vegas", 1.0);
    let l = &out.summary.link;
    let bound = 2.0 * 4.0 * SEGMENT_MS;
    assert!(l.queue_delay_ms.mean <= bound, "vegas: mean queue delay {:.2} ms > {bound:.1} ms", l.queue_delay_ms.mean);
    // Reno fills the same buffer: its mean queue delay is a good part of the 40 ms.
    let reno = run_ok(&single("reno", BufferLimit::Bdp(1.0)));
    let r = &reno.summary.link;
    println!("reno: queue delay mean {:.2} ms, drops {}", r.queue_delay_ms.mean, r.drops);
    assert!(l.queue_delay_ms.mean * 4.0 <= r.queue_delay_ms.mean, "vegas queues a quarter of reno's or less");
}

/// Veno reads a loss with less than 3 segments of backlog as random and cuts cwnd by
/// 1/5 instead of 1/2. Under 1% random loss the window stays far below the BDP (Mathis:
/// 1.22/√0.01 ≈ 12 segments for Reno against a BDP of ~67), the queue stays nearly
/// empty, so nearly every cut is Veno's 1/5 one. An AIMD flow keeping a fraction b of
/// cwnd on loss gets a rate ∝ √((1+b)/(2(1−b))): 1.22 for b = 1/2, 2.12 for b = 4/5, so
/// up to 1.73× Reno's; timeouts and the odd congestive cut leave less. At least 1.3×.
#[test]
fn veno_fills_the_link_and_rides_out_random_loss() {
    fills_the_link("veno", 1.0);
    let lossy = |cca: &str| {
        let mut s = single(cca, BufferLimit::Bdp(1.0));
        s.link.loss = 0.01;
        run_ok(&s).summary.flows[0].goodput_bps
    };
    let (veno, reno) = (lossy("veno"), lossy("reno"));
    println!("1% random loss: veno {:.2} Mbit/s, reno {:.2} Mbit/s", veno / 1e6, reno / 1e6);
    assert!(veno >= 1.3 * reno, "veno {veno:.0} vs reno {reno:.0} under random loss");
}

/// (time, value) pairs of two columns of flow 0 after `from` s, zipped.
fn pairs(out: &RunOutput, a: &str, b: &str, from: f64) -> Vec<(f64, f64)> {
    let (xa, xb) = (flow_series(out, 0, a), flow_series(out, 0, b));
    xa.iter().zip(&xb).filter(|(p, _)| p.0 > from).map(|(p, q)| (p.1, q.1)).collect()
}

/// Illinois sets α (the per-RTT increase) and β (the loss cut) from the queueing delay.
/// On this path the RTT runs from 40 ms (empty queue) to 80 ms (the full one-BDP buffer),
/// so d_m ≈ 40 ms. At an SRTT of 70 ms or more, d_a ≈ 30 ms: α = (d_m − d1)·10 /
/// ((d_m − d1) + (d_a − d1)·(10 − 0.3)/0.3) with d1 = d_m/100 gives 39.6·10/(39.6 +
/// 29.6·32.3) = 0.40, and β = 1/8 + (1/2 − 1/8)·(d_a − d2)/(d3 − d2) with d2 = 4 ms,
/// d3 = 32 ms gives 0.47. Asserted: α ≤ 0.5 and β ≥ 0.4 there (after the first 2 s),
/// and at an SRTT of 55 ms or less α is on average at least twice and β at most 2/3 of
/// their means at 70 ms or more.
#[test]
fn illinois_fills_the_link_and_follows_the_delay() {
    let out = fills_the_link("illinois", 1.0);
    let alpha = pairs(&out, "srtt_ms", "cc_alpha", 2.0);
    let beta = pairs(&out, "srtt_ms", "cc_beta", 2.0);
    let mean_where = |v: &[(f64, f64)], f: &dyn Fn(f64) -> bool| {
        let xs: Vec<f64> = v.iter().filter(|p| f(p.0)).map(|p| p.1).collect();
        assert!(xs.len() >= 5, "only {} samples", xs.len());
        mean(&xs)
    };
    for (&(srtt, a), &(_, b)) in alpha.iter().zip(&beta) {
        if srtt >= 70.0 {
            assert!(a <= 0.5 && b >= 0.4, "srtt {srtt:.1} ms: alpha {a:.2}, beta {b:.3}");
        }
    }
    let (a_low, a_high) = (mean_where(&alpha, &|r| r <= 55.0), mean_where(&alpha, &|r| r >= 70.0));
    let (b_low, b_high) = (mean_where(&beta, &|r| r <= 55.0), mean_where(&beta, &|r| r >= 70.0));
    println!("illinois: alpha {a_low:.2} / {a_high:.2}, beta {b_low:.3} / {b_high:.3} (srtt <= 55 / >= 70 ms)");
    assert!(a_low >= 2.0 * a_high && b_low <= b_high * 2.0 / 3.0);
}

/// YeAH drains the queue whenever its estimate Q = cwnd·(rtt − baseRTT)/rtt exceeds
/// ALPHA = 80 segments (cwnd −= Q), but never below `reno_count`, its emulation of a
/// competing Reno window (cwnd/2 at the first slow round, +1 per slow round, halved per
/// loss). With a 4-BDP buffer (400 kB, 267 segments, 160 ms) Reno fills the buffer
/// before every loss; YeAH's cuts hold its window some way below, until `reno_count`
/// catches up. Asserted after slow start (5 s on): YeAH's mean queue at most 85% of
/// Reno's, and its peak lower.
///
/// On the one-BDP path YeAH retransmits more than Reno in slow start: its first loss
/// removes only the last queue estimate, at least cwnd/8 (`tcp_yeah_ssthresh`), so the
/// overshoot lasts longer; the bound there is 1.5% (about one loss per 4 s afterwards).
#[test]
fn yeah_fills_the_link_and_drains_a_deep_queue() {
    fills_the_link("yeah", 1.5);
    let queue_after = |cca: &str| {
        let out = run_ok(&single(cca, BufferLimit::Bdp(4.0)));
        let f = &out.summary.flows[0];
        assert!(f.goodput_bps >= 0.85 * payload_share_bps(RATE), "{cca}: goodput {:.0}", f.goodput_bps);
        let q: Vec<f64> = link_series(&out, "queue_packets").into_iter().filter(|s| s.0 > 5.0).map(|s| s.1).collect();
        let peak = q.iter().copied().fold(0.0, f64::max);
        println!("4 BDP, after 5 s: {cca} queue peak {peak:.0} mean {:.1} packets", mean(&q));
        (peak, mean(&q))
    };
    let (yeah, reno) = (queue_after("yeah"), queue_after("reno"));
    assert!(yeah.1 <= 0.85 * reno.1, "mean queue: yeah {:.1}, reno {:.1} packets", yeah.1, reno.1);
    assert!(yeah.0 < reno.0, "queue peak: yeah {:.0}, reno {:.0} packets", yeah.0, reno.0);
}

/// Illinois beside one Cubic flow (20 Mbit/s, 40 ms, 2 BDP, 20 s: the algorithms family's
/// cell) keeps the split the slow-start race left it: at high delay Illinois adds 0.3
/// segments a round and cuts by half, so neither flow catches up within the run. Started
/// together, the two exit slow start at about the same window (Illinois 67, Cubic 71)
/// and Cubic ends ahead (Illinois 7.5 of 19.2 Mbit/s). On the guest Cubic's HyStart left
/// slow start at 32 segments while Illinois grew to 132, and Illinois ended ahead (11.4,
/// three runs of 10.0 to 13.7): with Cubic leaving slow start at 32 here too
/// (`initial_ssthresh = 32`, HyStart off) the simulator gives the guest's split, as it
/// does with Cubic starting 20 ms after Illinois. Checked: Illinois under 45% of the
/// goodput in the first case (measured 39%), over 55% in the other two (61%, 59%).
#[test]
fn illinois_beside_cubic_keeps_the_split_the_slow_start_race_left() {
    let share = |cubic: FlowConfig| {
        let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(2.0), vec![flow("illinois"), cubic]);
        s.duration_ns = SECS * SEC;
        s.tcp.hz = 250; // the guest's CONFIG_HZ, as the cell runs
        let out = run_ok(&s);
        let (a, b) = (out.summary.flows[0].goodput_bps, out.summary.flows[1].goodput_bps);
        a / (a + b)
    };
    let together = share(flow("cubic"));
    let mut early_exit = flow("cubic");
    early_exit.params = [("hystart".to_string(), 0.0), ("initial_ssthresh".to_string(), 32.0)].into();
    let exits_at_32 = share(early_exit);
    let mut later = flow("cubic");
    later.start_ns = 20 * MS;
    let starts_later = share(later);
    println!(
        "illinois share: together {together:.3}, cubic out at 32 {exits_at_32:.3}, cubic 20 ms later {starts_later:.3}"
    );
    assert!(together < 0.45, "{together}");
    assert!(exits_at_32 > 0.55 && starts_later > 0.55, "{exits_at_32} {starts_later}");
}
