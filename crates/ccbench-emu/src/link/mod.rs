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

mod measure;
mod slab;

use self::measure::{FlowCounters, Measure};
use self::slab::Slab;
use crate::capture::EmuCapture;
use crate::config::EmuConfig;
use crate::report::Report;
use crate::rtt::FlowRtt;
use crate::wire::{self, TCP_ACK};
use ccbench_sim::config::build::{forward_bottleneck, loss_for, reverse_bottleneck};
use ccbench_sim::net::loss::LossModel;
use ccbench_sim::net::{Bottleneck, Packet, Pipe};
use ccbench_sim::observe::capture::Point;
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
    rtt: Vec<FlowRtt>,
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
        let bottleneck = forward_bottleneck(s, false);
        Link {
            bottleneck,
            ack_link: reverse_bottleneck(s),
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
            rtt: (0..flows).map(|_| FlowRtt::default()).collect(),
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
                    self.rtt[flow].on_data(now, t.src_port, t.seq, payload);
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
                        self.rtt[f].on_ack(t, tcp.dst_port, tcp.ack, &wire::sack_blocks(&bytes), self.m.active);
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
}

#[cfg(test)]
mod tests;
