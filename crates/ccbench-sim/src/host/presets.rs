//! Named sender hosts. Costs are CPU time per unit of work; see docs/model.md
//! ("Sender CPU") for where each number comes from.

use super::config::{CpuAvailability, CpuCost, HostConfig};

pub const NAMES: [&str; 5] = ["server", "vm", "phone-lowend", "phone-midend", "phone-highend"];
/// The `[host]` table's `cpu` when it names none and the CPU is always available.
pub const DEFAULT: &str = NAMES[0];
/// ... and when it names none but reserves a share of the CPU (a SCHED_DEADLINE
/// reservation or an on/off trace): the host is a VM's, as in the 2BRobust study.
pub const WHEN_RESERVED: &str = NAMES[1];

/// The preset's host, or None for an unknown name.
pub fn preset(name: &str) -> Option<HostConfig> {
    let cost = match name {
        // An ideal server: work is free and never waits (the simulator without a CPU).
        "server" => CpuCost::FREE,
        "vm" => KVM_GUEST,
        "phone-lowend" => PHONE_LOWEND,
        "phone-midend" => scaled(&PHONE_LOWEND, 576, 1200),
        "phone-highend" => scaled(&PHONE_LOWEND, 576, 2 * 2800),
        _ => return None,
    };
    Some(HostConfig { cpu: CpuAvailability::Always, cost, ..HostConfig::default() })
}

/// A KVM guest's vCPU on the 2BRobust study's host (Dell R620, two 12-core Ivy Bridge-EP
/// Xeons), docs/host-cpu.md: the server's work per packet and per ACK (free), and what
/// each return of the vCPU costs. A wake from idle pays the host core's C6 exit (82 us,
/// `ivt_cstates` in drivers/idle/intel_idle.c) and the HLT exit, scheduler trip and VM
/// entry with the interrupt injected (8 us). Caches and TLB go cold as the idle core
/// reaches C6, which flushes them; cpuidle picks it for idle periods beyond its target
/// residency (300 us), the decay's time constant. The refill after a long absence is the
/// one fitted figure: the least (in steps of 0.1 ms) that puts BBRv1's recovery with 1 ms
/// slices at the study's 45%.
const KVM_GUEST: CpuCost = CpuCost {
    per_idle_exit_ns: 90_000,
    per_idle_refill_ns: 900_000,
    per_resume_ns: 900_000,
    cache_decay_ns: 300_000,
    ..CpuCost::FREE
};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kvm_guest_pays_for_returns_only() {
        let vm = preset("vm").unwrap().cost;
        let server = preset("server").unwrap().cost;
        // Per-packet and per-ACK work is the server's; the vCPU's returns are what cost.
        let work = |c: &CpuCost| {
            (c.per_ack_ns, c.per_burst_ns, c.per_packet_ns, c.per_byte_ps, c.per_wakeup_ns, c.per_timer_ns)
        };
        assert_eq!(work(&vm), work(&server));
        assert!(vm.per_idle_exit_ns > 0 && vm.per_idle_refill_ns > 0 && vm.per_resume_ns > 0);
        // After 300 us idle (C6's target residency) 63% of the refill is owed, after 3 ms all of it.
        assert_eq!(vm.cold(vm.per_idle_refill_ns, 300_000), 568_909);
        assert_eq!(vm.cold(vm.per_idle_refill_ns, 3_000_000), 899_959);
        assert!(NAMES.iter().all(|n| preset(n).is_some()) && NAMES.contains(&WHEN_RESERVED));
    }
}
