//! What a finished run measured: every flow's totals (closed connections included), the
//! link's (the meter's, with the ACK link's) and the host's, from which `Summary::build`
//! makes the summary as it does for every engine.

use super::{FlowMeta, RunOutput, World};
use crate::summary::{
    DownloadMeasured, FlowMeasured, HostSummary, Measured, PathMtuMeasured, Stats, Summary, UdpMeasured,
};
use crate::tcp::{Receiver, Sender};
use crate::time::Time;

impl World {
    pub(super) fn finish(mut self, now: Time) -> RunOutput {
        for i in 0..self.senders.len() as u32 {
            self.take_transitions(i);
        }
        let end = now.min(self.end);
        let measured = Measured {
            engine: "sim".into(),
            end_ns: end.ns(),
            flows: (0..self.senders.len()).map(|i| self.flow_measured(i, end)).collect(),
            link: self.meter.totals(&self.path, end),
            events: Some(self.events),
            host: self.host.as_ref().map(|h| HostSummary {
                cpu_share: h.share(),
                busy_fraction: h.busy.secs_f64() / end.secs_f64().max(1e-9),
                tasks: h.tasks,
                rx_dropped: h.rx_dropped,
                work: h.work,
                wait_ms: Stats::from_histogram(&h.wait_ns, 1e6),
            }),
            udp: (self.udp.iter().zip(&self.udp_sinks).enumerate())
                .map(|(k, (src, sink))| UdpMeasured {
                    sent_packets: src.sent_packets,
                    sent_bytes: src.sent_bytes,
                    delivered_packets: sink.packets,
                    delivered_bytes: sink.bytes,
                    dropped: self.meter.lanes()[self.senders.len() + k].dropped,
                    one_way_delay_ms: Stats::from_histogram(&sink.one_way_delay_ns, 1e6),
                })
                .collect(),
            connections: Vec::new(),
        };
        let connections = self.connections_measured();
        let table = super::arrivals::Arrivals::table(&connections);
        let summary = Summary::build(&self.scenario, Measured { connections, ..measured });
        let mut series = self.recorder.finish();
        series.connections = table;
        RunOutput { summary, series, trace_hash: self.trace_hash }
    }

    /// Flow `i` at `end`, over all its connections.
    fn flow_measured(&self, i: usize, end: Time) -> FlowMeasured {
        let (s, r, f) = (&self.senders[i], &self.receivers[i], &self.flows[i]);
        let lane = &self.meter.lanes()[i];
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
        FlowMeasured {
            params: s.cc.params(),
            paced: s.paced(),
            completed_ns: if f.repeats_left == 0 { r.completed_at.map(|t| t.ns()) } else { None },
            delivered_bytes: f.closed_delivered + r.delivered_bytes(),
            bottleneck_bytes: lane.payload_out,
            sent_bytes: Some(t.sent_bytes),
            retransmits: t.retransmits,
            lost: Some(t.lost),
            dropped: lane.dropped,
            rto_count: Some(t.rto_count),
            undos: Some(t.undos),
            spurious_rtos: Some(t.spurious_rtos),
            rtt_ms: Stats::from_histogram(&t.rtt_ns, 1e6),
            rtt_samples: t.rtt_ns.count(),
            final_cwnd: s.w.cwnd,
            rwnd_limited_ms: t.rwnd_limited_us as f64 / 1e3,
            sndbuf_limited_ms: t.sndbuf_limited_us as f64 / 1e3,
            downloads,
            path_mtu: self.path_mtu.as_ref().map(|g| PathMtuMeasured {
                final_snd_mss: s.mss(),
                final_pmtu: s.pmtu_cookie(),
                mtu_dropped: g.dropped[i],
                icmp_sent: g.icmp_sent[i],
            }),
        }
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
