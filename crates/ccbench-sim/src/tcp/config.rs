//! What a scenario says of TCP, in base units: the stack-wide settings (its `[tcp]`
//! table: Linux's `net.ipv4.tcp_*` sysctls, route metrics and compile-time constants,
//! with a recent kernel's defaults) and each flow's (`[[flows]]`), with the allowed
//! range of every integer one. Sender and receiver read both whole; a setting is
//! declared here once (field, default, range) and read where it acts.

use crate::base::range::{first_out_of_range, Range, Unit};
use crate::net::Ecn;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Segment payload after the handshake (`tcp_sync_mss`).
    pub mss: u32,
    /// `TCP_INIT_CWND`, or a route's `initcwnd`.
    pub init_cwnd: u32,
    /// Kernel tick rate (`CONFIG_HZ`) of jiffy-based timers.
    pub hz: u32,
    /// `TCP_RTO_MIN`, or a route's `rto_min`.
    pub rto_min_ns: u64,
    /// `TCP_TIMEOUT_INIT`.
    pub rto_init_ns: u64,
    /// `net.ipv4.tcp_limit_output_bytes` (TCP Small Queues cap).
    pub tsq_limit_bytes: u64,
    /// `sk_pacing_shift`: TSO bursts hold pacing_rate >> shift bytes (about 1 ms).
    pub pacing_shift: u32,
    /// Delayed-ACK timer minimum (`TCP_DELACK_MIN`).
    pub delack_min_ns: u64,
    /// `net.ipv4.tcp_tso_rtt_log` (Linux 5.18+): TSO bursts get a bonus of 64 KB >>
    /// (min_rtt / 2^log µs). 0 turns it off, as in older kernels.
    pub tso_rtt_log: u32,
    /// `net.ipv4.tcp_frto`: 0 turns F-RTO (RFC 5682) off; 1 and 2 turn it on (Linux
    /// treats any nonzero value alike since 4.10; 2 is its default).
    pub frto: u8,
    /// `net.ipv4.tcp_sack`: false = the connection does not negotiate SACK; the
    /// receiver sends plain duplicate ACKs and the sender recovers as NewReno.
    pub sack: bool,
    /// `net.ipv4.tcp_tso_win_divisor`: TSO deferral ends once this fraction of the
    /// window is free; 0 = defer past at most three segments' room.
    pub tso_win_divisor: u32,
    /// `net.ipv4.tcp_min_tso_segs`: the TSO floor of algorithms without their own
    /// (`ca_ops->min_tso_segs`, which only BBR has).
    pub min_tso_segs: u32,
    /// `net.ipv4.tcp_slow_start_after_idle`: restart cwnd when the application writes
    /// after more than an RTO without sending.
    pub slow_start_after_idle: bool,
    /// Tail loss probes (`net.ipv4.tcp_early_retrans` >= 3, the default).
    pub tlp: bool,
    /// `net.ipv4.tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio`: the pacing rate of an
    /// algorithm without `cong_control` is this percentage of cwnd / SRTT, the first while
    /// cwnd is below half of ssthresh, the second after (`tcp_update_pacing_rate`).
    pub pacing_ss_ratio: u32,
    pub pacing_ca_ratio: u32,
    /// `net.ipv4.tcp_wmem`: the send buffer's minimum (kept under memory pressure, which
    /// is not modelled), its size as a socket opens, and autotuning's ceiling, bytes.
    pub wmem: [u64; 3],
    /// `net.ipv4.tcp_rmem`: the receive buffer's minimum (memory pressure, not modelled),
    /// its size as a socket opens, and autotuning's ceiling, bytes; it sizes the buffer of
    /// `rwnd_autotune` flows (`tcp/rcvbuf.rs`). None: the sizing from before the setting,
    /// 128 KiB growing to room for each flow's `rwnd`.
    pub rmem: Option<[u64; 3]>,
    /// `net.ipv4.tcp_mtu_probing`: 0 never probes; 1 starts once the retransmit timer
    /// suspects a path-MTU black hole (`tcp_mtu_probing` in tcp_timer.c); 2 always
    /// (`tcp_mtup_init`).
    pub mtu_probing: u8,
    /// `net.ipv4.tcp_base_mss`: the MSS the probing search starts from, bytes.
    pub base_mss: u32,
    /// `net.ipv4.tcp_probe_threshold`: probing stops once the search range is narrower,
    /// bytes.
    pub probe_threshold: u32,
    /// `net.ipv4.tcp_probe_interval`: after this long, the search starts again from the
    /// top (`tcp_mtu_check_reprobe`).
    pub probe_interval_ns: u64,
    /// `net.ipv4.tcp_mtu_probe_floor`: the smallest MSS black-hole detection goes to.
    pub mtu_probe_floor: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            init_cwnd: 10,
            hz: 1000,
            rto_min_ns: 200_000_000,
            rto_init_ns: 1_000_000_000,
            tsq_limit_bytes: 4 * 1024 * 1024,
            pacing_shift: 10,
            delack_min_ns: 40_000_000,
            tso_rtt_log: 9,
            frto: 2,
            sack: true,
            tso_win_divisor: 3,
            min_tso_segs: 2,
            slow_start_after_idle: true,
            tlp: true,
            pacing_ss_ratio: 200,
            pacing_ca_ratio: 120,
            wmem: [4096, 16_384, 4_194_304],
            rmem: None,
            mtu_probing: 0,
            base_mss: 1024,
            probe_threshold: 8,
            probe_interval_ns: 600_000_000_000,
            mtu_probe_floor: 48,
        }
    }
}

