//! Scenario builders and time-series helpers shared by the integration tests.

// Each test binary compiles this module and uses only some of its helpers.
#![allow(dead_code)]

use ccbench_sim::config::{BufferLimit, FlowConfig, LinkConfig, TcpConfig};
use ccbench_sim::observe::series::{Table, Values};
use ccbench_sim::{RunOutput, Scenario};

pub const MS: u64 = 1_000_000;
pub const SEC: u64 = 1_000_000_000;
pub const MBIT: u64 = 1_000_000;

/// Default MSS and the wire size of a full data segment (IPv4 + TCP + timestamps).
pub const MSS: u64 = 1448;
pub const WIRE: u64 = 1500;

/// A bulk flow of `cca` starting at time zero, with Linux's default receive window.
pub fn flow(cca: &str) -> FlowConfig {
    FlowConfig::bulk(cca)
}

/// The dumbbell: `flows` share one bottleneck of `rate_bps` and base RTT `rtt_ns`.
/// Seed 1, 10 s, time series every 100 ms, no random loss; tests adjust the rest.
pub fn dumbbell(rate_bps: u64, rtt_ns: u64, buffer: BufferLimit, flows: Vec<FlowConfig>) -> Scenario {
    Scenario {
        seed: 1,
        duration_ns: 10 * SEC,
        sample_interval_ns: 100 * MS,
        link: LinkConfig::new(rate_bps, rtt_ns, buffer),
        flows,
        tcp: TcpConfig::default(),
        host: None,
        udp: Vec::new(),
        arrivals: Vec::new(),
    }
}

/// Payload rate of a link fully busy with full-sized segments: 1448/1500 of the rate.
pub fn payload_share_bps(rate_bps: u64) -> f64 {
    rate_bps as f64 * MSS as f64 / WIRE as f64
}

/// Jain's fairness index: (sum x)^2 / (n sum x^2).
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    s * s / (xs.len() as f64 * s2)
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// A column of a time-series table as f64, whatever its stored type.
pub fn column(t: &Table, name: &str) -> Vec<f64> {
    match t.column(name).unwrap_or_else(|| panic!("no column {name}")) {
        Values::F64(v) => v.clone(),
        Values::U32(v) => v.iter().map(|&x| x as f64).collect(),
        Values::Str(_) => panic!("column {name} holds text"),
    }
}

/// (time_s, value) samples of the bottleneck's column `name`.
pub fn link_series(out: &RunOutput, name: &str) -> Vec<(f64, f64)> {
    let t = &out.series.link;
    column(t, "time_s").into_iter().zip(column(t, name)).collect()
}

/// (time_s, value) samples of flow `id`'s column `name`.
pub fn flow_series(out: &RunOutput, id: u32, name: &str) -> Vec<(f64, f64)> {
    let t = &out.series.flows;
    let time = column(t, "time_s");
    let flow = column(t, "flow");
    let v = column(t, name);
    (0..time.len()).filter(|&i| flow[i] as u32 == id).map(|i| (time[i], v[i])).collect()
}

/// Means over consecutive, non-overlapping groups of `n` samples (an incomplete
/// last group is dropped).
pub fn block_means(samples: &[(f64, f64)], n: usize) -> Vec<(f64, f64)> {
    samples.chunks_exact(n).map(|c| (c[n - 1].0, c.iter().map(|s| s.1).sum::<f64>() / n as f64)).collect()
}

/// Means over every window of `n` consecutive samples (sliding by one sample).
pub fn sliding_means(samples: &[(f64, f64)], n: usize) -> Vec<(f64, f64)> {
    samples.windows(n).map(|w| (w[n - 1].0, w.iter().map(|s| s.1).sum::<f64>() / n as f64)).collect()
}
