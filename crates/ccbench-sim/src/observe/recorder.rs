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
    /// The forward bottleneck's figures.
    pub down: DirRow,
    /// The reverse bottleneck's figures, when the path has one (columns `up_*`).
    pub up: Option<DirRow>,
}

/// A bottleneck's figures over a sampled interval.
#[derive(Clone, Copy, Debug, Default)]
pub struct DirRow {
    pub queue_bytes: f64,
    pub queue_packets: f64,
    pub utilization: f64,
    pub throughput_bps: f64,
    /// Capacity offered during the interval (the rate, or a trace's opportunities).
    pub capacity_bps: f64,
    pub drops: f64,
}

/// How a column's values come out of a row.
pub enum Column<R> {
    F64(fn(&R) -> f64),
    U32(fn(&R) -> u32),
}

/// A table's columns in order: each name and how a row gives its value.
pub type Columns<R, const N: usize> = [(&'static str, Column<R>); N];

/// The flow table's columns, before the algorithms' internals (`cc_<name>`).
pub const FLOW_COLUMNS: Columns<FlowRow, 16> = [
    ("time_s", Column::F64(|r| r.time_s)),
    ("flow", Column::U32(|r| r.flow)),
    ("goodput_bps", Column::F64(|r| r.goodput_bps)),
    ("throughput_bps", Column::F64(|r| r.throughput_bps)),
    ("cwnd", Column::F64(|r| r.cwnd)),
    ("ssthresh", Column::F64(|r| r.ssthresh)),
    ("inflight", Column::F64(|r| r.inflight)),
    ("inflight_bytes", Column::F64(|r| r.inflight_bytes)),
    ("rwnd_bytes", Column::F64(|r| r.rwnd_bytes)),
    ("pacing_rate_bps", Column::F64(|r| r.pacing_rate_bps)),
    ("delivery_rate_bps", Column::F64(|r| r.delivery_rate_bps)),
    ("srtt_ms", Column::F64(|r| r.srtt_ms)),
    ("min_rtt_ms", Column::F64(|r| r.min_rtt_ms)),
    ("retransmits", Column::F64(|r| r.retransmits)),
    ("lost", Column::F64(|r| r.lost)),
    ("ca_state", Column::F64(|r| r.ca_state)),
];

/// The link table's columns.
pub const LINK_COLUMNS: Columns<LinkRow, 7> = [
    ("time_s", Column::F64(|r| r.time_s)),
    ("queue_bytes", Column::F64(|r| r.down.queue_bytes)),
    ("queue_packets", Column::F64(|r| r.down.queue_packets)),
    ("utilization", Column::F64(|r| r.down.utilization)),
    ("throughput_bps", Column::F64(|r| r.down.throughput_bps)),
    ("drops", Column::F64(|r| r.down.drops)),
    ("capacity_bps", Column::F64(|r| r.down.capacity_bps)),
];

/// The reverse bottleneck's columns in the link table, when the path has one.
pub const UP_COLUMNS: Columns<DirRow, 6> = [
    ("up_queue_bytes", Column::F64(|r| r.queue_bytes)),
    ("up_queue_packets", Column::F64(|r| r.queue_packets)),
    ("up_utilization", Column::F64(|r| r.utilization)),
    ("up_throughput_bps", Column::F64(|r| r.throughput_bps)),
    ("up_drops", Column::F64(|r| r.drops)),
    ("up_capacity_bps", Column::F64(|r| r.capacity_bps)),
];

/// The names of `columns`, in order.
pub fn column_names<R>(columns: &[(&'static str, Column<R>)]) -> Vec<&'static str> {
    columns.iter().map(|(name, _)| *name).collect()
}

/// `rows` as a table of `columns`.
fn table<R>(rows: &[R], columns: &[(&'static str, Column<R>)]) -> Table {
    let column = |get: &Column<R>| match get {
        Column::F64(f) => Values::F64(rows.iter().map(f).collect()),
        Column::U32(f) => Values::U32(rows.iter().map(f).collect()),
    };
    Table { columns: columns.iter().map(|(name, get)| (name.to_string(), column(get))).collect() }
}

/// The link's samples as the simulator's link table.
pub fn link_table(rows: &[LinkRow]) -> Table {
    let mut t = table(rows, &LINK_COLUMNS);
    if rows.first().is_some_and(|r| r.up.is_some()) {
        let up: Vec<DirRow> = rows.iter().map(|r| r.up.unwrap_or_default()).collect();
        t.columns.extend(table(&up, &UP_COLUMNS).columns);
    }
    t
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
        let mut flows = table(f, &FLOW_COLUMNS);
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
        let link = link_table(&self.link);
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
        Series { flows, link, states, connections: Table::default() }
    }
}
