//! What a scenario will cost before it runs (packets, time series, memory, wall time).

use super::*;

/// What a run will cost, estimated before it starts, so that a scenario beyond the
/// machine can be refused up front with the numbers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Data packets the bottleneck can carry in the run (an upper bound).
    pub packets: f64,
    /// Time-series rows (one per flow and one for the link per interval).
    pub series_rows: f64,
    /// Peak memory of the run and of handing its series to Python, in bytes.
    pub memory_bytes: f64,
    /// Wall-clock time on one core, in seconds.
    pub wall_seconds: f64,
}

/// Data packets simulated per wall second on one core: the low end of the single-flow
/// and 100-flow cases in docs/benchmarks.md (2.6-6.0 million).
pub const PACKETS_PER_SECOND: f64 = 2.5e6;
/// Bytes per time-series row: the recorder's row (16 values and the algorithm's
/// internals, `observe/recorder.rs`), its columns, and the Python lists and DataFrame
/// they become.
pub const BYTES_PER_SERIES_ROW: f64 = 2_000.0;
/// Bytes per packet held in a queue or on a scoreboard (the packet, its skb-like
/// metadata and the container's slot).
pub const BYTES_PER_QUEUED_PACKET: f64 = 256.0;
/// Header bytes on the wire per segment (IPv4 + TCP with timestamps).
const HEADER_BYTES: f64 = 52.0;
/// Bytes a connection of arrivals leaves once finished (its record, the summary's copy
/// and its table row: docs/benchmarks.md, "Open-loop arrivals").
pub const BYTES_PER_CONNECTION: f64 = 256.0;
/// Connections of arrivals set up (and simulated alone) per wall second, beside their
/// packets: the `arrivals-100k` case's excess over a bulk run of as many packets.
pub const CONNECTIONS_PER_SECOND: f64 = 50_000.0;

impl Scenario {
    /// Packets, time-series size, memory and wall time of this (validated) scenario.
    pub fn estimate(&self) -> Estimate {
        let secs = self.duration_ns as f64 / 1e9;
        let wire = self.tcp.mss as f64 + HEADER_BYTES;
        let peak_rate =
            self.link.rate_schedule.iter().map(|s| s.rate_bps).fold(self.link.reference_rate_bps(), u64::max) as f64;
        // Each flow sends at most its NIC's rate and a receive window per round trip.
        let min_rtt = self.link.rtt_schedule.iter().map(|s| s.rtt_ns).fold(self.link.rtt_ns, u64::min);
        let senders: f64 = self
            .flows
            .iter()
            .map(|f| {
                let rtt = (min_rtt + 2 * f.access_delay_ns) as f64 / 1e9;
                (self.link.nic_rate_bps as f64).min(f.rwnd_bytes as f64 * 8.0 / rtt)
            })
            .sum();
        // Arrivals may keep the link busy whatever the flows do.
        let senders = if self.arrivals.is_empty() { senders } else { f64::INFINITY };
        let mut packets = peak_rate.min(senders) * secs / 8.0 / wire;
        // Downloads end: their bytes (and as many again for retransmissions) bound them.
        let sized: Option<f64> = self.flows.iter().map(|f| f.size_bytes.map(|b| b as f64 * f.repeat as f64)).sum();
        if let (Some(bytes), true) = (sized, self.arrivals.is_empty()) {
            packets = packets.min(2.0 * bytes / self.tcp.mss as f64 + self.flows.len() as f64);
        }
        // An interval of 0 records no time series.
        let series_rows = self
            .duration_ns
            .checked_div(self.sample_interval_ns)
            .map_or(0.0, |n| (n + 1) as f64 * (self.flows.len() + 1) as f64);
        // Packets in flight and queued: the receive windows, or what the path and the
        // buffer hold.
        let bdp = self.bdp_bytes() as f64;
        let buffer = |b: &BufferLimit| match *b {
            BufferLimit::Bytes(n) => n as f64,
            BufferLimit::Packets(n) => n as f64 * wire,
            BufferLimit::Bdp(x) => x * bdp,
        };
        let windows: f64 = self.flows.iter().map(|f| f.rwnd_bytes as f64).sum();
        let held = windows.min(bdp + buffer(&self.link.buffer)) / self.tcp.mss as f64;
        // UDP datagrams are sent whatever the link carries; arrivals' connections each
        // leave their figures.
        let datagrams: f64 = self
            .udp
            .iter()
            .map(|u| {
                let peak = u.rate_schedule.iter().map(|st| st.rate_bps).fold(u.rate_bps, u64::max);
                let life = u.stop_ns.unwrap_or(self.duration_ns).min(self.duration_ns).saturating_sub(u.start_ns);
                peak as f64 * life as f64 / 1e9 / (u.wire_bytes() as f64 * 8.0)
            })
            .sum();
        let connections: f64 = (0..self.arrivals.len())
            .map(|k| match &self.arrivals[k].times_ns {
                Some(t) => t.len() as f64,
                None => self.arrival_rate(k) * secs,
            })
            .sum();
        packets += datagrams;
        let memory_bytes =
            series_rows * BYTES_PER_SERIES_ROW + held * BYTES_PER_QUEUED_PACKET + connections * BYTES_PER_CONNECTION;
        // The CPU model adds an event at each edge of each slice.
        let slices = match self.host.as_ref().map(|h| &h.cpu) {
            Some(CpuAvailability::Deadline { period_ns, .. }) => 2.0 * self.duration_ns as f64 / *period_ns as f64,
            Some(CpuAvailability::Trace { intervals_ns }) => {
                let cycle: f64 = intervals_ns.iter().map(|&v| v as f64).sum();
                intervals_ns.len() as f64 * self.duration_ns as f64 / cycle.max(1.0)
            }
            _ => 0.0,
        };
        let wall_seconds = (packets + slices / 4.0) / PACKETS_PER_SECOND + connections / CONNECTIONS_PER_SECOND;
        Estimate { packets, series_rows, memory_bytes, wall_seconds }
    }
}
