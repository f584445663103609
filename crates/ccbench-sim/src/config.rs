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
    Periodic { runtime_ns: u64, period_ns: u64, #[serde(default)] offset_ns: u64 },
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
        if self.duration_ns == 0 {
            return Err(err("duration", "must be positive"));
        }
        if self.link.trace.is_none() && self.link.rate_bps == 0 {
            return Err(err("link.rate", "must be positive"));
        }
        if self.link.rtt_ns == 0 {
            return Err(err("link.rtt", "must be positive"));
        }
        if !(0.0..1.0).contains(&self.link.loss) {
            return Err(err("link.loss", "must be in [0, 1)"));
        }
        if self.link.nic_rate_bps == 0 {
            return Err(err("link.nic_rate", "must be positive"));
        }
        match self.link.buffer {
            BufferLimit::Bdp(x) if !(x.is_finite() && x >= 0.0) => {
                return Err(err("link.buffer", "BDP multiple must be >= 0"))
            }
            _ => {}
        }
        self.validate_link_models()?;
        if self.flows.is_empty() {
            return Err(err("flows", "at least one flow is required"));
        }
        if self.tcp.mss < 64 || self.tcp.mss > 9000 {
            return Err(err("tcp.mss", "must be in 64..=9000"));
        }
        if self.tcp.hz == 0 || 1_000_000_000 % self.tcp.hz as u64 != 0 {
            return Err(err("tcp.hz", "must divide 1e9 (e.g. 100, 250, 1000)"));
        }
        for (i, f) in self.flows.iter().enumerate() {
            let alg = crate::cc::Algorithm::from_name(&f.cca).ok_or_else(|| {
                let names: Vec<_> = crate::cc::Algorithm::ALL.iter().map(|a| a.name()).collect();
                err(format!("flows[{i}].cca"), format!("unknown algorithm '{}'; allowed: {}", f.cca, names.join(", ")))
            })?;
            alg.instance(&f.params, crate::sim::rng::stream(0, "cc", 0)).map_err(|e| err(format!("flows[{i}].params.{}", e.name), e.message))?;
            if f.size_bytes == Some(0) {
                return Err(err(format!("flows[{i}].size"), "must be positive"));
            }
            if f.rwnd_bytes < self.tcp.mss as u64 {
                return Err(err(format!("flows[{i}].rwnd"), "must be at least one MSS"));
            }
            if !(1..=1000).contains(&f.pacing_stride) {
                return Err(err(format!("flows[{i}].pacing_stride"), "must be in 1..=1000"));
            }
            if f.fixed_cwnd == Some(0) {
                return Err(err(format!("flows[{i}].fixed_cwnd"), "must be at least 1 segment"));
            }
            if f.repeat == 0 || f.repeat > 1_000_000 {
                return Err(err(format!("flows[{i}].repeat"), "must be in 1..=1000000"));
            }
            if f.repeat > 1 && f.size_bytes.is_none() {
                return Err(err(format!("flows[{i}].repeat"), "repeats a download: give the flow a size"));
            }
            if f.fixed_pacing_rate_bps == Some(0) {
                return Err(err(format!("flows[{i}].fixed_pacing_rate"), "must be positive"));
            }
        }
        if self.tcp.tso_rtt_log > 31 {
            return Err(err("tcp.tso_rtt_log", "must be in 0..=31"));
        }
        if let Some(h) = &self.host {
            if h.rx_ring == 0 {
                return Err(err("host.rx_ring", "must be at least 1"));
            }
            match &h.cpu {
                CpuAvailability::Always => {}
                CpuAvailability::Periodic { runtime_ns, period_ns, .. } => {
                    if *runtime_ns == 0 || runtime_ns > period_ns {
                        return Err(err("host.cpu_share", "runtime must be positive and at most the period"));
                    }
                }
                CpuAvailability::Trace { intervals_ns } => {
                    if intervals_ns.len() < 2 || intervals_ns.len() % 2 != 0 {
                        return Err(err("host.cpu_trace", "needs pairs of (on, off) durations"));
                    }
                    if intervals_ns.iter().step_by(2).all(|&on| on == 0) {
                        return Err(err("host.cpu_trace", "the CPU is never on"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A CoDel time (ns) must fit the kernel's 32-bit codel clock (ns >> 10, signed).
const MAX_CODEL_NS: u64 = (i32::MAX as u64) << crate::net::aqm::codel::CODEL_SHIFT;

fn check_codel_times(field: &str, target: u64, interval: u64, ce: Option<u64>) -> Result<(), ConfigError> {
    for (name, v) in [("target", target), ("interval", interval)] {
        if v == 0 || v > MAX_CODEL_NS {
            return Err(err(format!("{field}.{name}"), format!("must be positive and at most {} s", MAX_CODEL_NS / 1_000_000_000)));
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
                return Err(err(format!("link.rate_schedule[{i}].at"), "steps must be after 0 and in increasing order"));
            }
            if s.rate_bps == 0 {
                return Err(err(format!("link.rate_schedule[{i}].rate"), "must be positive"));
            }
            prev = s.at_ns;
        }
        prev = 0;
        for (i, s) in l.rtt_schedule.iter().enumerate() {
            // Steps at or after the end of the run never take effect (a shortened run).
            if s.at_ns <= prev {
                return Err(err(format!("link.rtt_schedule[{i}].at"), "steps must be after 0 and in increasing order"));
            }
            if s.rtt_ns == 0 {
                return Err(err(format!("link.rtt_schedule[{i}].rtt"), "must be positive"));
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
