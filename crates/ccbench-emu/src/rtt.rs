//! Round-trip times measured where the sender sees them: from a data segment leaving
//! the sender (read from its TUN device) to the ACK that covers it arriving back
//! (written into the same device). One sample per ACK that advances the cumulative
//! ACK, taken from the newest segment it newly acknowledges (the kernel's `ca_rtt`
//! choice). Karn's rule: an ACK that covers a retransmitted range gives no sample.
//! ACKs that only add SACK blocks give none either.

use crate::wire::unwrap_seq;
use ccbench_sim::observe::histogram::Histogram;
use ccbench_sim::time::Time;
use std::collections::VecDeque;

#[derive(Default)]
pub struct RttSampler {
    /// First transmissions not yet cumulatively acknowledged: (end sequence, sent at),
    /// in sending order, which is also sequence order.
    sent: VecDeque<(u64, Time)>,
    /// Retransmitted ranges [start, end) not yet cumulatively acknowledged.
    retransmitted: Vec<(u64, u64)>,
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
            self.sent.push_back((end, now));
            self.snd_max = end;
        }
    }

    /// An ACK carrying cumulative `ack` reached the sender at `now`; records a sample
    /// when `record`. Returns the sample, if this ACK gave one.
    pub fn on_ack(&mut self, now: Time, ack: u32, record: bool) -> Option<u64> {
        if !self.started {
            return None;
        }
        let a = unwrap_seq(ack, self.snd_una).min(self.snd_max);
        if a <= self.snd_una {
            return None;
        }
        let mut newest = None;
        while let Some(&(end, sent)) = self.sent.front() {
            if end > a {
                break;
            }
            newest = Some(sent);
            self.sent.pop_front();
        }
        let ambiguous = self.retransmitted.iter().any(|&(s, _)| s < a);
        self.retransmitted.retain(|&(_, e)| e > a);
        self.snd_una = a;
        let sample = newest.filter(|_| !ambiguous).map(|t| now.since(t).ns())?;
        if record {
            self.samples.record(sample);
        }
        Some(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn samples_the_newest_newly_acked_segment() {
        let mut r = RttSampler::default();
        r.on_data(Time(0), 1000, 100);
        r.on_data(Time(MS), 1100, 100);
        r.on_data(Time(2 * MS), 1200, 100);
        // Acks the first two: the newest of them was sent at 1 ms.
        assert_eq!(r.on_ack(Time(41 * MS), 1200, true), Some(40 * MS));
        // A duplicate ACK gives nothing.
        assert_eq!(r.on_ack(Time(42 * MS), 1200, true), None);
        assert_eq!(r.on_ack(Time(43 * MS), 1300, true), Some(41 * MS));
        assert_eq!(r.samples.count(), 2);
    }

    #[test]
    fn karn_no_sample_across_a_retransmission() {
        let mut r = RttSampler::default();
        for k in 0..4u32 {
            r.on_data(Time(k as u64 * MS), k * 100, 100);
        }
        // Segment 1 is lost and retransmitted at 50 ms; the ACK that covers it is ambiguous.
        r.on_ack(Time(40 * MS), 100, true);
        r.on_data(Time(50 * MS), 100, 100);
        assert_eq!(r.on_ack(Time(90 * MS), 400, true), None);
        // New data after that samples normally again.
        r.on_data(Time(91 * MS), 400, 100);
        assert_eq!(r.on_ack(Time(131 * MS), 500, true), Some(40 * MS));
    }

    #[test]
    fn follows_sequence_wraparound() {
        let mut r = RttSampler::default();
        r.on_data(Time(0), u32::MAX - 99, 100);
        r.on_data(Time(MS), 0, 100);
        assert_eq!(r.on_ack(Time(21 * MS), 100, false), Some(20 * MS));
        assert_eq!(r.samples.count(), 0);
    }
}
