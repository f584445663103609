//! Cellular paths at the bottleneck: delivery-opportunity traces (both directions),
//! rate and RTT schedules, Gilbert-Elliott loss, and CoDel / FQ-CoDel, on the whole
//! simulator. Run in release: `cargo test --release -p ccbench-sim --test link_models`.

mod common;

use ccbench_sim::config::{
    Aqm, BufferLimit, CodelConfig, Ecn, FqCodelConfig, LinkConfig, LossModelConfig, RateStep, RttStep, TraceConfig,
};
use ccbench_sim::net::Packet;
use ccbench_sim::time::Time;
use ccbench_sim::{run, run_audited, RunOutput, Scenario};
use common::*;

fn run_ok(s: &Scenario) -> RunOutput {
    run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"))
}

/// The millisecond timestamps of a trace shipped in `traces/`.
fn trace_file(name: &str) -> Vec<u64> {
    let path = format!("{}/../../traces/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(|l| l.trim().parse().unwrap_or_else(|_| panic!("{path}: bad line {l:?}"))).collect()
}

/// A trace's mean capacity from its definition: 1500 bytes per line over its last
/// timestamp.
fn mean_of(ms: &[u64]) -> f64 {
    ms.len() as f64 * 1500.0 * 8.0 / (*ms.last().unwrap() as f64 / 1000.0)
}

/// Wire bit/s the bottleneck forwarded (every data packet is 1500 bytes).
fn used_bps(out: &RunOutput) -> f64 {
    out.summary.link.packets_forwarded as f64 * WIRE as f64 * 8.0 / out.summary.duration_s
}

/// One flow over a trace, 40 ms base RTT, a 375 KB drop-tail buffer (250 packets).
fn on_trace(ms: Vec<u64>, cca: &str, secs_ns: u64) -> Scenario {
    let buffer = BufferLimit::Bytes(375_000);
    let mut s = dumbbell(1, 40 * MS, buffer, vec![flow(cca)]);
    s.link = LinkConfig::with_trace(ms, 40 * MS, buffer);
    s.duration_ns = secs_ns;
    s
}

const LTE_TRACES: [&str; 4] =
    ["ATT-LTE-driving-2016.down", "ATT-LTE-driving-2016.up", "TMobile-LTE-short.down", "TMobile-LTE-short.up"];

#[test]
fn saturating_flows_use_each_lte_traces_capacity() {
    // One full period of each trace. Cubic keeps the 250-packet buffer busy through the
    // trace's swings and uses its capacity within 5%. BBR paces at its windowed-max
    // bandwidth and lets the queue run dry when capacity surges past it (and in
    // PROBE_RTT), so it leaves 3 to 8% of these traces unused.
    for name in LTE_TRACES {
        let ms = trace_file(name);
        let period_ns = *ms.last().unwrap() * MS;
        let mean = mean_of(&ms);
        for (cca, tolerance) in [("cubic", 0.05), ("bbr", 0.10), ("bbr3", 0.15)] {
            let out = run_ok(&on_trace(ms.clone(), cca, period_ns));
            let used = used_bps(&out);
            let ratio = used / mean;
            println!("{name} {cca}: used {:.3} Mbit/s of {:.3} ({ratio:.4})", used / 1e6, mean / 1e6);
            assert!((ratio - 1.0).abs() < tolerance, "{name} {cca}: used {used:.0} bit/s, trace mean {mean:.0}");
            assert!(ratio <= 1.0 + 1e-9, "{name} {cca}: more than the trace offers");
            assert!(out.summary.flows[0].delivered_bytes > 0);
            // rate_bps reports what the run was offered: one period is the trace's mean.
            let rate = out.summary.link.rate_bps as f64;
            assert!((rate / mean - 1.0).abs() < 1e-3, "{name}: rate_bps {rate} vs {mean}");
            assert_eq!(out.summary.link.trace_mean_bps, Some(mean as u64));
        }
    }
}

#[test]
fn a_trace_of_one_line_one_is_a_twelve_megabit_link() {
    let mut constant = dumbbell(12 * MBIT, 40 * MS, BufferLimit::Bdp(2.0), vec![flow("cubic")]);
    constant.duration_ns = 20 * SEC;
    let mut traced = constant.clone();
    traced.link = LinkConfig::with_trace(vec![1], 40 * MS, BufferLimit::Bdp(2.0));
    assert_eq!(traced.bdp_bytes(), constant.bdp_bytes());
    let (a, b) = (run_ok(&constant), run_ok(&traced));
    let (ga, gb) = (a.summary.flows[0].goodput_bps, b.summary.flows[0].goodput_bps);
    assert!((gb / ga - 1.0).abs() < 0.02, "constant {ga:.0} vs trace {gb:.0}");
    // The time series reports the offered capacity: 12 Mbit/s in every full interval.
    // (The first interval misses the opportunity at 0 ms: the trace's first is at 1 ms.)
    for (t, c) in link_series(&b, "capacity_bps").into_iter().skip(1) {
        assert!((c - 12e6).abs() < 1.0, "capacity {c} at {t}");
    }
}

#[test]
fn capacity_series_follows_the_trace_and_utilisation_is_of_what_was_offered() {
    let ms = trace_file("TMobile-LTE-short.down");
    let out = run_ok(&on_trace(ms.clone(), "cubic", 30 * SEC));
    let cap = link_series(&out, "capacity_bps");
    let util = link_series(&out, "utilization");
    let thr = link_series(&out, "throughput_bps");
    // Each 100 ms interval's capacity: the opportunities in [t - 0.1 s, t).
    for (k, &(t, c)) in cap.iter().enumerate().take(300) {
        let (lo, hi) = ((t * 1000.0).round() as u64 - 100, (t * 1000.0).round() as u64);
        let n = ms.iter().filter(|&&m| m >= lo && m < hi).count() as f64;
        assert!((c - n * 12_000.0 / 0.1).abs() < 1e-6, "interval ending {t}: {c} vs {n} opportunities");
        if c > 0.0 {
            assert!((util[k].1 - thr[k].1 / c).abs() < 1e-9);
        } else {
            assert!(util[k].1.is_nan());
        }
    }
}

#[test]
fn ack_trace_queues_acks_behind_its_opportunities() {
    // Data at 50 Mbit/s; ACKs only every 10 ms (1.2 Mbit/s of opportunities), which is
    // more than the ~1 Mbit/s of ACKs, so ACKs wait (up to 10 ms) but are not starved.
    let mut s = dumbbell(50 * MBIT, 40 * MS, BufferLimit::Bdp(1.0), vec![flow("cubic")]);
    s.duration_ns = 10 * SEC;
    s.link.ack_trace = Some(TraceConfig { opportunities_ms: vec![10] });
    let out = run_ok(&s);
    let ack = out.summary.link.ack_link.as_ref().expect("ack link summary");
    assert_eq!(ack.trace_mean_bps, 1_200_000);
    // Several ACKs share each opportunity's 1500 bytes.
    let opportunities = 1000;
    assert!(ack.packets_forwarded > 3 * opportunities, "{} ACKs", ack.packets_forwarded);
    // ACKs arrive at random phases of the 10 ms cycle: about 5 ms of wait on average
    // (longer only when a burst of SACK-laden ACKs needs more than one opportunity).
    let wait = ack.queue_delay_ms.mean;
    assert!((3.0..=10.0).contains(&wait), "mean ACK wait {wait} ms");
    assert!(ack.queue_delay_ms.p50 <= 10.0, "{}", ack.queue_delay_ms.p50);
    let f = &out.summary.flows[0];
    assert!(f.rtt_ms.min >= 40.0, "{}", f.rtt_ms.min);
    assert!(f.goodput_bps > 0.85 * payload_share_bps(50 * MBIT), "{}", f.goodput_bps);
}

#[test]
fn without_an_ack_trace_the_reverse_path_is_a_delay_line() {
    let s = dumbbell(50 * MBIT, 40 * MS, BufferLimit::Bdp(1.0), vec![flow("cubic")]);
    assert!(run_ok(&s).summary.link.ack_link.is_none());
}

#[test]
fn throughput_follows_rate_steps() {
    for cca in ["cubic", "bbr"] {
        let mut s = dumbbell(10 * MBIT, 40 * MS, BufferLimit::Bytes(500_000), vec![flow(cca)]);
        s.duration_ns = 30 * SEC;
        s.link.rate_schedule =
            vec![RateStep { at_ns: 10 * SEC, rate_bps: 40 * MBIT }, RateStep { at_ns: 20 * SEC, rate_bps: 5 * MBIT }];
        let out = run_ok(&s);
        let thr = flow_series(&out, 0, "throughput_bps");
        let cap = link_series(&out, "capacity_bps");
        for (from, to, rate) in [(3.0, 10.0, 10e6), (13.0, 20.0, 40e6), (23.0, 30.0, 5e6)] {
            let inside = |t: f64| t > from + 1e-9 && t <= to + 1e-9;
            let c: Vec<f64> = cap.iter().filter(|s| inside(s.0)).map(|s| s.1).collect();
            assert!(c.iter().all(|&c| (c - rate).abs() < 1.0), "{cca}: capacity {c:?} for {rate}");
            let t = mean(&thr.iter().filter(|s| inside(s.0)).map(|s| s.1).collect::<Vec<_>>());
            let payload = rate * MSS as f64 / WIRE as f64;
            println!("{cca} {from}-{to} s: {:.2} of {:.2} Mbit/s", t / 1e6, payload / 1e6);
            assert!(t <= payload * 1.001 && t >= 0.9 * payload, "{cca} {from}-{to} s: {t:.0} vs {payload:.0}");
        }
        // The summary's rate is the run's mean capacity: (10 + 40 + 5) / 3 Mbit/s.
        assert_eq!(out.summary.link.rate_bps, 55 * MBIT / 3);
    }
}

#[test]
fn rtt_steps_change_the_path_delay() {
    let mut s = dumbbell(20 * MBIT, 40 * MS, BufferLimit::Bdp(1.0), vec![flow("bbr")]);
    s.duration_ns = 30 * SEC;
    s.link.rtt_schedule =
        vec![RttStep { at_ns: 10 * SEC, rtt_ns: 100 * MS }, RttStep { at_ns: 20 * SEC, rtt_ns: 20 * MS }];
    let out = run_ok(&s);
    let srtt = flow_series(&out, 0, "srtt_ms");
    let window = |a: f64, b: f64| srtt.iter().filter(|s| s.0 > a && s.0 <= b).map(|s| s.1).collect::<Vec<_>>();
    assert!(window(5.0, 10.0).iter().all(|&r| (40.0..100.0).contains(&r)), "{:?}", window(5.0, 10.0));
    assert!(window(11.0, 20.0).iter().all(|&r| r >= 100.0), "{:?}", window(11.0, 20.0));
    // After the RTT falls, BBR's estimate follows within a few round trips.
    assert!(window(22.0, 30.0).iter().all(|&r| (20.0..60.0).contains(&r)), "{:?}", window(22.0, 30.0));
}

fn gilbert(p: f64, r: f64) -> LossModelConfig {
    LossModelConfig::GilbertElliott { p, r, h: 0.0, k: 1.0 }
}

#[test]
fn gilbert_elliott_at_the_bottleneck_matches_its_closed_forms() {
    let mut s = dumbbell(100 * MBIT, 40 * MS, BufferLimit::Packets(u64::MAX / 2), vec![flow("cubic")]);
    let (p, r) = (0.002, 0.25);
    s.link.loss_model = Some(gilbert(p, r));
    s.validate().unwrap();
    // The bottleneck as the simulator builds it, fed one packet at a time.
    let mut link = ccbench_sim::config::build::forward_bottleneck(&s);
    let n = 2_000_000u64;
    let (mut lost, mut bursts, mut prev) = (0u64, 0u64, false);
    for k in 0..n {
        link.offer(Time(k), Packet { wire_bytes: 1500, payload: 1448, ..Packet::default() });
        let l = !link.drops.is_empty();
        link.drops.clear();
        lost += l as u64;
        bursts += (l && !prev) as u64;
        prev = l;
    }
    let expected = p / (p + r);
    let rate = lost as f64 / n as f64;
    let burst = lost as f64 / bursts as f64;
    println!("loss {rate:.5} (closed form {expected:.5}), mean burst {burst:.3} (1/r = {:.3})", 1.0 / r);
    assert!((rate / expected - 1.0).abs() < 0.05, "loss {rate} vs {expected}");
    assert!((burst * r - 1.0).abs() < 0.05, "burst {burst} vs {}", 1.0 / r);
    assert_eq!(link.counters.drops_random, lost);
}

#[test]
fn gilbert_elliott_in_a_run_drops_its_mean_share() {
    // BBRv1 keeps sending at the link rate through 2% loss: ~170,000 arrivals, ~1,700
    // loss bursts, so the share of lost arrivals is within a few % of the closed form.
    let mut s = dumbbell(100 * MBIT, 40 * MS, BufferLimit::Bdp(2.0), vec![flow("bbr")]);
    s.duration_ns = 20 * SEC;
    let (p, r) = (0.01, 0.5);
    s.link.loss_model = Some(gilbert(p, r));
    let out = run_ok(&s);
    let l = &out.summary.link;
    let arrivals = (l.packets_forwarded + l.drops) as f64;
    let share = l.drops_random as f64 / arrivals;
    let expected = p / (p + r);
    assert!((share / expected - 1.0).abs() < 0.1, "random drops {share} of arrivals, closed form {expected}");
    let lm = l.loss_model.as_ref().expect("loss model summary");
    assert!((lm["mean_loss"].as_f64().unwrap() - expected).abs() < 1e-12);
    assert!((lm["mean_bad_run_packets"].as_f64().unwrap() - 1.0 / r).abs() < 1e-12);
    assert!(arrivals > 150_000.0, "{arrivals}");
}

/// The deep-buffer uplink: 4 Mbit/s, 40 ms, 1 MB of buffer (2 s at the link rate).
fn uplink(aqm: Aqm) -> Scenario {
    let mut s = dumbbell(4 * MBIT, 40 * MS, BufferLimit::Bytes(1_000_000), vec![flow("cubic")]);
    s.duration_ns = 60 * SEC;
    s.link.aqm = aqm;
    s
}

/// Mean sojourn over the second half of the run, from the queue series (ms).
fn late_queue_delay_ms(out: &RunOutput) -> f64 {
    let q: Vec<f64> = link_series(out, "queue_bytes").into_iter().filter(|s| s.0 > 30.0).map(|s| s.1).collect();
    mean(&q) * 8.0 / 4e6 * 1e3
}

#[test]
fn fq_codel_and_codel_keep_a_deep_uplink_buffer_short() {
    let droptail = run_ok(&uplink(Aqm::DropTail));
    let fq = run_ok(&uplink(Aqm::FqCodel(FqCodelConfig::default())));
    let codel = run_ok(&uplink(Aqm::Codel(CodelConfig::default())));
    for (name, out) in [("droptail", &droptail), ("fq_codel", &fq), ("codel", &codel)] {
        let l = &out.summary.link;
        println!(
            "{name}: queue delay mean {:.1} ms p50 {:.1} p95 {:.1}; late backlog {:.1} ms; srtt mean {:.1} ms; utilisation {:.3}; drops {} (aqm {:?})",
            l.queue_delay_ms.mean,
            l.queue_delay_ms.p50,
            l.queue_delay_ms.p95,
            late_queue_delay_ms(out),
            out.summary.flows[0].rtt_ms.mean,
            l.utilization,
            l.drops,
            l.drops_aqm
        );
    }
    assert!(droptail.summary.link.queue_delay_ms.mean > 1000.0, "{}", droptail.summary.link.queue_delay_ms.mean);
    for (name, out) in [("fq_codel", &fq), ("codel", &codel)] {
        let l = &out.summary.link;
        assert!(l.queue_delay_ms.p50 < 50.0, "{name}: median sojourn {}", l.queue_delay_ms.p50);
        assert!(l.queue_delay_ms.mean < 100.0, "{name}: mean sojourn {}", l.queue_delay_ms.mean);
        assert!(late_queue_delay_ms(out) < 50.0, "{name}: {}", late_queue_delay_ms(out));
        assert!(l.utilization > 0.9, "{name}: utilisation {}", l.utilization);
        assert!(l.drops_aqm.unwrap() > 0);
        // Cubic without ECN: the AQM drops; nothing overflows the deep limits.
        assert_eq!(l.drops_overflow, 0);
    }
}

#[test]
fn fq_codel_marks_ecn_capable_flows_instead_of_dropping() {
    let mut s = uplink(Aqm::FqCodel(FqCodelConfig::default()));
    s.flows[0].ecn = Ecn::Classic;
    let out = run_ok(&s);
    let l = &out.summary.link;
    assert!(l.ecn_marks > 0);
    assert_eq!(l.drops_aqm, Some(0), "ECN-capable packets are marked, not dropped");
    assert!(l.queue_delay_ms.p50 < 50.0, "{}", l.queue_delay_ms.p50);
    assert!(out.summary.flows[0].retransmits < 20, "{}", out.summary.flows[0].retransmits);
}

#[test]
fn fq_codel_isolates_a_light_flow_from_a_bulk_flow() {
    // A bulk Cubic flow fills the uplink; a 200 KB transfer starting later finishes
    // fast under FQ-CoDel, and waits behind seconds of queue under drop-tail.
    let with = |aqm: Aqm| {
        let mut s = uplink(aqm);
        s.duration_ns = 40 * SEC;
        s.flows.push(ccbench_sim::config::FlowConfig {
            start_ns: 20 * SEC,
            size_bytes: Some(200_000),
            ..flow("cubic")
        });
        run_ok(&s)
    };
    let fq = with(Aqm::FqCodel(FqCodelConfig::default()));
    let dt = with(Aqm::DropTail);
    let (a, b) = (fq.summary.flows[1].completion_s.unwrap(), dt.summary.flows[1].completion_s.unwrap());
    println!("200 KB behind bulk Cubic: fq_codel {a:.2} s, drop-tail {b:.2} s");
    assert!(a < 2.0 && b > 2.0 * a, "fq_codel {a} s, drop-tail {b} s");
}

#[test]
fn link_models_are_deterministic_and_keep_the_invariants() {
    let mut s = on_trace(trace_file("TMobile-LTE-short.up"), "cubic", 20 * SEC);
    s.flows = vec![flow("cubic"), flow("bbr3"), flow("reno")];
    s.flows[1].ecn = Ecn::Classic;
    s.link.ack_trace = Some(TraceConfig { opportunities_ms: trace_file("TMobile-LTE-short.down") });
    s.link.aqm = Aqm::FqCodel(FqCodelConfig::default());
    s.link.loss_model = Some(gilbert(0.001, 0.4));
    s.link.rtt_schedule = vec![RttStep { at_ns: 8 * SEC, rtt_ns: 80 * MS }];
    let a = run_audited(&s, 997).unwrap_or_else(|e| panic!("invariant: {e}"));
    let b = run_ok(&s);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
    assert!(b.summary.flows.iter().all(|f| f.delivered_bytes > 0));
}

#[test]
fn invalid_link_models_are_refused_with_their_field() {
    let base = dumbbell(10 * MBIT, 40 * MS, BufferLimit::Bdp(1.0), vec![flow("cubic")]);
    let field = |f: &dyn Fn(&mut Scenario)| {
        let mut s = base.clone();
        f(&mut s);
        s.validate().unwrap_err().field
    };
    assert_eq!(field(&|s| s.link.trace = Some(TraceConfig { opportunities_ms: vec![0, 0] })), "link.trace");
    assert_eq!(field(&|s| s.link.ack_trace = Some(TraceConfig { opportunities_ms: vec![3, 2] })), "link.ack_trace");
    assert_eq!(
        field(&|s| s.link.rate_schedule = vec![RateStep { at_ns: 0, rate_bps: MBIT }]),
        "link.rate_schedule[0].at"
    );
    assert_eq!(field(&|s| s.link.rtt_schedule = vec![RttStep { at_ns: SEC, rtt_ns: 0 }]), "link.rtt_schedule[0].rtt");
    assert_eq!(
        field(&|s| {
            s.link.loss = 0.01;
            s.link.loss_model = Some(gilbert(0.1, 0.1));
        }),
        "link.loss_model"
    );
    assert_eq!(field(&|s| s.link.loss_model = Some(gilbert(0.0, 0.1))), "link.loss_model.p");
    assert_eq!(
        field(&|s| s.link.aqm = Aqm::FqCodel(FqCodelConfig { quantum_bytes: 10, ..FqCodelConfig::default() })),
        "link.aqm_params.quantum"
    );
}

#[test]
fn a_reverse_buffer_drops_the_acks_that_find_it_full() {
    // The ACK link of `ack_trace_queues_acks_behind_its_opportunities`: about 20 ACKs
    // arrive between two opportunities 10 ms apart. Behind 8 ACKs of room the rest of
    // them are dropped; what is queued leaves at the next opportunity (8 ACKs fit its
    // 1500 bytes), so none waits longer than one gap.
    let mut s = dumbbell(50 * MBIT, 40 * MS, BufferLimit::Bdp(1.0), vec![flow("cubic")]);
    s.duration_ns = 10 * SEC;
    s.link.ack_trace = Some(TraceConfig { opportunities_ms: vec![10] });
    let unlimited = run_ok(&s);
    s.link.reverse_buffer = Some(BufferLimit::Packets(8));
    let out = run_ok(&s);
    let ack = out.summary.link.ack_link.as_ref().expect("ack link summary");
    let drops = ack.drops.expect("a limited queue reports its drops");
    assert!(drops > ack.packets_forwarded / 2, "{drops} dropped, {} forwarded", ack.packets_forwarded);
    assert!(ack.packets_forwarded <= 8 * 1000, "{}", ack.packets_forwarded);
    assert!(ack.queue_delay_ms.max <= 10.0, "{}", ack.queue_delay_ms.max);
    // Cumulative ACKs: the flow goes on, at most as fast as with every ACK.
    let f = &out.summary.flows[0];
    assert!(f.goodput_bps > 0.5 * payload_share_bps(50 * MBIT), "{}", f.goodput_bps);
    assert!(unlimited.summary.link.ack_link.as_ref().unwrap().drops.is_none());
    // A limit the queue never reaches changes nothing but the count it reports.
    s.link.reverse_buffer = Some(BufferLimit::Bdp(1000.0));
    let roomy = run_ok(&s);
    assert_eq!(roomy.summary.link.ack_link.as_ref().unwrap().drops, Some(0));
    assert_eq!(roomy.summary.flows[0].goodput_bps, unlimited.summary.flows[0].goodput_bps);
    assert_eq!(roomy.summary.link.packets_forwarded, unlimited.summary.link.packets_forwarded);
}

#[test]
fn a_reverse_buffer_needs_an_ack_trace() {
    let mut s = dumbbell(50 * MBIT, 40 * MS, BufferLimit::Bdp(1.0), vec![flow("cubic")]);
    s.link.reverse_buffer = Some(BufferLimit::Packets(8));
    let e = s.validate().unwrap_err();
    assert_eq!(e.field, "link.reverse_buffer");
    assert!(e.message.starts_with("only with link.ack_trace"), "{}", e.message);
    s.link.ack_trace = Some(TraceConfig { opportunities_ms: vec![10] });
    s.validate().unwrap();
    s.link.reverse_buffer = Some(BufferLimit::Bdp(2e6));
    assert_eq!(s.validate().unwrap_err().field, "link.reverse_buffer");
}
