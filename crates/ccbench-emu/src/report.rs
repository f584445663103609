//! What the emulator reports at the end of a run: the bottleneck's counters in the
//! simulator's terms, per-flow figures, time series, and the emulator's check of itself.

use ccbench_sim::base::histogram::Histogram;
use ccbench_sim::summary::Stats;
use serde::Serialize;

/// Delivered capacity below this fraction of the configured rate flags the run.
pub const SHORT_RATIO: f64 = 0.97;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Length of the measurement window (from the epoch to the end or to `quit`).
    pub measured_s: f64,
    pub link: LinkReport,
    pub flows: Vec<FlowReport>,
    pub series: SeriesReport,
    pub check: SelfCheck,
    /// The first error writing the packet capture, if one was asked for and failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LinkReport {
    pub packets_forwarded: u64,
    pub wire_bytes_out: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    /// Drops by CoDel at dequeue (with an AQM).
    pub drops_aqm: u64,
    /// Capacity the bottleneck offered during the window, in bits (the rate, or the
    /// trace's opportunities).
    pub capacity_bits: f64,
    /// Packets marked Congestion Experienced at the bottleneck.
    pub ecn_marks: u64,
    pub queue_delay_ms: Stats,
    pub queue_bytes: Stats,
    pub queue_packets: Stats,
}

#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    /// Data packets of this flow dropped at the bottleneck (overflow or random loss).
    pub dropped: u64,
    /// Payload of this flow that left the bottleneck, retransmissions included.
    pub payload_out_bytes: u64,
    /// Data packets the sender put on the path.
    pub data_packets_in: u64,
    pub rtt_ms: Stats,
    pub rtt_samples: u64,
    /// The flow's connections (one per download of a flow that repeats them), in the
    /// order their data started.
    pub connections: Vec<ConnectionReport>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConnectionReport {
    /// The sender's port.
    pub port: u16,
    pub rtt_ms: Stats,
    pub rtt_samples: u64,
}

/// One entry per sampling instant, as the simulator's link series; plus each flow's
/// payload leaving the bottleneck (`flow_throughput_bps[flow][sample]`). The last entry
/// closes the window and may cover a partial interval.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SeriesReport {
    pub time_s: Vec<f64>,
    pub queue_bytes: Vec<f64>,
    pub queue_packets: Vec<f64>,
    pub utilization: Vec<f64>,
    pub throughput_bps: Vec<f64>,
    pub capacity_bps: Vec<f64>,
    pub drops: Vec<f64>,
    pub flow_throughput_bps: Vec<Vec<f64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SelfCheck {
    /// The configured rate (a trace's mean capacity; a rate schedule's initial rate).
    pub configured_rate_bps: u64,
    /// Wire bits written to the receiver's device during busy periods of the bottleneck
    /// (back-to-back departures), divided by the wall-clock time those writes spanned.
    /// None when the bottleneck never had a backlog.
    pub delivered_rate_bps: Option<f64>,
    /// Those bits over the capacity the link offered in the same wall-clock spans.
    pub delivered_rate_ratio: Option<f64>,
    /// Below SHORT_RATIO: the emulator did not deliver the configured capacity.
    pub flag_short: bool,
    pub busy_s: f64,
    pub busy_bytes: u64,
    /// How late packets were written compared with their scheduled departure, in µs.
    pub lateness_forward_us: Stats,
    pub lateness_reverse_us: Stats,
    pub packets_to_receiver: u64,
    pub packets_to_sender: u64,
    pub write_errors: u64,
    /// Whether the emulator ran with real-time scheduling priority.
    pub realtime_priority: bool,
}

/// Histogram statistics divided by `scale` (1e6 for ns -> ms, 1e3 for ns -> µs).
pub fn stats(h: &Histogram, scale: f64) -> Stats {
    Stats::from_histogram(h, scale)
}
