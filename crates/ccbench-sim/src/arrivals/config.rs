//! What a scenario says of a group of arrivals (core JSON `arrivals[k]`, the front end's
//! `[[arrivals]]`).

use super::Sizes;
use crate::tcp::config::{Connect, Direction, FlowConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalsConfig {
    pub cca: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Direction::is_down")]
    pub direction: Direction,
    /// Poisson arrivals at this many connections a second...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// ... or at the rate whose transfers offer this fraction of the link's rate (its
    /// direction's) in payload ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// ... or at these instants (ns from the run's start, non-decreasing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times_ns: Option<Vec<u64>>,
    pub sizes: Sizes,
    /// Poisson arrivals start here (the first comes one gap later).
    #[serde(default)]
    pub start_ns: u64,
    /// None arrive from here on (None: the run's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ns: Option<u64>,
    /// Who opens each connection: the sender (it connects, then writes) by default.
    #[serde(default = "sender_connects")]
    pub connect: Connect,
    #[serde(default)]
    pub access_delay_ns: u64,
}

fn sender_connects() -> Connect {
    Connect::Sender
}

impl ArrivalsConfig {
    /// Poisson arrivals of `cca` at `rate_per_s`, of sizes `sizes`, going down.
    pub fn poisson(cca: &str, rate_per_s: f64, sizes: Sizes) -> ArrivalsConfig {
        ArrivalsConfig {
            cca: cca.into(),
            params: BTreeMap::new(),
            direction: Direction::Down,
            rate_per_s: Some(rate_per_s),
            load: None,
            times_ns: None,
            sizes,
            start_ns: 0,
            stop_ns: None,
            connect: Connect::Sender,
            access_delay_ns: 0,
        }
    }

    /// A connection of this group carrying `size` bytes, as a flow.
    pub fn flow(&self, size: u64) -> FlowConfig {
        FlowConfig {
            params: self.params.clone(),
            direction: self.direction,
            size_bytes: Some(size),
            connect: self.connect,
            access_delay_ns: self.access_delay_ns,
            ..FlowConfig::bulk(&self.cca)
        }
    }
}
