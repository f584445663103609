//! The emulated path, sans-IO: the simulator's dumbbell with real packets in it.
//!
//! ```text
//! sender --NIC (nic_rate, access_delay)--> bottleneck --(rate)--> delay rtt/2 --> receiver
//! sender <------------- delay rtt/2 + access_delay <-- [ACK trace link] --------- receiver
//! ```
//!
//! The caller passes time in. Packets arrive with [`Link::arrive`]; [`Link::poll`]
//! processes every event due by `now`, in time order, and hands back each packet that
//! leaves the path together with the instant it was scheduled to leave. Events run at
//! their scheduled time even when the caller polls late, so a late wake-up delays a
//! packet's write but never the link's schedule: the bottleneck's capacity is exact.
//!
//! ECN: with a marking threshold, the simulator's bottleneck marks ECN-capable packets
//! that arrive to a deep enough backlog, and the emulator sets CE in their IP header.
//!
//! Random loss (Bernoulli or Gilbert-Elliott) applies to data packets only (as in the
//! simulator); handshakes, pure ACKs and FINs never meet it. Packets that belong to no
//! configured flow (no TCP, or an unknown port) use an extra lane with the link's base
//! delays.
//!
//! A trace, a rate schedule and the RTT schedule start at the measurement epoch
//! ([`Link::begin`]); before it a trace runs from the emulator's start, so that
//! connection set-up has capacity. An ACK trace puts every packet towards the sender
//! behind the trace's opportunities.

use crate::capture::EmuCapture;
use crate::config::EmuConfig;
use crate::report::{stats, FlowReport, LinkReport, Report, SelfCheck, SeriesReport, SHORT_RATIO};
use crate::rtt::RttSampler;
use crate::wire::{self, TCP_ACK};
use ccbench_sim::net::bottleneck::{loss_for, LinkCounters};
use ccbench_sim::net::loss::LossModel;
use ccbench_sim::net::{Bottleneck, Packet, Pipe};
use ccbench_sim::observe::capture::Point;
use ccbench_sim::observe::histogram::Histogram;
use ccbench_sim::time::{Dur, Time};
use ccbench_sim::units::BitRate;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which end of the path a packet enters from or is delivered to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

/// A packet leaving the emulated path.
#[derive(Debug)]
pub struct Delivery {
    pub to: Side,
    /// When it was scheduled to leave.
    pub due: Time,
    /// Whether it left the bottleneck right behind the previous packet (the link was
    /// busy in between); used by the self-check.
    pub chained: bool,
    pub bytes: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    NicExit(usize),
    TxDone,
    AckTxDone,
    RttStep(usize),
    ForwardExit,
    ReverseExit(usize),
    Epoch,
    Sample,
    End,
}

/// Packet bytes beside the simulator's `Packet`, which carries the slot in `seq`.
#[derive(Default)]
struct Slab {
    slots: Vec<Option<(Vec<u8>, bool)>>,
    free: Vec<usize>,
}

impl Slab {
    fn insert(&mut self, bytes: Vec<u8>) -> u64 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some((bytes, false));
                i as u64
            }
            None => {
                self.slots.push(Some((bytes, false)));
                (self.slots.len() - 1) as u64
            }
        }
    }
    fn take(&mut self, id: u64) -> (Vec<u8>, bool) {
        let slot = self.slots[id as usize].take().expect("packet slot in use");
        self.free.push(id as usize);
        slot
    }
    fn mark_chained(&mut self, id: u64, chained: bool) {
        if let Some(slot) = self.slots[id as usize].as_mut() {
            slot.1 = chained;
        }
    }
    fn get(&self, id: u64) -> &[u8] {
        self.slots[id as usize].as_ref().map_or(&[], |(b, _)| b)
    }
    fn mark_ce(&mut self, id: u64) {
        if let Some((bytes, _)) = self.slots[id as usize].as_mut() {
            if wire::ecn(bytes) != 3 {
                wire::set_ce(bytes);
            }
        }
    }
    fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[derive(Default, Clone)]
struct FlowCounters {
    dropped: u64,
    payload_out: u64,
    data_in: u64,
    last_payload_out: u64,
}

/// The measurement window and the figures collected in it.
#[derive(Default)]
struct Measure {
    t0: Option<Time>,
    end: Time,
    interval: Dur,
    active: bool,
    last_sample: Time,
    last_wire_bytes: u64,
    series: SeriesReport,
    busy_bytes: u64,
    busy_ns: u64,
    /// Capacity the link offered over the busy stretches, in bits.
    busy_capacity_bits: f64,
    last_forward_write: Option<Time>,
    late_forward: Histogram,
    late_reverse: Histogram,
    to_receiver: u64,
    to_sender: u64,
    write_errors: u64,
}

