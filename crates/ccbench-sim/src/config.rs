//! The resolved scenario the simulator runs: every value in base units (ns, bit/s,
//! bytes). The Python front end parses human units and hands this over as JSON.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
}

fn one_u32() -> u32 {
    1
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

impl FlowConfig {
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
            params: BTreeMap::new(),
            ecn: Ecn::Off,
            pacing_stride: 1,
            fixed_cwnd: None,
            fixed_pacing_rate_bps: None,
            freeze_cc: false,
            repeat: 1,
            pause_ns: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecn {
    #[default]
    Off,
    Classic,
    Low,
}

/// Linux's `tcp_rmem` max default (6 MB) bounds the advertised window.
fn default_rwnd() -> u64 {
    6 * 1024 * 1024
}

/// Stack-wide knobs, with the defaults of a recent Linux kernel (the net.ipv4.tcp_* sysctls and include/net/tcp.h).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    pub mss: u32,
    /// `TCP_INIT_CWND`.
    pub init_cwnd: u32,
    /// Kernel tick rate for jiffy-based timers.
    pub hz: u32,
    /// `TCP_RTO_MIN`.
    pub rto_min_ns: u64,
    /// `TCP_TIMEOUT_INIT`.
    pub rto_init_ns: u64,
    /// `tcp_limit_output_bytes` (TCP Small Queues cap).
    pub tsq_limit_bytes: u64,
    /// `sk_pacing_shift`: TSO bursts hold pacing_rate >> shift bytes (about 1 ms).
    pub pacing_shift: u32,
    /// Delayed-ACK timer minimum (`TCP_DELACK_MIN`).
    pub delack_min_ns: u64,
    /// `net.ipv4.tcp_tso_rtt_log` (Linux 5.18+): TSO bursts get a bonus of 64 KB >>
    /// (min_rtt / 2^log µs). 0 turns it off, as in older kernels.
    pub tso_rtt_log: u32,
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
        }
    }
}

/// The sender host: one CPU that runs every sender-side task of every flow.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    #[serde(default)]
    pub cpu: CpuAvailability,
    #[serde(default)]
    pub cost: CpuCost,
    /// ACKs the NIC's receive ring holds while they wait for the CPU; more are dropped.
    #[serde(default = "default_rx_ring")]
    pub rx_ring: u32,
}

fn default_rx_ring() -> u32 {
    256
}

/// When the CPU may run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum CpuAvailability {
    #[default]
    Always,
    /// SCHED_DEADLINE-style: `runtime_ns` of every `period_ns`, from `offset_ns` on.
    Periodic {
        runtime_ns: u64,
        period_ns: u64,
        #[serde(default)]
        offset_ns: u64,
    },
    /// Alternating on/off intervals: `[on, off, on, off, ...]` in ns starting on at
    /// time 0, repeated when they run out.
    Trace { intervals_ns: Vec<u64> },
}

/// CPU time each kind of sender work takes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuCost {
    /// Processing one incoming ACK (`tcp_ack` and the driver's receive path).
    pub per_ack_ns: u64,
    /// Handing one skb (a TSO burst) to the NIC (`tcp_transmit_skb`, qdisc, driver).
    pub per_burst_ns: u64,
    /// Each wire packet of a burst (GSO segmentation where the NIC cannot).
    pub per_packet_ns: u64,
    /// Each payload byte sent (copy from the application, checksum), in picoseconds.
    pub per_byte_ps: u64,
    /// A softirq/tasklet pass that runs `tcp_write_xmit` for a socket on its own
    /// (`tcp_tsq_handler` after a pacing timer or a TX completion), and the
    /// application's write at flow start.
    pub per_wakeup_ns: u64,
    /// An hrtimer expiry (interrupt entry, `tcp_pace_kick`, the retransmission timer),
    /// on top of the wake-up it leads to.
    pub per_timer_ns: u64,
    /// Getting going again after being descheduled (a vCPU re-entering the guest:
    /// pending interrupts injected, cold caches), paid by the first task of a slice.
    pub per_resume_ns: u64,
}

