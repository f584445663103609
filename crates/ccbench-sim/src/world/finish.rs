//! The summary of a finished run: every flow's totals (closed connections included),
//! the link's, the ACK link's and the host's, in the summary schema's units.

use super::{FlowMeta, RunOutput, World};
use crate::base::histogram::Histogram;
use crate::summary::{
    jain_index, AckLinkSummary, ConfiguredLink, DownloadSummary, FlowSummary, HostSummary, LinkSummary, Stats, Summary,
    VERSION,
};
use crate::tcp::{Receiver, Sender};
use crate::time::Time;
use crate::units::wire;

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
            let done = if f.repeats_left == 0 { r.completed_at } else { None };
            let stop = done.unwrap_or(end);
            let life = stop.since(f.start).secs_f64();
            let per_sec = |bytes: u64| if life > 0.0 { bytes as f64 * 8.0 / life } else { 0.0 };
            let mut t = f.closed.clone();
            t.add(&s.totals(end));
            let rtt = stats_ms(&t.rtt_ns);
            let delivered = f.closed_delivered + r.delivered_bytes();
            let repeated = self.scenario.flows[i].repeat > 1;
            let downloads = repeated.then(|| {
                let mut all = f.downloads.clone();
                if r.completed_at.is_none() {
                    all.push(download_summary(f, s, r, end));
                }
                all
            });
            flows.push(FlowSummary {
                id: i as u32,
                cca: f.cca.clone(),
                params: s.cc.params(),
                ecn: s.p.ecn,
                paced: s.paced,
                start_s: f.start.secs_f64(),
                base_rtt_ms: f.base_rtt.ms_f64(),
                goodput_bps: per_sec(delivered),
                throughput_bps: per_sec(f.bottleneck_bytes),
                delivered_bytes: delivered,
                sent_bytes: t.sent_bytes,
                retransmits: t.retransmits,
                lost: t.lost,
                dropped: f.dropped,
                rto_count: t.rto_count,
                undos: t.undos,
                spurious_rtos: t.spurious_rtos,
                self_inflicted_delay_ms: if t.rtt_ns.count() > 0 { rtt.mean - f.base_rtt.ms_f64() } else { 0.0 },
                rtt_ms: rtt,
                size_bytes: f.size_bytes,
                completion_s: done.map(|t| t.since(f.start).secs_f64()),
                final_cwnd: s.w.cwnd,
                rwnd_limited_ms: t.rwnd_limited_us as f64 / 1e3,
                downloads,
            });
        }
        let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
        let c = &self.path.bottleneck.counters;
        let link = &self.scenario.link;
        let configured = ConfiguredLink::of(&self.scenario);
        let secs = end.secs_f64().max(1e-9);
        let (rate_bps, utilization) = match self.path.bottleneck.capacity().constant_rate() {
            Some(_) => (link.rate_bps, c.wire_bytes_out as f64 * 8.0 / (link.rate_bps as f64 * secs)),
            None => {
                let cap = self.path.bottleneck.capacity_bits(Time::ZERO, end);
                let util = if cap > 0.0 { c.wire_bytes_out as f64 * 8.0 / cap } else { 0.0 };
                ((cap / secs).round() as u64, util)
            }
        };
        let ack_link = self.path.ack_link.as_ref().map(|a| {
            let cap = a.capacity_bits(Time::ZERO, end);
            AckLinkSummary {
                trace_mean_bps: link.ack_trace.as_ref().map_or(0, |t| t.mean_bps()),
                utilization: if cap > 0.0 { a.counters.wire_bytes_out as f64 * 8.0 / cap } else { 0.0 },
                packets_forwarded: a.counters.packets_out,
                queue_delay_ms: stats_ms(&a.counters.sojourn_ns),
            }
        });
        let summary = Summary {
            engine: "sim",
            version: VERSION,
            seed: self.scenario.seed,
            duration_s: end.secs_f64(),
            header_bytes: wire::DATA_OVERHEAD,
            jain_index: jain_index(&goodputs),
            flows,
            link: LinkSummary {
                rate_bps,
                rtt_ms: configured.rtt_ms,
                buffer_bytes: configured.buffer_bytes,
                buffer_packets: configured.buffer_packets,
                bdp_bytes: configured.bdp_bytes,
                utilization,
                drops: c.drops_overflow + c.drops_random + c.drops_aqm,
                drops_overflow: c.drops_overflow,
                drops_random: c.drops_random,
                ecn_marks: c.ecn_marks,
                queue_delay_ms: stats_ms(&c.sojourn_ns),
                queue_bytes: stats_raw(&c.queue_bytes_seen),
                queue_packets: stats_raw(&c.queue_packets_seen),
                packets_forwarded: c.packets_out,
                trace_mean_bps: configured.trace_mean_bps,
                aqm: configured.aqm,
                drops_aqm: (!link.aqm.is_drop_tail()).then_some(c.drops_aqm),
                loss_model: configured.loss_model,
                ack_link,
            },
            events: self.events,
            host: self.host.as_ref().map(|h| HostSummary {
                cpu_share: h.share(),
                busy_fraction: h.busy.secs_f64() / end.secs_f64().max(1e-9),
                tasks: h.tasks,
                rx_dropped: h.rx_dropped,
                work: h.work,
                wait_ms: stats_ms(&h.wait_ns),
            }),
        };
        RunOutput { summary, series: self.recorder.finish(), trace_hash: self.trace_hash }
    }
}

/// The download flow `f`'s open connection (`s`, `r`) carried, as of `now`.
pub(super) fn download_summary(f: &FlowMeta, s: &Sender, r: &Receiver, now: Time) -> DownloadSummary {
    let done = r.completed_at;
    let took = done.unwrap_or(now).since(f.download_start).secs_f64();
    let rtt = Stats::from_histogram(&s.stats.rtt_ns, 1e6);
    DownloadSummary {
        index: f.downloads.len() as u32,
        start_s: f.download_start.secs_f64(),
        completion_s: done.map(|t| t.since(f.download_start).secs_f64()),
        delivered_bytes: r.delivered_bytes(),
        throughput_bps: if took > 0.0 { r.delivered_bytes() as f64 * 8.0 / took } else { 0.0 },
        self_inflicted_delay_ms: if s.stats.rtt_ns.count() > 0 { rtt.mean - f.base_rtt.ms_f64() } else { 0.0 },
        rtt_ms: rtt,
        retransmits: s.stats.retransmits,
        dupacks: s.stats.dupacks,
        rto_count: s.stats.rto_count,
    }
}
