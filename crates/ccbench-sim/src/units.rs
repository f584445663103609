//! Units that cross module boundaries: bit rates, and the wire sizes we model.

use crate::time::{Dur, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// A link rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BitRate(pub u64);

impl BitRate {
    pub fn bps(self) -> u64 {
        self.0
    }
    /// Time to serialize `bytes` at this rate, rounded up to the next nanosecond.
    pub fn tx_time(self, bytes: u32) -> Dur {
        let bits = bytes as u128 * 8 * NS_PER_SEC as u128;
        Dur(bits.div_ceil(self.0 as u128) as u64)
    }
    pub fn bytes_per_sec(self) -> u64 {
        self.0 / 8
    }
}

/// What we put on the wire for one TCP segment: an IPv4 packet, as a TUN device or
/// Mahimahi's link sees it. No link-layer framing is charged.
pub mod wire {
    /// IPv4 header without options.
    pub const IP_HEADER: u32 = 20;
    /// TCP header without options.
    pub const TCP_HEADER: u32 = 20;
    /// Timestamp option (10 bytes) padded with two NOPs, present on every Linux segment.
    pub const TCP_TS_OPTION: u32 = 12;
    /// Per-segment overhead of a data segment: 52 bytes, so MSS 1448 gives 1500-byte packets.
    pub const DATA_OVERHEAD: u32 = IP_HEADER + TCP_HEADER + TCP_TS_OPTION;
    /// `MAX_TCP_OPTION_SPACE`: the option bytes a TCP header can hold.
    pub const MAX_TCP_OPTION_SPACE: u32 = 40;
    /// A pure ACK: headers plus timestamps.
    pub const ACK_BYTES: u32 = DATA_OVERHEAD;
    /// Bytes added by a SACK option carrying `n` blocks (2 + 8n, padded with two NOPs).
    pub fn sack_option_bytes(n: usize) -> u32 {
        if n == 0 {
            0
        } else {
            4 + 8 * n as u32
        }
    }
}
