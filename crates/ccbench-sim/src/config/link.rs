//! What a scenario says of the link (its `[link]` table, in base units): each value's
//! field and default, its check, and what it allows as docs/input-ranges.md lists it.
//! The front end's schema takes the defaults from here (`config::schema_facts`).

use super::aqm::Aqm;
use super::validate::check_rate;
use super::{err, fmt_bps, fmt_ns, ConfigError};
use crate::config::limits::{MAX_BDP_MULTIPLE, MAX_PATH_RTT_NS, MAX_RATE_BPS};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Bottleneck rate in bit/s.
    pub rate_bps: u64,
    /// Base round-trip propagation delay of the bottleneck path; half each way.
    pub rtt_ns: u64,
    #[serde(default = "default_buffer")]
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
    /// Drop-tail limit of the ACK trace's queue (BDP multiples of its own mean rate);
    /// None = unlimited, as Mahimahi's default queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_buffer: Option<BufferLimit>,
    /// The reverse direction's bottleneck (`[link.reverse]`, the uplink): the data of
    /// flows going up and the ACKs of flows going down queue there together, in one
    /// queue. `ack_trace` with `reverse_buffer` is the same link in an older form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<ReverseLinkConfig>,
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
    /// The path's MTU at the bottleneck (IPv4 packet bytes); None: every packet fits.
    /// A larger data packet is dropped there and answered with ICMP "fragmentation
    /// needed", as a router does for a packet with DF set (Linux sets DF on TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu_bytes: Option<u32>,
    /// Packets over `mtu_bytes` vanish without the ICMP (a path that filters it: a
    /// path-MTU black hole, RFC 2923 2.1).
    #[serde(default, skip_serializing_if = "is_false")]
    pub mtu_black_hole: bool,
}

/// The reverse direction's bottleneck: a rate or a trace, behind its own queue.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReverseLinkConfig {
    /// Its rate in bit/s (unused with a trace, whose mean stands in for it).
    #[serde(default)]
    pub rate_bps: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceConfig>,
    /// Drop-tail limit, BDP multiples of its own rate x the base RTT (as an uplink's
    /// buffer is sized); None: no limit (an ACK trace's default, as Mahimahi's queue).
    #[serde(default = "default_reverse_buffer")]
    pub buffer: Option<BufferLimit>,
    /// Random loss of data packets arriving at it.
    #[serde(default)]
    pub loss: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_model: Option<LossModelConfig>,
    #[serde(default, skip_serializing_if = "Aqm::is_drop_tail")]
    pub aqm: Aqm,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_threshold: Option<BufferLimit>,
}

fn default_reverse_buffer() -> Option<BufferLimit> {
    Some(default_buffer())
}

impl ReverseLinkConfig {
    /// A drop-tail link at `rate_bps` with a buffer of `buffer`.
    pub fn rate(rate_bps: u64, buffer: BufferLimit) -> ReverseLinkConfig {
        ReverseLinkConfig {
            rate_bps,
            trace: None,
            buffer: Some(buffer),
            loss: 0.0,
            loss_model: None,
            aqm: Aqm::DropTail,
            ecn_threshold: None,
        }
    }

    /// The rate its BDP-relative sizes refer to: the trace's mean, or `rate_bps`.
    pub fn reference_rate_bps(&self) -> u64 {
        self.trace.as_ref().map_or(self.rate_bps, |t| t.mean_bps())
    }

    /// Its values, named as `link.reverse.*`.
    fn check(&self) -> Result<(), ConfigError> {
        match &self.trace {
            Some(t) => crate::net::trace::Trace::from_ms(&t.opportunities_ms)
                .map(|_| ())
                .map_err(|m| err("link.reverse.trace", m))?,
            None if self.rate_bps == 0 => {
                return Err(err("link.reverse.rate", "is required (or give link.reverse.trace)"));
            }
            None => check_rate("link.reverse.rate", self.rate_bps)?,
        }
        if self.trace.is_some() && self.rate_bps != 0 {
            return Err(err("link.reverse.rate", "give rate or trace, not both (a trace sets the capacity)"));
        }
        check_bdp_multiple("link.reverse.buffer", self.buffer)?;
        check_bdp_multiple("link.reverse.ecn_threshold", self.ecn_threshold)?;
        check_loss("link.reverse", self.loss, self.loss_model.as_ref())?;
        self.aqm.check_as("link.reverse.aqm")
    }
}

fn is_false(b: &bool) -> bool {
    !b
}

