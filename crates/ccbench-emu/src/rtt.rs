//! Round-trip times measured where the sender sees them: from a data segment leaving
//! the sender (read from its TUN device) to the ACK that acknowledges it arriving back
//! (written into the same device), as the kernel's `ca_rtt` (`tcp_clean_rtx_queue`,
//! `tcp_sacktag_one`): one sample per ACK, from the newest segment that ACK newly SACKs
//! if any, else the newest it newly acknowledges cumulatively. Karn's rule: a
//! retransmitted segment gives no SACK sample, and an ACK whose cumulative part covers a
//! retransmitted range gives no cumulative sample. (The kernel also takes a timestamp
//! sample when only retransmitted data is acknowledged; this sampler does not read
//! timestamps, so it has a few samples fewer in loss recovery.)

use crate::wire::unwrap_seq;
use ccbench_sim::base::histogram::Histogram;
use ccbench_sim::time::Time;
use std::collections::VecDeque;

/// One flow's connections, each sampled on its own since each has its own sequence
/// space (a flow that repeats downloads opens a connection per download), keyed by the
/// sender's port, in the order their first data left the sender.
#[derive(Default)]
pub struct FlowRtt {
    pub connections: Vec<(u16, RttSampler)>,
}

impl FlowRtt {
    pub fn on_data(&mut self, now: Time, port: u16, seq: u32, len: u32) {
        let k = match self.connections.iter().position(|(p, _)| *p == port) {
            Some(k) => k,
            None => {
                self.connections.push((port, RttSampler::default()));
                self.connections.len() - 1
            }
        };
        self.connections[k].1.on_data(now, seq, len);
    }

    /// An ACK to the sender's `port`; ignored if that connection sent no data yet.
    pub fn on_ack(&mut self, now: Time, port: u16, ack: u32, sacks: &[(u32, u32)], record: bool) -> Option<u64> {
        let (_, r) = self.connections.iter_mut().find(|(p, _)| *p == port)?;
        r.on_ack(now, ack, sacks, record)
    }

    /// Every connection's samples together.
    pub fn samples(&self) -> Histogram {
        let mut all = Histogram::default();
        for (_, r) in &self.connections {
            all.merge(&r.samples);
        }
        all
    }

    pub fn clear_samples(&mut self) {
        for (_, r) in &mut self.connections {
            r.samples = Histogram::default();
        }
    }
}

#[derive(Default)]
pub struct RttSampler {
    /// First transmissions not yet cumulatively acknowledged: (start, end, sent at), in
    /// sending order, which is also sequence order.
    sent: VecDeque<(u64, u64, Time)>,
    /// Retransmitted ranges [start, end) not yet cumulatively acknowledged.
    retransmitted: Vec<(u64, u64)>,
    /// SACKed ranges above the cumulative ACK, sorted and disjoint.
    sacked: Vec<(u64, u64)>,
    /// Highest sequence sent (end of the newest byte), unwrapped to 64 bits.
    snd_max: u64,
    /// Highest cumulative ACK seen.
    snd_una: u64,
    started: bool,
    /// Samples, in nanoseconds.
    pub samples: Histogram,
}

impl RttSampler {
    /// A data segment `[seq, seq + len)` left the sender at `now`.
    pub fn on_data(&mut self, now: Time, seq: u32, len: u32) {
        if !self.started {
            self.started = true;
            self.snd_max = seq as u64 + (1u64 << 32); // room below for old segments
            self.snd_una = self.snd_max;
        }
        let start = unwrap_seq(seq, self.snd_max);
        let end = start + len as u64;
        if start < self.snd_max {
            self.retransmitted.push((start, end.min(self.snd_max)));
        }
        if end > self.snd_max {
            self.sent.push_back((start.max(self.snd_max), end, now));
            self.snd_max = end;
        }
    }