/// Linux takes 0 too, which leaves no pacing rate to pace or size bursts by.
const PACING_RATIO: &str = "the sysctl's 1000 at most";
const RTO_MAX_NS: u64 = super::rtt::RTO_MAX.ns();
/// `tcp_probe_interval`'s ceiling, `UINT_MAX / HZ` seconds at HZ 1000.
const PROBE_INTERVAL_MAX_NS: u64 = (u32::MAX / 1000) as u64 * 1_000_000_000;

impl TcpConfig {
    /// Every integer setting's range (the scenario check, the front end's schema and
    /// docs/input-ranges.md all read these); `hz` has its own rule (a divisor of 10^6).
    pub const RANGES: &'static [Range] = &[
        Range { field: "mss", lo: 64, hi: 9000, unit: Unit::Bytes, why: "TCP_MIN_MSS less options; a jumbo frame" },
        Range { field: "init_cwnd", lo: 1, hi: 1_000_000, unit: Unit::Count("segments"), why: "" },
        Range { field: "rto_min_ns", lo: 1, hi: RTO_MAX_NS, unit: Unit::Nanoseconds, why: "TCP_RTO_MAX" },
        Range { field: "rto_init_ns", lo: 1, hi: RTO_MAX_NS, unit: Unit::Nanoseconds, why: "TCP_RTO_MAX" },
        Range { field: "tsq_limit_bytes", lo: 1, hi: u64::MAX, unit: Unit::Bytes, why: "" },
        Range { field: "pacing_shift", lo: 0, hi: 31, unit: Unit::Count(""), why: "a shift of a 64-bit rate" },
        Range { field: "delack_min_ns", lo: 0, hi: RTO_MAX_NS, unit: Unit::Nanoseconds, why: "TCP_RTO_MAX" },
        Range { field: "tso_rtt_log", lo: 0, hi: 31, unit: Unit::Count(""), why: "a shift of 64 KB" },
        Range { field: "frto", lo: 0, hi: 2, unit: Unit::Count(""), why: "net.ipv4.tcp_frto" },
        Range { field: "tso_win_divisor", lo: 0, hi: 255, unit: Unit::Count(""), why: "a u8 sysctl" },
        Range { field: "min_tso_segs", lo: 1, hi: 65_535, unit: Unit::Count("segments"), why: "GSO_MAX_SEGS" },
        Range { field: "pacing_ss_ratio", lo: 1, hi: 1000, unit: Unit::Count("percent"), why: PACING_RATIO },
        Range { field: "pacing_ca_ratio", lo: 1, hi: 1000, unit: Unit::Count("percent"), why: PACING_RATIO },
        Range { field: "mtu_probing", lo: 0, hi: 2, unit: Unit::Count(""), why: "net.ipv4.tcp_mtu_probing" },
        Range { field: "base_mss", lo: 48, hi: 9000, unit: Unit::Bytes, why: "tcp_min_snd_mss; a jumbo frame" },
        Range { field: "probe_threshold", lo: 0, hi: 65_535, unit: Unit::Bytes, why: "an IPv4 packet" },
        Range {
            field: "probe_interval_ns",
            lo: 0,
            hi: PROBE_INTERVAL_MAX_NS,
            unit: Unit::Nanoseconds,
            why: "UINT_MAX / HZ seconds",
        },
        Range { field: "mtu_probe_floor", lo: 48, hi: 9000, unit: Unit::Bytes, why: "tcp_min_snd_mss; a jumbo frame" },
    ];

    /// The first integer setting outside its range, with its value.
    pub fn out_of_range(&self) -> Option<(&'static Range, u64)> {
        first_out_of_range(self, Self::RANGES)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub cca: String,
    #[serde(default)]
    pub start_ns: u64,
    /// Extra one-way delay on this flow's access link, each way.
    #[serde(default)]
    pub access_delay_ns: u64,
    /// Bytes to transfer; None for a bulk flow that runs to the end.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Pace this flow; None follows the algorithm (BBR paces, Reno/Cubic do not).
    #[serde(default)]
    pub pacing: Option<bool>,
    /// Receive-window limit in bytes (the receiver's advertised window).
    #[serde(default = "default_rwnd")]
    pub rwnd_bytes: u64,
    /// Autotune the receive buffer from `tcp_rmem[1]` up to `rwnd_bytes` (DRS), as Linux
    /// does, instead of advertising `rwnd_bytes` from the start.
    #[serde(default)]
    pub rwnd_autotune: bool,
    /// SO_SNDBUF as the application sets it (iperf3's `-w`): the kernel keeps twice this
    /// and does not autotune it. None: `tcp.wmem` and autotuning.
    #[serde(default)]
    pub sndbuf_bytes: Option<u64>,
    /// Algorithm parameter overrides by name.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
    /// ECN negotiation: off, classic (RFC 3168 echo until CWR) or low (a low-threshold
    /// marking route with DCTCP-style per-segment echo, which BBRv3 responds to).
    #[serde(default)]
    pub ecn: Ecn,
    /// Pacing stride (Vargas et al., IMC'22 §6.2): bursts up to `stride` x the TSO goal
    /// and `stride` x the idle time after each. 1 = Linux.
    #[serde(default = "one_u32")]
    pub pacing_stride: u32,
    /// Hold cwnd at this many segments whatever the algorithm says.
    #[serde(default)]
    pub fixed_cwnd: Option<u32>,
    /// Hold the pacing rate at this many bit/s whatever the algorithm says.
    #[serde(default)]
    pub fixed_pacing_rate_bps: Option<u64>,
    /// Skip the algorithm's per-ACK model update (`cong_control`/`cong_avoid`), so cwnd
    /// and pacing rate stay where they were set.
    #[serde(default)]
    pub freeze_cc: bool,
    /// Downloads of `size_bytes`, each on a new connection, the next one `pause_ns`
    /// after the previous completed.
    #[serde(default = "one_u32")]
    pub repeat: u32,
    #[serde(default)]
    pub pause_ns: u64,
    /// Who opens each connection, and when (`tcp::handshake`).
    #[serde(default)]
    pub connect: Connect,
    /// TCP Fast Open on both ends (`net.ipv4.tcp_fastopen = 3`, `TCP_FASTOPEN` on the
    /// listener, `TCP_FASTOPEN_CONNECT` on the opener); needs a connection opened in time.
    #[serde(default)]
    pub fastopen: bool,
    /// Which way the data goes: down (the forward bottleneck, `[link]`) or up (the
    /// reverse one, `[link.reverse]`), its ACKs the other way.
    #[serde(default, skip_serializing_if = "Direction::is_down")]
    pub direction: Direction,
}

