//! The resolved scenario the simulator runs: every value in base units (ns, bit/s,
//! bytes). The Python front end parses human units and hands this over as JSON.

use serde::{Deserialize, Serialize};

pub use crate::host::config::{CpuAvailability, CpuCost, HostConfig};
pub use crate::net::Ecn;
pub use crate::tcp::{FlowConfig, TcpConfig};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub seed: u64,
    pub duration_ns: u64,
    /// Time-series sampling interval; 0 disables time series.
    #[serde(default = "default_interval")]
    pub sample_interval_ns: u64,
    pub link: LinkConfig,
    pub flows: Vec<FlowConfig>,
    #[serde(default)]
    pub tcp: TcpConfig,
    /// The sender host's CPU; None (or an ideal CPU) = work runs the instant it is due.
    #[serde(default)]
    pub host: Option<HostConfig>,
}

fn default_interval() -> u64 {
    100_000_000
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Bottleneck rate in bit/s.
    pub rate_bps: u64,
    /// Base round-trip propagation delay of the bottleneck path; half each way.
    pub rtt_ns: u64,
    pub buffer: BufferLimit,
    /// Bernoulli loss probability applied to data packets arriving at the bottleneck.
    #[serde(default)]
    pub loss: f64,
    /// Rate of each sender's NIC (the access link into the bottleneck).
    #[serde(default = "default_nic_rate")]
    pub nic_rate_bps: u64,
    /// Mark ECN-capable packets CE when they arrive to a backlog at least this deep
    /// (instantaneous step marking, like fq_codel's ce_threshold or DCTCP's K).
    #[serde(default)]
    pub ecn_threshold: Option<BufferLimit>,
    /// Capacity from a delivery-opportunity trace instead of `rate_bps`. The trace's
    /// mean capacity then sizes BDP-relative buffers; `rate_bps` is not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceConfig>,
    /// A delivery-opportunity trace for the ACK direction, which is otherwise an
    /// uncongested delay line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_trace: Option<TraceConfig>,
    /// Rate steps: from each step's time on, the bottleneck serves at its rate
    /// (`rate_bps` before the first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_schedule: Vec<RateStep>,
    /// Base-RTT steps: from each step's time on, the propagation delays are those of
    /// its RTT (`rtt_ns` before the first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rtt_schedule: Vec<RttStep>,
    /// A bursty loss model for data packets arriving at the bottleneck (instead of the
    /// independent `loss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_model: Option<LossModelConfig>,
    /// Queueing discipline at the bottleneck; drop-tail uses `buffer`.
    #[serde(default, skip_serializing_if = "Aqm::is_drop_tail")]
    pub aqm: Aqm,
}

/// Mahimahi delivery opportunities: millisecond timestamps, one 1500-byte packet each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    pub opportunities_ms: Vec<u64>,
}

impl TraceConfig {
    /// The trace's mean capacity in bit/s (0 for an invalid trace).
    pub fn mean_bps(&self) -> u64 {
        match self.opportunities_ms.last() {
            Some(&last) if last > 0 => {
                let bits = self.opportunities_ms.len() as u128 * crate::net::trace::OPPORTUNITY_BYTES as u128 * 8;
                (bits * 1000 / last as u128) as u64
            }
            _ => 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at_ns: u64,
    pub rate_bps: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttStep {
    pub at_ns: u64,
    pub rtt_ns: u64,
}

/// Bursty loss. Gilbert-Elliott: Good -> Bad with probability `p` and Bad -> Good with
/// `r` per packet; a packet gets through with probability `k` in Good and `h` in Bad.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModelConfig {
    GilbertElliott {
        p: f64,
        r: f64,
        #[serde(default)]
        h: f64,
        #[serde(default = "one")]
        k: f64,
    },
}

fn one() -> f64 {
    1.0
}

impl LossModelConfig {
    pub fn params(&self) -> crate::net::loss::GilbertElliott {
        match *self {
            LossModelConfig::GilbertElliott { p, r, h, k } => crate::net::loss::GilbertElliott { p, r, h, k },
        }
    }
}

/// The bottleneck's queueing discipline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aqm {
    /// `bfifo`/`pfifo` with the link's `buffer` as limit.
    #[default]
    DropTail,
    /// `sch_codel`.
    Codel(CodelConfig),
    /// `sch_fq_codel`.
    FqCodel(FqCodelConfig),
}

impl Aqm {
    pub fn is_drop_tail(&self) -> bool {
        matches!(self, Aqm::DropTail)
    }
    pub fn name(&self) -> &'static str {
        match self {
            Aqm::DropTail => "droptail",
            Aqm::Codel(_) => "codel",
            Aqm::FqCodel(_) => "fq_codel",
        }
    }
}

