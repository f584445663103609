//! The bottleneck's queueing discipline: drop-tail (`bfifo`/`pfifo`), CoDel
//! (`sch_codel.c`) or FQ-CoDel (`sch_fq_codel.c`).

pub mod codel;
pub mod fq_codel;

use crate::net::Packet;
use crate::time::Time;
use std::collections::VecDeque;

pub use codel::Codel;
pub use fq_codel::FqCodel;

/// Why a packet was dropped at the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The random loss model.
    Random,
    /// The queue was full (drop-tail and CoDel's limit; FQ-CoDel's fattest-flow drops).
    Overflow,
    /// CoDel's control law, at dequeue.
    Aqm,
}

#[derive(Clone, Copy, Debug)]
pub struct Dropped {
    pub pkt: Packet,
    pub reason: DropReason,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Bytes(u64),
    Packets(u64),
}

impl QueueLimit {
    /// No limit at all (Mahimahi's default queue): nothing is ever dropped for room.
    pub const NONE: QueueLimit = QueueLimit::Packets(u64::MAX);
}

/// A FIFO whose limit counts the packets waiting behind the one being sent, as
/// `bfifo`/`pfifo` do.
pub struct DropTail {
    limit: QueueLimit,
    queue: VecDeque<Packet>,
    bytes: u64,
}

impl DropTail {
    pub fn new(limit: QueueLimit) -> DropTail {
        DropTail { limit, queue: VecDeque::new(), bytes: 0 }
    }

    #[inline]
    pub fn push(&mut self, pkt: Packet) {
        self.bytes += pkt.wire_bytes as u64;
        self.queue.push_back(pkt);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.bytes -= p.wire_bytes as u64;
        Some(p)
    }
}

pub enum Qdisc {
    DropTail(DropTail),
    Codel(Codel),
    FqCodel(FqCodel),
}

impl Qdisc {
    /// Whether an arriving packet is tail-dropped (FQ-CoDel admits every packet and
    /// drops from its fattest flow instead).
    #[inline]
    pub fn admits(&self, pkt: &Packet) -> bool {
        match self {
            Qdisc::DropTail(d) => match d.limit {
                QueueLimit::Bytes(b) => d.bytes + pkt.wire_bytes as u64 <= b,
                QueueLimit::Packets(n) => (d.queue.len() as u64) < n,
            },
            Qdisc::Codel(c) => c.admits(),
            Qdisc::FqCodel(_) => true,
        }
    }

    /// Whether an arriving packet can find the queue full (every qdisc but a FIFO
    /// without a limit).
    pub fn can_overflow(&self) -> bool {
        !matches!(self, Qdisc::DropTail(d) if d.limit == QueueLimit::NONE)
    }

    /// Queue an admitted packet; FQ-CoDel may drop others (to `drops`).
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet, drops: &mut Vec<Dropped>) {
        match self {
            Qdisc::DropTail(d) => d.push(pkt),
            Qdisc::Codel(c) => c.enqueue(pkt),
            Qdisc::FqCodel(f) => f.enqueue(pkt, drops),
        }
    }

    /// The next packet to send at `now`; CoDel drops go to `drops`.
    #[inline]
    pub fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<Packet> {
        match self {
            Qdisc::DropTail(d) => d.pop(),
            Qdisc::Codel(c) => c.dequeue(now, drops),
            Qdisc::FqCodel(f) => f.dequeue(now, drops),
        }
    }

    #[inline]
    pub fn backlog_bytes(&self) -> u64 {
        match self {
            Qdisc::DropTail(d) => d.bytes,
            Qdisc::Codel(c) => c.backlog_bytes(),
            Qdisc::FqCodel(f) => f.backlog_bytes(),
        }
    }

    #[inline]
    pub fn backlog_packets(&self) -> u64 {
        match self {
            Qdisc::DropTail(d) => d.queue.len() as u64,
            Qdisc::Codel(c) => c.backlog_packets(),
            Qdisc::FqCodel(f) => f.backlog_packets(),
        }
    }

    /// CE marks made by CoDel (ECN instead of a drop, or above `ce_threshold`).
    pub fn aqm_marks(&self) -> u64 {
        match self {
            Qdisc::DropTail(_) => 0,
            Qdisc::Codel(c) => c.stats.marks,
            Qdisc::FqCodel(f) => f.stats.marks,
        }
    }
}