pub struct Link {
    bottleneck: Bottleneck,
    /// The ACK direction's trace-driven link, if any.
    ack_link: Option<Bottleneck>,
    departed: Vec<Packet>,
    /// Per flow, plus one lane for unclassified traffic (index `flows`).
    nic: Vec<Pipe>,
    forward: Pipe,
    reverse: Vec<Pipe>,
    loss: LossModel,
    drops_random: u64,
    /// (time, rank, sequence, event): at equal times the end of the window comes last,
    /// after the final sample; otherwise first scheduled, first served.
    heap: BinaryHeap<Reverse<(Time, u8, u64, Ev)>>,
    seq: u64,
    slab: Slab,
    cfg: EmuConfig,
    flows: usize,
    /// Whether the packet now on the bottleneck's wire started right as the previous one
    /// finished.
    on_wire_chained: bool,
    counters: Vec<FlowCounters>,
    rtt: Vec<RttSampler>,
    m: Measure,
    /// Frozen at the end of the window.
    snapshot: Option<Report>,
    one_way: Dur,
    capture: Option<EmuCapture>,
}

impl Link {
    pub fn new(cfg: &EmuConfig) -> Link {
        let s = &cfg.scenario;
        let flows = s.flows.len();
        let one_way = Dur(s.link.rtt_ns / 2);
        let nic_rate = Some(BitRate(s.link.nic_rate_bps));
        let access = |i: usize| Dur(s.flows.get(i).map_or(0, |f| f.access_delay_ns));
        // The simulator's Bottleneck applies its loss to every packet it is offered; the
        // emulator draws the loss itself so that only data packets meet it.
        let bottleneck = Bottleneck::forward(s, false);
        Link {
            bottleneck,
            ack_link: Bottleneck::reverse(s),
            departed: Vec::new(),
            nic: (0..=flows).map(|i| Pipe::new(nic_rate, access(i))).collect(),
            forward: Pipe::new(None, one_way),
            reverse: (0..=flows).map(|i| Pipe::new(None, one_way + access(i))).collect(),
            loss: loss_for(s),
            drops_random: 0,
            heap: BinaryHeap::new(),
            seq: 0,
            slab: Slab::default(),
            cfg: cfg.clone(),
            flows,
            on_wire_chained: false,
            counters: vec![FlowCounters::default(); flows + 1],
            rtt: (0..flows).map(|_| RttSampler::default()).collect(),
            m: Measure { interval: Dur(s.sample_interval_ns), ..Measure::default() },
            snapshot: None,
            one_way,
            capture: None,
        }
    }

    /// Capture packets (`cfg.capture`), stamping them `epoch_ns` + emulator time.
    pub fn with_capture(mut self, capture: EmuCapture) -> Link {
        self.capture = Some(capture);
        self
    }

    fn cap(&mut self, point: Point, t: Time, flow: usize, bytes: &[u8]) {
        if let Some(c) = self.capture.as_mut() {
            if flow < self.flows {
                c.record(point, t, flow, bytes);
            }
        }
    }

    /// Close the capture files; the first error writing them, if any.
    pub fn finish_capture(&mut self) -> Option<String> {
        self.capture.as_mut().and_then(|c| c.finish())
    }

    fn schedule(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        let rank = u8::from(ev == Ev::End);
        self.heap.push(Reverse((t, rank, self.seq, ev)));
    }

    /// Start measuring at `t0` and stop at `end`: counters restart from zero at `t0`,
    /// the time series is sampled every interval after it and once more at `end` (or
    /// when the report is taken, if earlier), as the simulator samples, and the report
    /// is frozen at `end`.
    pub fn begin(&mut self, t0: Time, end: Time) {
        self.m.t0 = Some(t0);
        self.m.end = end;
        self.schedule(t0, Ev::Epoch);
        self.schedule(end, Ev::End);
    }

