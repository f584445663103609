//! The bottleneck: Bernoulli random loss, a drop-tail FIFO limited in bytes or packets,
//! and a transmitter at the link rate. Packets leave in FIFO order, so only the packet
//! being serialized has an event.

use super::Packet;
use crate::observe::histogram::Histogram;
use crate::sim::rng::Rng;
use crate::time::{Dur, Time};
use crate::units::BitRate;
use rand::Rng as _;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
pub enum QueueLimit {
    Bytes(u64),
    Packets(u64),
}

#[derive(Default, Debug, Clone)]
pub struct LinkCounters {
    pub ecn_marks: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    pub packets_out: u64,
    pub wire_bytes_out: u64,
    pub sojourn_ns: Histogram,
    pub queue_bytes_seen: Histogram,
    pub queue_packets_seen: Histogram,
}

pub struct Bottleneck {
    pub rate: BitRate,
    limit: QueueLimit,
    ecn_threshold: Option<QueueLimit>,
    loss: f64,
    rng: Rng,
    /// Waiting packets (the one being serialized is `on_wire`).
    queue: VecDeque<Packet>,
    queued_bytes: u64,
    on_wire: Option<Packet>,
    pub counters: LinkCounters,
}

/// What happened to a packet offered to the bottleneck.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit {
    /// Queued; if `Some`, transmission started and completes at that time.
    Queued(Option<Time>),
    DroppedOverflow,
    DroppedRandom,
}

impl Bottleneck {
    pub fn new(rate: BitRate, limit: QueueLimit, ecn_threshold: Option<QueueLimit>, loss: f64, rng: Rng) -> Bottleneck {
        Bottleneck {
            rate,
            limit,
            ecn_threshold,
            loss,
            rng,
            queue: VecDeque::new(),
            queued_bytes: 0,
            on_wire: None,
            counters: LinkCounters::default(),
        }
    }

    /// Bytes waiting behind the packet on the wire, as `tc -s qdisc` reports a backlog
    /// (the limit applies to these, as in bfifo/pfifo).
    pub fn backlog_bytes(&self) -> u64 {
        self.queued_bytes
    }
    pub fn backlog_packets(&self) -> u64 {
        self.queue.len() as u64
    }

    pub fn offer(&mut self, now: Time, mut pkt: Packet) -> Admit {
        if self.loss > 0.0 && self.rng.gen::<f64>() < self.loss {
            self.counters.drops_random += 1;
            return Admit::DroppedRandom;
        }
        self.counters.queue_bytes_seen.record(self.backlog_bytes());
        self.counters.queue_packets_seen.record(self.backlog_packets());
        let fits = match self.limit {
            QueueLimit::Bytes(b) => self.backlog_bytes() + pkt.wire_bytes as u64 <= b,
            QueueLimit::Packets(n) => self.backlog_packets() < n,
        };
        if !fits {
            self.counters.drops_overflow += 1;
            return Admit::DroppedOverflow;
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
        if self.on_wire.is_none() {
            self.on_wire = Some(pkt);
            Admit::Queued(Some(now + self.rate.tx_time(pkt.wire_bytes)))
        } else {
            self.queued_bytes += pkt.wire_bytes as u64;
            self.queue.push_back(pkt);
            Admit::Queued(None)
        }
    }

    /// The packet on the wire has been serialized: return it and, if another starts,
    /// the time it completes.
    pub fn tx_done(&mut self, now: Time) -> (Packet, Option<Time>) {
        let pkt = self.on_wire.take().expect("tx_done with idle link");
        self.counters.packets_out += 1;
        self.counters.wire_bytes_out += pkt.wire_bytes as u64;
        let sojourn = now.since(pkt.enqueued) - self.rate.tx_time(pkt.wire_bytes);
        self.counters.sojourn_ns.record(sojourn.ns());
        let next = self.queue.pop_front().map(|p| {
            self.queued_bytes -= p.wire_bytes as u64;
            self.on_wire = Some(p);
            now + self.rate.tx_time(p.wire_bytes)
        });
        (pkt, next)
    }

    pub fn tx_time(&self, bytes: u32) -> Dur {
        self.rate.tx_time(bytes)
    }
}
