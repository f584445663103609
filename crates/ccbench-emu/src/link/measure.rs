//! The measurement window: the link meter's samples and totals over it, the self-check of
//! the real-time writes, and the report built from them.

use super::{Delivery, Ev, Link, Side};
use crate::report::{stats, ConnectionReport, FlowReport, Report, SelfCheck, SeriesReport, UdpReport, SHORT_RATIO};
use ccbench_sim::base::histogram::Histogram;
use ccbench_sim::time::{Dur, Time};

/// The measurement window and the figures collected in it.
#[derive(Default)]
pub(super) struct Measure {
    pub(super) t0: Option<Time>,
    pub(super) end: Time,
    pub(super) interval: Dur,
    pub(super) active: bool,
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
        if let Some(a) = self.path.reverse_bottleneck.as_mut() {
            a.restart_capacity_at(t);
        }
        self.path.start_rtt_schedule(t, &mut self.agenda);
        self.meter.restart(t, &mut self.path);
        self.data_in.fill(0);
        self.datagrams_in.fill(0);
        for r in &mut self.rtt {
            r.clear_samples();
        }
        self.m.series = SeriesReport { flow_throughput_bps: vec![Vec::new(); self.flows], ..SeriesReport::default() };
        if self.m.interval > Dur::ZERO && t + self.m.interval < self.m.end {
            self.schedule(t + self.m.interval, Ev::Sample);
        }
    }

    /// The sample that closes the window (over a possibly partial interval), as the
    /// simulator takes one at the end of a run.
    pub(super) fn final_sample(&mut self, t: Time) {
        if self.m.interval > Dur::ZERO && t > self.meter.last_sample() {
            self.sample(t);
        }
    }

    pub(super) fn sample(&mut self, t: Time) {
        if self.m.t0.is_none() {
            return;
        }
        let row = self.meter.sample(t, &self.path);
        self.m.series.link.push(row);
        for (series, lane) in self.m.series.flow_throughput_bps.iter_mut().zip(self.meter.lanes()) {
            series.push(lane.throughput_bps);
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
        // The window closes at its end, or earlier when the report is taken first.
        let until = self.m.t0.map_or(Time::ZERO, |t0| now.min(self.m.end).max(t0));
        Report {
            measured_s: self.m.t0.map_or(0.0, |t0| now.since(t0).secs_f64()),
            link: self.meter.totals(&self.path, until),
            flows: (0..self.flows).map(|i| self.flow_report(i)).collect(),
            udp: (self.datagrams_in.iter().enumerate())
                .map(|(k, &datagrams_in)| UdpReport {
                    datagrams_in,
                    dropped: self.meter.lanes()[self.flows + k].dropped,
                })
                .collect(),
            series: self.m.series.clone(),
            check: self.self_check(),
            capture_error: None,
        }
    }

    fn flow_report(&self, i: usize) -> FlowReport {
        let (lane, rtt) = (&self.meter.lanes()[i], &self.rtt[i]);
        let samples = rtt.samples();
        FlowReport {
            dropped: lane.dropped,
            bottleneck_bytes: lane.payload_out,
            data_packets_in: self.data_in[i],
            mtu_dropped: self.mtu_dropped[i],
            icmp_sent: self.icmp_sent[i],
            rtt_ms: stats(&samples, 1e6),
            rtt_samples: samples.count(),
            connections: rtt
                .connections
                .iter()
                .map(|(port, r)| ConnectionReport {
                    port: *port,
                    rtt_ms: stats(&r.samples, 1e6),
                    rtt_samples: r.samples.count(),
                })
                .collect(),
        }
    }

    fn self_check(&self) -> SelfCheck {
        let delivered = (self.m.busy_ns > 0).then(|| self.m.busy_bytes as f64 * 8.0 / (self.m.busy_ns as f64 / 1e9));
        let ratio =
            (self.m.busy_capacity_bits > 0.0).then(|| self.m.busy_bytes as f64 * 8.0 / self.m.busy_capacity_bits);
        SelfCheck {
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
        }
    }
}
