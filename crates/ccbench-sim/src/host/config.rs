//! What a scenario says of the sender host (its `[host]` table, in base units): each
//! setting's field, default and range, and the CPU costs by their `[host.cost]` keys. The
//! scenario check, the front end's schema (`config::schema_facts`) and
//! docs/input-ranges.md read them from here.

use crate::base::range::{Range, Unit};
use serde::{Deserialize, Serialize};

/// The sender host: one CPU that runs every sender-side task of every flow.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    #[serde(default)]
    pub cpu: CpuAvailability,
    #[serde(default)]
    pub cost: CpuCost,
    /// ACKs the NIC's receive ring holds while they wait for the CPU; more are dropped.
    #[serde(default = "default_rx_ring")]
    pub rx_ring: u32,
    /// From the NIC's having sent an skb to its TX completion reaching the host, which
    /// frees the skb and with it the socket's TCP Small Queues budget (`tcp_wfree`):
    /// interrupt moderation on a physical NIC, the backend's turnaround on a virtual one.
    #[serde(default)]
    pub tx_completion_ns: u64,
}

fn default_rx_ring() -> u32 {
    256
}

/// The `[host]` table's defaults for what the front end resolves into [`CpuAvailability`]:
/// a SCHED_DEADLINE reservation's period (`cpu_slice`) and the host's scheduler tick
/// (`cpu_tick`: CONFIG_HZ=250, Debian's default).
pub const DEFAULT_CPU_SLICE_NS: u64 = 10_000_000;
pub const DEFAULT_CPU_TICK_NS: u64 = 4_000_000;

/// A task's CPU time is the sum of the costs (times packets and bytes of a burst) in u64 ns.
pub const MAX_CPU_COST_NS: u64 = 1_000_000_000;
pub const MAX_CPU_COST_PER_BYTE_PS: u64 = 1_000_000_000;
/// A TX completion later than a second would be a stalled NIC, not a slow one.
pub const MAX_TX_COMPLETION_NS: u64 = 1_000_000_000;
/// The CPU model schedules an event at each slice edge: a floor of a microsecond keeps
/// them to a million per simulated second.
pub const MIN_CPU_SLICE_NS: u64 = 1_000;
/// `__checkparam_dl` refuses a runtime under `1 << DL_SCALE` ns.
pub const MIN_CPU_RUNTIME_NS: u64 = 1 << 10;
/// The host's scheduler tick, 1 / CONFIG_HZ: 100 to 1000 Hz in practice.
pub const MIN_CPU_TICK_NS: u64 = 100_000;
pub const MAX_CPU_TICK_NS: u64 = 1_000_000_000;

impl HostConfig {
    /// The integer settings' ranges (`[host]` keys are the fields less their unit).
    pub const RANGES: &'static [Range] = &[
        Range {
            field: "rx_ring",
            lo: 1,
            hi: 1_000_000,
            unit: Unit::Count("ACKs"),
            why: "far beyond a NIC's receive ring, which ethtool -g shows a few thousand descriptors deep",
        },
        Range {
            field: "tx_completion_ns",
            lo: 0,
            hi: MAX_TX_COMPLETION_NS,
            unit: Unit::Nanoseconds,
            why: "later would be a stalled NIC, not a slow one",
        },
    ];
}

/// When the CPU may run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum CpuAvailability {
    #[default]
    Always,
    /// SCHED_DEADLINE: `runtime_ns` of every `period_ns`, due `deadline_ns` after the
    /// period starts; the host's scheduler tick is `tick_ns` (1 / CONFIG_HZ).
    Deadline { runtime_ns: u64, deadline_ns: u64, period_ns: u64, tick_ns: u64 },
    /// Alternating on/off intervals: `[on, off, on, off, ...]` in ns starting on at
    /// time 0, repeated when they run out.
    Trace { intervals_ns: Vec<u64> },
}

/// CPU time each kind of sender work takes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuCost {
    /// Processing one incoming ACK (`tcp_ack` and the driver's receive path).
    pub per_ack_ns: u64,
    /// Handing one skb (a TSO burst) to the NIC (`tcp_transmit_skb`, qdisc, driver).
    pub per_burst_ns: u64,
    /// Each wire packet of a burst (GSO segmentation where the NIC cannot).
    pub per_packet_ns: u64,
    /// Each payload byte sent (copy from the application, checksum), in picoseconds.
    pub per_byte_ps: u64,
    /// A softirq/tasklet pass that runs `tcp_write_xmit` for a socket on its own
    /// (`tcp_tsq_handler` after a pacing timer or a TX completion), and the
    /// application's write at flow start.
    pub per_wakeup_ns: u64,
    /// An hrtimer expiry (interrupt entry, `tcp_pace_kick`, the retransmission timer),
    /// on top of the wake-up it leads to.
    pub per_timer_ns: u64,
    /// Getting going again after the CPU was taken away from work (a vCPU throttled or
    /// descheduled while busy: pending interrupts injected, caches refilled), paid
    /// whenever it comes back to work that waited for it. In full after a long absence:
    /// see `cache_decay_ns`.
    pub per_resume_ns: u64,
    /// Leaving the idle loop: the interrupt that wakes an idle CPU and the way back to
    /// idle (for a vCPU, a HLT exit and re-entry), paid by a task that finds it idle.
    pub per_idle_exit_ns: u64,
    /// Refilling the caches that went cold since the CPU went idle (and however long it
    /// then waited to be given back), after a long absence: see `cache_decay_ns`. Paid
    /// with `per_idle_exit_ns`.
    pub per_idle_refill_ns: u64,
    /// How fast a CPU's caches go cold while it is away (idle, or running others): after
    /// an absence `d`, a resume costs `per_resume_ns` and a wake from idle
    /// `per_idle_refill_ns` times `1 - exp(-d / cache_decay_ns)`. Zero: both in full,
    /// however short the absence.
    pub cache_decay_ns: u64,
}