/// `ip_rt_min_pmtu`: Linux takes no path MTU below it from an ICMP (it stops setting
/// DF instead, and lets routers fragment, which is not modelled).
pub const MIN_PMTU: u32 = 552;

/// One BDP: a common rule of thumb for a drop-tail buffer.
fn default_buffer() -> BufferLimit {
    BufferLimit::Bdp(1.0)
}

fn default_nic_rate() -> u64 {
    10_000_000_000
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

/// Drop-tail limit of a queue.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum BufferLimit {
    Bytes(u64),
    Packets(u64),
    /// Multiple of the link's BDP (rate x base RTT), in bytes.
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
            reverse_buffer: None,
            reverse: None,
            rate_schedule: Vec::new(),
            rtt_schedule: Vec::new(),
            loss_model: None,
            aqm: Aqm::DropTail,
            mtu_bytes: None,
            mtu_black_hole: false,
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

    /// The reverse direction's bottleneck, in either form: `[link.reverse]`, or an ACK
    /// trace behind `reverse_buffer` (no limit without one). None: a delay line.
    pub fn reverse_link(&self) -> Option<ReverseLinkConfig> {
        if let Some(r) = &self.reverse {
            return Some(r.clone());
        }
        let trace = self.ack_trace.clone()?;
        Some(ReverseLinkConfig {
            trace: Some(trace),
            buffer: self.reverse_buffer,
            ..ReverseLinkConfig::rate(0, BufferLimit::Packets(0))
        })
    }

    /// The defaults of every value but the rate and the RTT, which have none (the AQM's
    /// by its name).
    pub fn defaults() -> serde_json::Value {
        let link: LinkConfig = serde_json::from_value(serde_json::json!({"rate_bps": 1, "rtt_ns": 1}))
            .expect("rate and rtt are the only required fields");
        let mut defaults = serde_json::to_value(link).expect("plain fields serialize");
        let table = defaults.as_object_mut().expect("a table");
        table.remove("rate_bps");
        table.remove("rtt_ns");
        table.insert("aqm".into(), Aqm::default().name().into());
        defaults
    }

    /// Every value within what the simulator runs, the first that is not named as the
    /// `[link]` table names it.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.trace.is_none() {
            check_rate("link.rate", self.rate_bps)?;
        }
        if self.rtt_ns == 0 || self.rtt_ns > MAX_PATH_RTT_NS {
            return Err(err(
                "link.rtt",
                format!(
                    "must be positive and at most {} (the kernel's srtt_us holds 8 x the RTT in 32 bits)",
                    fmt_ns(MAX_PATH_RTT_NS)
                ),
            ));
        }
        check_rate("link.nic_rate", self.nic_rate_bps)?;
        check_bdp_multiple("link.buffer", Some(self.buffer))?;
        check_bdp_multiple("link.ecn_threshold", self.ecn_threshold)?;
        if self.mtu_bytes.is_some_and(|m| !(MIN_PMTU..=u16::MAX as u32).contains(&m)) {
            return Err(err("link.mtu", MTU_ALLOWED));
        }
        if self.mtu_black_hole && self.mtu_bytes.is_none() {
            return Err(err("link.mtu_black_hole", "needs link.mtu (the size past which packets vanish)"));
        }
        self.check_models()
    }

    /// Traces, schedules, the loss model and the AQM (the emulator checks these too).
    pub fn check_models(&self) -> Result<(), ConfigError> {
        for (name, t) in [("link.trace", &self.trace), ("link.ack_trace", &self.ack_trace)] {
            if let Some(t) = t {
                crate::net::trace::Trace::from_ms(&t.opportunities_ms).map_err(|m| err(name, m))?;
            }
        }
        if self.reverse_buffer.is_some() && self.ack_trace.is_none() {
            return Err(err(
                "link.reverse_buffer",
                "only with link.ack_trace (without it the ACK direction is a delay line, which has no queue)",
            ));
        }
        check_bdp_multiple("link.reverse_buffer", self.reverse_buffer)?;
        if self.trace.is_some() && !self.rate_schedule.is_empty() {
            return Err(err("link.rate_schedule", "cannot be combined with link.trace (the trace sets the capacity)"));
        }
        self.check_schedules()?;
        check_loss("link", self.loss, self.loss_model.as_ref())?;
        if let Some(r) = &self.reverse {
            if self.ack_trace.is_some() {
                return Err(err(
                    "link.reverse",
                    "cannot be combined with link.ack_trace (give the trace as link.reverse.trace)",
                ));
            }
            r.check()?;
        }
        self.aqm.check()
    }

    fn check_schedules(&self) -> Result<(), ConfigError> {
        let mut prev = 0;
        for (i, s) in self.rate_schedule.iter().enumerate() {
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
        for (i, s) in self.rtt_schedule.iter().enumerate() {
            if s.at_ns <= prev {
                return Err(err(format!("link.rtt_schedule[{i}].at"), "steps must be after 0 and in increasing order"));
            }
            if s.rtt_ns == 0 || s.rtt_ns > MAX_PATH_RTT_NS {
                return Err(err(
                    format!("link.rtt_schedule[{i}].rtt"),
                    format!("must be positive and at most {}", fmt_ns(MAX_PATH_RTT_NS)),
                ));
            }
            prev = s.at_ns;
        }
        Ok(())
    }

    /// What each `[link]` value allows, as [`LinkConfig::check`] checks it (the AQM's
    /// parameters come from their ranges): (TOML key, what is allowed).
    pub fn allowed() -> Vec<(&'static str, String)> {
        let rate = format!("1 bit/s to {}", fmt_bps(MAX_RATE_BPS));
        let bdp = format!("bytes, packets, or 0 to {MAX_BDP_MULTIPLE} x BDP");
        let last = crate::net::trace::MAX_TIMESTAMP_MS;
        vec![
            ("link.rate", rate.clone()),
            (
                "link.rtt",
                format!("positive, at most {} (srtt_us holds 8 x the RTT in 32 bits)", fmt_ns(MAX_PATH_RTT_NS)),
            ),
            ("link.buffer", bdp.clone()),
            ("link.loss", "0 <= loss < 1".into()),
            ("link.nic_rate", rate.clone()),
            ("link.ecn_threshold", bdp),
            (
                "link.trace, link.ack_trace",
                format!("non-decreasing millisecond timestamps, the last one from 1 to {last}"),
            ),
            (
                "link.reverse_buffer",
                format!("with link.ack_trace only: bytes, packets, or 0 to {MAX_BDP_MULTIPLE} x the ACK link's BDP"),
            ),
            ("link.rate_schedule[i].at", "after 0, increasing".into()),
            ("link.rate_schedule[i].rate", rate),
            ("link.rtt_schedule[i].at", "after 0, increasing".into()),
            ("link.rtt_schedule[i].rtt", format!("positive, at most {}", fmt_ns(MAX_PATH_RTT_NS))),
            ("link.loss_model.p, .r", "0 < p <= 1 (not with link.loss)".into()),
            ("link.loss_model.h, .k", "0 <= p <= 1".into()),
            ("link.aqm", Aqm::all().map(|a| a.name()).join(", ")),
            ("link.mtu", MTU_ALLOWED.into()),
            ("link.mtu_black_hole", "true or false; true needs link.mtu".into()),
        ]
    }
}

