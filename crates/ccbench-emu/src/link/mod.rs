//! The emulated path: the simulator's `net::Path`, with real packets in it.
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
//! Random loss (Bernoulli or Gilbert-Elliott) applies to data packets only (TCP payload
//! and UDP flows' datagrams): handshakes, pure ACKs and FINs, which the simulator does
//! not model, never meet it. Packets that belong to no configured flow (an unknown
//! protocol or port) use an extra lane with the link's base delays.
//!
//! Lanes (`EmuConfig`'s layout): each TCP flow's, each UDP flow's (a datagram is its
//! flow's by its sink's port, from the side of its source), each group of arrivals'
//! (its connections by their listener's port, the other port telling them apart), then
//! the one of no flow. RTT samples and captures are the TCP flows'.
//!
//! Path MTU (`link.mtu`): an IPv4 packet from a sender longer than it is dropped
//! before the bottleneck, as a router with a smaller next-hop MTU drops a packet with DF
//! set (Linux sets DF on TCP), and, unless `link.mtu_black_hole`, answered with ICMP
//! "fragmentation needed" carrying the MTU (RFC 1191 section 4), delivered to the
//! sender after its access delay both ways (the router is at the bottleneck), as the
//! simulator's `PathMtuGate` does for a flow either way.
//!
//! Directions: the sender device (near) and the receiver device (far) are the path's
//! two ends. A flow going down has its sender near, its data through the bottleneck and
//! its ACKs back through the reverse one (if any); a flow going up (`direction = "up"`)
//! has its sender far, its data through the reverse bottleneck (`link.reverse`) and its
//! ACKs through the bottleneck, behind the down flows' data. A packet read from either
//! device is its flow's data or its flow's ACK according to the flow's direction
//! (`EmuConfig::segment`), and each lane's ends map back to the devices.
//!
//! A trace, a rate schedule and the RTT schedule start at the measurement epoch
//! ([`Link::begin`]); before it a trace runs from the emulator's start, so that
//! connection set-up has capacity. An ACK trace puts every packet towards the sender
//! behind the trace's opportunities.

mod measure;
mod slab;

