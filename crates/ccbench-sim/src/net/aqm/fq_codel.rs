//! FQ-CoDel as `net/sched/sch_fq_codel.c`: packets hashed to flow queues (here by flow
//! id, where the kernel hashes the 5-tuple), deficit round robin with a byte quantum
//! over a list of new flows served first and a list of old flows, and a CoDel instance
//! per flow queue that sees the whole qdisc's backlog. On overflow (`limit` packets or
//! `memory_limit` bytes of buffers) `fq_codel_drop` drops from the head of the flow with
//! the largest backlog, up to half of it and at most `drop_batch` packets at a time.

use super::codel::{codel_dequeue, CodelParams, CodelQueue, CodelStats, CodelVars};
use super::{DropReason, Dropped};
use crate::net::Packet;
use crate::time::Time;
use std::collections::VecDeque;

/// Buffer memory charged per packet beyond its bytes, standing for `skb->truesize`.
pub const TRUESIZE_OVERHEAD: u64 = 768;

/// `struct fq_codel_flow`.
#[derive(Default)]
struct Flow {
    queue: VecDeque<Packet>,
    /// `q->backlogs[idx]`, bytes.
    backlog: u64,
    deficit: i64,
    cvars: CodelVars,
    /// On the new or the old list (`flowchain` not empty).
    listed: bool,
}

/// Configuration (the kernel's defaults are in `config::FqCodelConfig`).
#[derive(Clone, Copy, Debug)]
pub struct FqCodelParams {
    pub codel: CodelParams,
    pub limit: u32,
    pub flows: u32,
    pub quantum: u32,
    pub memory_limit: u64,
    pub drop_batch: u32,
}

pub struct FqCodel {
    p: FqCodelParams,
    flows: Vec<Flow>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    /// `sch->qstats.backlog`, `sch->q.qlen`, `q->memory_usage`.
    backlog: u64,
    qlen: u64,
    memory: u64,
    pub stats: CodelStats,
    /// Flows that became active (`new_flow_count`).
    pub new_flow_count: u64,
}

/// One flow queue as CoDel sees it: dequeuing updates the flow's and the qdisc's counts.
struct FlowView<'a> {
    flow: &'a mut VecDeque<Packet>,
    flow_backlog: &'a mut u64,
    backlog: &'a mut u64,
    qlen: &'a mut u64,
    memory: &'a mut u64,
}

impl CodelQueue for FlowView<'_> {
    #[inline]
    fn dequeue(&mut self) -> Option<Packet> {
        let p = self.flow.pop_front()?;
        let len = p.wire_bytes as u64;
        *self.flow_backlog -= len;
        *self.backlog -= len;
        *self.qlen -= 1;
        *self.memory -= len + TRUESIZE_OVERHEAD;
        Some(p)
    }
    fn backlog(&self) -> u64 {
        *self.backlog
    }
}

impl FqCodel {
    pub fn new(p: FqCodelParams) -> FqCodel {
        FqCodel {
            p,
            flows: (0..p.flows).map(|_| Flow::default()).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            backlog: 0,
            qlen: 0,
            memory: 0,
            stats: CodelStats::default(),
            new_flow_count: 0,
        }
    }

    /// `fq_codel_classify`: the flow's queue (the kernel scales a 5-tuple hash).
    fn classify(&self, pkt: &Packet) -> usize {
        pkt.flow as usize % self.flows.len()
    }