/// A CPU cost as the `[host.cost]` table names it: its key, its range (by the field it
/// sets), and what it is charged for, with an example, for the front end's schema.
#[derive(Clone, Copy, Debug)]
pub struct CostKey {
    pub key: &'static str,
    pub range: Range,
    pub about: &'static str,
    pub example: &'static str,
}

const fn ns_cost(key: &'static str, field: &'static str, about: &'static str, example: &'static str) -> CostKey {
    let range = Range { field, lo: 0, hi: MAX_CPU_COST_NS, unit: Unit::Nanoseconds, why: "" };
    CostKey { key, range, about, example }
}

impl CpuCost {
    /// Every cost, in the order the scenario reference lists them (a test checks that
    /// each field of `CpuCost` is here once).
    pub const KEYS: &'static [CostKey] = &[
        ns_cost("ack", "per_ack_ns", "per ACK processed", "4us"),
        ns_cost("burst", "per_burst_ns", "per skb (TSO burst) handed to the NIC", "2us"),
        ns_cost("packet", "per_packet_ns", "per wire packet sent", "21us"),
        CostKey {
            key: "byte",
            range: Range { field: "per_byte_ps", lo: 0, hi: MAX_CPU_COST_PER_BYTE_PS, unit: Unit::Picoseconds, why: "" },
            about: "per payload byte sent",
            example: "7.3ns",
        },
        ns_cost("wakeup", "per_wakeup_ns", "per softirq/tasklet pass (pacing, TX completion, first write)", "20us"),
        ns_cost("timer", "per_timer_ns", "per hrtimer expiry (pacing, retransmission timers)", "60us"),
        ns_cost(
            "resume",
            "per_resume_ns",
            "per return of the CPU to work it was taken from (in full after a long absence)",
            "0s",
        ),
        ns_cost("idle_exit", "per_idle_exit_ns", "per task that woke the CPU from idle (interrupt, HLT exit)", "0s"),
        ns_cost(
            "idle_refill",
            "per_idle_refill_ns",
            "per wake from idle, refilling caches gone cold (in full after a long absence)",
            "0s",
        ),
        ns_cost(
            "cache_decay",
            "cache_decay_ns",
            "how fast caches go cold: an absence d costs resume or idle_refill x (1 - exp(-d/this)); 0: in full however short",
            "3ms",
        ),
    ];

    /// No cost at all: the ideal CPU's.
    pub const FREE: CpuCost = CpuCost {
        per_ack_ns: 0,
        per_burst_ns: 0,
        per_packet_ns: 0,
        per_byte_ps: 0,
        per_wakeup_ns: 0,
        per_timer_ns: 0,
        per_resume_ns: 0,
        per_idle_exit_ns: 0,
        per_idle_refill_ns: 0,
        cache_decay_ns: 0,
    };

    /// These costs with `f` applied to each (given its key and value).
    pub fn map(&self, f: impl Fn(&CostKey, u64) -> u64) -> CpuCost {
        let mut fields = serde_json::to_value(self).expect("plain fields serialize");
        for c in Self::KEYS {
            let v = fields[c.range.field].as_u64().expect("a cost is an unsigned integer");
            fields[c.range.field] = f(c, v).into();
        }
        serde_json::from_value(fields).expect("the same fields deserialize")
    }
}

/// Cold work runs at most this many times slower than warm work, which bounds the refill
/// a task can owe (`cpu::Pending`): on the VM engine's host a process walking 8 MB took
/// 94 us back to back, 297 us after 10 ms asleep and 372 us after 20 ms.
pub const MAX_COLD_SLOWDOWN: u64 = 4;

impl CpuCost {
    pub fn is_free(&self) -> bool {
        *self == CpuCost::FREE
    }

    /// The part of `full` that an absence of `away_ns` costs (`cache_decay_ns`).
    pub fn cold(&self, full: u64, away_ns: u64) -> u64 {
        if full == 0 || self.cache_decay_ns == 0 {
            return full;
        }
        let kept = (-(away_ns as f64) / self.cache_decay_ns as f64).exp();
        (full as f64 * (1.0 - kept)).round() as u64
    }
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            cpu: CpuAvailability::Always,
            cost: CpuCost::default(),
            rx_ring: default_rx_ring(),
            tx_completion_ns: 0,
        }
    }
}

impl HostConfig {
    /// An ideal host: always available, free work. Runs exactly like no host model
    /// (a TX completion delay acts at the NIC, with or without one).
    pub fn is_ideal(&self) -> bool {
        self.cpu == CpuAvailability::Always && self.cost.is_free()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::range::first_out_of_range;

    #[test]
    fn every_cost_field_has_one_key() {
        let fields = serde_json::to_value(CpuCost::FREE).unwrap();
        let mut named: Vec<&str> = CpuCost::KEYS.iter().map(|c| c.range.field).collect();
        named.sort_unstable();
        let mut all: Vec<&str> = fields.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        all.sort_unstable();
        assert_eq!(named, all);
        assert_eq!(CpuCost::FREE, CpuCost::default());
    }

    #[test]
    fn map_reaches_every_cost_by_its_key() {
        let c = CpuCost::FREE.map(|k, _| k.key.len() as u64);
        assert_eq!((c.per_ack_ns, c.per_byte_ps, c.cache_decay_ns), (3, 4, 11));
    }

    #[test]
    fn defaults_lie_in_their_ranges() {
        assert!(first_out_of_range(&HostConfig::default(), HostConfig::RANGES).is_none());
    }
}
