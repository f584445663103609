//! The bottleneck: random loss, a queueing discipline (drop-tail, CoDel, FQ-CoDel), and
//! a server: a rate (constant or stepping) or a delivery-opportunity trace.
//!
//! Only the next service instant has an event. At a rate, that is the end of the head
//! packet's serialization; the qdisc is dequeued when the transmitter frees up, as a
//! NIC without a transmit ring would. On a trace, it is the next opportunity: the qdisc
//! is dequeued at the opportunity, whose byte budget may let several packets leave.

use super::aqm::{self, DropReason, Dropped, Qdisc};
use super::capacity::{Capacity, RateSchedule};
use super::loss::LossModel;
use super::Packet;
use crate::base::histogram::Histogram;
use crate::time::Time;
use crate::units::BitRate;

pub use super::aqm::QueueLimit;

#[derive(Default, Debug, Clone)]
pub struct LinkCounters {
    pub ecn_marks: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    /// Drops by CoDel's control law at dequeue.
    pub drops_aqm: u64,
    pub packets_out: u64,
    pub wire_bytes_out: u64,
    pub sojourn_ns: Histogram,
    pub queue_bytes_seen: Histogram,
    pub queue_packets_seen: Histogram,
}

/// The packet being served: dequeued at `start`; `left` bytes still to send (trace).
#[derive(Clone, Copy, Debug)]
struct InService {
    pkt: Packet,
    start: Time,
    left: u32,
}

pub struct Bottleneck {
    capacity: Capacity,
    qdisc: Qdisc,
    ecn_threshold: Option<QueueLimit>,
    loss: LossModel,
    /// Random loss spares packets without payload (handshakes, pure ACKs, FINs).
    loss_data_only: bool,
    current: Option<InService>,
    /// A service event is pending.
    scheduled: bool,
    /// Packets dropped since the caller last drained this (loss, overflow, AQM).
    pub drops: Vec<Dropped>,
    pub counters: LinkCounters,
}

impl Bottleneck {
    pub fn new(capacity: Capacity, qdisc: Qdisc, ecn_threshold: Option<QueueLimit>, loss: LossModel) -> Bottleneck {
        Bottleneck {
            capacity,
            qdisc,
            ecn_threshold,
            loss,
            loss_data_only: false,
            current: None,
            scheduled: false,
            drops: Vec::new(),
            counters: LinkCounters::default(),
        }
    }

    /// A drop-tail FIFO at a constant rate.
    pub fn fifo(rate: BitRate, limit: QueueLimit, ecn_threshold: Option<QueueLimit>, loss: LossModel) -> Bottleneck {
        let q = Qdisc::DropTail(aqm::DropTail::new(limit));
        Bottleneck::new(Capacity::Rate(RateSchedule::constant(rate)), q, ecn_threshold, loss)
    }

    /// Let random loss spare packets without payload. The emulator's real connections
    /// carry handshakes and FINs, which the simulator does not model.
    pub fn lose_data_only(&mut self) {
        self.loss_data_only = true;
    }