const MTU_ALLOWED: &str =
    "552 to 65535 bytes (ip_rt_min_pmtu, below which Linux lets routers fragment; an IPv4 packet's length)";

/// A loss probability and a loss model, not both, each within its range (`prefix`:
/// `link` or `link.reverse`).
fn check_loss(prefix: &str, loss: f64, model: Option<&LossModelConfig>) -> Result<(), ConfigError> {
    if !(0.0..1.0).contains(&loss) {
        return Err(err(format!("{prefix}.loss"), "must be in [0, 1)"));
    }
    let Some(m) = model else { return Ok(()) };
    if loss > 0.0 {
        return Err(err(
            format!("{prefix}.loss_model"),
            format!("cannot be combined with {prefix}.loss; give one of them"),
        ));
    }
    let g = m.params();
    for (name, v, lo_open) in [("p", g.p, true), ("r", g.r, true), ("h", g.h, false), ("k", g.k, false)] {
        let ok = v.is_finite() && v <= 1.0 && if lo_open { v > 0.0 } else { v >= 0.0 };
        if !ok {
            let range = if lo_open { "(0, 1]" } else { "[0, 1]" };
            return Err(err(format!("{prefix}.loss_model.{name}"), format!("must be a probability in {range}")));
        }
    }
    Ok(())
}

/// A BDP multiple must be finite and at most [`MAX_BDP_MULTIPLE`].
fn check_bdp_multiple(field: &str, limit: Option<BufferLimit>) -> Result<(), ConfigError> {
    match limit {
        Some(BufferLimit::Bdp(x)) if !(x.is_finite() && (0.0..=MAX_BDP_MULTIPLE).contains(&x)) => {
            Err(err(field, format!("BDP multiple must be from 0 to {MAX_BDP_MULTIPLE}")))
        }
        _ => Ok(()),
    }
}
