//! What a scenario will cost before it runs (packets, time series, memory, wall time),
//! and every value's allowed range as a table for the docs.

use super::validate::{describe, MAX_CODEL_NS};
use super::*;
use crate::base::range::Range;

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
        let mut packets = peak_rate.min(senders) * secs / 8.0 / wire;
        // Downloads end: their bytes (and as many again for retransmissions) bound them.
        let sized: Option<f64> = self.flows.iter().map(|f| f.size_bytes.map(|b| b as f64 * f.repeat as f64)).sum();
        if let Some(bytes) = sized {
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
        let memory_bytes = series_rows * BYTES_PER_SERIES_ROW + held * BYTES_PER_QUEUED_PACKET;
        // The CPU model adds an event at each edge of each slice.
        let slices = match self.host.as_ref().map(|h| &h.cpu) {
            Some(CpuAvailability::Deadline { period_ns, .. }) => 2.0 * self.duration_ns as f64 / *period_ns as f64,
            Some(CpuAvailability::Trace { intervals_ns }) => {
                let cycle: f64 = intervals_ns.iter().map(|&v| v as f64).sum();
                intervals_ns.len() as f64 * self.duration_ns as f64 / cycle.max(1.0)
            }
            _ => 0.0,
        };
        let wall_seconds = (packets + slices / 4.0) / PACKETS_PER_SECOND;
        Estimate { packets, series_rows, memory_bytes, wall_seconds }
    }
}

/// Every scenario value's allowed range, as [`Scenario::validate`] and
/// [`Scenario::validate_link_models`] check it: (TOML field, what is allowed).
pub fn input_ranges() -> Vec<(String, String)> {
    use limits::*;
    let codel_max = fmt_ns(MAX_CODEL_NS / 1_000_000_000 * 1_000_000_000);
    let rate = format!("1 bit/s to {}", fmt_bps(MAX_RATE_BPS));
    let bdp = format!("bytes, packets, or 0 to {MAX_BDP_MULTIPLE} x BDP");
    let rows: Vec<(&str, String)> = vec![
        ("seed", "0 to 2^64 - 1".into()),
        ("duration", format!("positive, at most 2^31 jiffies: {} at tcp.hz = 1000 (the kernel's jiffy comparisons wrap beyond)", fmt_ns(max_duration_ns(1000)))),
        ("interval", format!("0 (no time series) or at least {}", fmt_ns(MIN_SAMPLE_INTERVAL_NS))),
        ("link.rate", rate.clone()),
        ("link.rtt", format!("positive, at most {} (srtt_us holds 8 x the RTT in 32 bits)", fmt_ns(MAX_PATH_RTT_NS))),
        ("link.buffer", bdp.clone()),
        ("link.loss", "0 <= loss < 1".into()),
        ("link.nic_rate", rate.clone()),
        ("link.ecn_threshold", bdp),
        ("link.trace, link.ack_trace", format!("non-decreasing millisecond timestamps, the last one from 1 to {}", crate::net::trace::MAX_TIMESTAMP_MS)),
        ("link.rate_schedule[i].at", "after 0, increasing".into()),
        ("link.rate_schedule[i].rate", rate.clone()),
        ("link.rtt_schedule[i].at", "after 0, increasing".into()),
        ("link.rtt_schedule[i].rtt", format!("positive, at most {}", fmt_ns(MAX_PATH_RTT_NS))),
        ("link.loss_model.p, .r", "0 < p <= 1 (not with link.loss)".into()),
        ("link.loss_model.h, .k", "0 <= p <= 1".into()),
        ("link.aqm_params.target, .interval", format!("positive, at most {codel_max} (CoDel's 32-bit clock of ns >> {})", crate::net::aqm::codel::CODEL_SHIFT)),
        ("link.aqm_params.ce_threshold", format!("at most {codel_max}")),
        ("link.aqm_params.limit", "1 to 2^32 - 1 packets".into()),
        ("link.aqm_params.flows", "1 to 65536 (fq_codel)".into()),
        ("link.aqm_params.quantum", "256 to 1048576 bytes (fq_codel)".into()),
        ("link.aqm_params.memory_limit", "1 byte to 2 GiB (fq_codel)".into()),
        ("link.aqm_params.drop_batch", "1 to 2^32 - 1 (fq_codel)".into()),
        ("tcp.hz", "a divisor of 1000000 (a jiffy is a whole number of microseconds, the unit usecs_to_jiffies divides by), e.g. 100, 250, 1000".into()),
        ("flows (in all)", format!("1 to {MAX_FLOWS}")),
        ("flows[i].cca", crate::cc::Algorithm::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")),
        ("flows[i].start", "before the end of the run".into()),
        ("flows[i].access_delay", format!("link.rtt + 2 x access_delay at most {}", fmt_ns(MAX_PATH_RTT_NS))),
        ("flows[i].size", "positive (none: bulk)".into()),
        ("flows[i].rwnd", format!("one MSS to {MAX_WINDOW_BYTES} bytes (65535 << 14, TCP's largest window)")),
        ("flows[i].fixed_pacing_rate", rate),
        ("host.rx_ring", "at least 1".into()),
        ("host.tx_completion", format!("0 to {}", fmt_ns(MAX_TX_COMPLETION_NS))),
        ("host.cost.per_* (ns)", format!("0 to {}", fmt_ns(MAX_CPU_COST_NS))),
        ("host.cost.per_byte", format!("0 to {MAX_CPU_COST_PER_BYTE_PS} ps")),
        ("host.cpu_share", format!("runtime at least {}, at most the deadline and the period", fmt_ns(MIN_CPU_RUNTIME_NS))),
        ("host.cpu_tick", format!("{} to {}", fmt_ns(MIN_CPU_TICK_NS), fmt_ns(MAX_CPU_TICK_NS))),
        ("host.cpu_slice", format!("{} to the longest duration", fmt_ns(MIN_CPU_SLICE_NS))),
        ("host.cpu_trace", format!("(on, off) pairs, some on time, one pass from {} to the longest duration", fmt_ns(MIN_CPU_SLICE_NS))),
    ];
    let mut rows: Vec<(String, String)> = rows.into_iter().map(|(f, a)| (f.to_string(), a)).collect();
    // The integer [tcp] and per-flow knobs, from their own tables.
    let ranged = |table: &str, ranges: &'static [Range]| {
        ranges.iter().map(move |r| (format!("{table}.{}", r.key()), describe(r))).collect::<Vec<_>>()
    };
    let at = rows.iter().position(|(f, _)| f == "tcp.hz").expect("a tcp.hz row") + 1;
    rows.splice(at..at, ranged("tcp", TcpConfig::RANGES));
    let at = rows.iter().position(|(f, _)| f == "flows[i].rwnd").expect("a flows[i].rwnd row") + 1;
    rows.splice(at..at, ranged("flows[i]", FlowConfig::RANGES));
    rows
}

