//! The network a scenario describes, built from its values: the bottleneck of each
//! direction with its capacity, queueing discipline and loss model, and the path they
//! are part of. The simulator's world and the emulator's link both build theirs here.

use super::{Aqm, BufferLimit, Direction, LossModelConfig, Scenario};
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
    limit_of(limit, s.bdp_bytes())
}

/// A buffer limit in bytes or packets, BDP multiples of `bdp_bytes`.
fn limit_of(limit: BufferLimit, bdp_bytes: u64) -> QueueLimit {
    match limit {
        BufferLimit::Bytes(b) => QueueLimit::Bytes(b),
        BufferLimit::Packets(n) => QueueLimit::Packets(n),
        BufferLimit::Bdp(x) => QueueLimit::Bytes((x * bdp_bytes as f64).round() as u64),
    }
}

/// The queueing discipline a scenario asks for.
pub fn qdisc_for(s: &Scenario) -> Qdisc {
    qdisc_of(&s.link.aqm, resolve_limit(s, s.link.buffer))
}

/// The queueing discipline `aqm`, drop-tail at `limit`.
fn qdisc_of(aqm: &Aqm, limit: QueueLimit) -> Qdisc {
    use aqm::codel::{codel_dur, CodelParams};
    use aqm::fq_codel::FqCodelParams;
    let params = |target, interval, mtu, ecn, ce: Option<u64>| CodelParams {
        target: codel_dur(Dur(target)),
        interval: codel_dur(Dur(interval)),
        mtu,
        ecn,
        ce_threshold: ce.map(|c| codel_dur(Dur(c))),
    };
    match aqm {
        Aqm::DropTail => Qdisc::DropTail(aqm::DropTail::new(limit)),
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
    loss_of(s.seed, 0, s.link.loss, s.link.loss_model.as_ref())
}

/// Bernoulli loss `loss` or the model `model`, on the streams of direction `dir` (0:
/// the forward link, 1: the reverse).
fn loss_of(seed: u64, dir: u64, loss: f64, model: Option<&LossModelConfig>) -> LossModel {
    match model {
        Some(m) => LossModel::gilbert_elliott(m.params(), rng::stream(seed, "loss-gilbert-elliott", dir)),
        None => LossModel::bernoulli(loss, rng::stream(seed, "loss", dir)),
    }
}

/// The path of a validated scenario, with `lanes` lanes: one per TCP flow, one per UDP
/// flow, then any more (the emulator's lane for packets of no flow) without an access
/// delay.
pub fn path(s: &Scenario, lanes: usize) -> Path {
    let l = &s.link;
    let shape = PathShape {
        nic_rate: BitRate(l.nic_rate_bps),
        one_way: Dur(l.rtt_ns / 2),
        access: (0..lanes).map(|i| Dur(s.lane_access_ns(i))).collect(),
        rtt_steps: l.rtt_schedule.iter().map(|st| (Dur(st.at_ns), Dur(st.rtt_ns))).collect(),
    };
    let up: Vec<bool> = (0..lanes).map(|i| s.lane_direction(i) == Direction::Up).collect();
    let mut forward = forward_bottleneck(s);
    if up.contains(&true) {
        // The up flows' ACKs cross it: random loss takes data only, as on the kernel
        // engine (whose real ACKs the simulator's model of them must match).
        forward.lose_data_only();
    }
    Path::new(shape, forward, reverse_bottleneck(s), up)
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

/// The reverse direction's bottleneck, if the scenario has one (`link.reverse`, or an ACK
/// trace): its rate or trace, behind its queue, whose BDP multiples are of its own BDP
/// (its rate x the base RTT), as an uplink's buffer is sized; no buffer is no limit (an
/// ACK trace's default, as Mahimahi's queue). Random loss spares packets without
/// payload, as the forward link's does when flows go up (`path`).
pub fn reverse_bottleneck(s: &Scenario) -> Option<Bottleneck> {
    let r = s.link.reverse_link()?;
    let capacity = match &r.trace {
        Some(t) => Capacity::Trace(TraceServer::new(Trace::from_ms(&t.opportunities_ms).expect("validated"))),
        None => Capacity::Rate(RateSchedule::constant(BitRate(r.rate_bps))),
    };
    let bdp_bytes = (r.reference_rate_bps() as u128 * s.link.rtt_ns as u128 / 8 / 1_000_000_000) as u64;
    let limit = r.buffer.map_or(QueueLimit::NONE, |b| limit_of(b, bdp_bytes));
    let ecn = r.ecn_threshold.map(|t| limit_of(t, bdp_bytes));
    let mut b =
        Bottleneck::new(capacity, qdisc_of(&r.aqm, limit), ecn, loss_of(s.seed, 1, r.loss, r.loss_model.as_ref()));
    b.lose_data_only();
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FlowConfig, LinkConfig, TraceConfig};
    use crate::net::Packet;

    /// One opportunity a millisecond (12 Mbit/s) for the ACKs, 40 ms of base RTT: the ACK
    /// link's BDP is 60,000 bytes.
    fn scenario(reverse_buffer: Option<BufferLimit>) -> Scenario {
        let mut link = LinkConfig::new(100_000_000, 40_000_000, BufferLimit::Bdp(1.0));
        link.ack_trace = Some(TraceConfig { opportunities_ms: vec![1] });
        link.reverse_buffer = reverse_buffer;
        Scenario {
            seed: 1,
            duration_ns: 1_000_000_000,
            sample_interval_ns: 0,
            link,
            flows: vec![FlowConfig::bulk("cubic")],
            tcp: Default::default(),
            host: None,
            udp: Vec::new(),
            arrivals: Vec::new(),
        }
    }

    /// Of 100 ACKs of 1000 bytes arriving before the first opportunity, those the ACK
    /// link queues.
    fn admitted(s: &Scenario) -> u64 {
        let mut link = reverse_bottleneck(s).expect("an ACK trace");
        for _ in 0..100 {
            link.offer(Time::ZERO, Packet { wire_bytes: 1000, ..Packet::default() });
        }
        assert_eq!(link.backlog_packets() + link.counters.drops_overflow, 100);
        link.backlog_packets()
    }

    #[test]
    fn the_reverse_buffer_limits_the_ack_links_queue_in_its_own_bdp() {
        assert_eq!(admitted(&scenario(None)), 100);
        assert_eq!(admitted(&scenario(Some(BufferLimit::Packets(7)))), 7);
        assert_eq!(admitted(&scenario(Some(BufferLimit::Bytes(25_000)))), 25);
        // Half the ACK link's BDP (not the 100 Mbit/s data link's 500,000 bytes).
        assert_eq!(admitted(&scenario(Some(BufferLimit::Bdp(0.5)))), 30);
    }
}
