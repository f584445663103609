//! The kernel's own account of its CPUs over a run: where their time went
//! (`/proc/stat`), how many interrupts and softirqs they handled (`/proc/interrupts`,
//! `/proc/softirqs`) and how often they switched tasks. In a guest this is what the guest
//! believes; set beside the host's view of its vCPU threads, it shows which guest events
//! the host's CPU time goes to.

use std::collections::BTreeMap;

use serde::Serialize;

/// The fields of `/proc/stat`'s `cpu` line, in order (`fs/proc/stat.c`, `show_stat`).
const TIMES: [&str; 8] = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"];

/// Counters at one instant, or their change over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CpuCounters {
    /// Time of all CPUs together by kind, in nanoseconds (the kernel counts it in
    /// `USER_HZ` ticks, so each figure is good to 1/`USER_HZ` s per CPU).
    pub time_ns: BTreeMap<String, i64>,
    /// Task switches (`ctxt`).
    pub context_switches: i64,
    /// Interrupts by source, summed over CPUs: the short name of a per-CPU source
    /// (`LOC`, `RES`, `CAL`, ...) or the handler's name of a numbered one
    /// (`virtio0-input.0`).
    pub interrupts: BTreeMap<String, i64>,
    /// Softirqs by kind (`TIMER`, `NET_TX`, `NET_RX`, `HRTIMER`, ...), summed over CPUs.
    pub softirqs: BTreeMap<String, i64>,
}

impl CpuCounters {
    /// This kernel's counters now; files that cannot be read leave their part empty.
    pub fn read() -> CpuCounters {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        // SAFETY: sysconf has no memory effects.
        let user_hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        CpuCounters::parse(&read("/proc/stat"), &read("/proc/interrupts"), &read("/proc/softirqs"), user_hz.max(1))
    }

    /// Counters from the three files' texts; `user_hz` is what `/proc/stat`'s times count.
    pub fn parse(stat: &str, interrupts: &str, softirqs: &str, user_hz: i64) -> CpuCounters {
        let mut out = CpuCounters::default();
        for line in stat.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some("cpu") => {
                    for (name, ticks) in TIMES.iter().zip(words) {
                        if let Ok(t) = ticks.parse::<i64>() {
                            out.time_ns.insert(name.to_string(), t.saturating_mul(1_000_000_000) / user_hz);
                        }
                    }
                }
                Some("ctxt") => out.context_switches = words.next().and_then(|v| v.parse().ok()).unwrap_or(0),
                _ => {}
            }
        }
        out.interrupts = per_source(interrupts, true);
        out.softirqs = per_source(softirqs, false);
        out
    }

    /// What changed from `before` to `self`.
    pub fn since(&self, before: &CpuCounters) -> CpuCounters {
        let diff = |now: &BTreeMap<String, i64>, then: &BTreeMap<String, i64>| {
            now.iter().map(|(k, v)| (k.clone(), v - then.get(k).copied().unwrap_or(0))).collect()
        };
        CpuCounters {
            time_ns: diff(&self.time_ns, &before.time_ns),
            context_switches: self.context_switches - before.context_switches,
            interrupts: diff(&self.interrupts, &before.interrupts),
            softirqs: diff(&self.softirqs, &before.softirqs),
        }
    }
}

/// Rows of a per-CPU table (`/proc/interrupts`, `/proc/softirqs`: a header of CPU names,
/// then `label: count per CPU [description]`), each row's counts summed. With `named`,
/// a numbered row is keyed by its last word, the handler's name (`arch/x86/kernel/irq.c`,
/// `show_interrupts`); rows of the same name add up.
fn per_source(text: &str, named: bool) -> BTreeMap<String, i64> {
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |header| header.split_whitespace().count());
    let mut out = BTreeMap::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else { continue };
        let label = label.trim();
        let words: Vec<&str> = rest.split_whitespace().collect();
        let counts = words.iter().take(cpus).map_while(|w| w.parse::<i64>().ok());
        let total: i64 = counts.sum();
        let key = match words.last() {
            Some(name) if named && label.parse::<u32>().is_ok() && words.len() > cpus => name.to_string(),
            _ => label.to_string(),
        };
        *out.entry(key).or_insert(0) += total;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  120 3 450 9000 7 11 60 0 0 0\ncpu0 120 3 450 9000 7 11 60 0 0 0\n\
                        intr 99 1 2\nctxt 4321\nbtime 1\n";
    const INTERRUPTS: &str = "           CPU0       CPU1\n\
        \x20 0:         39          0   IO-APIC   2-edge      timer\n\
        \x2024:        500        200   PCI-MSI 49153-edge      virtio0-input.0\n\
        \x2025:          3          0   PCI-MSI 49154-edge      virtio0-output.0\n\
        NMI:          0          0   Non-maskable interrupts\n\
        LOC:       2500       1500   Local timer interrupts\n\
        ERR:          0\n";
    const SOFTIRQS: &str = "                    CPU0       CPU1\n\
        \x20         HI:          1          0\n\
        \x20      TIMER:         40         10\n\
        \x20     NET_RX:        700         20\n";

    #[test]
    fn reads_times_switches_interrupts_and_softirqs() {
        let c = CpuCounters::parse(STAT, INTERRUPTS, SOFTIRQS, 100);
        assert_eq!(c.time_ns["user"], 1_200_000_000);
        assert_eq!(c.time_ns["idle"], 90_000_000_000);
        assert_eq!(c.time_ns["softirq"], 600_000_000);
        assert_eq!(c.time_ns.len(), 8);
        assert_eq!(c.context_switches, 4321);
        assert_eq!(c.interrupts["virtio0-input.0"], 700);
        assert_eq!(c.interrupts["virtio0-output.0"], 3);
        assert_eq!(c.interrupts["timer"], 39);
        assert_eq!(c.interrupts["LOC"], 4000);
        assert_eq!(c.interrupts["ERR"], 0);
        assert_eq!(c.softirqs["NET_RX"], 720);
        assert_eq!(c.softirqs["TIMER"], 50);
    }

    #[test]
    fn a_run_is_the_difference() {
        let before = CpuCounters::parse(STAT, INTERRUPTS, SOFTIRQS, 100);
        let after = CpuCounters::parse(
            &STAT.replace("cpu  120", "cpu  130").replace("ctxt 4321", "ctxt 4400"),
            &INTERRUPTS.replace("2500", "2600"),
            &SOFTIRQS.replace("700", "900"),
            100,
        );
        let run = after.since(&before);
        assert_eq!(run.time_ns["user"], 100_000_000);
        assert_eq!(run.time_ns["idle"], 0);
        assert_eq!(run.context_switches, 79);
        assert_eq!(run.interrupts["LOC"], 100);
        assert_eq!(run.softirqs["NET_RX"], 200);
        assert_eq!(run.softirqs["TIMER"], 0);
    }

    #[test]
    fn missing_files_leave_their_part_empty() {
        let c = CpuCounters::parse("", "", "", 100);
        assert!(c.time_ns.is_empty() && c.interrupts.is_empty() && c.softirqs.is_empty());
        assert_eq!(c.context_switches, 0);
    }

    #[test]
    fn reads_this_kernel() {
        let c = CpuCounters::read();
        assert!(c.time_ns["idle"] > 0 || c.time_ns["user"] > 0);
        assert!(c.context_switches > 0);
        assert!(!c.softirqs.is_empty());
    }
}