    /// `fq_codel_enqueue`: always queue, then drop from the fattest flow if over a limit.
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet, drops: &mut Vec<Dropped>) {
        let idx = self.classify(&pkt);
        let len = pkt.wire_bytes as u64;
        let f = &mut self.flows[idx];
        f.queue.push_back(pkt);
        f.backlog += len;
        self.backlog += len;
        if !f.listed {
            f.listed = true;
            f.deficit = self.p.quantum as i64;
            self.new_flows.push_back(idx);
            self.new_flow_count += 1;
        }
        self.memory += len + TRUESIZE_OVERHEAD;
        let memory_limited = self.memory > self.p.memory_limit;
        self.qlen += 1;
        if self.qlen <= self.p.limit as u64 && !memory_limited {
            return;
        }
        self.drop_from_fattest(drops);
    }

    /// `fq_codel_drop`: half the backlog of the flow with the most bytes queued, at
    /// most `drop_batch` packets; its CoDel count grows by as many.
    fn drop_from_fattest(&mut self, drops: &mut Vec<Dropped>) {
        let mut idx = 0;
        let mut max = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > max {
                max = f.backlog;
                idx = i;
            }
        }
        let threshold = max >> 1;
        let f = &mut self.flows[idx];
        let (mut len, mut n) = (0u64, 0u32);
        while let Some(p) = f.queue.pop_front() {
            len += p.wire_bytes as u64;
            n += 1;
            self.memory -= p.wire_bytes as u64 + TRUESIZE_OVERHEAD;
            drops.push(Dropped { pkt: p, reason: DropReason::Overflow });
            if n >= self.p.drop_batch || len >= threshold {
                break;
            }
        }
        f.cvars.count = f.cvars.count.wrapping_add(n);
        f.backlog -= len;
        self.backlog -= len;
        self.qlen -= n as u64;
    }

    /// `fq_codel_dequeue`.
    #[inline]
    pub fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<Packet> {
        loop {
            let (from_new, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i),
                (None, Some(&i)) => (false, i),
                (None, None) => return None,
            };
            if self.flows[idx].deficit <= 0 {
                // Used its quantum: a fresh one, to the tail of the old list.
                self.flows[idx].deficit += self.p.quantum as i64;
                self.unlink_head(from_new);
                self.old_flows.push_back(idx);
                continue;
            }
            let f = &mut self.flows[idx];
            let mut view = FlowView {
                flow: &mut f.queue,
                flow_backlog: &mut f.backlog,
                backlog: &mut self.backlog,
                qlen: &mut self.qlen,
                memory: &mut self.memory,
            };
            match codel_dequeue(&mut view, &mut f.cvars, &self.p.codel, &mut self.stats, now, drops) {
                Some(pkt) => {
                    f.deficit -= pkt.wire_bytes as i64;
                    return Some(pkt);
                }
                None => {
                    // Empty: a new flow passes through the old list once (so that it
                    // cannot starve old flows by coming back as new), else it leaves.
                    self.unlink_head(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx);
                    } else {
                        self.flows[idx].listed = false;
                    }
                }
            }
        }
    }

    fn unlink_head(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.backlog
    }
    pub fn backlog_packets(&self) -> u64 {
        self.qlen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::aqm::codel::codel_dur;
    use crate::time::{Dur, NS_PER_MS};

    const MS: u64 = NS_PER_MS;

    fn params(limit: u32) -> FqCodelParams {
        FqCodelParams {
            codel: CodelParams {
                target: codel_dur(Dur::from_ms(5)),
                interval: codel_dur(Dur::from_ms(100)),
                mtu: 1514,
                ecn: true,
                ce_threshold: None,
            },
            limit,
            flows: 1024,
            quantum: 1514,
            memory_limit: 32 << 20,
            drop_batch: 64,
        }
    }

    fn pkt(flow: u32, bytes: u32, at: Time) -> Packet {
        Packet { flow, wire_bytes: bytes, payload: bytes.saturating_sub(52), enqueued: at, ..Packet::default() }
    }

    #[test]
    fn drr_gives_backlogged_flows_equal_bytes_whatever_their_packet_size() {
        let mut q = FqCodel::new(params(10_240));
        let mut drops = Vec::new();
        // Flow 0 sends 1500-byte packets, flow 1 300-byte packets; both stay backlogged.
        for _ in 0..2000 {
            q.enqueue(pkt(0, 1500, Time(0)), &mut drops);
        }
        for _ in 0..8000 {
            q.enqueue(pkt(1, 300, Time(0)), &mut drops);
        }
        let mut bytes = [0u64; 2];
        // Dequeue at time 0: no sojourn, so CoDel stays out of the way.
        for _ in 0..6000 {
            let p = q.dequeue(Time(0), &mut drops).unwrap();
            bytes[p.flow as usize] += p.wire_bytes as u64;
        }
        assert!(drops.is_empty());
        // Each round gives each flow one quantum, give or take one packet.
        let diff = bytes[0].abs_diff(bytes[1]);
        assert!(diff <= 1514 + 1500, "{bytes:?}");
    }

    #[test]
    fn a_light_flow_is_served_ahead_of_a_heavy_backlog() {
        let mut q = FqCodel::new(params(10_240));
        let mut drops = Vec::new();
        for _ in 0..500 {
            q.enqueue(pkt(0, 1500, Time(0)), &mut drops);
        }
        // The heavy flow has used its first quantum and sits on the old list.
        assert_eq!(q.dequeue(Time(0), &mut drops).unwrap().flow, 0);
        assert_eq!(q.dequeue(Time(0), &mut drops).unwrap().flow, 0);
        // A sparse flow's packet arrives: it is a new flow and goes next.
        q.enqueue(pkt(7, 100, Time(0)), &mut drops);
        assert_eq!(q.dequeue(Time(0), &mut drops).unwrap().flow, 7);
        assert_eq!(q.new_flow_count, 2);
    }

    #[test]
    fn a_sparse_flow_keeps_its_share_while_a_heavy_flow_is_dropped() {
        // The heavy flow arrives at 2x the service rate; the light one at 5% of it.
        let mut q = FqCodel::new(params(10_240));
        let mut drops = Vec::new();
        let mut out = [0u64; 2];
        let mut light_delay_max = 0u64;
        for k in 0..20_000u64 {
            let now = Time(k * MS / 2);
            q.enqueue(pkt(0, 1500, now), &mut drops);
            if k % 40 == 0 {
                q.enqueue(pkt(1, 1500, now), &mut drops);
            }
            if k % 2 == 1 {
                // Service: one packet per ms.
                if let Some(p) = q.dequeue(now, &mut drops) {
                    out[p.flow as usize] += 1;
                    if p.flow == 1 {
                        light_delay_max = light_delay_max.max(now.ns() - p.enqueued.ns());
                    }
                }
            }
        }
        // Every light packet got through, and fast: it waits at most for its turn among
        // the two flows (2 services of 1 ms) plus the half-ms phase of its arrival.
        assert_eq!(out[1], 500);
        assert!(light_delay_max <= 5 * MS / 2, "light flow waited {} ms", light_delay_max as f64 / MS as f64);
        assert!(drops.iter().all(|d| d.pkt.flow == 0));
        assert!(out[0] >= 9_400, "{out:?}");
    }

    #[test]
    fn overflow_drops_half_the_fattest_flow_in_one_batch() {
        let mut q = FqCodel::new(params(100));
        let mut drops = Vec::new();
        for _ in 0..90 {
            q.enqueue(pkt(0, 1500, Time(0)), &mut drops);
        }
        for _ in 0..10 {
            q.enqueue(pkt(1, 1500, Time(0)), &mut drops);
        }
        assert!(drops.is_empty());
        // The 101st packet (of the thin flow) overflows: flow 0 loses up to half of its
        // 90 x 1500 bytes, 45 packets, within the batch of 64.
        q.enqueue(pkt(1, 1500, Time(0)), &mut drops);
        assert_eq!(drops.len(), 45);
        assert!(drops.iter().all(|d| d.pkt.flow == 0 && d.reason == DropReason::Overflow));
        assert_eq!(q.backlog_packets(), 56);
        assert_eq!(q.backlog_bytes(), 56 * 1500);
        assert_eq!(q.flows[0].cvars.count, 45);
    }
}
