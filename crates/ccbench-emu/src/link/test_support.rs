//! What the link's tests of several lanes share: delivering everything due, and a
//! packet's time on the wire.

use super::{Link, Side};
use ccbench_sim::time::Time;
use ccbench_sim::units::BitRate;

/// Every packet due by `until`, written at once: (its side, when due, its length).
pub(super) fn drain(link: &mut Link, until: Time) -> Vec<(Side, Time, usize)> {
    let mut out = Vec::new();
    while let Some(d) = link.poll(until) {
        out.push((d.to, d.due, d.bytes.len()));
        link.on_written(&d, d.due, true);
    }
    out
}

/// Nanoseconds that `bytes` take at `rate_bps`.
pub(super) fn tx(rate_bps: u64, bytes: u32) -> u64 {
    BitRate(rate_bps).tx_time(bytes).ns()
}