impl CpuCost {
    pub fn is_free(&self) -> bool {
        *self == CpuCost::default()
    }
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig { cpu: CpuAvailability::Always, cost: CpuCost::default(), rx_ring: default_rx_ring() }
    }
}

impl HostConfig {
    /// An ideal host: always available, free work. Runs exactly like no host model.
    pub fn is_ideal(&self) -> bool {
        self.cpu == CpuAvailability::Always && self.cost.is_free()
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

impl Scenario {
    pub fn from_json(json: &str) -> Result<Scenario, ConfigError> {
        let s: Scenario = serde_json::from_str(json).map_err(|e| err("scenario", e.to_string()))?;
        s.validate()?;
        Ok(s)
    }

    /// Bottleneck bandwidth-delay product in bytes.
    pub fn bdp_bytes(&self) -> u64 {
        (self.link.reference_rate_bps() as u128 * self.link.rtt_ns as u128 / 8 / 1_000_000_000) as u64
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        use limits::*;
        if self.duration_ns == 0 {
            return Err(err("duration", "must be positive"));
        }
        let max_duration = max_duration_ns(self.tcp.hz);
        if self.tcp.hz != 0 && self.duration_ns > max_duration {
            return Err(err(
                "duration",
                format!(
                    "must be at most {} (2^31 jiffies at tcp.hz = {}: the kernel's jiffy comparisons wrap beyond)",
                    fmt_ns(max_duration),
                    self.tcp.hz
                ),
            ));
        }
        if self.sample_interval_ns != 0 && self.sample_interval_ns < MIN_SAMPLE_INTERVAL_NS {
            return Err(err(
                "interval",
                format!("must be 0 (no time series) or at least {}", fmt_ns(MIN_SAMPLE_INTERVAL_NS)),
            ));
        }
        if self.link.trace.is_none() {
            check_rate("link.rate", self.link.rate_bps)?;
        }
        if self.link.rtt_ns == 0 || self.link.rtt_ns > MAX_PATH_RTT_NS {
            return Err(err(
                "link.rtt",
                format!(
                    "must be positive and at most {} (the kernel's srtt_us holds 8 x the RTT in 32 bits)",
                    fmt_ns(MAX_PATH_RTT_NS)
                ),
            ));
        }
        if !(0.0..1.0).contains(&self.link.loss) {
            return Err(err("link.loss", "must be in [0, 1)"));
        }
        check_rate("link.nic_rate", self.link.nic_rate_bps)?;
        match self.link.buffer {
            BufferLimit::Bdp(x) if !(x.is_finite() && (0.0..=MAX_BDP_MULTIPLE).contains(&x)) => {
                return Err(err("link.buffer", format!("BDP multiple must be from 0 to {MAX_BDP_MULTIPLE}")))
            }
            _ => {}
        }
        if let Some(BufferLimit::Bdp(x)) = self.link.ecn_threshold {
            if !(x.is_finite() && (0.0..=MAX_BDP_MULTIPLE).contains(&x)) {
                return Err(err("link.ecn_threshold", format!("BDP multiple must be from 0 to {MAX_BDP_MULTIPLE}")));
            }
        }
        self.validate_link_models()?;
        if self.flows.is_empty() {
            return Err(err("flows", "at least one flow is required"));
        }
        if self.flows.len() > MAX_FLOWS {
            return Err(err(
                "flows",
                format!("at most {MAX_FLOWS} flows in all (the capture's port numbers and the fq_codel flow hash)"),
            ));
        }
        if !(MIN_MSS..=MAX_MSS).contains(&self.tcp.mss) {
            return Err(err("tcp.mss", format!("must be in {MIN_MSS}..={MAX_MSS}")));
        }
        if self.tcp.hz == 0 || 1_000_000 % self.tcp.hz != 0 {
            return Err(err("tcp.hz", "must divide 1000000, so that a jiffy is a whole number of microseconds (the unit of the RTT estimator's usecs_to_jiffies), e.g. 100, 250, 1000"));
        }
        if !(1..=MAX_INIT_CWND).contains(&self.tcp.init_cwnd) {
            return Err(err("tcp.init_cwnd", format!("must be in 1..={MAX_INIT_CWND} segments")));
        }
        for (name, v) in [("tcp.rto_min", self.tcp.rto_min_ns), ("tcp.rto_init", self.tcp.rto_init_ns)] {
            if v == 0 || v > crate::tcp::rtt::RTO_MAX.ns() {
                return Err(err(
                    name,
                    format!("must be positive and at most {} (TCP_RTO_MAX)", fmt_ns(crate::tcp::rtt::RTO_MAX.ns())),
                ));
            }
        }
        if self.tcp.delack_min_ns > crate::tcp::rtt::RTO_MAX.ns() {
            return Err(err(
                "tcp.delack_min",
                format!("must be at most {} (TCP_RTO_MAX)", fmt_ns(crate::tcp::rtt::RTO_MAX.ns())),
            ));
        }
        if self.tcp.tsq_limit_bytes == 0 {
            return Err(err("tcp.tsq_limit", "must be at least 1 byte"));
        }
        if self.tcp.pacing_shift > MAX_SHIFT {
            return Err(err("tcp.pacing_shift", format!("must be in 0..={MAX_SHIFT}")));
        }
        if self.tcp.tso_rtt_log > MAX_SHIFT {
            return Err(err("tcp.tso_rtt_log", format!("must be in 0..={MAX_SHIFT}")));
        }
        for (i, f) in self.flows.iter().enumerate() {
            let alg = crate::cc::Algorithm::from_name(&f.cca).ok_or_else(|| {
                let names: Vec<_> = crate::cc::Algorithm::ALL.iter().map(|a| a.name()).collect();
                err(format!("flows[{i}].cca"), format!("unknown algorithm '{}'; allowed: {}", f.cca, names.join(", ")))
            })?;
            alg.instance(&f.params, crate::sim::rng::stream(0, "cc", 0))
                .map_err(|e| err(format!("flows[{i}].params.{}", e.name), e.message))?;
            if f.start_ns >= self.duration_ns {
                return Err(err(format!("flows[{i}].start"), "must be before the end of the run"));
            }
            let path_rtt = (self.max_rtt_ns() as u128) + 2 * f.access_delay_ns as u128;
            if path_rtt > MAX_PATH_RTT_NS as u128 {
                return Err(err(
                    format!("flows[{i}].access_delay"),
                    format!("the path's RTT (link.rtt + 2 x access_delay) must be at most {} (the kernel's srtt_us holds 8 x the RTT in 32 bits)", fmt_ns(MAX_PATH_RTT_NS)),
                ));
            }
            if f.size_bytes == Some(0) {
                return Err(err(format!("flows[{i}].size"), "must be positive"));
            }
            if f.rwnd_bytes < self.tcp.mss as u64 || f.rwnd_bytes > MAX_WINDOW_BYTES {
                return Err(err(
                    format!("flows[{i}].rwnd"),
                    format!("must be from one MSS to {MAX_WINDOW_BYTES} bytes (65535 << 14, TCP's largest window)"),
                ));
            }
            if !(1..=MAX_PACING_STRIDE).contains(&f.pacing_stride) {
                return Err(err(format!("flows[{i}].pacing_stride"), format!("must be in 1..={MAX_PACING_STRIDE}")));
            }
            if let Some(c) = f.fixed_cwnd {
                if !(1..=MAX_FIXED_CWND).contains(&c) {
                    return Err(err(
                        format!("flows[{i}].fixed_cwnd"),
                        format!("must be in 1..={MAX_FIXED_CWND} segments"),
                    ));
                }
            }
            if !(1..=MAX_REPEAT).contains(&f.repeat) {
                return Err(err(
                    format!("flows[{i}].repeat"),
                    format!("must be in 1..={MAX_REPEAT} (connections are numbered in 16 bits)"),
                ));
            }
            if f.repeat > 1 && f.size_bytes.is_none() {
                return Err(err(format!("flows[{i}].repeat"), "repeats a download: give the flow a size"));
            }
            if let Some(r) = f.fixed_pacing_rate_bps {
                check_rate(&format!("flows[{i}].fixed_pacing_rate"), r)?;
            }
        }
        if let Some(h) = &self.host {
            if h.rx_ring == 0 {
                return Err(err("host.rx_ring", "must be at least 1"));
            }
            let c = &h.cost;
            for (name, v) in [
                ("per_ack", c.per_ack_ns),
                ("per_burst", c.per_burst_ns),
                ("per_packet", c.per_packet_ns),
                ("per_wakeup", c.per_wakeup_ns),
                ("per_timer", c.per_timer_ns),
                ("per_resume", c.per_resume_ns),
            ] {
                if v > MAX_CPU_COST_NS {
                    return Err(err(
                        format!("host.cost.{name}"),
                        format!("must be at most {}", fmt_ns(MAX_CPU_COST_NS)),
                    ));
                }
            }
            if c.per_byte_ps > MAX_CPU_COST_PER_BYTE_PS {
                return Err(err("host.cost.per_byte", format!("must be at most {} ps", MAX_CPU_COST_PER_BYTE_PS)));
            }
            match &h.cpu {
                CpuAvailability::Always => {}
                CpuAvailability::Periodic { runtime_ns, period_ns, .. } => {
                    if *runtime_ns == 0 || runtime_ns > period_ns {
                        return Err(err("host.cpu_share", "runtime must be positive and at most the period"));
                    }
                    if *period_ns < MIN_CPU_SLICE_NS || *period_ns > max_duration {
                        return Err(err(
                            "host.cpu_slice",
                            format!("must be from {} to {}", fmt_ns(MIN_CPU_SLICE_NS), fmt_ns(max_duration)),
                        ));
                    }
                }
                CpuAvailability::Trace { intervals_ns } => {
                    if intervals_ns.len() < 2 || intervals_ns.len() % 2 != 0 {
                        return Err(err("host.cpu_trace", "needs pairs of (on, off) durations"));
                    }
                    if intervals_ns.iter().step_by(2).all(|&on| on == 0) {
                        return Err(err("host.cpu_trace", "the CPU is never on"));
                    }
                    let cycle: u128 = intervals_ns.iter().map(|&v| v as u128).sum();
                    if cycle < MIN_CPU_SLICE_NS as u128 || cycle > max_duration as u128 {
                        return Err(err(
                            "host.cpu_trace",
                            format!(
                                "one pass of the intervals must last from {} to {}",
                                fmt_ns(MIN_CPU_SLICE_NS),
                                fmt_ns(max_duration)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The largest base RTT the link ever has (its RTT schedule included).
    pub fn max_rtt_ns(&self) -> u64 {
        self.link.rtt_schedule.iter().map(|s| s.rtt_ns).fold(self.link.rtt_ns, u64::max)
    }
}

/// A rate must be positive, and the bytes it carries over the run must fit the 64-bit
/// byte counters (and pacing's `bytes * NS_PER_SEC / rate` in `tcp/output.rs`).
fn check_rate(field: &str, bps: u64) -> Result<(), ConfigError> {
    if bps == 0 || bps > limits::MAX_RATE_BPS {
        return Err(err(field, format!("must be from 1 bit/s to {}", fmt_bps(limits::MAX_RATE_BPS))));
    }
    Ok(())
}

/// Formats nanoseconds for messages: "120 s", "1 ms", "536.871 s", "24.86 days".
pub fn fmt_ns(ns: u64) -> String {
    const DAY: u64 = 86_400 * NS_PER_SEC_U64;
    let units = [(DAY, "days"), (NS_PER_SEC_U64, "s"), (1_000_000, "ms"), (1_000, "us"), (1, "ns")];
    let &(unit, name) = units.iter().find(|(u, _)| ns >= *u).unwrap_or(&(1, "ns"));
    if ns.is_multiple_of(unit) {
        format!("{} {}", ns / unit, name)
    } else {
        let v = ns as f64 / unit as f64;
        format!("{} {}", format!("{v:.3}").trim_end_matches('0'), name)
    }
}

/// Formats a rate for messages: "10 Tbit/s", "1 bit/s".
pub fn fmt_bps(bps: u64) -> String {
    for (unit, name) in
        [(1_000_000_000_000, "Tbit/s"), (1_000_000_000, "Gbit/s"), (1_000_000, "Mbit/s"), (1_000, "kbit/s")]
    {
        if bps >= unit && bps.is_multiple_of(unit) {
            return format!("{} {}", bps / unit, name);
        }
    }
    format!("{bps} bit/s")
}

const NS_PER_SEC_U64: u64 = 1_000_000_000;

/// The ranges the simulator can run, each with the reason it ends where it does. The
/// checks in [`Scenario::validate`] and the generated table of `docs/input-ranges.md`
/// both come from these.
pub mod limits {
    /// A jiffy is `NS_PER_SEC / hz`; the kernel compares jiffies with 32-bit signed
    /// differences (`after`, `before`), so a run lasts at most 2^31 of them.
    pub fn max_duration_ns(hz: u32) -> u64 {
        if hz == 0 {
            return 0;
        }
        (1u64 << 31) * (super::NS_PER_SEC_U64 / hz as u64)
    }
    /// The recorder keeps a row per flow per interval; below a millisecond the rows
    /// measure single packets rather than rates.
    pub const MIN_SAMPLE_INTERVAL_NS: u64 = 1_000_000;
    /// Link, NIC and fixed pacing rates: 10 Tbit/s keeps bits x 1e9 (ns) within u128
    /// and the bytes of a maximal run within the 64-bit counters.
    pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
    /// `link.buffer = "Nbdp"` and `link.ecn_threshold`: a million BDPs is unbounded in
    /// practice (and the conversion to bytes saturates at u64::MAX beyond).
    pub const MAX_BDP_MULTIPLE: f64 = 1e6;
    /// Flow indices become capture port offsets (`observe/capture.rs`, i % 20000): more
    /// flows would share port pairs in a pcap.
    pub const MAX_FLOWS: usize = 20_000;
    /// `tcp.mss`: the smallest TCP/IPv4 MSS the kernel accepts (`TCP_MIN_MSS` 88 minus
    /// options is 64 here) up to a 9000-byte jumbo frame.
    pub const MIN_MSS: u32 = 64;
    pub const MAX_MSS: u32 = 9000;
    /// As the front end (`TCP_INIT_CWND` is 10); a u32 of segments either way.
    pub const MAX_INIT_CWND: u32 = 1_000_000;
    /// `srtt_us` is a u32 holding 8 x the smoothed RTT in microseconds.
    pub const MAX_PATH_RTT_NS: u64 = (u32::MAX as u64 >> 3) * 1_000;
    /// `65535 << TCP_MAX_WSCALE` (14): the largest window TCP can advertise.
    pub const MAX_WINDOW_BYTES: u64 = 65_535 << 14;
    pub const MAX_PACING_STRIDE: u32 = 1_000;
    /// cwnd is a u32 of segments; the kernel's own limit for snd_cwnd_clamp.
    pub const MAX_FIXED_CWND: u32 = 1_000_000_000;
    /// Repeated downloads number their connections in a u16 (`sim/world.rs`).
    pub const MAX_REPEAT: u32 = u16::MAX as u32;
    /// Shifts of 64-bit rates (`pacing_rate >> shift`) and of 64 KB (`tso_rtt_log`).
    pub const MAX_SHIFT: u32 = 31;
    /// A task's CPU time is the sum of these (times packets and bytes of a burst) in u64 ns.
    pub const MAX_CPU_COST_NS: u64 = 1_000_000_000;
    pub const MAX_CPU_COST_PER_BYTE_PS: u64 = 1_000_000_000;
    /// The CPU model schedules an event at each slice edge: a floor of a microsecond
    /// keeps them to a million per simulated second.
    pub const MIN_CPU_SLICE_NS: u64 = 1_000;
}

/// A CoDel time (ns) must fit the kernel's 32-bit codel clock (ns >> 10, signed).
const MAX_CODEL_NS: u64 = (i32::MAX as u64) << crate::net::aqm::codel::CODEL_SHIFT;

fn check_codel_times(field: &str, target: u64, interval: u64, ce: Option<u64>) -> Result<(), ConfigError> {
    for (name, v) in [("target", target), ("interval", interval)] {
        if v == 0 || v > MAX_CODEL_NS {
            return Err(err(
                format!("{field}.{name}"),
                format!("must be positive and at most {} s", MAX_CODEL_NS / 1_000_000_000),
            ));
        }
    }
    if ce.is_some_and(|c| c > MAX_CODEL_NS) {
        return Err(err(format!("{field}.ce_threshold"), "is too large"));
    }
    Ok(())
}

impl Scenario {
    /// Traces, schedules, the loss model and the AQM (the emulator checks these too).
    pub fn validate_link_models(&self) -> Result<(), ConfigError> {
        let l = &self.link;
        for (name, t) in [("link.trace", &l.trace), ("link.ack_trace", &l.ack_trace)] {
            if let Some(t) = t {
                crate::net::trace::Trace::from_ms(&t.opportunities_ms).map_err(|m| err(name, m))?;
            }
        }
        if l.trace.is_some() && !l.rate_schedule.is_empty() {
            return Err(err("link.rate_schedule", "cannot be combined with link.trace (the trace sets the capacity)"));
        }
        let mut prev = 0;
        for (i, s) in l.rate_schedule.iter().enumerate() {
            // Steps at or after the end of the run never take effect (a shortened run).
            if s.at_ns <= prev {
                return Err(err(
                    format!("link.rate_schedule[{i}].at"),
                    "steps must be after 0 and in increasing order",
                ));
            }
            check_rate(&format!("link.rate_schedule[{i}].rate"), s.rate_bps)?;
            prev = s.at_ns;
        }
        prev = 0;
        for (i, s) in l.rtt_schedule.iter().enumerate() {
            // Steps at or after the end of the run never take effect (a shortened run).
            if s.at_ns <= prev {
                return Err(err(format!("link.rtt_schedule[{i}].at"), "steps must be after 0 and in increasing order"));
            }
            if s.rtt_ns == 0 || s.rtt_ns > limits::MAX_PATH_RTT_NS {
                return Err(err(
                    format!("link.rtt_schedule[{i}].rtt"),
                    format!("must be positive and at most {}", fmt_ns(limits::MAX_PATH_RTT_NS)),
                ));
            }
            prev = s.at_ns;
        }
        if let Some(m) = &l.loss_model {
            if l.loss > 0.0 {
                return Err(err("link.loss_model", "cannot be combined with link.loss; give one of them"));
            }
            let g = m.params();
            for (name, v, lo_open) in [("p", g.p, true), ("r", g.r, true), ("h", g.h, false), ("k", g.k, false)] {
                let ok = v.is_finite() && v <= 1.0 && if lo_open { v > 0.0 } else { v >= 0.0 };
                if !ok {
                    let range = if lo_open { "(0, 1]" } else { "[0, 1]" };
                    return Err(err(format!("link.loss_model.{name}"), format!("must be a probability in {range}")));
                }
            }
        }
        match &l.aqm {
            Aqm::DropTail => {}
            Aqm::Codel(c) => {
                check_codel_times("link.aqm_params", c.target_ns, c.interval_ns, c.ce_threshold_ns)?;
                if c.limit_packets == 0 {
                    return Err(err("link.aqm_params.limit", "must be at least 1 packet"));
                }
            }
            Aqm::FqCodel(c) => {
                check_codel_times("link.aqm_params", c.target_ns, c.interval_ns, c.ce_threshold_ns)?;
                if c.limit_packets == 0 {
                    return Err(err("link.aqm_params.limit", "must be at least 1 packet"));
                }
                if !(1..=65536).contains(&c.flows) {
                    return Err(err("link.aqm_params.flows", "must be from 1 to 65536"));
                }
                if !(256..=1 << 20).contains(&c.quantum_bytes) {
                    return Err(err("link.aqm_params.quantum", "must be from 256 to 1048576 bytes"));
                }
                if c.memory_limit_bytes == 0 || c.memory_limit_bytes > 1 << 31 {
                    return Err(err("link.aqm_params.memory_limit", "must be from 1 byte to 2 GiB"));
                }
                if c.drop_batch == 0 {
                    return Err(err("link.aqm_params.drop_batch", "must be at least 1"));
                }
            }
        }
        Ok(())
    }
}

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
            Some(CpuAvailability::Periodic { period_ns, .. }) => 2.0 * self.duration_ns as f64 / *period_ns as f64,
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
    let rto_max = fmt_ns(crate::tcp::rtt::RTO_MAX.ns());
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
        ("tcp.mss", format!("{MIN_MSS} to {MAX_MSS} bytes")),
        ("tcp.init_cwnd", format!("1 to {MAX_INIT_CWND} segments")),
        ("tcp.hz", "a divisor of 1000000 (a jiffy is a whole number of microseconds, the unit usecs_to_jiffies divides by), e.g. 100, 250, 1000".into()),
        ("tcp.rto_min, tcp.rto_init", format!("positive, at most {rto_max} (TCP_RTO_MAX)")),
        ("tcp.delack_min", format!("0 to {rto_max}")),
        ("tcp.tsq_limit", "at least 1 byte".into()),
        ("tcp.pacing_shift, tcp.tso_rtt_log", format!("0 to {MAX_SHIFT}")),
        ("flows (in all)", format!("1 to {MAX_FLOWS}")),
        ("flows[i].cca", crate::cc::Algorithm::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")),
        ("flows[i].start", "before the end of the run".into()),
        ("flows[i].access_delay", format!("link.rtt + 2 x access_delay at most {}", fmt_ns(MAX_PATH_RTT_NS))),
        ("flows[i].size", "positive (none: bulk)".into()),
        ("flows[i].rwnd", format!("one MSS to {MAX_WINDOW_BYTES} bytes (65535 << 14, TCP's largest window)")),
        ("flows[i].pacing_stride", format!("1 to {MAX_PACING_STRIDE}")),
        ("flows[i].fixed_cwnd", format!("1 to {MAX_FIXED_CWND} segments")),
        ("flows[i].fixed_pacing_rate", rate),
        ("flows[i].repeat", format!("1 to {MAX_REPEAT} (connections are numbered in 16 bits); more than 1 needs a size")),
        ("host.rx_ring", "at least 1".into()),
        ("host.cost.per_* (ns)", format!("0 to {}", fmt_ns(MAX_CPU_COST_NS))),
        ("host.cost.per_byte", format!("0 to {MAX_CPU_COST_PER_BYTE_PS} ps")),
        ("host.cpu_share", "runtime positive, at most the period".into()),
        ("host.cpu_slice", format!("{} to the longest duration", fmt_ns(MIN_CPU_SLICE_NS))),
        ("host.cpu_trace", format!("(on, off) pairs, some on time, one pass from {} to the longest duration", fmt_ns(MIN_CPU_SLICE_NS))),
    ];
    rows.into_iter().map(|(f, a)| (f.to_string(), a)).collect()
}