/// The defaults and integer ranges the front end's schema takes from here, so that each
/// is written once: `defaults` are what deserializing a table with only its required
/// keys gives (`tcp`, `flow`, `link`, `sample_interval_ns`); `ranges` are the inclusive
/// bounds [`Scenario::validate`] checks integer values against.
pub fn schema_facts() -> serde_json::Value {
    let flow: super::FlowConfig = serde_json::from_value(serde_json::json!({"cca": ""})).expect("only cca is required");
    let link: super::LinkConfig =
        serde_json::from_value(serde_json::json!({"rate_bps": 1, "rtt_ns": 1, "buffer": {"bytes": 1}}))
            .expect("rate, rtt and buffer are required");
    let link = serde_json::json!({"loss": link.loss, "nic_rate_bps": link.nic_rate_bps});
    let scenario: Scenario = serde_json::from_value(serde_json::json!({
        "seed": 0, "duration_ns": 1, "link": {"rate_bps": 1, "rtt_ns": 1, "buffer": {"bytes": 1}}, "flows": []}))
    .expect("seed, duration, link and flows are required");
    let mut ranges = serde_json::json!({});
    for (table, table_ranges) in [("tcp", TcpConfig::RANGES), ("flows", FlowConfig::RANGES)] {
        for r in table_ranges {
            ranges[format!("{table}.{}", r.field)] = serde_json::json!([r.lo, r.hi]);
        }
    }
    serde_json::json!({
        "defaults": {
            "sample_interval_ns": scenario.sample_interval_ns,
            "tcp": TcpConfig::default(),
            "flow": flow,
            "link": link,
        },
        "ranges": ranges,
    })
}
