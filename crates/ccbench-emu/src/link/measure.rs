//! The measurement window: per-flow counters, the time series, the self-check of the
//! real-time writes, and the report built from them.

use super::{Delivery, Ev, Link, Side};
use crate::report::{stats, ConnectionReport, FlowReport, LinkReport, Report, SelfCheck, SeriesReport, SHORT_RATIO};
use ccbench_sim::base::histogram::Histogram;
use ccbench_sim::net::bottleneck::LinkCounters;
use ccbench_sim::time::{Dur, Time};

#[derive(Default, Clone)]
pub(super) struct FlowCounters {
    pub(super) dropped: u64,
    pub(super) payload_out: u64,
    pub(super) data_in: u64,
    pub(super) last_payload_out: u64,
}

/// The measurement window and the figures collected in it.
#[derive(Default)]
pub(super) struct Measure {
    pub(super) t0: Option<Time>,
    pub(super) end: Time,
    pub(super) interval: Dur,
    pub(super) active: bool,
    pub(super) last_sample: Time,
    pub(super) last_wire_bytes: u64,
    pub(super) series: SeriesReport,
    pub(super) busy_bytes: u64,
    pub(super) busy_ns: u64,
    /// Capacity the link offered over the busy stretches, in bits.
    pub(super) busy_capacity_bits: f64,
    pub(super) last_forward_write: Option<Time>,
    pub(super) late_forward: Histogram,
    pub(super) late_reverse: Histogram,
    pub(super) to_receiver: u64,
    pub(super) to_sender: u64,
    pub(super) write_errors: u64,
}

impl Link {
    pub(super) fn start_measuring(&mut self, t: Time) {
        self.m.active = true;
        self.path.bottleneck.restart_capacity_at(t);
        if let Some(a) = self.path.ack_link.as_mut() {
            a.restart_capacity_at(t);
        }
        self.path.start_rtt_schedule(t, &mut self.agenda);
        self.path.bottleneck.counters = LinkCounters::default();
        self.m.last_wire_bytes = 0;
        for c in &mut self.counters {
            *c = FlowCounters::default();
        }
        for r in &mut self.rtt {
            r.clear_samples();
        }
        self.m.series = SeriesReport { flow_throughput_bps: vec![Vec::new(); self.flows], ..SeriesReport::default() };
        self.m.last_sample = t;
        if self.m.interval > Dur::ZERO && t + self.m.interval < self.m.end {
            self.schedule(t + self.m.interval, Ev::Sample);
        }
    }

    /// The sample that closes the window (over a possibly partial interval), as the
    /// simulator takes one at the end of a run.
    pub(super) fn final_sample(&mut self, t: Time) {
        if self.m.interval > Dur::ZERO && t > self.m.last_sample {
            self.sample(t);
        }
    }

    pub(super) fn sample(&mut self, t: Time) {
        let Some(t0) = self.m.t0 else { return };
        let secs = t.since(self.m.last_sample).secs_f64();
        let capacity = self.path.bottleneck.capacity_bits(self.m.last_sample, t);
        self.m.last_sample = t;
        let c = &self.path.bottleneck.counters;
        let bits = (c.wire_bytes_out - self.m.last_wire_bytes) as f64 * 8.0;
        self.m.last_wire_bytes = c.wire_bytes_out;
        let s = &mut self.m.series;
        s.time_s.push(t.since(t0).secs_f64());
        s.queue_bytes.push(self.path.bottleneck.backlog_bytes() as f64);
        s.queue_packets.push(self.path.bottleneck.backlog_packets() as f64);
        s.utilization.push(if capacity > 0.0 { bits / capacity } else { f64::NAN });
        s.throughput_bps.push(bits / secs);
        s.capacity_bps.push(capacity / secs);
        s.drops.push((c.drops_overflow + c.drops_random + c.drops_aqm) as f64);
        for (i, fc) in self.counters.iter_mut().take(self.flows).enumerate() {
            s.flow_throughput_bps[i].push((fc.payload_out - fc.last_payload_out) as f64 * 8.0 / secs);
            fc.last_payload_out = fc.payload_out;
        }
    }

