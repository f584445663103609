//! The link summary's figures that follow from the scenario alone.

use crate::config::{Aqm, BufferLimit, LossModelConfig, Scenario};
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
        let (buffer_bytes, buffer_packets) = match (&link.aqm, link.buffer) {
            (Aqm::Codel(c), _) => (None, Some(c.limit_packets as u64)),
            (Aqm::FqCodel(c), _) => (None, Some(c.limit_packets as u64)),
            (Aqm::DropTail, BufferLimit::Bytes(b)) => (Some(b), None),
            (Aqm::DropTail, BufferLimit::Packets(n)) => (None, Some(n)),
            (Aqm::DropTail, BufferLimit::Bdp(x)) => (Some((x * s.bdp_bytes() as f64).round() as u64), None),
        };
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
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The effective AQM parameters, in the summary's units.
fn aqm_summary(aqm: &Aqm) -> Option<serde_json::Value> {
    // CoDel's own parameters, which fq_codel's per-flow queues share.
    let codel = |name: &str, target_ns: u64, interval_ns: u64, limit: u32, ecn: bool, ce: Option<u64>, mtu: u32| {
        json!({
            "name": name,
            "target_ms": ms(target_ns),
            "interval_ms": ms(interval_ns),
            "limit_packets": limit,
            "ecn": ecn,
            "ce_threshold_ms": ce.map(ms),
            "mtu_bytes": mtu,
        })
    };
    match aqm {
        Aqm::DropTail => None,
        Aqm::Codel(c) => {
            Some(codel("codel", c.target_ns, c.interval_ns, c.limit_packets, c.ecn, c.ce_threshold_ns, c.mtu_bytes))
        }
        Aqm::FqCodel(c) => {
            let mut v =
                codel("fq_codel", c.target_ns, c.interval_ns, c.limit_packets, c.ecn, c.ce_threshold_ns, c.mtu_bytes);
            v["quantum_bytes"] = json!(c.quantum_bytes);
            v["flows"] = json!(c.flows);
            v["memory_limit_bytes"] = json!(c.memory_limit_bytes);
            v["drop_batch"] = json!(c.drop_batch);
            Some(v)
        }
    }
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
