//! The link's totals for the summary: the bottleneck's counters and what it offered, and
//! the ACK link's figures, over the time from the meter's origin.

use super::LinkMeter;
use crate::net::{Bottleneck, Path};
use crate::summary::{AckLinkSummary, LinkMeasured, Offered, Stats};
use crate::time::Time;

impl LinkMeter {
    /// What the path's links carried from the origin to `until`.
    pub fn totals(&self, path: &Path, until: Time) -> LinkMeasured {
        let reverse = path.reverse_bottleneck.as_ref().filter(|_| self.reverse_table);
        LinkMeasured {
            ack_link: path.reverse_bottleneck.as_ref().filter(|_| !self.reverse_table).map(|a| self.ack_link(a, until)),
            reverse: reverse.map(|r| Box::new(self.bottleneck_totals(r, until))),
            ..self.bottleneck_totals(&path.bottleneck, until)
        }
    }

    /// Bottleneck `b`'s counters and what it offered.
    fn bottleneck_totals(&self, b: &Bottleneck, until: Time) -> LinkMeasured {
        let c = &b.counters;
        let stats = |h, scale| Stats::from_histogram(h, scale);
        // A constant rate offered its rate: the summary takes it over the whole run.
        let offered = b.capacity().constant_rate().is_none().then(|| Offered {
            capacity_bits: b.capacity_bits(self.origin, until),
            window_ns: until.since(self.origin).ns(),
        });
        LinkMeasured {
            offered,
            wire_bytes_out: c.wire_bytes_out,
            drops_overflow: c.drops_overflow,
            drops_random: c.drops_random,
            drops_aqm: c.drops_aqm,
            ecn_marks: c.ecn_marks,
            queue_delay_ms: stats(&c.sojourn_ns, 1e6),
            queue_bytes: stats(&c.queue_bytes_seen, 1.0),
            queue_packets: stats(&c.queue_packets_seen, 1.0),
            packets_forwarded: c.packets_out,
            ack_link: None,
            reverse: None,
        }
    }

    fn ack_link(&self, a: &Bottleneck, until: Time) -> AckLinkSummary {
        let cap = a.capacity_bits(self.origin, until);
        AckLinkSummary {
            trace_mean_bps: self.ack_trace_mean_bps,
            utilization: if cap > 0.0 { a.counters.wire_bytes_out as f64 * 8.0 / cap } else { 0.0 },
            packets_forwarded: a.counters.packets_out,
            queue_delay_ms: Stats::from_histogram(&a.counters.sojourn_ns, 1e6),
            drops: a.can_overflow().then_some(a.counters.drops_overflow),
        }
    }
}