/// Which way a flow's data goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Through `[link]`, from the host whose CPU `[host]` models.
    #[default]
    Down,
    /// Through `[link.reverse]`, from the far host (the sender's CPU is not modelled).
    Up,
}

impl Direction {
    pub fn is_down(&self) -> bool {
        *self == Direction::Down
    }
}

/// Who opens a connection, and when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Connect {
    /// Connected before its data is due, as iperf3 connects before a test: the data
    /// starts at the flow's start, with the path's base RTT as the first RTT sample.
    #[default]
    Ahead,
    /// The sender calls `connect()` when its data is due, then writes (an upload): the
    /// SYN and SYN-ACK cross the path, and a download's time counts them.
    Sender,
    /// The receiver calls `connect()` when its download is due and sends a request; the
    /// sender, listening, reads it and writes its response (a web download).
    Receiver,
}

fn one_u32() -> u32 {
    1
}

impl FlowConfig {
    /// The integer knobs' ranges (checked per flow; the front end's schema and
    /// docs/input-ranges.md read them too).
    pub const RANGES: &'static [Range] = &[
        Range { field: "pacing_stride", lo: 1, hi: 1_000, unit: Unit::Count(""), why: "" },
        // `sk_setsockopt` doubles the value into an int.
        Range { field: "sndbuf_bytes", lo: 1, hi: (i32::MAX / 2) as u64, unit: Unit::Bytes, why: "INT_MAX / 2" },
        // cwnd is a u32 of segments; the kernel's own limit for snd_cwnd_clamp.
        Range { field: "fixed_cwnd", lo: 1, hi: 1_000_000_000, unit: Unit::Count("segments"), why: "" },
        Range {
            field: "repeat",
            lo: 1,
            // Repeated downloads number their connections in a u16 (`world/mod.rs`).
            hi: u16::MAX as u64,
            unit: Unit::Count(""),
            why: "connections are numbered in 16 bits; more than 1 needs a size",
        },
    ];

    /// A bulk flow starting at time zero with Linux's defaults.
    pub fn bulk(cca: &str) -> FlowConfig {
        FlowConfig {
            cca: cca.to_string(),
            start_ns: 0,
            access_delay_ns: 0,
            size_bytes: None,
            pacing: None,
            rwnd_bytes: default_rwnd(),
            rwnd_autotune: false,
            sndbuf_bytes: None,
            params: BTreeMap::new(),
            ecn: Ecn::Off,
            pacing_stride: 1,
            fixed_cwnd: None,
            fixed_pacing_rate_bps: None,
            freeze_cc: false,
            repeat: 1,
            pause_ns: 0,
            connect: Connect::Ahead,
            fastopen: false,
            direction: Direction::Down,
        }
    }
}

/// Linux's `tcp_rmem` max default (6 MB) bounds the advertised window.
fn default_rwnd() -> u64 {
    6 * 1024 * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_lie_in_their_ranges() {
        assert!(TcpConfig::default().out_of_range().is_none());
    }

    #[test]
    fn a_value_out_of_range_names_its_setting() {
        let c = TcpConfig { frto: 3, ..TcpConfig::default() };
        let (r, v) = c.out_of_range().unwrap();
        assert_eq!((r.key(), v), ("frto", 3));
        let c = TcpConfig { rto_min_ns: 0, ..TcpConfig::default() };
        assert_eq!(c.out_of_range().unwrap().0.key(), "rto_min");
    }
}
