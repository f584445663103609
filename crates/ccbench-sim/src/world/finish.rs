//! What a finished run measured: every flow's totals (closed connections included), the
//! link's, the ACK link's and the host's, from which `Summary::build` makes the summary
//! as it does for every engine.

use super::{FlowMeta, RunOutput, World};
use crate::base::histogram::Histogram;
use crate::summary::{
    AckLinkSummary, DownloadMeasured, FlowMeasured, HostSummary, LinkMeasured, Measured, Stats, Summary,
};
use crate::tcp::{Receiver, Sender};
use crate::time::Time;

impl World {
    pub(super) fn finish(mut self, now: Time) -> RunOutput {
        for i in 0..self.senders.len() as u32 {
            self.take_transitions(i);
        }
        let end = now.min(self.end);
        let stats_ms = |h: &Histogram| Stats::from_histogram(h, 1e6);
        let stats_raw = |h: &Histogram| Stats::from_histogram(h, 1.0);
        let mut flows = Vec::new();
        for (i, s) in self.senders.iter().enumerate() {
            let f = &self.flows[i];
            let r = &self.receivers[i];
            // Repeated downloads: the closed connections' totals plus the open one's; the
            // flow is complete when its last download is.
            let mut t = f.closed.clone();
            t.add(&s.totals(end));
            let repeated = self.scenario.flows[i].repeat > 1;
            let downloads = repeated.then(|| {
                let mut all = f.downloads.clone();
                if r.completed_at.is_none() {
                    all.push(download_measured(f, s, r));
                }
                all
            });
            flows.push(FlowMeasured {
                params: s.cc.params(),
                paced: s.paced(),
                completed_ns: if f.repeats_left == 0 { r.completed_at.map(|t| t.ns()) } else { None },
                delivered_bytes: f.closed_delivered + r.delivered_bytes(),
                bottleneck_bytes: f.bottleneck_bytes,
                sent_bytes: Some(t.sent_bytes),
                retransmits: t.retransmits,
                lost: Some(t.lost),
                dropped: f.dropped,
                rto_count: Some(t.rto_count),
                undos: Some(t.undos),
                spurious_rtos: Some(t.spurious_rtos),
                rtt_ms: stats_ms(&t.rtt_ns),
                rtt_samples: t.rtt_ns.count(),
                final_cwnd: s.w.cwnd,
                rwnd_limited_ms: t.rwnd_limited_us as f64 / 1e3,
                downloads,
            });
        }
        let c = &self.path.bottleneck.counters;
        let link = &self.scenario.link;
        let capacity_bits = match self.path.bottleneck.capacity().constant_rate() {
            Some(_) => None,
            None => Some(self.path.bottleneck.capacity_bits(Time::ZERO, end)),
        };
        let ack_link = self.path.ack_link.as_ref().map(|a| {
            let cap = a.capacity_bits(Time::ZERO, end);
            AckLinkSummary {
                trace_mean_bps: link.ack_trace.as_ref().map_or(0, |t| t.mean_bps()),
                utilization: if cap > 0.0 { a.counters.wire_bytes_out as f64 * 8.0 / cap } else { 0.0 },
                packets_forwarded: a.counters.packets_out,
                queue_delay_ms: stats_ms(&a.counters.sojourn_ns),
                drops: a.can_overflow().then_some(a.counters.drops_overflow),
            }
        });
        let measured = Measured {
            engine: "sim".into(),
            end_ns: end.ns(),
            flows,
            link: LinkMeasured {
                capacity_bits,
                window_ns: end.ns(),
                wire_bytes_out: c.wire_bytes_out,
                drops_overflow: c.drops_overflow,
                drops_random: c.drops_random,
                drops_aqm: c.drops_aqm,
                ecn_marks: c.ecn_marks,
                queue_delay_ms: stats_ms(&c.sojourn_ns),
                queue_bytes: stats_raw(&c.queue_bytes_seen),
                queue_packets: stats_raw(&c.queue_packets_seen),
                packets_forwarded: c.packets_out,
                ack_link,
            },
            events: Some(self.events),
            host: self.host.as_ref().map(|h| HostSummary {
                cpu_share: h.share(),
                busy_fraction: h.busy.secs_f64() / end.secs_f64().max(1e-9),
                tasks: h.tasks,
                rx_dropped: h.rx_dropped,
                work: h.work,
                wait_ms: stats_ms(&h.wait_ns),
            }),
        };
        let summary = Summary::build(&self.scenario, measured);
        RunOutput { summary, series: self.recorder.finish(), trace_hash: self.trace_hash }
    }
}

/// What the download flow `f`'s open connection (`s`, `r`) carried so far.
pub(super) fn download_measured(f: &FlowMeta, s: &Sender, r: &Receiver) -> DownloadMeasured {
    DownloadMeasured {
        start_ns: f.download_start.ns(),
        completed_ns: r.completed_at.map(|t| t.ns()),
        delivered_bytes: r.delivered_bytes(),
        rtt_ms: Stats::from_histogram(&s.stats.rtt_ns, 1e6),
        rtt_samples: s.stats.rtt_ns.count(),
        retransmits: s.stats.retransmits,
        dupacks: Some(s.stats.dupacks),
        rto_count: Some(s.stats.rto_count),
    }
}
