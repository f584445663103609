//! Scenario resolution under arbitrary input: JSON-shaped scenarios built from extreme
//! and ordinary values either give a `ConfigError` or run to the end without a panic,
//! and what runs gives a summary without NaN whose flows delivered no more than they
//! sent. Runs whose estimate is beyond the test's budget are only resolved.
//! `cargo test --release -p ccbench-sim --test input_fuzz`; `PROPTEST_CASES=10000` for a
//! longer search.

use ccbench_sim::{run, Scenario};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Map, Value};

/// Values around every boundary a field's type or the simulator's checks have.
fn int(edges: &'static [u64]) -> impl Strategy<Value = Value> {
    prop_oneof![8 => prop::sample::select(edges).prop_map(Value::from), 1 => any::<u64>().prop_map(Value::from)]
}

/// Mostly an ordinary value, sometimes an edge: most cases then pass resolution and run.
fn usual(ordinary: &'static [u64], edges: &'static [u64]) -> impl Strategy<Value = Value> {
    prop_oneof![10 => prop::sample::select(ordinary).prop_map(Value::from), 1 => int(edges)]
}

fn small_u32() -> impl Strategy<Value = Value> {
    prop::sample::select(&[0u64, 1, 2, 10, 31, 32, 63, 64, 1000, 65_535, 65_536, u32::MAX as u64][..])
        .prop_map(Value::from)
}

const NS: &[u64] = &[
    0,
    1,
    999,
    1_000,
    1_000_000,
    5_000_000,
    40_000_000,
    100_000_000,
    1_000_000_000,
    120_000_000_000,
    536_000_000_000,
    1 << 62,
    u64::MAX,
];
const SHORT_NS: &[u64] = &[0, 1, 1_000, 1_000_000, 20_000_000, 50_000_000];
const RATES: &[u64] = &[
    0,
    1,
    1_000,
    1_000_000,
    10_000_000,
    100_000_000,
    10_000_000_000,
    10_000_000_000_000,
    10_000_000_000_001,
    u64::MAX,
];
const BYTES: &[u64] = &[0, 1, 63, 64, 1448, 65_535, 6 << 20, 1 << 30, 1 << 40, u64::MAX];

fn float() -> impl Strategy<Value = Value> {
    prop::sample::select(&[-1.0, 0.0, 1e-9, 0.01, 0.5, 0.999, 1.0, 2.0, 1e6, 1e300][..]).prop_map(Value::from)
}

/// Some of `fields`, each drawn from its strategy; a field left out takes its default.
fn table(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> impl Strategy<Value = Value> {
    fields
        .into_iter()
        .map(|(name, s)| prop::option::weighted(0.12, s).prop_map(move |v| (name, v)))
        .collect::<Vec<_>>()
        .prop_map(|pairs| {
            Value::Object(pairs.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_string(), v))).collect::<Map<_, _>>())
        })
}

fn buffer() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => prop::sample::select(&[0.5, 1.0, 2.0][..]).prop_map(|v| json!({ "bdp": v })),
        1 => int(BYTES).prop_map(|v| json!({ "bytes": v })),
        1 => int(&[0, 1, 100, 1000, u32::MAX as u64, u64::MAX]).prop_map(|v| json!({ "packets": v })),
        1 => float().prop_map(|v| json!({ "bdp": v })),
    ]
    .boxed()
}

fn trace() -> BoxedStrategy<Value> {
    let ordinary = prop::collection::vec(1u64..30, 1..40).prop_map(|mut v| {
        v.sort_unstable();
        json!({ "opportunities_ms": v })
    });
    let edges = prop::collection::vec(
        prop::sample::select(&[0u64, 1, 2, 5, 10, 1000, 10_000_000_000, 10_000_000_001, u64::MAX][..]),
        0..6,
    )
    .prop_map(|mut v| {
        v.sort_unstable();
        json!({ "opportunities_ms": v })
    });
    prop_oneof![2 => ordinary, 1 => edges].boxed()
}

fn aqm() -> BoxedStrategy<Value> {
    let codel = table(vec![
        ("target_ns", int(NS).boxed()),
        ("interval_ns", int(NS).boxed()),
        ("limit_packets", small_u32().boxed()),
        ("ecn", any::<bool>().prop_map(Value::from).boxed()),
        ("mtu_bytes", small_u32().boxed()),
    ]);
    let fq = table(vec![
        ("target_ns", int(NS).boxed()),
        ("limit_packets", small_u32().boxed()),
        ("quantum_bytes", small_u32().boxed()),
        ("flows", small_u32().boxed()),
        ("memory_limit_bytes", int(BYTES).boxed()),
        ("drop_batch", small_u32().boxed()),
    ]);
    prop_oneof![
        Just(json!("drop_tail")),
        codel.prop_map(|c| json!({ "codel": c })),
        fq.prop_map(|c| json!({ "fq_codel": c }))
    ]
    .boxed()
}

fn steps(key: &'static str, values: &'static [u64]) -> BoxedStrategy<Value> {
    prop::collection::vec((int(SHORT_NS), int(values)), 0..3)
        .prop_map(move |v| Value::Array(v.into_iter().map(|(at, x)| json!({ "at_ns": at, key: x })).collect()))
        .boxed()
}

