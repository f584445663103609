//! The network a scenario describes, built from its values: the bottleneck of each
//! direction with its capacity, queueing discipline and loss model, and the path they
//! are part of. The simulator's world and the emulator's link both build theirs here.

use super::{Aqm, BufferLimit, Scenario};
use crate::base::rng;
use crate::net::aqm::{self, Codel, FqCodel, Qdisc, QueueLimit};
use crate::net::capacity::{Capacity, RateSchedule};
use crate::net::loss::LossModel;
use crate::net::trace::{Trace, TraceServer};
use crate::net::{Bottleneck, Path, PathShape};
use crate::time::{Dur, Time};
use crate::units::BitRate;

/// Resolve a buffer limit (BDP multiples of the scenario's BDP) to bytes or packets.
pub fn resolve_limit(s: &Scenario, limit: BufferLimit) -> QueueLimit {
    match limit {
        BufferLimit::Bytes(b) => QueueLimit::Bytes(b),
        BufferLimit::Packets(n) => QueueLimit::Packets(n),
        BufferLimit::Bdp(x) => QueueLimit::Bytes((x * s.bdp_bytes() as f64).round() as u64),
    }
}

/// The queueing discipline a scenario asks for.
pub fn qdisc_for(s: &Scenario) -> Qdisc {
    use aqm::codel::{codel_dur, CodelParams};
    use aqm::fq_codel::FqCodelParams;
    let params = |target, interval, mtu, ecn, ce: Option<u64>| CodelParams {
        target: codel_dur(Dur(target)),
        interval: codel_dur(Dur(interval)),
        mtu,
        ecn,
        ce_threshold: ce.map(|c| codel_dur(Dur(c))),
    };
    match &s.link.aqm {
        Aqm::DropTail => Qdisc::DropTail(aqm::DropTail::new(resolve_limit(s, s.link.buffer))),
        Aqm::Codel(c) => Qdisc::Codel(Codel::new(
            params(c.target_ns, c.interval_ns, c.mtu_bytes, c.ecn, c.ce_threshold_ns),
            c.limit_packets,
        )),
        Aqm::FqCodel(c) => Qdisc::FqCodel(FqCodel::new(FqCodelParams {
            codel: params(c.target_ns, c.interval_ns, c.mtu_bytes, c.ecn, c.ce_threshold_ns),
            limit: c.limit_packets,
            flows: c.flows,
            quantum: c.quantum_bytes,
            memory_limit: c.memory_limit_bytes,
            drop_batch: c.drop_batch,
        })),
    }
}

/// The loss model a scenario asks for, on its own random stream.
pub fn loss_for(s: &Scenario) -> LossModel {
    match &s.link.loss_model {
        Some(m) => LossModel::gilbert_elliott(m.params(), rng::stream(s.seed, "loss-gilbert-elliott", 0)),
        None => LossModel::bernoulli(s.link.loss, rng::stream(s.seed, "loss", 0)),
    }
}

/// The path of a validated scenario, with `lanes` lanes: one per flow, then any more
/// (the emulator's lane for packets of no flow) without an access delay.
pub fn path(s: &Scenario, lanes: usize) -> Path {
    let l = &s.link;
    let shape = PathShape {
        nic_rate: BitRate(l.nic_rate_bps),
        one_way: Dur(l.rtt_ns / 2),
        access: (0..lanes).map(|i| Dur(s.flows.get(i).map_or(0, |f| f.access_delay_ns))).collect(),
        rtt_steps: l.rtt_schedule.iter().map(|st| (Dur(st.at_ns), Dur(st.rtt_ns))).collect(),
    };
    Path::new(shape, forward_bottleneck(s), reverse_bottleneck(s))
}

/// The data direction's bottleneck for a validated scenario.
pub fn forward_bottleneck(s: &Scenario) -> Bottleneck {
    let l = &s.link;
    let capacity = match &l.trace {
        Some(t) => Capacity::Trace(TraceServer::new(Trace::from_ms(&t.opportunities_ms).expect("validated"))),
        None => {
            let steps: Vec<(Time, BitRate)> =
                l.rate_schedule.iter().map(|st| (Time(st.at_ns), BitRate(st.rate_bps))).collect();
            Capacity::Rate(RateSchedule::new(BitRate(l.rate_bps), &steps))
        }
    };
    let ecn = l.ecn_threshold.map(|t| resolve_limit(s, t));
    Bottleneck::new(capacity, qdisc_for(s), ecn, loss_for(s))
}

/// The ACK direction's bottleneck, if the scenario has an ACK trace: an unlimited
/// FIFO (as Mahimahi's default queue) served by the trace.
pub fn reverse_bottleneck(s: &Scenario) -> Option<Bottleneck> {
    let t = s.link.ack_trace.as_ref()?;
    let server = TraceServer::new(Trace::from_ms(&t.opportunities_ms).expect("validated"));
    let q = Qdisc::DropTail(aqm::DropTail::new(QueueLimit::NONE));
    Some(Bottleneck::new(Capacity::Trace(server), q, None, LossModel::None))
}