    /// The caller wrote a delivered packet at wall-clock `wall` (`ok`: the write
    /// succeeded). Feeds the self-check.
    pub fn on_written(&mut self, d: &Delivery, wall: Time, ok: bool) {
        if !self.m.active {
            return;
        }
        if !ok {
            self.m.write_errors += 1;
        }
        let late = wall.since(d.due).ns();
        match d.to {
            Side::Receiver => {
                self.m.to_receiver += 1;
                self.m.late_forward.record(late);
                if let (true, Some(prev)) = (d.chained, self.m.last_forward_write) {
                    self.m.busy_bytes += d.bytes.len() as u64;
                    self.m.busy_ns += wall.since(prev).ns();
                    self.m.busy_capacity_bits += self.path.bottleneck.capacity_bits(prev, wall);
                }
                self.m.last_forward_write = Some(wall);
            }
            Side::Sender => {
                self.m.to_sender += 1;
                self.m.late_reverse.record(late);
            }
        }
    }

    /// The report: frozen at the end of the window if it has passed, else as of `now`.
    pub fn finish(&mut self, now: Time) -> Report {
        match self.snapshot.take() {
            Some(r) => r,
            None => {
                if self.m.active {
                    self.final_sample(now);
                }
                self.measure(now)
            }
        }
    }

    pub(super) fn measure(&self, now: Time) -> Report {
        let c = &self.path.bottleneck.counters;
        let delivered = (self.m.busy_ns > 0).then(|| self.m.busy_bytes as f64 * 8.0 / (self.m.busy_ns as f64 / 1e9));
        let ratio =
            (self.m.busy_capacity_bits > 0.0).then(|| self.m.busy_bytes as f64 * 8.0 / self.m.busy_capacity_bits);
        let window = self.m.t0.map_or(0.0, |t0| self.path.bottleneck.capacity_bits(t0, now.min(self.m.end.max(t0))));
        Report {
            measured_s: self.m.t0.map_or(0.0, |t0| now.since(t0).secs_f64()),
            link: LinkReport {
                packets_forwarded: c.packets_out,
                wire_bytes_out: c.wire_bytes_out,
                drops_overflow: c.drops_overflow,
                drops_random: c.drops_random,
                drops_aqm: c.drops_aqm,
                capacity_bits: window,
                ecn_marks: c.ecn_marks,
                queue_delay_ms: stats(&c.sojourn_ns, 1e6),
                queue_bytes: stats(&c.queue_bytes_seen, 1.0),
                queue_packets: stats(&c.queue_packets_seen, 1.0),
            },
            flows: (0..self.flows)
                .map(|i| (i, self.rtt[i].samples()))
                .map(|(i, rtt)| FlowReport {
                    dropped: self.counters[i].dropped,
                    payload_out_bytes: self.counters[i].payload_out,
                    data_packets_in: self.counters[i].data_in,
                    rtt_ms: stats(&rtt, 1e6),
                    rtt_samples: rtt.count(),
                    connections: self.rtt[i]
                        .connections
                        .iter()
                        .map(|(port, r)| ConnectionReport {
                            port: *port,
                            rtt_ms: stats(&r.samples, 1e6),
                            rtt_samples: r.samples.count(),
                        })
                        .collect(),
                })
                .collect(),
            series: self.m.series.clone(),
            check: SelfCheck {
                configured_rate_bps: self.cfg.scenario.link.reference_rate_bps(),
                delivered_rate_bps: delivered,
                delivered_rate_ratio: ratio,
                flag_short: ratio.is_some_and(|r| r < SHORT_RATIO),
                busy_s: self.m.busy_ns as f64 / 1e9,
                busy_bytes: self.m.busy_bytes,
                lateness_forward_us: stats(&self.m.late_forward, 1e3),
                lateness_reverse_us: stats(&self.m.late_reverse, 1e3),
                packets_to_receiver: self.m.to_receiver,
                packets_to_sender: self.m.to_sender,
                write_errors: self.m.write_errors,
                realtime_priority: false,
            },
            capture_error: None,
        }
    }
}