/// `codel_params_init` and `codel_init` defaults: target 5 ms, interval 100 ms, limit
/// 1000 packets, ECN off; `mtu` is `psched_mtu` of an Ethernet device (1500 + 14).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodelConfig {
    pub target_ns: u64,
    pub interval_ns: u64,
    pub limit_packets: u32,
    pub ecn: bool,
    pub ce_threshold_ns: Option<u64>,
    pub mtu_bytes: u32,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            limit_packets: 1000,
            ecn: false,
            ce_threshold_ns: None,
            mtu_bytes: ETH_MTU,
        }
    }
}

/// `psched_mtu` of an Ethernet device: MTU 1500 + 14 bytes of header.
pub const ETH_MTU: u32 = 1514;

/// `fq_codel_init` defaults: limit 10240 packets, 1024 flows, quantum = `psched_mtu`,
/// memory limit 32 MB, drop batch 64, ECN on; CoDel's target and interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelConfig {
    pub target_ns: u64,
    pub interval_ns: u64,
    pub limit_packets: u32,
    pub ecn: bool,
    pub ce_threshold_ns: Option<u64>,
    pub mtu_bytes: u32,
    pub quantum_bytes: u32,
    pub flows: u32,
    pub memory_limit_bytes: u64,
    pub drop_batch: u32,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            limit_packets: 10 * 1024,
            ecn: true,
            ce_threshold_ns: None,
            mtu_bytes: ETH_MTU,
            quantum_bytes: ETH_MTU,
            flows: 1024,
            memory_limit_bytes: 32 << 20,
            drop_batch: 64,
        }
    }
}

fn default_nic_rate() -> u64 {
    10_000_000_000
}

/// Drop-tail limit of the bottleneck queue.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum BufferLimit {
    Bytes(u64),
    Packets(u64),
    /// Multiple of the bottleneck BDP (rate x base RTT), in bytes.
    Bdp(f64),
}

impl LinkConfig {
    /// A drop-tail bottleneck with no random loss and no ECN marking.
    pub fn new(rate_bps: u64, rtt_ns: u64, buffer: BufferLimit) -> LinkConfig {
        LinkConfig {
            rate_bps,
            rtt_ns,
            buffer,
            loss: 0.0,
            nic_rate_bps: default_nic_rate(),
            ecn_threshold: None,
            trace: None,
            ack_trace: None,
            rate_schedule: Vec::new(),
            rtt_schedule: Vec::new(),
            loss_model: None,
            aqm: Aqm::DropTail,
        }
    }

    /// A trace-driven bottleneck (the trace's mean stands in for the rate).
    pub fn with_trace(opportunities_ms: Vec<u64>, rtt_ns: u64, buffer: BufferLimit) -> LinkConfig {
        let trace = TraceConfig { opportunities_ms };
        LinkConfig { trace: Some(trace.clone()), ..LinkConfig::new(trace.mean_bps(), rtt_ns, buffer) }
    }

    /// The rate BDP-relative sizes refer to: the trace's mean, or `rate_bps`.
    pub fn reference_rate_bps(&self) -> u64 {
        self.trace.as_ref().map_or(self.rate_bps, |t| t.mean_bps())
    }
}

/// A scenario value outside what the simulator accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { field: field.into(), message: message.into() }
}

pub mod build;
mod estimate;
mod validate;

pub use estimate::*;
pub use validate::{fmt_bps, fmt_ns, limits};
