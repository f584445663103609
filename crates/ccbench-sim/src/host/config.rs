//! What a scenario says of the sender host (its `host` table, in base units).

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

/// Cold work runs at most this many times slower than warm work, which bounds the refill
/// a task can owe (`cpu::Pending`): on the VM engine's host a process walking 8 MB took
/// 94 us back to back, 297 us after 10 ms asleep and 372 us after 20 ms.
pub const MAX_COLD_SLOWDOWN: u64 = 4;

impl CpuCost {
    pub fn is_free(&self) -> bool {
        *self == CpuCost::default()
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
