//! Checks of the `[host]` table, named as the scenario names its keys: the ranges declared
//! beside its fields (`host/config.rs`) and the CPU availability's own rules.

use super::{describe, err, fmt_ns, ConfigError};
use crate::base::range::{first_out_of_range, Range};
use crate::host::config::*;

/// The first `[host]` value outside what the simulator runs; `max_duration` is the
/// longest run at the scenario's `tcp.hz`.
pub(super) fn check(h: &HostConfig, max_duration: u64) -> Result<(), ConfigError> {
    let out_of = |key: String, r: &Range| err(key, format!("must be {}", describe(r)));
    if let Some((r, _)) = first_out_of_range(h, HostConfig::RANGES) {
        return Err(out_of(format!("host.{}", r.key()), r));
    }
    for c in CpuCost::KEYS {
        if first_out_of_range(&h.cost, std::slice::from_ref(&c.range)).is_some() {
            return Err(out_of(format!("host.cost.{}", c.key), &c.range));
        }
    }
    check_cpu(&h.cpu, max_duration)
}

fn check_cpu(cpu: &CpuAvailability, max_duration: u64) -> Result<(), ConfigError> {
    match cpu {
        CpuAvailability::Always => Ok(()),
        CpuAvailability::Deadline { runtime_ns, deadline_ns, period_ns, tick_ns } => {
            // `__checkparam_dl`: 1024 ns <= runtime <= deadline <= period.
            if *runtime_ns < MIN_CPU_RUNTIME_NS || runtime_ns > deadline_ns || deadline_ns > period_ns {
                return Err(err(
                    "host.cpu_share",
                    format!(
                        "runtime must be at least {} and at most the deadline and the period",
                        fmt_ns(MIN_CPU_RUNTIME_NS)
                    ),
                ));
            }
            if !(MIN_CPU_TICK_NS..=MAX_CPU_TICK_NS).contains(tick_ns) {
                return Err(err(
                    "host.cpu_tick",
                    format!("must be from {} to {}", fmt_ns(MIN_CPU_TICK_NS), fmt_ns(MAX_CPU_TICK_NS)),
                ));
            }
            if *period_ns < MIN_CPU_SLICE_NS || *period_ns > max_duration {
                return Err(err(
                    "host.cpu_slice",
                    format!("must be from {} to {}", fmt_ns(MIN_CPU_SLICE_NS), fmt_ns(max_duration)),
                ));
            }
            Ok(())
        }
        CpuAvailability::Trace { intervals_ns } => {
            if intervals_ns.len() < 2 || intervals_ns.len() % 2 != 0 {
                return Err(err("host.cpu_trace", "needs pairs of (on, off) durations"));
            }
            if intervals_ns.iter().step_by(2).all(|&on| on == 0) {
                return Err(err("host.cpu_trace", "the CPU is never on"));
            }
            let cycle: u128 = intervals_ns.iter().map(|&v| v as u128).sum();
            if cycle < MIN_CPU_SLICE_NS as u128 || cycle > max_duration as u128 {
                return Err(err(
                    "host.cpu_trace",
                    format!(
                        "one pass of the intervals must last from {} to {}",
                        fmt_ns(MIN_CPU_SLICE_NS),
                        fmt_ns(max_duration)
                    ),
                ));
            }
            Ok(())
        }
    }
}

/// What each `[host]` value allows, as [`check`] checks it: (TOML key, what is allowed).
pub(super) fn allowed() -> Vec<(String, String)> {
    let longest = "the longest duration";
    let mut rows: Vec<(String, String)> =
        HostConfig::RANGES.iter().map(|r| (format!("host.{}", r.key()), describe(r))).collect();
    rows.extend(CpuCost::KEYS.iter().map(|c| (format!("host.cost.{}", c.key), describe(&c.range))));
    let min_slice = fmt_ns(MIN_CPU_SLICE_NS);
    rows.extend([
        (
            "host.cpu_share".into(),
            format!("runtime at least {}, at most the deadline and the period", fmt_ns(MIN_CPU_RUNTIME_NS)),
        ),
        ("host.cpu_tick".into(), format!("{} to {}", fmt_ns(MIN_CPU_TICK_NS), fmt_ns(MAX_CPU_TICK_NS))),
        ("host.cpu_slice".into(), format!("{min_slice} to {longest}")),
        ("host.cpu_trace".into(), format!("(on, off) pairs, some on time, one pass from {min_slice} to {longest}")),
    ]);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_out_of_range_is_named_by_its_toml_key() {
        let cost = CpuCost { per_ack_ns: 2 * MAX_CPU_COST_NS, ..CpuCost::FREE };
        let e = check(&HostConfig { cost, ..HostConfig::default() }, u64::MAX).unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("host.cost.ack", "must be at most 1 s"));
        let cost = CpuCost { per_byte_ps: MAX_CPU_COST_PER_BYTE_PS + 1, ..CpuCost::FREE };
        assert_eq!(check(&HostConfig { cost, ..HostConfig::default() }, u64::MAX).unwrap_err().field, "host.cost.byte");
        let e = check(&HostConfig { rx_ring: 0, ..HostConfig::default() }, u64::MAX).unwrap_err();
        assert!(e.field == "host.rx_ring" && e.message.starts_with("must be from 1 to 1000000 ACKs"), "{e}");
        let late = HostConfig { tx_completion_ns: MAX_TX_COMPLETION_NS + 1, ..HostConfig::default() };
        assert_eq!(check(&late, u64::MAX).unwrap_err().field, "host.tx_completion");
    }

    #[test]
    fn every_key_has_a_row_in_the_docs() {
        let rows: Vec<String> = allowed().into_iter().map(|(k, _)| k).collect();
        for c in CpuCost::KEYS {
            assert!(rows.contains(&format!("host.cost.{}", c.key)), "{}", c.key);
        }
        assert!(rows.contains(&"host.rx_ring".to_string()) && rows.contains(&"host.tx_completion".to_string()));
    }
}
