//! What the emulator reports at the end of a run: the link's totals and samples in the
//! simulator's types, per-flow figures, and the emulator's check of itself.

use ccbench_sim::base::histogram::Histogram;
use ccbench_sim::observe::recorder::{self, LinkRow};
use ccbench_sim::summary::{LinkMeasured, Stats};
use serde::{Serialize, Serializer};

/// Delivered capacity below this fraction of the configured rate flags the run.
pub const SHORT_RATIO: f64 = 0.97;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Length of the measurement window (from the epoch to the end or to `quit`).
    pub measured_s: f64,
    /// The link's totals over the window, as the simulator's summary takes them.
    pub link: LinkMeasured,
    pub flows: Vec<FlowReport>,
    /// One per UDP flow, in order.
    pub udp: Vec<UdpReport>,
    pub series: SeriesReport,
    pub check: SelfCheck,
    /// The first error writing the packet capture, if one was asked for and failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    /// Data packets of this flow dropped at the bottleneck its data crosses (the reverse
    /// one for a flow going up): overflow, AQM or random loss.
    pub dropped: u64,
    /// Payload of this flow that left that bottleneck, retransmissions included.
    pub bottleneck_bytes: u64,
    /// Data packets the sender put on the path.
    pub data_packets_in: u64,
    /// Packets longer than `link.mtu` dropped before the bottleneck, over the whole run.
    pub mtu_dropped: u64,
    /// ICMP "fragmentation needed" messages sent back to the sender for them.
    pub icmp_sent: u64,
    pub rtt_ms: Stats,
    pub rtt_samples: u64,
    /// The flow's connections (one per download of a flow that repeats them), in the
    /// order their data started.
    pub connections: Vec<ConnectionReport>,
}

#[derive(Clone, Debug, Serialize)]
pub struct UdpReport {
    /// Datagrams its source put on the path.
    pub datagrams_in: u64,
    /// Datagrams dropped at the bottleneck it crosses: overflow, AQM or random loss.
    pub dropped: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConnectionReport {
    /// The sender's port.
    pub port: u16,
    pub rtt_ms: Stats,
    pub rtt_samples: u64,
}

/// The link's samples, one per sampling instant (the last closes the window and may cover a
/// partial interval): in JSON the simulator's link table, `observe::recorder::LINK_COLUMNS`.
/// Beside them each flow's payload leaving the bottleneck (`flow_throughput_bps[flow][sample]`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SeriesReport {
    #[serde(serialize_with = "link_table")]
    pub link: Vec<LinkRow>,
    pub flow_throughput_bps: Vec<Vec<f64>>,
}

fn link_table<S: Serializer>(rows: &[LinkRow], serializer: S) -> Result<S::Ok, S::Error> {
    recorder::link_table(rows).serialize(serializer)
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