    /// The next instant at which something is due.
    pub fn next_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse((t, _, _, _))| *t)
    }

    /// Packets inside the emulator (queued, on the wire or in a delay line).
    pub fn packets_held(&self) -> usize {
        self.slab.len()
    }

    /// A packet read from the device on `from`'s side at `now`. Process what is due
    /// before `now` first (`poll`) so that events stay in time order.
    pub fn arrive(&mut self, now: Time, from: Side, bytes: Vec<u8>) {
        let tcp = wire::parse_tcp(&bytes);
        let wire_bytes = bytes.len() as u32;
        match from {
            Side::Sender => {
                let flow = tcp.and_then(|t| self.cfg.flow_of_port(t.dst_port)).unwrap_or(self.flows);
                let payload = tcp.map_or(0, |t| t.payload);
                if let (Some(t), true) = (tcp, flow < self.flows && payload > 0) {
                    self.rtt[flow].on_data(now, t.seq, payload);
                    if self.m.active {
                        self.counters[flow].data_in += 1;
                    }
                }
                self.cap(Point::Sender, now, flow, &bytes);
                let ecn = wire::ecn(&bytes);
                let pkt = Packet {
                    flow: flow as u32,
                    wire_bytes,
                    payload,
                    ect: ecn == 1 || ecn == 2,
                    ce: ecn == 3,
                    seq: self.slab.insert(bytes),
                    ..Packet::default()
                };
                if let (_, Some(t)) = self.nic[flow].push(now, pkt) {
                    self.schedule(t, Ev::NicExit(flow));
                }
            }
            Side::Receiver => {
                let flow = tcp.and_then(|t| self.cfg.flow_of_port(t.src_port)).unwrap_or(self.flows);
                self.cap(Point::Receiver, now, flow, &bytes);
                let router = now + self.one_way;
                self.cap(Point::BottleneckIn, router, flow, &bytes);
                self.cap(Point::BottleneckOut, router, flow, &bytes);
                let pkt = Packet { flow: flow as u32, wire_bytes, seq: self.slab.insert(bytes), ..Packet::default() };
                match self.ack_link.as_mut() {
                    Some(link) => {
                        if let Some(t) = link.offer(now, pkt) {
                            self.schedule(t, Ev::AckTxDone);
                        }
                    }
                    None => self.reverse_push(now, pkt),
                }
            }
        }
    }

    fn reverse_push(&mut self, t: Time, pkt: Packet) {
        let flow = pkt.flow as usize;
        if let (_, Some(x)) = self.reverse[flow].push(t, pkt) {
            self.schedule(x, Ev::ReverseExit(flow));
        }
    }

    /// Process events due at or before `now` until one delivers a packet; None when
    /// nothing more is due.
    pub fn poll(&mut self, now: Time) -> Option<Delivery> {
        while let Some(&Reverse((t, _, _, ev))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            if let Some(d) = self.handle(t, ev) {
                return Some(d);
            }
        }
        if let Some(c) = self.capture.as_mut() {
            c.flush(now);
        }
        None
    }

    fn handle(&mut self, t: Time, ev: Ev) -> Option<Delivery> {
        match ev {
            Ev::NicExit(f) => {
                let (pkt, next) = self.nic[f].pop(t);
                if let Some(n) = next {
                    self.schedule(n, Ev::NicExit(f));
                }
                self.offer(t, pkt);
                None
            }
            Ev::TxDone => {
                let mut departed = std::mem::take(&mut self.departed);
                let next = self.bottleneck.service(t, &mut departed);
                if let Some(n) = next {
                    self.schedule(n, Ev::TxDone);
                }
                for pkt in departed.drain(..) {
                    // Left right behind the previous packet, the link busy in between.
                    self.slab.mark_chained(pkt.seq, self.on_wire_chained);
                    self.on_wire_chained = true;
                    if pkt.ce {
                        self.slab.mark_ce(pkt.seq);
                    }
                    if self.capture.is_some() {
                        let bytes = self.slab.get(pkt.seq).to_vec();
                        self.cap(Point::BottleneckOut, t, pkt.flow as usize, &bytes);
                    }
                    if self.m.active {
                        self.counters[pkt.flow as usize].payload_out += pkt.payload as u64;
                    }
                    if let (_, Some(x)) = self.forward.push(t, pkt) {
                        self.schedule(x, Ev::ForwardExit);
                    }
                }
                self.departed = departed;
                self.on_wire_chained = self.bottleneck.is_busy();
                self.drain_drops();
                None
            }
            Ev::AckTxDone => {
                let mut departed = std::mem::take(&mut self.departed);
                let link = self.ack_link.as_mut().expect("an ACK link");
                if let Some(n) = link.service(t, &mut departed) {
                    self.schedule(n, Ev::AckTxDone);
                }
                for pkt in departed.drain(..) {
                    self.reverse_push(t, pkt);
                }
                self.departed = departed;
                None
            }
            Ev::RttStep(k) => {
                let s = &self.cfg.scenario;
                let one_way = Dur(s.link.rtt_schedule[k].rtt_ns / 2);
                self.forward.set_delay(one_way);
                for (i, r) in self.reverse.iter_mut().enumerate() {
                    r.set_delay(one_way + Dur(s.flows.get(i).map_or(0, |f| f.access_delay_ns)));
                }
                None
            }
            Ev::ForwardExit => {
                let (pkt, next) = self.forward.pop(t);
                if let Some(n) = next {
                    self.schedule(n, Ev::ForwardExit);
                }
                let (bytes, chained) = self.slab.take(pkt.seq);
                self.cap(Point::Receiver, t, pkt.flow as usize, &bytes);
                Some(Delivery { to: Side::Receiver, due: t, chained, bytes })
            }
            Ev::ReverseExit(f) => {
                let (pkt, next) = self.reverse[f].pop(t);
                if let Some(n) = next {
                    self.schedule(n, Ev::ReverseExit(f));
                }
                let (bytes, _) = self.slab.take(pkt.seq);
                self.cap(Point::Sender, t, f, &bytes);
                if f < self.flows {
                    if let Some(tcp) = wire::parse_tcp(&bytes).filter(|t| t.has(TCP_ACK)) {
                        self.rtt[f].on_ack(t, tcp.ack, self.m.active);
                    }
                }
                Some(Delivery { to: Side::Sender, due: t, chained: false, bytes })
            }
            Ev::Epoch => {
                self.start_measuring(t);
                None
            }
            Ev::Sample => {
                self.sample(t);
                let next = t + self.m.interval;
                if next < self.m.end {
                    self.schedule(next, Ev::Sample);
                }
                None
            }
            Ev::End => {
                if self.snapshot.is_none() && self.m.active {
                    self.final_sample(t);
                    self.snapshot = Some(self.measure(t));
                }
                self.m.active = false;
                None
            }
        }
    }

    fn offer(&mut self, t: Time, pkt: Packet) {
        let flow = pkt.flow as usize;
        if self.capture.is_some() {
            let bytes = self.slab.get(pkt.seq).to_vec();
            self.cap(Point::BottleneckIn, t, flow, &bytes);
        }
        if pkt.payload > 0 && self.loss.lose() {
            self.slab.take(pkt.seq);
            if self.m.active {
                self.drops_random += 1;
                self.counters[flow].dropped += 1;
            }
            return;
        }
        if let Some(at) = self.bottleneck.offer(t, pkt) {
            self.on_wire_chained = false;
            self.schedule(at, Ev::TxDone);
        }
        self.drain_drops();
    }

    /// Free what the bottleneck dropped (overflow, AQM) and charge it to its flow.
    fn drain_drops(&mut self) {
        for d in self.bottleneck.drops.drain(..) {
            self.slab.take(d.pkt.seq);
            if self.m.active {
                self.counters[d.pkt.flow as usize].dropped += 1;
            }
        }
    }

    fn start_measuring(&mut self, t: Time) {
        self.m.active = true;
        self.bottleneck.restart_capacity_at(t);
        if let Some(a) = self.ack_link.as_mut() {
            a.restart_capacity_at(t);
        }
        let steps: Vec<u64> = self.cfg.scenario.link.rtt_schedule.iter().map(|s| s.at_ns).collect();
        for (k, at) in steps.into_iter().enumerate() {
            self.schedule(t + Dur(at), Ev::RttStep(k));
        }
        self.bottleneck.counters = LinkCounters::default();
        self.drops_random = 0;
        self.m.last_wire_bytes = 0;
        for c in &mut self.counters {
            *c = FlowCounters::default();
        }
        for r in &mut self.rtt {
            r.samples = Histogram::default();
        }
        self.m.series = SeriesReport { flow_throughput_bps: vec![Vec::new(); self.flows], ..SeriesReport::default() };
        self.m.last_sample = t;
        if self.m.interval > Dur::ZERO && t + self.m.interval < self.m.end {
            self.schedule(t + self.m.interval, Ev::Sample);
        }
    }

    /// The sample that closes the window (over a possibly partial interval), as the
    /// simulator takes one at the end of a run.
    fn final_sample(&mut self, t: Time) {
        if self.m.interval > Dur::ZERO && t > self.m.last_sample {
            self.sample(t);
        }
    }

    fn sample(&mut self, t: Time) {
        let Some(t0) = self.m.t0 else { return };
        let secs = t.since(self.m.last_sample).secs_f64();
        let capacity = self.bottleneck.capacity_bits(self.m.last_sample, t);
        self.m.last_sample = t;
        let c = &self.bottleneck.counters;
        let bits = (c.wire_bytes_out - self.m.last_wire_bytes) as f64 * 8.0;
        self.m.last_wire_bytes = c.wire_bytes_out;
        let s = &mut self.m.series;
        s.time_s.push(t.since(t0).secs_f64());
        s.queue_bytes.push(self.bottleneck.backlog_bytes() as f64);
        s.queue_packets.push(self.bottleneck.backlog_packets() as f64);
        s.utilization.push(if capacity > 0.0 { bits / capacity } else { f64::NAN });
        s.throughput_bps.push(bits / secs);
        s.capacity_bps.push(capacity / secs);
        s.drops.push((c.drops_overflow + self.drops_random + c.drops_aqm) as f64);
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
                    self.m.busy_capacity_bits += self.bottleneck.capacity_bits(prev, wall);
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

    fn measure(&self, now: Time) -> Report {
        let c = &self.bottleneck.counters;
        let delivered = (self.m.busy_ns > 0).then(|| self.m.busy_bytes as f64 * 8.0 / (self.m.busy_ns as f64 / 1e9));
        let ratio = (self.m.busy_capacity_bits > 0.0).then(|| self.m.busy_bytes as f64 * 8.0 / self.m.busy_capacity_bits);
        let window = self.m.t0.map_or(0.0, |t0| self.bottleneck.capacity_bits(t0, now.min(self.m.end.max(t0))));
        Report {
            measured_s: self.m.t0.map_or(0.0, |t0| now.since(t0).secs_f64()),
            link: LinkReport {
                packets_forwarded: c.packets_out,
                wire_bytes_out: c.wire_bytes_out,
                drops_overflow: c.drops_overflow,
                drops_random: self.drops_random,
                drops_aqm: c.drops_aqm,
                capacity_bits: window,
                ecn_marks: c.ecn_marks,
                queue_delay_ms: stats(&c.sojourn_ns, 1e6),
                queue_bytes: stats(&c.queue_bytes_seen, 1.0),
                queue_packets: stats(&c.queue_packets_seen, 1.0),
            },
            flows: (0..self.flows)
                .map(|i| FlowReport {
                    dropped: self.counters[i].dropped,
                    payload_out_bytes: self.counters[i].payload_out,
                    data_packets_in: self.counters[i].data_in,
                    rtt_ms: stats(&self.rtt[i].samples, 1e6),
                    rtt_samples: self.rtt[i].samples.count(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build_tcp;

    const MS: u64 = 1_000_000;
    const PORT: u16 = 20000;

    fn config(rate: &str, buffer: &str, loss: f64, flows: &str) -> EmuConfig {
        let json = format!(
            r#"{{"scenario": {{"seed": 1, "duration_ns": 1000000000, "sample_interval_ns": 100000000,
                "link": {{"rate_bps": {rate}, "rtt_ns": 20000000, "buffer": {buffer}, "loss": {loss},
                          "nic_rate_bps": 10000000000}},
                "flows": {flows}}},
               "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": {PORT}, "max_runtime_ns": 1}}"#
        );
        EmuConfig::from_json(&json).unwrap()
    }

    fn one_flow(rate: &str, buffer: &str, loss: f64) -> Link {
        Link::new(&config(rate, buffer, loss, r#"[{"cca": "cubic"}]"#))
    }

    fn data(seq: u32) -> Vec<u8> {
        build_tcp(40000, PORT, seq, 1, TCP_ACK, 1448)
    }

    /// Run the link until `until`, collecting (side, due time) of deliveries.
    fn drain(link: &mut Link, until: Time) -> Vec<(Side, Time, bool)> {
        let mut out = Vec::new();
        while let Some(d) = link.poll(until) {
            out.push((d.to, d.due, d.chained));
            link.on_written(&d, d.due, true);
        }
        out
    }

    #[test]
    fn a_burst_leaves_at_the_link_rate_after_the_one_way_delay() {
        // 12 Mbit/s: a 1500-byte packet takes exactly 1 ms.
        let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0);
        link.begin(Time(0), Time(1000 * MS));
        for k in 0..5 {
            link.arrive(Time(0), Side::Sender, data(k * 1448));
        }
        let out = drain(&mut link, Time(100 * MS));
        assert_eq!(out.len(), 5);
        let nic = BitRate(10_000_000_000).tx_time(1500).ns();
        for (k, (side, due, chained)) in out.iter().enumerate() {
            assert_eq!(*side, Side::Receiver);
            assert_eq!(due.ns(), nic + (k as u64 + 1) * MS + 10 * MS);
            assert_eq!(*chained, k > 0);
        }
        let r = link.finish(Time(100 * MS));
        assert_eq!(r.link.packets_forwarded, 5);
        assert_eq!(r.check.busy_bytes, 4 * 1500);
        assert!((r.check.delivered_rate_ratio.unwrap() - 1.0).abs() < 1e-9);
        assert!(!r.check.flag_short);
    }

    #[test]
    fn late_writes_show_up_as_short_capacity() {
        let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0);
        link.begin(Time(0), Time(1000 * MS));
        for k in 0..11 {
            link.arrive(Time(0), Side::Sender, data(k * 1448));
        }
        // The writer only manages one packet every 1.1 ms.
        let mut wall = Time(0);
        while let Some(d) = link.poll(Time(100 * MS)) {
            wall = wall.max(d.due);
            link.on_written(&d, wall, true);
            wall += Dur(1_100_000);
        }
        let r = link.finish(Time(100 * MS));
        let ratio = r.check.delivered_rate_ratio.unwrap();
        assert!((ratio - 1.0 / 1.1).abs() < 1e-6, "ratio {ratio}");
        assert!(r.check.flag_short);
    }

    #[test]
    fn drop_tail_counts_packets_behind_the_one_on_the_wire() {
        let mut link = one_flow("12000000", r#"{"packets": 3}"#, 0.0);
        link.begin(Time(0), Time(1000 * MS));
        // 1 on the wire + 3 queued fit; the NIC spaces arrivals by 1.2 µs only.
        for k in 0..6 {
            link.arrive(Time(0), Side::Sender, data(k * 1448));
        }
        assert_eq!(drain(&mut link, Time(100 * MS)).len(), 4);
        let r = link.finish(Time(100 * MS));
        assert_eq!((r.link.drops_overflow, r.flows[0].dropped), (2, 2));
        assert_eq!(link.packets_held(), 0);
    }

    #[test]
    fn bdp_buffer_resolves_like_the_simulator() {
        let cfg = config("12000000", r#"{"bdp": 2.0}"#, 0.0, r#"[{"cca": "cubic"}]"#);
        match cfg.queue_limit() {
            ccbench_sim::net::bottleneck::QueueLimit::Bytes(b) => assert_eq!(b, 60_000),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn random_loss_spares_packets_without_payload() {
        let mut link = one_flow("100000000", r#"{"packets": 100000}"#, 0.5);
        link.begin(Time(0), Time(10_000 * MS));
        for k in 0..1000u32 {
            link.arrive(Time(k as u64 * MS), Side::Sender, build_tcp(40000, PORT, k, 1, TCP_ACK, 0));
            link.arrive(Time(k as u64 * MS), Side::Sender, data(k * 1448));
            drain(&mut link, Time(k as u64 * MS));
        }
        drain(&mut link, Time(2000 * MS));
        let r = link.finish(Time(2000 * MS));
        assert_eq!(r.link.packets_forwarded + r.link.drops_random, 2000);
        assert!((400..600).contains(&r.link.drops_random), "{}", r.link.drops_random);
        assert_eq!(r.check.packets_to_receiver, 2000 - r.link.drops_random);
    }

    #[test]
    fn acks_return_after_the_flows_own_delay_and_give_rtt_samples() {
        let cfg = config(
            "12000000",
            r#"{"packets": 100}"#,
            0.0,
            r#"[{"cca": "cubic"}, {"cca": "cubic", "access_delay_ns": 5000000}]"#,
        );
        let mut link = Link::new(&cfg);
        link.begin(Time(0), Time(1000 * MS));
        link.arrive(Time(0), Side::Sender, build_tcp(40001, PORT + 1, 1000, 1, TCP_ACK, 1448));
        let fwd = drain(&mut link, Time(50 * MS));
        // NIC exit at 5 ms + 1.2 µs, 1 ms on the wire, 10 ms one way.
        assert_eq!(fwd[0].1.ns(), 16 * MS + 1200);
        link.arrive(Time(17 * MS), Side::Receiver, build_tcp(PORT + 1, 40001, 1, 2448, TCP_ACK, 0));
        let back = drain(&mut link, Time(100 * MS));
        assert_eq!(back, vec![(Side::Sender, Time(32 * MS), false)]);
        let r = link.finish(Time(100 * MS));
        assert_eq!(r.flows[1].rtt_samples, 1);
        assert!((r.flows[1].rtt_ms.mean - 32.0).abs() < 0.3);
        assert_eq!(r.flows[0].rtt_samples, 0);
    }

    #[test]
    fn ecn_capable_packets_are_marked_above_the_threshold() {
        let json = r#"{"scenario": {"seed": 1, "duration_ns": 1000000000,
                "link": {"rate_bps": 12000000, "rtt_ns": 20000000, "buffer": {"packets": 100},
                         "ecn_threshold": {"packets": 2}},
                "flows": [{"cca": "cubic"}]},
               "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": 20000, "max_runtime_ns": 1}"#;
        let mut link = Link::new(&EmuConfig::from_json(json).unwrap());
        link.begin(Time(0), Time(1000 * MS));
        for k in 0..5 {
            let mut p = data(k * 1448);
            p[1] = 0x02; // ECT(0)
            link.arrive(Time(0), Side::Sender, p);
        }
        link.arrive(Time(0), Side::Sender, data(5 * 1448)); // not ECN-capable
        let mut marks = Vec::new();
        while let Some(d) = link.poll(Time(100 * MS)) {
            marks.push(wire::ecn(&d.bytes));
        }
        // Backlogs seen on arrival: 0 (starts on the wire), 0, 1, 2, 3, 4.
        assert_eq!(marks, vec![2, 2, 2, 3, 3, 0]);
        assert_eq!(link.finish(Time(100 * MS)).link.ecn_marks, 2);
    }

    #[test]
    fn a_window_cut_short_ends_with_a_partial_sample() {
        let mut link = one_flow("12000000", r#"{"packets": 1000}"#, 0.0);
        link.begin(Time(0), Time(1000 * MS));
        for k in 0..150u32 {
            link.arrive(Time(k as u64 * MS), Side::Sender, data(k * 1448));
            drain(&mut link, Time(k as u64 * MS));
        }
        let r = link.finish(Time(150 * MS));
        assert_eq!(r.series.time_s, vec![0.1, 0.15]);
        // The link was busy all along: full utilisation over the partial interval too.
        assert!((r.series.utilization[1] - 1.0).abs() < 0.03, "{:?}", r.series.utilization);
    }

    #[test]
    fn unknown_traffic_takes_the_base_delays() {
        let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0);
        link.arrive(Time(0), Side::Receiver, vec![0x60; 60]);
        assert_eq!(drain(&mut link, Time(50 * MS)), vec![(Side::Sender, Time(10 * MS), false)]);
    }

    #[test]
    fn the_series_is_sampled_from_the_epoch() {
        let mut link = one_flow("12000000", r#"{"packets": 1000}"#, 0.0);
        link.begin(Time(500 * MS), Time(800 * MS));
        for k in 0..200u32 {
            link.arrive(Time(400 * MS + k as u64 * 1_000_000), Side::Sender, data(k * 1448));
            drain(&mut link, Time(400 * MS + k as u64 * 1_000_000));
        }
        drain(&mut link, Time(1000 * MS));
        let r = link.finish(Time(1000 * MS));
        // Samples at 0.1 and 0.2 s and at the end of the window, 0.3 s.
        assert_eq!(r.series.time_s.len(), 3);
        assert!((r.series.time_s[2] - 0.3).abs() < 1e-9);
        // Packets arrive at 12 Mbit/s, exactly the link's rate: fully used.
        assert!((r.series.utilization[0] - 1.0).abs() < 0.02, "{:?}", r.series.utilization);
        assert!((r.measured_s - 0.3).abs() < 1e-9);
        // Departures at 401 ms + k ms + 1.2 µs: k = 99..=199 fall in the window.
        assert_eq!(r.flows[0].payload_out_bytes, 101 * 1448);
    }

    #[test]
    fn captures_each_point_in_time_order_with_headers_only() {
        use ccbench_sim::observe::capture::CaptureSpec;
        let dir = std::env::temp_dir().join(format!("ccbench-emu-capture-{}", std::process::id()));
        let spec = CaptureSpec { points: Point::ALL.to_vec(), flows: None, dir: dir.clone() };
        let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0).with_capture(EmuCapture::open(&spec, 0).unwrap());
        link.begin(Time(0), Time(1000 * MS));
        for k in 0..3 {
            link.arrive(Time(0), Side::Sender, data(k * 1448));
        }
        drain(&mut link, Time(20 * MS));
        link.arrive(Time(20 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 3 * 1448, TCP_ACK, 0));
        drain(&mut link, Time(100 * MS));
        assert_eq!(link.finish_capture(), None);
        let read = |p: Point| {
            let b = std::fs::read(p.file_in(&dir)).unwrap();
            let mut out = Vec::new();
            let mut at = 24;
            while at < b.len() {
                let word = |o: usize| u32::from_le_bytes(b[at + o..at + o + 4].try_into().unwrap()) as u64;
                out.push((word(0) * 1_000_000_000 + word(4), word(8), word(12)));
                at += 16 + word(8) as usize;
            }
            out
        };
        for p in Point::ALL {
            let recs = read(p);
            assert_eq!(recs.len(), 4, "{p:?}");
            assert!(recs.windows(2).all(|w| w[0].0 <= w[1].0), "{p:?} {recs:?}");
            assert_eq!((recs[0].1, recs[0].2), (52, 1500));
        }
        // The ACK passes the router one way (10 ms) after the receiver sent it; with no
        // access delay it reaches the sender then too.
        assert_eq!(read(Point::Receiver)[3].0, 20 * MS);
        assert_eq!(read(Point::BottleneckIn)[3].0, 30 * MS);
        assert_eq!(read(Point::Sender)[3].0, 30 * MS);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn trace_ms(name: &str) -> Vec<u64> {
        let path = format!("{}/../../traces/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect()
    }

    /// One Cubic flow's scenario with extra link fields (JSON), for the link models.
    fn with_link(extra: &str, buffer: &str) -> Link {
        let json = format!(
            r#"{{"scenario": {{"seed": 1, "duration_ns": 10000000000, "sample_interval_ns": 100000000,
                "link": {{"rate_bps": 12000000, "rtt_ns": 20000000, "buffer": {buffer} {extra}}},
                "flows": [{{"cca": "cubic"}}]}},
               "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": {PORT}, "max_runtime_ns": 1}}"#
        );
        Link::new(&EmuConfig::from_json(&json).unwrap())
    }

    #[test]
    fn a_trace_link_delivers_exactly_the_traces_capacity() {
        // The first 10 s of the T-Mobile downlink trace, kept busy by 60 Mbit/s of data
        // (a packet every 0.2 ms) into a deep buffer; the window starts at 2 s, so the
        // trace starts there too.
        let ms = trace_ms("TMobile-LTE-short.down");
        let extra = format!(r#", "trace": {{"opportunities_ms": {ms:?}}}"#);
        let mut link = with_link(&extra, r#"{"packets": 1000000}"#);
        let (t0, end) = (Time(2000 * MS), Time(12_000 * MS));
        link.begin(t0, end);
        let mut delivered = 0u64;
        let mut k = 0u32;
        let mut now = Time(0);
        while now < Time(12_500 * MS) {
            link.arrive(now, Side::Sender, data(k * 1448));
            k += 1;
            while let Some(d) = link.poll(now) {
                if d.to == Side::Receiver && d.due >= t0 + Dur(10 * MS) && d.due < end + Dur(10 * MS) {
                    delivered += d.bytes.len() as u64;
                }
                link.on_written(&d, d.due, true);
            }
            now += Dur(MS / 5);
        }
        // Opportunities in [t0, end), counted from the file: the trace restarts at t0.
        let opportunities = ms.iter().filter(|&&m| m < 10_000).count() as u64;
        assert_eq!(delivered, opportunities * 1500, "delivered {delivered} B for {opportunities} opportunities");
        let r = link.finish(end);
        assert!((r.link.capacity_bits - (opportunities * 12_000) as f64).abs() < 1e-6, "{}", r.link.capacity_bits);
        // Backlogged throughout: every opportunity used, every interval fully utilised.
        assert!(r.series.utilization.iter().all(|u| (u - 1.0).abs() < 1e-9), "{:?}", r.series.utilization);
        let ratio = r.check.delivered_rate_ratio.unwrap();
        assert!((ratio - 1.0).abs() < 0.01, "ratio {ratio}");
        let mean_bps = r.series.capacity_bps.iter().sum::<f64>() / r.series.capacity_bps.len() as f64;
        assert!((mean_bps - (opportunities * 12_000) as f64 / 10.0).abs() < 1.0, "{mean_bps}");
    }

    #[test]
    fn an_ack_trace_holds_acks_until_an_opportunity() {
        // ACK opportunities every 10 ms: an ACK sent at 3 ms leaves at 10 ms, then 10 ms of
        // one-way delay.
        let mut link = with_link(r#", "ack_trace": {"opportunities_ms": [10]}"#, r#"{"packets": 100}"#);
        link.begin(Time(0), Time(1000 * MS));
        link.arrive(Time(3 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 1449, TCP_ACK, 0));
        link.arrive(Time(4 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 2897, TCP_ACK, 0));
        let back = drain(&mut link, Time(100 * MS));
        assert_eq!(back, vec![(Side::Sender, Time(20 * MS), false), (Side::Sender, Time(20 * MS), false)]);
    }

    #[test]
    fn rtt_steps_change_both_delays_from_the_epoch() {
        // 20 ms, then 60 ms from 100 ms after the epoch at 50 ms.
        let mut link = with_link(r#", "rtt_schedule": [{"at_ns": 100000000, "rtt_ns": 60000000}]"#, r#"{"packets": 100}"#);
        link.begin(Time(50 * MS), Time(1000 * MS));
        let mut back = drain(&mut link, Time(100 * MS));
        link.arrive(Time(100 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 1449, TCP_ACK, 0));
        back.extend(drain(&mut link, Time(200 * MS)));
        link.arrive(Time(200 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 2897, TCP_ACK, 0));
        back.extend(drain(&mut link, Time(400 * MS)));
        assert_eq!(back, vec![(Side::Sender, Time(110 * MS), false), (Side::Sender, Time(230 * MS), false)]);
    }

    #[test]
    fn fq_codel_in_the_emulator_frees_what_it_drops() {
        let mut link = with_link(r#", "aqm": {"fq_codel": {"limit_packets": 50}}"#, r#"{"packets": 100}"#);
        link.begin(Time(0), Time(1000 * MS));
        for k in 0..200u32 {
            link.arrive(Time(0), Side::Sender, data(k * 1448));
        }
        let out = drain(&mut link, Time(900 * MS));
        let r = link.finish(Time(900 * MS));
        assert_eq!(out.len() as u64 + r.link.drops_overflow + r.link.drops_aqm, 200);
        assert!(r.link.drops_overflow > 0 && r.flows[0].dropped == r.link.drops_overflow + r.link.drops_aqm);
        assert_eq!(link.packets_held(), 0);
    }

    #[test]
    fn rate_steps_and_gilbert_elliott_loss_apply_in_the_emulator() {
        // 12 Mbit/s, then 24 Mbit/s from 100 ms after the epoch (1 ms then 0.5 ms per
        // packet); Gilbert-Elliott loss on data only.
        let extra = r#", "rate_schedule": [{"at_ns": 100000000, "rate_bps": 24000000}],
                       "loss_model": {"gilbert_elliott": {"p": 0.05, "r": 0.5}}"#;
        let mut link = with_link(extra, r#"{"packets": 100000}"#);
        link.begin(Time(50 * MS), Time(1000 * MS));
        for k in 0..400u32 {
            link.arrive(Time(50 * MS), Side::Sender, data(k * 1448));
            link.arrive(Time(50 * MS), Side::Sender, build_tcp(40000, PORT, k, 1, TCP_ACK, 0));
        }
        let out = drain(&mut link, Time(1000 * MS));
        let r = link.finish(Time(1000 * MS));
        // Pure ACKs are never lost; every data packet is delivered or counted lost.
        assert_eq!(out.len() as u64 + r.link.drops_random, 800);
        assert!(r.link.drops_random > 10, "{}", r.link.drops_random);
        // Until 150 ms (100 ms after the epoch) 1 ms per 1500-byte packet, after it half.
        let firsts: Vec<u64> = out.iter().map(|d| d.1.ns()).collect();
        assert!(firsts.windows(2).any(|w| w[1] - w[0] == MS / 2));
    }
}