fn link() -> impl Strategy<Value = Value> {
    (
        table(vec![
            ("loss", float().boxed()),
            ("nic_rate_bps", int(RATES).boxed()),
            ("ecn_threshold", buffer()),
            ("trace", trace()),
            ("ack_trace", trace()),
            ("reverse_buffer", buffer()),
            ("rate_schedule", steps("rate_bps", RATES)),
            ("rtt_schedule", steps("rtt_ns", NS)),
            ("aqm", aqm()),
        ]),
        usual(&[1_000_000, 10_000_000, 100_000_000], RATES),
        usual(&[1_000_000, 10_000_000, 40_000_000], NS),
        buffer(),
        prop::option::weighted(
            0.1,
            (float(), float()).prop_map(|(p, r)| json!({ "gilbert_elliott": { "p": p, "r": r } })),
        ),
    )
        .prop_map(|(mut t, rate, rtt, buffer, ge)| {
            let m = t.as_object_mut().unwrap();
            m.insert("rate_bps".into(), rate);
            m.insert("rtt_ns".into(), rtt);
            m.insert("buffer".into(), buffer);
            if let Some(ge) = ge {
                m.insert("loss_model".into(), ge);
            }
            t
        })
}

fn flow() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(
            &["reno", "cubic", "bbr", "bbr2", "bbr3", "cubic", "reno", "bbr", "cubic", "bbr3", "reno", "nope"][..],
        ),
        table(vec![
            ("start_ns", int(SHORT_NS).boxed()),
            ("access_delay_ns", int(NS).boxed()),
            ("size_bytes", int(BYTES).boxed()),
            ("pacing", any::<bool>().prop_map(Value::from).boxed()),
            ("rwnd_bytes", int(BYTES).boxed()),
            ("rwnd_autotune", any::<bool>().prop_map(Value::from).boxed()),
            ("ecn", prop::sample::select(&["off", "classic", "low"][..]).prop_map(Value::from).boxed()),
            ("pacing_stride", small_u32().boxed()),
            ("fixed_cwnd", small_u32().boxed()),
            ("fixed_pacing_rate_bps", int(RATES).boxed()),
            ("freeze_cc", any::<bool>().prop_map(Value::from).boxed()),
            ("repeat", small_u32().boxed()),
            ("pause_ns", int(NS).boxed()),
        ]),
    )
        .prop_map(|(cca, mut t)| {
            t.as_object_mut().unwrap().insert("cca".into(), json!(cca));
            t
        })
}

fn tcp() -> impl Strategy<Value = Value> {
    table(vec![
        ("mss", small_u32().boxed()),
        ("init_cwnd", small_u32().boxed()),
        (
            "hz",
            prop::sample::select(&[0u64, 1, 100, 250, 300, 1000, 1024, 1_000_000, 2_000_000, u32::MAX as u64][..])
                .prop_map(Value::from)
                .boxed(),
        ),
        ("rto_min_ns", int(NS).boxed()),
        ("rto_init_ns", int(NS).boxed()),
        ("tsq_limit_bytes", int(BYTES).boxed()),
        ("pacing_shift", small_u32().boxed()),
        ("delack_min_ns", int(NS).boxed()),
        ("tso_rtt_log", small_u32().boxed()),
        ("frto", small_u32().boxed()),
        ("sack", any::<bool>().prop_map(Value::from).boxed()),
    ])
}

fn host() -> impl Strategy<Value = Value> {
    let cpu = prop_oneof![
        Just(json!("always")),
        (int(NS), int(NS), int(NS), int(NS)).prop_map(|(r, d, p, t)| json!({
            "deadline": { "runtime_ns": r, "deadline_ns": d, "period_ns": p, "tick_ns": t }
        })),
        prop::collection::vec(int(NS), 0..5).prop_map(|v| json!({ "trace": { "intervals_ns": v } })),
    ];
    let cost = table(vec![
        ("per_ack_ns", int(NS).boxed()),
        ("per_burst_ns", int(NS).boxed()),
        ("per_packet_ns", int(NS).boxed()),
        ("per_byte_ps", int(NS).boxed()),
        ("per_wakeup_ns", int(NS).boxed()),
        ("per_timer_ns", int(NS).boxed()),
        ("per_resume_ns", int(NS).boxed()),
        ("per_idle_exit_ns", int(NS).boxed()),
    ]);
    (cpu, cost, small_u32()).prop_map(|(cpu, cost, rx)| json!({ "cpu": cpu, "cost": cost, "rx_ring": rx }))
}