    /// Start the trace or rate schedule at `origin` (the emulator's measurement epoch).
    pub fn restart_capacity_at(&mut self, origin: Time) {
        self.capacity.restart_at(origin);
    }

    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }

    /// Capacity offered in `[t0, t1)`, in bits.
    pub fn capacity_bits(&self, t0: Time, t1: Time) -> f64 {
        self.capacity.bits_between(t0, t1)
    }

    /// Bytes waiting behind the packet on the wire, as `tc -s qdisc` reports a backlog
    /// (drop-tail limits apply to these, as in bfifo/pfifo).
    pub fn backlog_bytes(&self) -> u64 {
        self.qdisc.backlog_bytes()
    }
    pub fn backlog_packets(&self) -> u64 {
        self.qdisc.backlog_packets()
    }

    /// Whether a full queue can drop an arriving packet.
    pub fn can_overflow(&self) -> bool {
        self.qdisc.can_overflow()
    }

    /// Whether a packet is in service or a service event is pending.
    pub fn is_busy(&self) -> bool {
        self.scheduled
    }

    /// A packet arrives at `now`. Returns the time of a service event the caller must
    /// schedule, if the link was idle. Dropped packets go to `drops`.
    pub fn offer(&mut self, now: Time, mut pkt: Packet) -> Option<Time> {
        // A SYN without data is spared as the emulator spares it (it spares every packet
        // without payload), so that both engines open connections alike; a Fast Open
        // SYN with data can be lost.
        let spared = pkt.payload == 0 && (self.loss_data_only || pkt.is_syn());
        if !spared && self.loss.lose() {
            self.counters.drops_random += 1;
            self.drops.push(Dropped { pkt, reason: DropReason::Random });
            return None;
        }
        self.counters.queue_bytes_seen.record(self.backlog_bytes());
        self.counters.queue_packets_seen.record(self.backlog_packets());
        if !self.qdisc.admits(&pkt) {
            self.counters.drops_overflow += 1;
            self.drops.push(Dropped { pkt, reason: DropReason::Overflow });
            return None;
        }
        pkt.enqueued = now;
        let above = match self.ecn_threshold {
            Some(QueueLimit::Bytes(b)) => self.backlog_bytes() >= b,
            Some(QueueLimit::Packets(n)) => self.backlog_packets() >= n,
            None => false,
        };
        if above && pkt.ect && !pkt.ce {
            pkt.ce = true;
            self.counters.ecn_marks += 1;
        }
        if self.scheduled {
            if let Qdisc::DropTail(d) = &mut self.qdisc {
                d.push(pkt);
                return None;
            }
            let n = self.drops.len();
            self.qdisc.enqueue(pkt, &mut self.drops);
            self.count_drops(n);
            return None;
        }
        match &mut self.capacity {
            // An idle drop-tail link at a rate: straight onto the wire (what queueing and
            // dequeuing at once would do).
            Capacity::Rate(r) if matches!(self.qdisc, Qdisc::DropTail(_)) => {
                let done = r.finish(now, pkt.wire_bytes);
                self.current = Some(InService { pkt, start: now, left: 0 });
                self.scheduled = true;
                Some(done)
            }
            Capacity::Rate(_) => {
                let n = self.drops.len();
                self.qdisc.enqueue(pkt, &mut self.drops);
                self.count_drops(n);
                self.start(now)
            }
            Capacity::Trace(server) => {
                let at = server.first_service(now);
                let n = self.drops.len();
                self.qdisc.enqueue(pkt, &mut self.drops);
                self.count_drops(n);
                self.scheduled = true;
                Some(at)
            }
        }
    }

    /// The service event at `now`: departing packets are appended to `out`. Returns the
    /// time of the next service event, if any.
    pub fn service(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        self.service_with(now, |p| out.push(p))
    }

    /// [`Bottleneck::service`] handing each departing packet to `depart`.
    #[inline]
    pub fn service_with(&mut self, now: Time, mut depart: impl FnMut(Packet)) -> Option<Time> {
        self.scheduled = false;
        if let Capacity::Rate(r) = &mut self.capacity {
            let cur = self.current.take().expect("service with an idle link");
            // The plain link (one rate, drop-tail) without the general machinery.
            if let (Some(rate), Qdisc::DropTail(d)) = (r.constant_rate(), &mut self.qdisc) {
                let next = d.pop().map(|pkt| {
                    self.current = Some(InService { pkt, start: now, left: 0 });
                    now + rate.tx_time(pkt.wire_bytes)
                });
                self.scheduled = next.is_some();
                depart(self.departed(cur));
                return next;
            }
            depart(self.departed(cur));
            return self.start(now);
        }
        loop {
            let Capacity::Trace(server) = &mut self.capacity else { unreachable!() };
            let budget = server.budget_at(now);
            if budget == 0 {
                break;
            }
            if self.current.is_none() {
                match self.dequeue(now) {
                    Some(pkt) => self.current = Some(InService { pkt, start: now, left: pkt.wire_bytes }),
                    None => break,
                }
            }
            let Capacity::Trace(server) = &mut self.capacity else { unreachable!() };
            let cur = self.current.as_mut().expect("in service");
            let take = budget.min(cur.left);
            server.spend(take);
            cur.left -= take;
            if cur.left == 0 {
                let cur = self.current.take().expect("in service");
                depart(self.departed(cur));
            }
        }
        let Capacity::Trace(server) = &self.capacity else { unreachable!() };
        if self.current.is_some() || self.qdisc.backlog_packets() > 0 {
            self.scheduled = true;
            Some(server.next_opportunity())
        } else {
            None
        }
    }

    /// Rate server: dequeue at `now` and start serializing; the completion time.
    #[inline]
    fn start(&mut self, now: Time) -> Option<Time> {
        let pkt = self.dequeue(now)?;
        let Capacity::Rate(r) = &mut self.capacity else { unreachable!() };
        let done = r.finish(now, pkt.wire_bytes);
        self.current = Some(InService { pkt, start: now, left: 0 });
        self.scheduled = true;
        Some(done)
    }

    #[inline]
    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        if let Qdisc::DropTail(d) = &mut self.qdisc {
            return d.pop();
        }
        let (n, marks) = (self.drops.len(), self.qdisc.aqm_marks());
        let pkt = self.qdisc.dequeue(now, &mut self.drops);
        self.counters.ecn_marks += self.qdisc.aqm_marks() - marks;
        self.count_drops(n);
        pkt
    }

    fn count_drops(&mut self, from: usize) {
        for d in &self.drops[from..] {
            match d.reason {
                DropReason::Overflow => self.counters.drops_overflow += 1,
                DropReason::Aqm => self.counters.drops_aqm += 1,
                DropReason::Random => self.counters.drops_random += 1,
            }
        }
    }

    /// Count a packet leaving the link.
    #[inline]
    fn departed(&mut self, cur: InService) -> Packet {
        self.counters.packets_out += 1;
        self.counters.wire_bytes_out += cur.pkt.wire_bytes as u64;
        self.counters.sojourn_ns.record(cur.start.since(cur.pkt.enqueued).ns());
        cur.pkt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::trace::{Trace, TraceServer};
    use crate::time::NS_PER_MS;

    const MS: u64 = NS_PER_MS;

    fn data(flow: u32) -> Packet {
        Packet { flow, wire_bytes: 1500, payload: 1448, ..Packet::default() }
    }

    fn trace_link(ms: &[u64]) -> Bottleneck {
        let server = TraceServer::new(Trace::from_ms(ms).unwrap());
        let q = Qdisc::DropTail(aqm::DropTail::new(QueueLimit::Packets(1000)));
        Bottleneck::new(Capacity::Trace(server), q, None, LossModel::None)
    }

    /// Run a link's service events until none is pending; (departure time, packet).
    fn run(link: &mut Bottleneck, mut next: Option<Time>) -> Vec<(Time, Packet)> {
        let mut out = Vec::new();
        let mut departed = Vec::new();
        while let Some(t) = next {
            next = link.service(t, &mut departed);
            out.extend(departed.drain(..).map(|p| (t, p)));
        }
        out
    }

    #[test]
    fn full_packets_leave_one_per_opportunity() {
        let mut link = trace_link(&[1, 1, 4]);
        let first = link.offer(Time(0), data(0));
        for _ in 0..4 {
            assert_eq!(link.offer(Time(0), data(0)), None);
        }
        let times: Vec<u64> = run(&mut link, first).iter().map(|(t, _)| t.ns() / MS).collect();
        // Two opportunities at 1 ms, one at 4 ms, then 5 and 5 + 3 = 8 ms.
        assert_eq!(times, vec![1, 1, 4, 5, 5]);
        assert_eq!(link.counters.packets_out, 5);
    }

    #[test]
    fn small_packets_share_an_opportunity_and_large_ones_span_two() {
        let mut link = trace_link(&[1]);
        let ack = |n: u32| Packet { wire_bytes: n, ..Packet::default() };
        let first = link.offer(Time(0), ack(52));
        for bytes in [64, 1000, 1500, 52] {
            link.offer(Time(0), ack(bytes));
        }
        let got: Vec<(u64, u32)> = run(&mut link, first).iter().map(|(t, p)| (t.ns() / MS, p.wire_bytes)).collect();
        // 1 ms: 52 + 64 + 1000 = 1116 of 1500 bytes; the 1500-byte packet takes the
        // remaining 384 and 1116 of the next opportunity; the last ACK fits in what is left.
        assert_eq!(got, vec![(1, 52), (1, 64), (1, 1000), (2, 1500), (2, 52)]);
    }

    #[test]
    fn unused_opportunities_are_lost() {
        let mut link = trace_link(&[1]);
        let first = link.offer(Time(0), data(0));
        assert_eq!(run(&mut link, first).len(), 1);
        // Idle from 1 ms to 10.5 ms: those opportunities are gone.
        let next = link.offer(Time(10 * MS + MS / 2), data(0));
        assert_eq!(next, Some(Time(11 * MS)));
        for _ in 0..3 {
            link.offer(Time(10 * MS + MS / 2), data(0));
        }
        let times: Vec<u64> = run(&mut link, next).iter().map(|(t, _)| t.ns() / MS).collect();
        assert_eq!(times, vec![11, 12, 13, 14]);
        assert!((link.capacity_bits(Time(0), Time(1000 * MS)) - 999.0 * 12_000.0).abs() < 1e-9);
    }

    #[test]
    fn constant_rate_serializes_back_to_back() {
        let mut link = Bottleneck::fifo(BitRate(12_000_000), QueueLimit::Packets(10), None, LossModel::None);
        let first = link.offer(Time(0), data(0));
        assert_eq!(first, Some(Time(MS)));
        link.offer(Time(0), data(1));
        let got: Vec<(u64, u32)> = run(&mut link, first).iter().map(|(t, p)| (t.ns() / MS, p.flow)).collect();
        assert_eq!(got, vec![(1, 0), (2, 1)]);
        assert_eq!(link.counters.sojourn_ns.max(), MS);
    }
}
