//! Property tests: random small dumbbells run with the simulator's invariant audit
//! after every event, then checked against what any run must satisfy.
//! Run in release: `cargo test --release -p ccbench-sim --test properties`.

mod common;

use ccbench_sim::config::{BufferLimit, FlowConfig};
use ccbench_sim::{run, run_audited, Scenario};
use common::*;
use proptest::prelude::*;
use proptest::test_runner::Config;

/// Log-uniform integer in [lo, hi]: small links and short RTTs are as likely as large
/// ones, which keeps the audited runs (O(window) per event) quick.
fn log_uniform(lo: u64, hi: u64) -> impl Strategy<Value = u64> {
    ((lo as f64).ln()..=(hi as f64).ln()).prop_map(move |x| (x.exp().round() as u64).clamp(lo, hi))
}

fn flow_strategy() -> impl Strategy<Value = FlowConfig> {
    (
        prop::sample::select(vec!["reno", "cubic"]),
        0..1_000u64,
        prop_oneof![Just(0u64), 0..50u64],
        prop_oneof![2 => Just(None), 1 => log_uniform(1_000, 5_000_000).prop_map(Some)],
        prop::sample::select(vec![None, Some(false), Some(true)]),
        prop_oneof![3 => Just(6 * 1024 * 1024u64), 1 => log_uniform(16 * 1024, 16 * 1024 * 1024)],
    )
        .prop_map(|(cca, start_ms, access_ms, size_bytes, pacing, rwnd_bytes)| {
            let mut f = flow(cca);
            f.start_ns = start_ms * MS;
            f.access_delay_ns = access_ms * MS;
            f.size_bytes = size_bytes;
            f.pacing = pacing;
            f.rwnd_bytes = rwnd_bytes;
            f
        })
}

fn scenario_strategy() -> impl Strategy<Value = Scenario> {
    (
        any::<u64>(),
        log_uniform(MBIT, 200 * MBIT),
        log_uniform(1, 200),
        prop_oneof![(0.1f64..10.0).prop_map(BufferLimit::Bdp), log_uniform(1, 1000).prop_map(BufferLimit::Packets),],
        prop_oneof![Just(0.0), 0.0f64..0.1],
        2_000..=5_000u64,
        prop::collection::vec(flow_strategy(), 1..=4),
        prop_oneof![3 => Just(true), 1 => Just(false)],
    )
        .prop_map(|(seed, rate, rtt_ms, buffer, loss, duration_ms, flows, sack)| {
            let mut s = dumbbell(rate, rtt_ms * MS, buffer, flows);
            s.seed = seed;
            s.link.loss = loss;
            s.tcp.sack = sack;
            s.duration_ns = duration_ms * MS;
            s
        })
}

fn config() -> Config {
    // 32 cases by default; PROPTEST_CASES=N for a longer search. No regression files
    // are written into the source tree; a failure prints the shrunk scenario instead.
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(32);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// Relative slack for float arithmetic in the summary.
const EPS: f64 = 1e-9;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_dumbbells_keep_their_invariants(s in scenario_strategy()) {
        let json = serde_json::to_string(&s).unwrap();
        let out = run_audited(&s, 1).map_err(|e| TestCaseError::fail(format!("audit failed: {e}\nscenario: {json}")))?;
        let sm = &out.summary;
        let l = &sm.link;
        let payload = payload_share_bps(s.link.rate_bps);
        let dur = sm.duration_s;
        prop_assert!(dur > 0.0 && dur <= s.duration_ns as f64 / 1e9 + EPS);
        prop_assert_eq!(sm.flows.len(), s.flows.len());

        // The bottleneck cannot send more than its rate allows.
        prop_assert!(l.utilization <= 1.0 + EPS, "utilisation {} ({})", l.utilization, json);
        // Goodput is bounded by the payload share, per flow and, in bytes, in sum (a
        // sum of goodputs over different lifetimes may exceed it legitimately).
        let mut delivered_bits = 0.0;
        for (f, c) in sm.flows.iter().zip(&s.flows) {
            prop_assert!(f.goodput_bps <= payload * (1.0 + EPS), "flow {} goodput {} > {} ({})", f.id, f.goodput_bps, payload, json);
            prop_assert!(f.goodput_bps <= f.throughput_bps * (1.0 + EPS) + EPS, "flow {} goodput {} > bottleneck throughput {}", f.id, f.goodput_bps, f.throughput_bps);
            prop_assert!(Some(f.delivered_bytes) <= f.sent_bytes, "flow {} delivered {} > sent {:?}", f.id, f.delivered_bytes, f.sent_bytes);
            delivered_bits += f.delivered_bytes as f64 * 8.0;

            prop_assert_eq!(f.base_rtt_ms, (s.link.rtt_ns + 2 * c.access_delay_ns) as f64 / 1e6);
            if f.rtt_ms.max > 0.0 {
                // Timestamp-echo RTT samples have 1 ms resolution.
                prop_assert!(f.rtt_ms.min >= f.base_rtt_ms - 1.0, "flow {} min RTT {} < base {}", f.id, f.rtt_ms.min, f.base_rtt_ms);
            }
            match c.size_bytes {
                Some(size) => {
                    prop_assert!(f.delivered_bytes <= size, "flow {} delivered {} of {}", f.id, f.delivered_bytes, size);
                    prop_assert_eq!(f.completion_s.is_some(), f.delivered_bytes == size, "flow {}", f.id);
                    if let Some(t) = f.completion_s {
                        prop_assert!(t > 0.0);
                        let expect = size as f64 * 8.0 / t;
                        prop_assert!((f.goodput_bps - expect).abs() <= 1e-9 * expect);
                        // Every dropped transmission of a complete transfer was sent again.
                        prop_assert!(f.retransmits >= f.dropped, "flow {} complete with {} drops, {} retransmits", f.id, f.dropped, f.retransmits);
                    }
                }
                None => prop_assert!(f.completion_s.is_none()),
            }
        }
        let first_start = s.flows.iter().map(|f| f.start_ns).min().unwrap() as f64 / 1e9;
        prop_assert!(delivered_bits <= payload * (dur - first_start).max(0.0) * (1.0 + EPS) + EPS, "{} bits delivered in {} s ({})", delivered_bits, dur, json);

        // Drop accounting.
        prop_assert_eq!(l.drops, l.drops_overflow + l.drops_random);
        prop_assert_eq!(sm.flows.iter().map(|f| f.dropped).sum::<u64>(), l.drops);
        if s.link.loss == 0.0 {
            prop_assert_eq!(l.drops_random, 0);
        }
        // The drop-tail limit holds.
        match s.link.buffer {
            BufferLimit::Packets(n) => prop_assert!(l.queue_packets.max <= n as f64, "queue {} packets > {}", l.queue_packets.max, n),
            _ => {
                let b = l.buffer_bytes.unwrap() as f64;
                prop_assert!(l.queue_bytes.max <= b, "queue {} bytes > {}", l.queue_bytes.max, b);
            }
        }
        prop_assert!(sm.jain_index > 0.0 && sm.jain_index <= 1.0 + EPS);

        // Determinism, and the audit only observes: an unaudited run of the same
        // scenario processes the same events.
        let again = run(&s).unwrap();
        prop_assert_eq!(again.trace_hash, out.trace_hash);
        prop_assert_eq!(serde_json::to_string(&again.summary).unwrap(), serde_json::to_string(sm).unwrap());
    }
}