fn scenario() -> impl Strategy<Value = Value> {
    (
        any::<u64>(),
        prop_oneof![8 => prop::sample::select(&[20_000_000u64, 50_000_000, 100_000_000][..]).prop_map(Value::from), 1 => int(SHORT_NS), 1 => int(NS)],
        usual(&[1_000_000, 10_000_000, 100_000_000], &[0, 1, 999_999, 1_000_000]),
        link(),
        prop_oneof![1 => Just(vec![]), 12 => prop::collection::vec(flow(), 1..4)],
        prop::option::weighted(0.6, tcp()),
        prop::option::weighted(0.3, host()),
    )
        .prop_map(|(seed, duration, interval, link, flows, tcp, host)| {
            let mut s = json!({ "seed": seed, "duration_ns": duration, "sample_interval_ns": interval, "link": link, "flows": flows });
            if let Some(t) = tcp {
                s["tcp"] = t;
            }
            if let Some(h) = host {
                s["host"] = h;
            }
            s
        })
}

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// Runs the suite can afford: a few hundred thousand packets and time-series rows.
fn affordable(s: &Scenario) -> bool {
    let e = s.estimate();
    e.packets < 200_000.0 && e.series_rows < 100_000.0 && e.wall_seconds < 0.2
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_scenario_is_refused_or_runs(v in scenario()) {
        let json = v.to_string();
        let resolved = std::panic::catch_unwind(|| Scenario::from_json(&json));
        let s = match resolved {
            Err(_) => return Err(TestCaseError::fail(format!("resolution panicked\nscenario: {json}"))),
            Ok(Err(e)) => {
                if std::env::var_os("INPUT_FUZZ_VERBOSE").is_some() {
                    eprintln!("refused: {}", e.field);
                }
                prop_assert!(!e.field.is_empty() && !e.message.is_empty());
                return Ok(());
            }
            Ok(Ok(s)) => s,
        };
        if !affordable(&s) {
            if std::env::var_os("INPUT_FUZZ_VERBOSE").is_some() {
                eprintln!("too large: {json}");
            }
            return Ok(());
        }
        if std::env::var_os("INPUT_FUZZ_VERBOSE").is_some() {
            eprintln!("runs: {json}");
        }
        let out = std::panic::catch_unwind(|| run(&s))
            .map_err(|_| TestCaseError::fail(format!("the run panicked\nscenario: {json}")))?
            .map_err(|e| TestCaseError::fail(format!("validated, then refused: {e}\nscenario: {json}")))?;
        for f in &out.summary.flows {
            prop_assert!(f.goodput_bps.is_finite() && f.goodput_bps >= 0.0, "goodput {} ({json})", f.goodput_bps);
            prop_assert!(Some(f.delivered_bytes) <= f.sent_bytes, "delivered {} > sent {:?} ({json})", f.delivered_bytes, f.sent_bytes);
        }
        let l = &out.summary.link;
        prop_assert!(l.queue_delay_ms.mean >= 0.0 && l.queue_delay_ms.mean.is_finite(), "queue delay {} ({json})", l.queue_delay_ms.mean);
    }
}

/// The issue's example: HZ = 2,000,000 makes a jiffy half a microsecond, and
/// `usecs_to_jiffies` divided by zero.
#[test]
fn a_tick_rate_beyond_a_microsecond_jiffy_is_refused() {
    let mut s: Scenario = Scenario::from_json(
        r#"{"seed":1,"duration_ns":1000000000,"link":{"rate_bps":10000000,"rtt_ns":40000000,"buffer":{"bdp":1.0}},"flows":[{"cca":"cubic"}]}"#,
    )
    .unwrap();
    s.tcp.hz = 2_000_000;
    assert_eq!(s.validate().unwrap_err().field, "tcp.hz");
    for hz in [100, 250, 1000, 1_000_000] {
        s.tcp.hz = hz;
        assert!(s.validate().is_ok(), "hz {hz}");
        assert!(run(&s).is_ok());
    }
}

#[test]
fn durations_end_at_two_to_the_31_jiffies() {
    let mut s: Scenario = Scenario::from_json(
        r#"{"seed":1,"duration_ns":1000000000,"link":{"rate_bps":10000000,"rtt_ns":40000000,"buffer":{"bdp":1.0}},"flows":[{"cca":"cubic"}]}"#,
    )
    .unwrap();
    s.duration_ns = ccbench_sim::config::limits::max_duration_ns(1000);
    assert!(s.validate().is_ok());
    s.duration_ns += 1;
    assert_eq!(s.validate().unwrap_err().field, "duration");
}

/// 100 Gbit/s for an hour, a hundred flows with gigabyte windows: tens of billions of
/// packets, hours of simulation.
#[test]
fn the_estimate_of_a_huge_run() {
    let flows: Vec<String> = (0..100).map(|_| r#"{"cca":"cubic","rwnd_bytes":1000000000}"#.to_string()).collect();
    let s = Scenario::from_json(&format!(
        r#"{{"seed":1,"duration_ns":3600000000000,"link":{{"rate_bps":100000000000,"rtt_ns":40000000,"buffer":{{"bdp":1.0}}}},"flows":[{}]}}"#,
        flows.join(",")
    ))
    .unwrap();
    let e = s.estimate();
    assert!(e.packets > 2e10 && e.packets < 4e10, "{e:?}");
    assert!(e.wall_seconds > 3600.0, "{e:?}");
    assert_eq!(e.series_rows, 36_001.0 * 101.0);
}