    /// An ACK carrying cumulative `ack` and SACK blocks `sacks` reached the sender at
    /// `now`; records a sample when `record`. Returns the sample, if this ACK gave one.
    pub fn on_ack(&mut self, now: Time, ack: u32, sacks: &[(u32, u32)], record: bool) -> Option<u64> {
        if !self.started {
            return None;
        }
        let a = unwrap_seq(ack, self.snd_una).min(self.snd_max).max(self.snd_una);
        let sack_sent = self.newest_newly_sacked(a, sacks);
        let mut cum_sent = None;
        while let Some(&(_, end, sent)) = self.sent.front() {
            if end > a {
                break;
            }
            cum_sent = Some(sent);
            self.sent.pop_front();
        }
        let ambiguous = self.retransmitted.iter().any(|&(s, _)| s < a);
        self.retransmitted.retain(|&(_, e)| e > a);
        self.sacked.retain(|&(_, e)| e > a);
        self.snd_una = a;
        let sent = sack_sent.or(cum_sent.filter(|_| !ambiguous))?;
        let sample = now.since(sent).ns();
        if record {
            self.samples.record(sample);
        }
        Some(sample)
    }

    /// The send time of the newest first transmission, never retransmitted, that the
    /// blocks SACK for the first time; the blocks are added to the SACKed ranges.
    fn newest_newly_sacked(&mut self, ack: u64, sacks: &[(u32, u32)]) -> Option<Time> {
        let mut newest: Option<Time> = None;
        for &(s, e) in sacks {
            let (s, e) = (unwrap_seq(s, ack).max(ack), unwrap_seq(e, ack).min(self.snd_max));
            if s >= e {
                continue;
            }
            for (ns, ne) in uncovered(&self.sacked, s, e) {
                // The newest segment inside [ns, ne) that was never retransmitted. Each
                // segment is newly SACKed once, so the walk is linear over the run.
                let k = self.sent.partition_point(|&(_, end, _)| end <= ne);
                for &(start, end, sent) in self.sent.range(..k).rev() {
                    if start < ns {
                        break;
                    }
                    if !self.retransmitted.iter().any(|&(rs, re)| rs < end && start < re) {
                        newest = newest.max(Some(sent));
                        break;
                    }
                }
            }
            insert_range(&mut self.sacked, s, e);
        }
        newest
    }
}

/// The parts of [s, e) that no range of `ranges` (sorted, disjoint) covers.
fn uncovered(ranges: &[(u64, u64)], s: u64, e: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = s;
    for &(rs, re) in ranges {
        if re <= at || rs >= e {
            continue;
        }
        if rs > at {
            out.push((at, rs));
        }
        at = at.max(re);
    }
    if at < e {
        out.push((at, e));
    }
    out
}

