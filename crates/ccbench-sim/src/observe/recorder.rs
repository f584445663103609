//! The time-series sink: one row per flow (and one for the bottleneck) per interval, and
//! one per move of an algorithm's state machines.

use super::series::{Series, Table, Values};
use crate::cc::{Internals, Transition};
use std::collections::BTreeMap;

/// One flow's state at a sampling instant.
#[derive(Clone, Debug, Default)]
pub struct FlowRow {
    pub time_s: f64,
    pub flow: u32,
    pub goodput_bps: f64,
    pub throughput_bps: f64,
    pub cwnd: f64,
    pub ssthresh: f64,
    pub inflight: f64,
    pub inflight_bytes: f64,
    /// The receive window the peer last advertised (`snd_wnd`).
    pub rwnd_bytes: f64,
    pub pacing_rate_bps: f64,
    pub delivery_rate_bps: f64,
    pub srtt_ms: f64,
    pub min_rtt_ms: f64,
    pub retransmits: f64,
    pub lost: f64,
    pub ca_state: f64,
    pub internals: Internals,
}

#[derive(Clone, Debug, Default)]
pub struct LinkRow {
    pub time_s: f64,
    pub queue_bytes: f64,
    pub queue_packets: f64,
    pub utilization: f64,
    pub throughput_bps: f64,
    /// Capacity offered during the interval (the rate, or a trace's opportunities).
    pub capacity_bps: f64,
    pub drops: f64,
}

#[derive(Default)]
pub struct Recorder {
    flows: Vec<FlowRow>,
    link: Vec<LinkRow>,
    states: Vec<(u32, Transition)>,
}

impl Recorder {
    pub fn flow(&mut self, row: FlowRow) {
        self.flows.push(row);
    }
    pub fn link(&mut self, row: LinkRow) {
        self.link.push(row);
    }
    pub fn transition(&mut self, flow: u32, t: Transition) {
        self.states.push((flow, t));
    }

    pub fn finish(self) -> Series {
        let f = &self.flows;
        let col = |name: &str, get: fn(&FlowRow) -> f64| (name.to_string(), Values::F64(f.iter().map(get).collect()));
        let mut flows = Table {
            columns: vec![
                col("time_s", |r| r.time_s),
                ("flow".to_string(), Values::U32(f.iter().map(|r| r.flow).collect())),
                col("goodput_bps", |r| r.goodput_bps),
                col("throughput_bps", |r| r.throughput_bps),
                col("cwnd", |r| r.cwnd),
                col("ssthresh", |r| r.ssthresh),
                col("inflight", |r| r.inflight),
                col("inflight_bytes", |r| r.inflight_bytes),
                col("rwnd_bytes", |r| r.rwnd_bytes),
                col("pacing_rate_bps", |r| r.pacing_rate_bps),
                col("delivery_rate_bps", |r| r.delivery_rate_bps),
                col("srtt_ms", |r| r.srtt_ms),
                col("min_rtt_ms", |r| r.min_rtt_ms),
                col("retransmits", |r| r.retransmits),
                col("lost", |r| r.lost),
                col("ca_state", |r| r.ca_state),
            ],
        };
        // Algorithm internals: the union of names, NaN where a flow has no such value.
        let mut names: BTreeMap<&str, ()> = BTreeMap::new();
        for r in f {
            for k in r.internals.keys() {
                names.insert(k, ());
            }
        }
        for name in names.keys() {
            let v = f.iter().map(|r| r.internals.get(name).copied().unwrap_or(f64::NAN)).collect();
            flows.columns.push((format!("cc_{name}"), Values::F64(v)));
        }
        let l = &self.link;
        let lcol = |name: &str, get: fn(&LinkRow) -> f64| (name.to_string(), Values::F64(l.iter().map(get).collect()));
        let link = Table {
            columns: vec![
                lcol("time_s", |r| r.time_s),
                lcol("queue_bytes", |r| r.queue_bytes),
                lcol("queue_packets", |r| r.queue_packets),
                lcol("utilization", |r| r.utilization),
                lcol("throughput_bps", |r| r.throughput_bps),
                lcol("drops", |r| r.drops),
                lcol("capacity_bps", |r| r.capacity_bps),
            ],
        };
        // Moves are taken flow by flow at each sample: put them in time order.
        let mut s = self.states;
        s.sort_by_key(|&(flow, t)| (t.at, flow));
        let states = Table {
            columns: vec![
                ("time_s".to_string(), Values::F64(s.iter().map(|(_, t)| t.at.secs_f64()).collect())),
                ("flow".to_string(), Values::U32(s.iter().map(|&(f, _)| f).collect())),
                ("machine".to_string(), Values::Str(s.iter().map(|(_, t)| t.machine).collect())),
                ("state".to_string(), Values::Str(s.iter().map(|(_, t)| t.state).collect())),
            ],
        };
        Series { flows, link, states }
    }
}
