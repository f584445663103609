//! Named sender hosts. Costs are CPU time per unit of work; see docs/model.md
//! ("Sender CPU") for where each number comes from.

use super::config::{CpuAvailability, CpuCost, HostConfig};

pub const NAMES: [&str; 4] = ["server", "phone-lowend", "phone-midend", "phone-highend"];
/// The `[host]` table's `cpu` when it names none.
pub const DEFAULT: &str = NAMES[0];

/// The preset's host, or None for an unknown name.
pub fn preset(name: &str) -> Option<HostConfig> {
    let cost = match name {
        // An ideal server: work is free and never waits (the simulator without a CPU).
        "server" => CpuCost::FREE,
        "phone-lowend" => PHONE_LOWEND,
        "phone-midend" => scaled(&PHONE_LOWEND, 576, 1200),
        "phone-highend" => scaled(&PHONE_LOWEND, 576, 2 * 2800),
        _ => return None,
    };
    Some(HostConfig { cpu: CpuAvailability::Always, cost, ..HostConfig::default() })
}

/// Pixel 4 with its LITTLE cores fixed at 576 MHz (Vargas et al., IMC'22, Table 1),
/// calibrated so that one Cubic and one BBR upload match the study's single-connection
/// goodput (364 and 325 Mbit/s, §4.1): 361 and 319 in 60 s runs (`ccbench replicate
/// vargas2022 --full`).
const PHONE_LOWEND: CpuCost = CpuCost {
    per_ack_ns: 4_000,
    per_burst_ns: 2_000,
    per_packet_ns: 20_200,
    per_byte_ps: 7_300,
    per_wakeup_ns: 20_000,
    per_timer_ns: 60_000,
    ..CpuCost::FREE
};

/// `base` on a core `to_mhz / from_mhz` times faster.
fn scaled(base: &CpuCost, from_mhz: u64, to_mhz: u64) -> CpuCost {
    // How fast caches go cold is the memory system's, not the core clock's.
    base.map(|c, v| if c.key == "cache_decay" { v } else { (v * from_mhz).div_ceil(to_mhz) })
}