/// Add [s, e) to `ranges`, keeping them sorted and disjoint.
fn insert_range(ranges: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    let (mut s, mut e) = (s, e);
    ranges.retain(|&(rs, re)| {
        if re < s || rs > e {
            return true;
        }
        s = s.min(rs);
        e = e.max(re);
        false
    });
    let at = ranges.partition_point(|&(rs, _)| rs < s);
    ranges.insert(at, (s, e));
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn each_connection_of_a_flow_is_sampled_in_its_own_sequence_space() {
        let mut f = FlowRtt::default();
        f.on_data(Time(0), 40_000, 1_000_000, 100);
        // A second download's connection, far away in sequence space.
        f.on_data(Time(MS), 40_002, 3_000_000_000, 100);
        assert_eq!(f.on_ack(Time(30 * MS), 40_002, 3_000_000_100, &[], true), Some(29 * MS));
        assert_eq!(f.on_ack(Time(40 * MS), 40_000, 1_000_100, &[], true), Some(40 * MS));
        // An ACK to a port that sent no data is not a sample.
        assert_eq!(f.on_ack(Time(41 * MS), 40_004, 7, &[], true), None);
        let ports: Vec<u16> = f.connections.iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [40_000, 40_002]);
        assert_eq!(f.samples().count(), 2);
        f.clear_samples();
        assert_eq!(f.samples().count(), 0);
    }

    #[test]
    fn samples_the_newest_newly_acked_segment() {
        let mut r = RttSampler::default();
        r.on_data(Time(0), 1000, 100);
        r.on_data(Time(MS), 1100, 100);
        r.on_data(Time(2 * MS), 1200, 100);
        // Acks the first two: the newest of them was sent at 1 ms.
        assert_eq!(r.on_ack(Time(41 * MS), 1200, &[], true), Some(40 * MS));
        // A duplicate ACK gives nothing.
        assert_eq!(r.on_ack(Time(42 * MS), 1200, &[], true), None);
        assert_eq!(r.on_ack(Time(43 * MS), 1300, &[], true), Some(41 * MS));
        assert_eq!(r.samples.count(), 2);
    }

    #[test]
    fn karn_no_sample_across_a_retransmission() {
        let mut r = RttSampler::default();
        for k in 0..4u32 {
            r.on_data(Time(k as u64 * MS), k * 100, 100);
        }
        // Segment 1 is lost and retransmitted at 50 ms; the ACK that covers it is ambiguous.
        r.on_ack(Time(40 * MS), 100, &[], true);
        r.on_data(Time(50 * MS), 100, 100);
        assert_eq!(r.on_ack(Time(90 * MS), 400, &[], true), None);
        // New data after that samples normally again.
        r.on_data(Time(91 * MS), 400, 100);
        assert_eq!(r.on_ack(Time(131 * MS), 500, &[], true), Some(40 * MS));
    }

    #[test]
    fn follows_sequence_wraparound() {
        let mut r = RttSampler::default();
        r.on_data(Time(0), u32::MAX - 99, 100);
        r.on_data(Time(MS), 0, 100);
        assert_eq!(r.on_ack(Time(21 * MS), 100, &[], false), Some(20 * MS));
        assert_eq!(r.samples.count(), 0);
    }

    #[test]
    fn samples_the_newest_newly_sacked_segment_and_only_once() {
        let mut r = RttSampler::default();
        for k in 0..5u32 {
            r.on_data(Time(k as u64 * MS), k * 100, 100);
        }
        // Segment 0 lost; the ACK SACKs 1 and 2: the newest of them was sent at 2 ms.
        assert_eq!(r.on_ack(Time(42 * MS), 0, &[(100, 300)], true), Some(40 * MS));
        // The block grows to cover 3 as well: only 3 is new.
        assert_eq!(r.on_ack(Time(44 * MS), 0, &[(100, 400)], true), Some(41 * MS));
        // A repeated block gives nothing.
        assert_eq!(r.on_ack(Time(45 * MS), 0, &[(100, 400)], true), None);
        // The retransmission of 0 is cumulatively acknowledged: Karn, no sample.
        r.on_data(Time(50 * MS), 0, 100);
        assert_eq!(r.on_ack(Time(90 * MS), 400, &[], true), None);
        assert_eq!(r.samples.count(), 2);
    }

    #[test]
    fn a_retransmitted_segment_gives_no_sack_sample() {
        let mut r = RttSampler::default();
        for k in 0..4u32 {
            r.on_data(Time(k as u64 * MS), k * 100, 100);
        }
        r.on_data(Time(30 * MS), 200, 100); // 2 retransmitted
        assert_eq!(r.on_ack(Time(60 * MS), 0, &[(200, 300)], true), None);
        // A block over 3 (never retransmitted) samples it.
        assert_eq!(r.on_ack(Time(61 * MS), 0, &[(200, 400)], true), Some(58 * MS));
    }

    #[test]
    fn range_helpers() {
        let mut v = vec![];
        insert_range(&mut v, 10, 20);
        insert_range(&mut v, 30, 40);
        assert_eq!(uncovered(&v, 0, 50), vec![(0, 10), (20, 30), (40, 50)]);
        insert_range(&mut v, 15, 35);
        assert_eq!(v, vec![(10, 40)]);
    }
}