use self::measure::Measure;
use self::slab::Slab;
use crate::capture::EmuCapture;
use crate::config::EmuConfig;
use crate::report::Report;
use crate::rtt::FlowRtt;
use crate::wire::{self, TCP_ACK};
use ccbench_sim::config::build;
use ccbench_sim::event::Schedule;
use ccbench_sim::meter::LinkMeter;
use ccbench_sim::net::aqm::Dropped;
use ccbench_sim::net::{Dir, End, Packet, Path, PathObserver, PathWake};
use ccbench_sim::observe::capture::Point;
use ccbench_sim::time::{Dur, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which device a packet is read from or written to: the sender device (near: the down
/// flows' senders, the up flows' receivers) or the receiver device (far).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    Sender,
    Receiver,
}

impl Side {
    /// The device where the end `end` of a lane is: a down lane's sender is near, an up
    /// lane's far.
    fn of(end: End, up: bool) -> Side {
        match (end, up) {
            (End::Sender, false) | (End::Receiver, true) => Side::Sender,
            (End::Receiver, false) | (End::Sender, true) => Side::Receiver,
        }
    }
}

/// A packet leaving the emulated path.
#[derive(Debug)]
pub struct Delivery {
    pub to: Side,
    /// When it was scheduled to leave.
    pub due: Time,
    /// Whether it left the (forward) bottleneck right behind the previous packet (the
    /// link was busy in between); used by the self-check.
    pub chained: bool,
    pub bytes: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Path(PathWake),
    /// The ICMP in slab slot `.0` reaches the sender on device `.1`.
    Icmp(u64, Side),
    Epoch,
    Sample,
    End,
}

/// What is due, in time order: (time, rank, sequence, event). At equal times the end of
/// the window comes last, after the final sample; otherwise first scheduled, first served.
#[derive(Default)]
struct Agenda {
    heap: BinaryHeap<Reverse<(Time, u8, u64, Ev)>>,
    seq: u64,
}

impl Agenda {
    fn schedule(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        let rank = u8::from(ev == Ev::End);
        self.heap.push(Reverse((t, rank, self.seq, ev)));
    }
}

impl Schedule<PathWake> for Agenda {
    fn push(&mut self, t: Time, wake: PathWake) {
        self.schedule(t, Ev::Path(wake));
    }
}

pub struct Link {
    path: Path,
    agenda: Agenda,
    slab: Slab,
    cfg: EmuConfig,
    /// TCP flows: the first lanes.
    flows: usize,
    /// The lane of packets of no flow, the last.
    no_flow: usize,
    /// Which lanes go up (the last, packets of no flow, goes down).
    up: Vec<bool>,
    /// What the path carried, lane by lane, and the link's samples and totals.
    meter: LinkMeter,
    /// Data packets each flow's sender put on the path in the window.
    data_in: Vec<u64>,
    /// Datagrams each UDP flow's source put on the path in the window.
    datagrams_in: Vec<u64>,
    rtt: Vec<FlowRtt>,
    m: Measure,
    /// Frozen at the end of the window.
    snapshot: Option<Report>,
    one_way: Dur,
    capture: Option<EmuCapture>,
    /// Each lane's packets dropped for being longer than `link.mtu`, and the ICMPs
    /// answering them, over the whole run.
    mtu_dropped: Vec<u64>,
    icmp_sent: Vec<u64>,
}

impl Link {
    pub fn new(cfg: &EmuConfig) -> Link {
        let s = &cfg.scenario;
        let (flows, lanes) = (s.flows.len(), cfg.lanes());
        // The flows' and UDP flows' lanes as the simulator builds them, then the groups'
        // and the one of no flow.
        let mut path = build::path(s, s.lanes());
        let mut meter = LinkMeter::new(s, s.lanes());
        for i in s.lanes()..lanes {
            let up = cfg.lane_up(i);
            path.add_lane(Dur(cfg.lane_access_ns(i)), up);
            meter.add_lane(up);
        }
        path.bottleneck.lose_data_only();
        Link {
            path,
            agenda: Agenda::default(),
            slab: Slab::default(),
            cfg: cfg.clone(),
            flows,
            no_flow: cfg.no_flow_lane(),
            up: (0..lanes).map(|i| cfg.lane_up(i)).collect(),
            meter,
            data_in: vec![0; flows],
            datagrams_in: vec![0; s.udp.len()],
            rtt: (0..flows).map(|_| FlowRtt::default()).collect(),
            m: Measure { interval: Dur(s.sample_interval_ns), ..Measure::default() },
            snapshot: None,
            one_way: Dur(s.link.rtt_ns / 2),
            capture: None,
            mtu_dropped: vec![0; lanes],
            icmp_sent: vec![0; lanes],
        }
    }

    /// Capture packets (`cfg.capture`), stamping them `epoch_ns` + emulator time.
    pub fn with_capture(mut self, capture: EmuCapture) -> Link {
        self.capture = Some(capture);
        self
    }

    fn cap(&mut self, point: Point, t: Time, flow: usize, bytes: &[u8]) {
        record(self.capture.as_mut(), self.flows, point, t, flow, bytes);
    }

    /// Close the capture files; the first error writing them, if any.
    pub fn finish_capture(&mut self) -> Option<String> {
        self.capture.as_mut().and_then(|c| c.finish())
    }

    fn schedule(&mut self, t: Time, ev: Ev) {
        self.agenda.schedule(t, ev);
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
        self.agenda.heap.peek().map(|Reverse((t, _, _, _))| *t)
    }

    /// Packets inside the emulator (queued, on the wire or in a delay line).
    pub fn packets_held(&self) -> usize {
        self.slab.len()
    }

    /// A packet read from the device on `from`'s side at `now`: its lane's data if that
    /// is where the lane's sender is, else its lane's ACK. Process what is due before
    /// `now` first (`poll`) so that events stay in time order.
    pub fn arrive(&mut self, now: Time, from: Side, bytes: Vec<u8>) {
        let near = from == Side::Sender;
        let tcp = wire::parse_tcp(&bytes);
        let segment = tcp.and_then(|t| self.cfg.segment(near, t.src_port, t.dst_port));
        let datagram = wire::parse_udp(&bytes).and_then(|u| Some((self.cfg.udp_lane(near, u.dst_port)?, u.payload)));
        // Packets of no flow take the last lane (a down one) the way they came.
        let (flow, from_sender, payload) = match (segment, datagram) {
            (Some(g), _) => (g.lane, g.from_sender, tcp.map_or(0, |t| t.payload)),
            (None, Some((lane, payload))) => (lane, true, payload),
            (None, None) => (self.no_flow, near, 0),
        };
        if !from_sender {
            self.reply(now, flow, bytes);
            return;
        }
        if let (Some(t), Some(g), true) = (tcp, segment, payload > 0 && flow < self.flows) {
            self.rtt[flow].on_data(now, g.connection, t.seq, payload);
            if self.m.active {
                self.data_in[flow] += 1;
            }
        }
        if let (Some(k), true) = (flow.checked_sub(self.flows), datagram.is_some() && self.m.active) {
            self.datagrams_in[k] += 1;
        }
        self.cap(Point::Sender, now, flow, &bytes);
        if self.over_mtu(now, flow, &bytes) {
            return;
        }
        let ecn = wire::ecn(&bytes);
        let pkt = Packet {
            flow: flow as u32,
            wire_bytes: bytes.len() as u32,
            payload,
            ect: ecn == 1 || ecn == 2,
            ce: ecn == 3,
            seq: self.slab.insert(bytes),
            ..Packet::default()
        };
        self.path.send(now, flow as u32, pkt, &mut self.agenda);
    }

    /// A packet from lane `flow`'s receiver (an ACK) at `now`. It carries no payload for
    /// the path: random loss and the meter take data only.
    fn reply(&mut self, now: Time, flow: usize, bytes: Vec<u8>) {
        self.cap(Point::Receiver, now, flow, &bytes);
        if !self.up[flow] {
            // A down flow's ACK passes the router (near, at the bottleneck) one way later;
            // an up flow's passes its router (far) as it reaches the sender (`at_sender`).
            let router = now + self.one_way;
            self.cap(Point::BottleneckIn, router, flow, &bytes);
            self.cap(Point::BottleneckOut, router, flow, &bytes);
        }
        let pkt = Packet {
            flow: flow as u32,
            wire_bytes: bytes.len() as u32,
            seq: self.slab.insert(bytes),
            ..Packet::default()
        };
        let mut tally = Tally {
            slab: &mut self.slab,
            capture: self.capture.as_mut(),
            meter: &mut self.meter,
            flows: self.flows,
            up: &self.up,
        };
        self.path.reply(now, flow as u32, pkt, &mut self.agenda, &mut tally);
    }

    /// Whether `link.mtu` stops `bytes`, from the sender on `flow`'s lane at `now`: then
    /// it is counted, and answered with the ICMP unless the path is a black hole.
    fn over_mtu(&mut self, now: Time, flow: usize, bytes: &[u8]) -> bool {
        let link = &self.cfg.scenario.link;
        let Some(mtu) = link.mtu_bytes else { return false };
        if wire::ipv4_total_len(bytes).is_none_or(|len| len <= mtu) {
            return false;
        }
        self.mtu_dropped[flow] += 1;
        if link.mtu_black_hole {
            return true;
        }
        // The range check keeps `mtu` within an IPv4 packet's length.
        if let Some(icmp) = wire::frag_needed(bytes, mtu.min(u16::MAX as u32) as u16) {
            let access = self.cfg.lane_access_ns(flow);
            self.icmp_sent[flow] += 1;
            let slot = self.slab.insert(icmp);
            self.schedule(now + Dur(2 * access), Ev::Icmp(slot, Side::of(End::Sender, self.up[flow])));
        }
        true
    }

    /// Process events due at or before `now` until one delivers a packet; None when
    /// nothing more is due.
    pub fn poll(&mut self, now: Time) -> Option<Delivery> {
        while let Some(&Reverse((t, _, _, ev))) = self.agenda.heap.peek() {
            if t > now {
                break;
            }
            self.agenda.heap.pop();
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
            Ev::Path(wake) => {
                let mut tally = Tally {
                    slab: &mut self.slab,
                    capture: self.capture.as_mut(),
                    meter: &mut self.meter,
                    flows: self.flows,
                    up: &self.up,
                };
                let a = self.path.handle(t, wake, &mut self.agenda, &mut tally)?;
                let (bytes, chained) = self.slab.take(a.pkt.seq);
                let lane = a.lane as usize;
                let to = Side::of(a.to, self.up[lane]);
                // Only what reaches the receiver device left the forward bottleneck.
                let chained = chained && to == Side::Receiver;
                match a.to {
                    End::Receiver => self.cap(Point::Receiver, t, lane, &bytes),
                    End::Sender => self.at_sender(t, lane, &bytes),
                }
                Some(Delivery { to, due: t, chained, bytes })
            }
            Ev::Icmp(slot, to) => {
                let (bytes, _) = self.slab.take(slot);
                Some(Delivery { to, due: t, chained: false, bytes })
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
}

impl Link {
    /// An ACK (or any packet from lane `lane`'s receiver) reaching its sender at `t`:
    /// captured, and an RTT sample for the segments it acknowledges.
    fn at_sender(&mut self, t: Time, lane: usize, bytes: &[u8]) {
        self.cap(Point::Sender, t, lane, bytes);
        if lane >= self.flows {
            return;
        }
        if self.up[lane] {
            // Its router, the far one, is where the sender is (no access delay there).
            self.cap(Point::BottleneckIn, t, lane, bytes);
            self.cap(Point::BottleneckOut, t, lane, bytes);
        }
        if let Some(tcp) = wire::parse_tcp(bytes).filter(|t| t.has(TCP_ACK)) {
            let sacks = wire::sack_blocks(bytes);
            if let Some((_, conn)) = self.cfg.lane_and_connection(tcp.dst_port, tcp.src_port) {
                self.rtt[lane].on_ack(t, conn, tcp.ack, &sacks, self.m.active);
            }
        }
    }
}

/// Capture `bytes` at `point` if they belong to a flow and a capture is on.
fn record(capture: Option<&mut EmuCapture>, flows: usize, point: Point, t: Time, flow: usize, bytes: &[u8]) {
    if let Some(c) = capture {
        if flow < flows {
            c.record(point, t, flow, bytes);
        }
    }
}

/// Keeps the packet bytes, the meter and the capture up to date with what the path
/// reports. The meter counts from the start; the window's epoch restarts it.
struct Tally<'a> {
    slab: &'a mut Slab,
    capture: Option<&'a mut EmuCapture>,
    meter: &'a mut LinkMeter,
    flows: usize,
    up: &'a [bool],
}

impl Tally<'_> {
    /// A flow is captured at the bottleneck its data crosses (its ACKs where they pass
    /// that bottleneck's router).
    fn captured_at(&self, dir: Dir, pkt: &Packet) -> bool {
        self.up[pkt.flow as usize] == (dir == Dir::Up)
    }
}

impl PathObserver for Tally<'_> {
    fn entered(&mut self, dir: Dir, now: Time, pkt: &Packet) {
        if self.captured_at(dir, pkt) {
            let bytes = self.slab.get(pkt.seq);
            record(self.capture.as_deref_mut(), self.flows, Point::BottleneckIn, now, pkt.flow as usize, bytes);
        }
    }

    fn left(&mut self, dir: Dir, now: Time, pkt: &Packet, chained: bool) {
        self.slab.mark_chained(pkt.seq, chained);
        if pkt.ce {
            self.slab.mark_ce(pkt.seq);
        }
        if self.captured_at(dir, pkt) {
            let bytes = self.slab.get(pkt.seq);
            record(self.capture.as_deref_mut(), self.flows, Point::BottleneckOut, now, pkt.flow as usize, bytes);
        }
        self.meter.left(dir, now, pkt, chained);
    }

    fn dropped(&mut self, dir: Dir, d: &Dropped) {
        self.slab.take(d.pkt.seq);
        self.meter.dropped(dir, d);
    }
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod traffic_tests;
#[cfg(test)]
mod up_tests;
