//! The bottleneck's queueing discipline as a scenario gives it (`link.aqm` and
//! `link.aqm_params`): the AQMs by name, each one's parameters with the kernel's defaults,
//! and the parameters' ranges. The scenario check, the front end's schema
//! (`config::schema_facts`) and docs/input-ranges.md read them from here.

use super::{describe, err, ConfigError};
use crate::base::range::{first_out_of_range, Range, Unit};
use serde::{Deserialize, Serialize};

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

/// A CoDel time (ns) must fit the kernel's 32-bit codel clock (ns >> 10, signed).
pub const MAX_CODEL_NS: u64 = (i32::MAX as u64) << crate::net::aqm::codel::CODEL_SHIFT;
const CODEL_CLOCK: &str = "CoDel's 32-bit clock of ns >> 10";
/// `limit`, `drop_batch`: u32 in `tc_codel_qopt` and `tc_fq_codel_qopt`.
const U32_MAX: u64 = u32::MAX as u64;

impl Aqm {
    /// Every AQM with its kernel defaults, in the order the scenario documents them.
    pub fn all() -> [Aqm; 3] {
        [Aqm::DropTail, Aqm::Codel(CodelConfig::default()), Aqm::FqCodel(FqCodelConfig::default())]
    }

    /// The parameters' ranges, by field; a parameter an AQM lacks is not checked. The
    /// fq_codel ones are `fq_codel_change`'s (sch_fq_codel.c: 1 to 65536 flows, a quantum
    /// of 256 bytes to 1 MiB, a memory limit of at most 2^31 bytes).
    pub const RANGES: &'static [Range] = &[
        Range { field: "target_ns", lo: 1, hi: MAX_CODEL_NS, unit: Unit::Nanoseconds, why: CODEL_CLOCK },
        Range { field: "interval_ns", lo: 1, hi: MAX_CODEL_NS, unit: Unit::Nanoseconds, why: CODEL_CLOCK },
        Range { field: "ce_threshold_ns", lo: 0, hi: MAX_CODEL_NS, unit: Unit::Nanoseconds, why: CODEL_CLOCK },
        Range { field: "limit_packets", lo: 1, hi: U32_MAX, unit: Unit::Count("packets"), why: "" },
        Range { field: "flows", lo: 1, hi: 65_536, unit: Unit::Count(""), why: "fq_codel" },
        Range { field: "quantum_bytes", lo: 256, hi: 1 << 20, unit: Unit::Bytes, why: "fq_codel" },
        Range { field: "memory_limit_bytes", lo: 1, hi: 1 << 31, unit: Unit::Bytes, why: "fq_codel" },
        Range { field: "drop_batch", lo: 1, hi: U32_MAX, unit: Unit::Count(""), why: "fq_codel" },
    ];

    pub fn is_drop_tail(&self) -> bool {
        matches!(self, Aqm::DropTail)
    }

    /// The name `link.aqm` takes.
    pub fn name(&self) -> &'static str {
        match self {
            Aqm::DropTail => "droptail",
            Aqm::Codel(_) => "codel",
            Aqm::FqCodel(_) => "fq_codel",
        }
    }

    /// The parameters (`link.aqm_params`) in base units, by field; None for drop-tail,
    /// which has none.
    pub fn params(&self) -> Option<serde_json::Value> {
        let params = match self {
            Aqm::DropTail => return None,
            Aqm::Codel(c) => serde_json::to_value(c),
            Aqm::FqCodel(c) => serde_json::to_value(c),
        };
        Some(params.expect("plain fields serialize"))
    }

    /// The first parameter outside its range, named as `link.aqm_params` names it.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.check_as("link.aqm")
    }

    /// [`Aqm::check`] for the AQM at `field` (`link.aqm`, `link.reverse.aqm`).
    pub fn check_as(&self, field: &str) -> Result<(), ConfigError> {
        let Some(params) = self.params() else { return Ok(()) };
        match first_out_of_range(&params, Self::RANGES) {
            Some((r, _)) => Err(err(format!("{field}_params.{}", r.key()), format!("must be {}", describe(r)))),
            None => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_lie_in_their_ranges() {
        for aqm in Aqm::all() {
            assert_eq!(aqm.check(), Ok(()), "{}", aqm.name());
        }
    }

    #[test]
    fn a_parameter_out_of_range_is_named_by_its_key() {
        let aqm = Aqm::FqCodel(FqCodelConfig { quantum_bytes: 100, ..FqCodelConfig::default() });
        let e = aqm.check().unwrap_err();
        assert_eq!(e.field, "link.aqm_params.quantum");
        assert!(e.message.starts_with("must be from 256 to 1048576 bytes"), "{}", e.message);
        let aqm = Aqm::Codel(CodelConfig { limit_packets: 0, ..CodelConfig::default() });
        assert_eq!(aqm.check().unwrap_err().field, "link.aqm_params.limit");
    }
}
