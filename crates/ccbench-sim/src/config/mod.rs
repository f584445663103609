//! The resolved scenario the simulator runs: every value in base units (ns, bit/s,
//! bytes). The Python front end parses human units and hands this over as JSON.
//!
//! Each table declares its values once, with their defaults and ranges: `[link]` in
//! `link.rs` (its AQMs in `aqm.rs`), `[host]` in `host/config.rs`, `[tcp]` and
//! `[[flows]]` in `tcp/config.rs`. `facts.rs` hands them to the front end's schema and
//! to docs/input-ranges.md.

use serde::{Deserialize, Serialize};

pub use crate::arrivals::{ArrivalsConfig, Sizes};
pub use crate::host::config::{CpuAvailability, CpuCost, HostConfig};
pub use crate::net::Ecn;
pub use crate::tcp::config::{Connect, Direction};
pub use crate::tcp::{FlowConfig, TcpConfig};
pub use crate::udp::{OnOff, UdpFlowConfig};
pub use aqm::{Aqm, CodelConfig, FqCodelConfig, ETH_MTU};
pub use link::{BufferLimit, LinkConfig, LossModelConfig, RateStep, ReverseLinkConfig, RttStep, TraceConfig, MIN_PMTU};

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
    /// UDP flows, which do not respond to the network; their lanes follow the TCP
    /// flows'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udp: Vec<UdpFlowConfig>,
    /// Groups of connections arriving open-loop; their lanes follow the UDP flows'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals: Vec<ArrivalsConfig>,
}

impl Scenario {
    /// The path's lanes: the TCP flows', then the UDP flows'.
    pub fn lanes(&self) -> usize {
        self.flows.len() + self.udp.len()
    }

    /// Which way lane `i`'s data goes (down past the flows).
    pub fn lane_direction(&self, i: usize) -> Direction {
        match self.flows.get(i) {
            Some(f) => f.direction,
            None => self.udp.get(i - self.flows.len()).map_or(Direction::Down, |u| u.direction),
        }
    }

    /// Lane `i`'s access delay (none past the flows).
    pub fn lane_access_ns(&self, i: usize) -> u64 {
        match self.flows.get(i) {
            Some(f) => f.access_delay_ns,
            None => self.udp.get(i - self.flows.len()).map_or(0, |u| u.access_delay_ns),
        }
    }
}

fn default_interval() -> u64 {
    100_000_000
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

pub(crate) fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { field: field.into(), message: message.into() }
}

mod aqm;
pub mod build;
mod estimate;
mod facts;
mod host;
mod link;
mod validate;

pub use estimate::*;
pub use facts::{input_ranges, schema_facts};
pub use validate::{describe, fmt_bps, fmt_ns, limits};
