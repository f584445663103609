//! The run summary: the stable, documented result schema (see README "Summary schema").

mod configured;
mod measured;

pub mod arrivals;

pub use configured::ConfiguredLink;
pub use measured::{
    ConnMeasured, DownloadMeasured, FlowMeasured, LinkMeasured, Measured, Offered, PathMtuMeasured, UdpMeasured,
};

use crate::base::histogram::Histogram;
use serde::{Deserialize, Serialize};

/// The simulator's version, recorded in every summary.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Stats {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Stats {
    /// A histogram's statistics divided by `scale` (1e6 for ns -> ms, 1 for counts).
    pub fn from_histogram(h: &Histogram, scale: f64) -> Stats {
        let s = |v: u64| v as f64 / scale;
        Stats {
            min: s(h.min()),
            mean: h.mean() / scale,
            p50: s(h.quantile(0.50)),
            p95: s(h.quantile(0.95)),
            p99: s(h.quantile(0.99)),
            max: s(h.max()),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    pub id: u32,
    pub cca: String,
    /// The algorithm's full effective parameters (defaults and overrides); gains and
    /// fractions in the kernel's fixed point (/256 for BBR, /1024 for Cubic's beta).
    pub params: serde_json::Value,
    pub ecn: crate::net::Ecn,
    pub paced: bool,
    pub start_s: f64,
    /// Propagation RTT of this flow's path (bottleneck RTT plus twice the access delay).
    pub base_rtt_ms: f64,
    /// In-order payload handed to the receiving application, per second of the flow's life.
    pub goodput_bps: f64,
    /// Payload of this flow leaving the bottleneck (retransmissions included), per second.
    pub throughput_bps: f64,
    pub delivered_bytes: u64,
    pub sent_bytes: Option<u64>,
    /// Segments retransmitted (fast, RTO and probe retransmissions).
    pub retransmits: u64,
    /// Segments the sender marked lost (`tp->lost`); None where the engine cannot see it
    /// (`TCP_INFO` has only the current `lost_out`).
    pub lost: Option<u64>,
    /// Data packets of this flow dropped at the bottleneck.
    pub dropped: u64,
    pub rto_count: Option<u64>,
    /// Reductions undone as spurious (by DSACK, timestamps or F-RTO), and the RTOs among
    /// them that F-RTO detected (None where they cannot be told apart per flow).
    pub undos: Option<u64>,
    pub spurious_rtos: Option<u64>,
    /// RTT samples (newest-packet RTT of each ACK), in ms.
    pub rtt_ms: Stats,
    /// Mean RTT minus the flow's base RTT, in ms.
    pub self_inflicted_delay_ms: f64,
    /// Size of a sized flow, in bytes.
    pub size_bytes: Option<u64>,
    /// Seconds from the flow's start until the receiver had all `size_bytes`.
    pub completion_s: Option<f64>,
    pub final_cwnd: u32,
    /// Time the peer's window held back new data (`tcpi_rwnd_limited`, whole jiffies),
    /// summed over the flow's connections, in ms.
    pub rwnd_limited_ms: f64,
    /// Time a writer waited for the send buffer while nothing was left to send
    /// (`tcpi_sndbuf_limited`, whole jiffies), summed over the flow's connections, in ms.
    pub sndbuf_limited_ms: f64,
    /// Repeated downloads (`repeat` > 1): one entry per download, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub downloads: Option<Vec<DownloadSummary>>,
    /// With a path MTU (`link.mtu`): the sender's MSS and path MTU at the end, the
    /// packets dropped for their length and the ICMPs sent (flat in the flow's row).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub path_mtu: Option<PathMtuMeasured>,
}

/// One download of a flow that repeats them, each on its own connection.
#[derive(Clone, Debug, Serialize)]
pub struct DownloadSummary {
    pub index: u32,
    /// When it started, from the run's start.
    pub start_s: f64,
    /// Seconds until the receiver had every byte; None if the run ended first.
    pub completion_s: Option<f64>,
    pub delivered_bytes: u64,
    /// delivered_bytes over completion_s (or over the time it had, unfinished).
    pub throughput_bps: f64,
    pub rtt_ms: Stats,
    /// Mean RTT minus the flow's base RTT.
    pub self_inflicted_delay_ms: f64,
    pub retransmits: u64,
    /// ACKs that acknowledged nothing new while data was outstanding.
    pub dupacks: Option<u64>,
    pub rto_count: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LinkSummary {
    pub rate_bps: u64,
    pub rtt_ms: f64,
    pub buffer_bytes: Option<u64>,
    pub buffer_packets: Option<u64>,
    pub bdp_bytes: u64,
    /// Fraction of the capacity offered over the run that was used.
    pub utilization: f64,
    pub drops: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    /// Packets marked CE at the bottleneck.
    pub ecn_marks: u64,
    /// Sojourn time of packets that left the bottleneck queue, in ms.
    pub queue_delay_ms: Stats,
    /// Queue length seen by each arriving packet, in bytes.
    pub queue_bytes: Stats,
    pub queue_packets: Stats,
    pub packets_forwarded: u64,
    /// With a trace: its long-run mean capacity (`rate_bps` is the mean over the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_mean_bps: Option<u64>,
    /// With an AQM: its name and effective parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<serde_json::Value>,
    /// With an AQM: drops by CoDel at dequeue (also in `drops`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drops_aqm: Option<u64>,
    /// With a loss model: its parameters, mean loss and mean Bad-state run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_model: Option<serde_json::Value>,
    /// With an ACK trace: the ACK direction's link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_link: Option<AckLinkSummary>,
    /// With `[link.reverse]`: the reverse bottleneck's figures, as the forward's (its
    /// BDP is its own rate's; its `drops` count the up flows' data and the down flows'
    /// ACKs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse: Option<Box<LinkSummary>>,
}

/// The trace-driven link of the ACK direction.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckLinkSummary {
    pub trace_mean_bps: u64,
    /// Fraction of the opportunities' bytes that ACKs used.
    pub utilization: f64,
    pub packets_forwarded: u64,
    /// Time ACKs waited for an opportunity, in ms.
    pub queue_delay_ms: Stats,
    /// With a queue that can fill: the ACKs that found it full and were dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub engine: String,
    pub version: &'static str,
    pub seed: u64,
    pub duration_s: f64,
    /// Bytes of headers charged per data segment on the wire (IPv4 + TCP + timestamps).
    pub header_bytes: u32,
    pub flows: Vec<FlowSummary>,
    pub link: LinkSummary,
    /// Jain's fairness index of per-flow goodput.
    pub jain_index: f64,
    /// Events the simulator processed (None for a real kernel).
    pub events: Option<u64>,
    /// The sender host's CPU, when one is modelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<HostSummary>,
    /// The UDP flows, if any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub udp: Vec<UdpFlowSummary>,
    /// Each group of arrivals, if any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arrivals: Vec<arrivals::ArrivalsSummary>,
}

/// A UDP flow: what it offered and what arrived, in IP bytes over its life (from its
/// start to its stop or the run's end).
#[derive(Clone, Debug, Serialize)]
pub struct UdpFlowSummary {
    /// Its place among the UDP flows.
    pub id: u32,
    pub direction: crate::tcp::config::Direction,
    pub start_s: f64,
    pub offered_bps: f64,
    pub delivered_bps: f64,
    pub sent_packets: u64,
    pub delivered_packets: u64,
    pub dropped: u64,
    /// Dropped over delivered and dropped (what was still on its way is neither).
    pub loss: f64,
    pub one_way_delay_ms: Stats,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostSummary {
    /// Long-run fraction of time the CPU is available.
    pub cpu_share: f64,
    /// Fraction of the run the CPU spent on sender work.
    pub busy_fraction: f64,
    /// Tasks run (ACKs, wake-ups, writes).
    pub tasks: u64,
    /// ACKs dropped because the host's receive ring was full.
    pub rx_dropped: u64,
    /// What the CPU did: ACKs processed, wake-ups (timers, TX completions, the first
    /// write), skbs (bursts), packets and payload bytes sent.
    pub work: crate::host::Work,
    /// How long tasks waited for the CPU.
    pub wait_ms: Stats,
}

/// Jain's index: (sum x)^2 / (n * sum x^2); 1 when all equal.
pub fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (n * s2)
    }
}
