//! A UDP flow's send instants, for engines that send real datagrams: the source's own
//! schedule (`UdpSource::wake`), written as runs of evenly spaced instants, which a
//! constant-rate stretch is.

use super::{UdpFlowConfig, UdpSource};
use crate::time::Time;
use serde::Serialize;

/// `count` datagrams, the first at `first_ns` and the others `gap_ns` apart (ns from
/// the run's start).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SendRun {
    pub first_ns: u64,
    pub gap_ns: u64,
    pub count: u64,
}

/// Every instant flow `cfg` (stream `index` of `seed`) sends a datagram before `end`,
/// as the simulator's source sends them.
pub fn send_runs(cfg: &UdpFlowConfig, seed: u64, index: u64, end: Time) -> Vec<SendRun> {
    let mut source = UdpSource::new(cfg, 0, seed, index, end);
    let mut runs: Vec<SendRun> = Vec::new();
    let mut at = Some(Time(cfg.start_ns));
    while let Some(t) = at {
        let (pkt, next) = source.wake(t);
        if pkt.is_some() {
            extend(&mut runs, t.ns());
        }
        at = next;
    }
    runs
}

/// `t` added to the last run if it continues it, else as a run of its own.
fn extend(runs: &mut Vec<SendRun>, t: u64) {
    if let Some(r) = runs.last_mut() {
        let next = r.first_ns + r.gap_ns * r.count;
        if r.count == 1 {
            (r.gap_ns, r.count) = (t - r.first_ns, 2);
            return;
        }
        if t == next {
            r.count += 1;
            return;
        }
    }
    runs.push(SendRun { first_ns: t, gap_ns: 0, count: 1 });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RateStep;
    use crate::udp::source::tests::sends;
    use crate::udp::OnOff;

    const S: u64 = 1_000_000_000;

    fn expand(runs: &[SendRun]) -> Vec<u64> {
        runs.iter().flat_map(|r| (0..r.count).map(move |j| r.first_ns + j * r.gap_ns)).collect()
    }

    #[test]
    fn a_constant_rate_is_one_run() {
        let cfg = UdpFlowConfig { start_ns: 5, ..UdpFlowConfig::constant(12_000_000) };
        assert_eq!(send_runs(&cfg, 1, 0, Time(S)), vec![SendRun { first_ns: 5, gap_ns: 1_000_000, count: 1000 }]);
    }

    #[test]
    fn steps_and_periods_expand_to_the_sources_instants() {
        let stepping = UdpFlowConfig {
            rate_schedule: vec![
                RateStep { at_ns: 10_500_000, rate_bps: 24_000_000 },
                RateStep { at_ns: 20_000_000, rate_bps: 0 },
                RateStep { at_ns: 30_000_000, rate_bps: 7_000_000 },
            ],
            ..UdpFlowConfig::constant(12_000_000)
        };
        let on_off = Some(OnOff { on_ns: 50_000_000, off_ns: 150_000_000, exponential: true });
        let periodic = UdpFlowConfig { on_off, ..UdpFlowConfig::constant(12_000_000) };
        for cfg in [stepping, periodic] {
            let runs = send_runs(&cfg, 1, 0, Time(20 * S));
            assert_eq!(expand(&runs), sends(&cfg, 20 * S));
            assert!(runs.len() < 400, "{} runs", runs.len());
        }
    }
}
