//! The link summary's figures that follow from the scenario alone.

use crate::config::{Aqm, BufferLimit, LossModelConfig, ReverseLinkConfig, Scenario};
use serde::Serialize;
use serde_json::json;

/// The link summary's figures that follow from the scenario alone, not from a run: the
/// same for every engine, and built here for all of them (the kernel and VM engines
/// through `_core.configured_link`).
#[derive(Clone, Debug, Serialize)]
pub struct ConfiguredLink {
    pub rtt_ms: f64,
    /// The queue's limit: drop-tail's buffer in bytes or packets, an AQM's in packets.
    pub buffer_bytes: Option<u64>,
    pub buffer_packets: Option<u64>,
    pub bdp_bytes: u64,
    pub trace_mean_bps: Option<u64>,
    /// The effective AQM parameters, in the summary's units.
    pub aqm: Option<serde_json::Value>,
    /// The loss model's parameters and what they imply in the long run.
    pub loss_model: Option<serde_json::Value>,
}

impl ConfiguredLink {
    pub fn of(s: &Scenario) -> ConfiguredLink {
        let link = &s.link;
        let (buffer_bytes, buffer_packets) = limits(&link.aqm, Some(link.buffer), s.bdp_bytes());
        ConfiguredLink {
            rtt_ms: link.rtt_ns as f64 / 1e6,
            buffer_bytes,
            buffer_packets,
            bdp_bytes: s.bdp_bytes(),
            trace_mean_bps: link.trace.as_ref().map(|t| t.mean_bps()),
            aqm: aqm_summary(&link.aqm),
            loss_model: link.loss_model.as_ref().map(loss_model_summary),
        }
    }

    /// The reverse bottleneck's (`r`), whose BDP is its own rate x the base RTT.
    pub fn of_reverse(s: &Scenario, r: &ReverseLinkConfig) -> ConfiguredLink {
        let bdp_bytes = (r.reference_rate_bps() as u128 * s.link.rtt_ns as u128 / 8 / 1_000_000_000) as u64;
        let (buffer_bytes, buffer_packets) = limits(&r.aqm, r.buffer, bdp_bytes);
        ConfiguredLink {
            rtt_ms: s.link.rtt_ns as f64 / 1e6,
            buffer_bytes,
            buffer_packets,
            bdp_bytes,
            trace_mean_bps: r.trace.as_ref().map(|t| t.mean_bps()),
            aqm: aqm_summary(&r.aqm),
            loss_model: r.loss_model.as_ref().map(loss_model_summary),
        }
    }
}

/// The queue's limit, in bytes or packets: drop-tail's `buffer` (none: no limit), an
/// AQM's packets.
fn limits(aqm: &Aqm, buffer: Option<BufferLimit>, bdp_bytes: u64) -> (Option<u64>, Option<u64>) {
    match (aqm, buffer) {
        (Aqm::Codel(c), _) => (None, Some(c.limit_packets as u64)),
        (Aqm::FqCodel(c), _) => (None, Some(c.limit_packets as u64)),
        (Aqm::DropTail, Some(BufferLimit::Bytes(b))) => (Some(b), None),
        (Aqm::DropTail, Some(BufferLimit::Packets(n))) => (None, Some(n)),
        (Aqm::DropTail, Some(BufferLimit::Bdp(x))) => (Some((x * bdp_bytes as f64).round() as u64), None),
        (Aqm::DropTail, None) => (None, None),
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The AQM's name and effective parameters, in the summary's units (times in ms).
fn aqm_summary(aqm: &Aqm) -> Option<serde_json::Value> {
    let mut params = aqm.params()?;
    let table = params.as_object_mut().expect("parameters are a table");
    let times: Vec<String> = table.keys().filter(|k| k.ends_with("_ns")).cloned().collect();
    for field in times {
        let ns = table.remove(&field).expect("listed").as_u64();
        table.insert(field.replace("_ns", "_ms"), json!(ns.map(ms)));
    }
    table.insert("name".into(), aqm.name().into());
    Some(params)
}

/// The loss model's parameters and what they imply in the long run.
fn loss_model_summary(m: &LossModelConfig) -> serde_json::Value {
    let g = m.params();
    json!({
        "type": "gilbert-elliott",
        "p": g.p,
        "r": g.r,
        "h": g.h,
        "k": g.k,
        "mean_loss": g.mean_loss(),
        "mean_bad_run_packets": g.mean_bad_run(),
    })
}
