//! What a scenario says of a UDP flow (core JSON `udp[k]`; `[[flows]]` with
//! `kind = "udp"` in the front end).

use crate::config::RateStep;
use crate::tcp::config::Direction;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpFlowConfig {
    #[serde(default, skip_serializing_if = "Direction::is_down")]
    pub direction: Direction,
    #[serde(default)]
    pub start_ns: u64,
    /// When it stops sending; None: at the end of the run.
    #[serde(default)]
    pub stop_ns: Option<u64>,
    /// Its sending rate while on, in bit/s of IP packets (payload and 28 header bytes).
    pub rate_bps: u64,
    /// From each step's time on, it sends at the step's rate (0: silent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_schedule: Vec<RateStep>,
    /// Payload bytes of each datagram.
    #[serde(default = "default_payload")]
    pub payload_bytes: u32,
    /// On and off periods, starting on at `start_ns`; None: always on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_off: Option<OnOff>,
    /// Extra one-way delay on its access link, each way, as a TCP flow's.
    #[serde(default)]
    pub access_delay_ns: u64,
}

/// Periods of sending and of silence: fixed, or drawn from exponential distributions
/// of these means (an on/off source of the traffic literature).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOff {
    pub on_ns: u64,
    pub off_ns: u64,
    #[serde(default)]
    pub exponential: bool,
}

/// A 1500-byte IP packet.
fn default_payload() -> u32 {
    1472
}

impl UdpFlowConfig {
    /// A constant-rate flow from time zero, going down, of 1500-byte packets.
    pub fn constant(rate_bps: u64) -> UdpFlowConfig {
        UdpFlowConfig {
            direction: Direction::Down,
            start_ns: 0,
            stop_ns: None,
            rate_bps,
            rate_schedule: Vec::new(),
            payload_bytes: default_payload(),
            on_off: None,
            access_delay_ns: 0,
        }
    }

    /// Its IP packets' length.
    pub fn wire_bytes(&self) -> u32 {
        self.payload_bytes + super::UDP_OVERHEAD
    }

    /// Its rate at `t` (ns from the run's start), before on/off.
    pub fn rate_at(&self, t: u64) -> u64 {
        self.rate_schedule.iter().take_while(|s| s.at_ns <= t).last().map_or(self.rate_bps, |s| s.rate_bps)
    }
}
