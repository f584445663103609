//! The link meter: one observer of a `net::Path` that both the simulator's world and the
//! emulator use, so that the link is measured one way on every engine.
//!
//! It counts per lane what the path reports (payload out of the bottleneck, drops), takes
//! the link's samples (one `LinkRow` per interval, and each lane's throughput over it),
//! and gives the link's totals for the summary (`totals.rs`). Time counts from its origin:
//! the run's start in the simulator, the measurement epoch in the emulator.

mod totals;

use crate::config::{Direction, Scenario};
use crate::net::aqm::Dropped;
use crate::net::{Bottleneck, Dir, Packet, Path, PathObserver};
use crate::observe::recorder::{DirRow, LinkRow};
use crate::time::Time;

/// What one lane (a flow; the emulator's packets of no flow) carried through the
/// bottleneck.
#[derive(Clone, Debug, Default)]
pub struct Lane {
    /// Payload that left the bottleneck, retransmissions included.
    pub payload_out: u64,
    /// Packets of its data that its bottleneck dropped.
    pub dropped: u64,
    /// Payload per second out of the bottleneck over the last sampled interval.
    pub throughput_bps: f64,
    payload_at_sample: u64,
}

pub struct LinkMeter {
    origin: Time,
    last_sample: Time,
    /// Wire bytes out of each direction's bottleneck at the last sample.
    wire_bytes_at_sample: [u64; 2],
    lanes: Vec<Lane>,
    /// Which way each lane's data goes (the lanes past the flows' go down).
    lane_dir: Vec<Dir>,
    /// The ACK trace's long-run mean, for the ACK link's figures.
    ack_trace_mean_bps: u64,
    /// The reverse bottleneck is `[link.reverse]` (not an ACK trace): its totals are a
    /// link's.
    reverse_table: bool,
}

impl LinkMeter {
    /// A meter of `lanes` lanes on the path built from `s`, counting from time zero.
    pub fn new(s: &Scenario, lanes: usize) -> LinkMeter {
        let dir = |i| match s.lane_direction(i) {
            Direction::Up => Dir::Up,
            Direction::Down => Dir::Down,
        };
        LinkMeter {
            origin: Time::ZERO,
            last_sample: Time::ZERO,
            wire_bytes_at_sample: [0; 2],
            lanes: vec![Lane::default(); lanes],
            lane_dir: (0..lanes).map(dir).collect(),
            ack_trace_mean_bps: s.link.ack_trace.as_ref().map_or(0, |t| t.mean_bps()),
            reverse_table: s.link.reverse.is_some(),
        }
    }

    /// A new lane, going up if `up` (a lane the path added).
    pub fn add_lane(&mut self, up: bool) {
        self.lanes.push(Lane::default());
        self.lane_dir.push(if up { Dir::Up } else { Dir::Down });
    }

    /// Count afresh from `at`: the lanes' counts and the path's link counters restart
    /// from zero (the emulator's measurement epoch).
    pub fn restart(&mut self, at: Time, path: &mut Path) {
        path.bottleneck.counters = Default::default();
        if let Some(a) = path.reverse_bottleneck.as_mut() {
            a.counters = Default::default();
        }
        self.lanes.fill(Lane::default());
        (self.origin, self.last_sample, self.wire_bytes_at_sample) = (at, at, [0; 2]);
    }

    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    /// When the last sample was taken (the origin before the first).
    pub fn last_sample(&self) -> Time {
        self.last_sample
    }

    /// Close the interval since the last sample at `now`: the link's row, and each
    /// lane's `throughput_bps` over the interval.
    pub fn sample(&mut self, now: Time, path: &Path) -> LinkRow {
        let (since, secs) = (self.last_sample, now.since(self.last_sample).secs_f64());
        self.last_sample = now;
        for lane in &mut self.lanes {
            lane.throughput_bps = (lane.payload_out - lane.payload_at_sample) as f64 * 8.0 / secs;
            lane.payload_at_sample = lane.payload_out;
        }
        let down = self.dir_row(0, &path.bottleneck, since, now);
        let up = path.reverse_bottleneck.as_ref().map(|b| self.dir_row(1, b, since, now));
        LinkRow { time_s: now.since(self.origin).secs_f64(), down, up }
    }

    /// Bottleneck `b`'s figures (direction `k`'s) over `[since, now)`.
    fn dir_row(&mut self, k: usize, b: &Bottleneck, since: Time, now: Time) -> DirRow {
        let secs = now.since(since).secs_f64();
        let c = &b.counters;
        let bits = (c.wire_bytes_out - self.wire_bytes_at_sample[k]) as f64 * 8.0;
        self.wire_bytes_at_sample[k] = c.wire_bytes_out;
        let (utilization, capacity_bps) = match b.capacity().constant_rate() {
            Some(rate) => (bits / (rate.bps() as f64 * secs), rate.bps() as f64),
            None => {
                // Unused opportunities count: utilisation is of what was offered.
                let cap = b.capacity_bits(since, now);
                (if cap > 0.0 { bits / cap } else { f64::NAN }, cap / secs)
            }
        };
        DirRow {
            queue_bytes: b.backlog_bytes() as f64,
            queue_packets: b.backlog_packets() as f64,
            utilization,
            throughput_bps: bits / secs,
            capacity_bps,
            drops: (c.drops_overflow + c.drops_random + c.drops_aqm) as f64,
        }
    }
}

impl PathObserver for LinkMeter {
    /// Only data carries payload: what leaves either bottleneck is its lane's.
    #[inline]
    fn left(&mut self, _dir: Dir, _now: Time, pkt: &Packet, _chained: bool) {
        self.lanes[pkt.flow as usize].payload_out += pkt.payload as u64;
    }
    /// A lane's drops are those in its data's direction (its ACKs' count at their link).
    #[inline]
    fn dropped(&mut self, dir: Dir, d: &Dropped) {
        let k = d.pkt.flow as usize;
        if self.lane_dir[k] == dir {
            self.lanes[k].dropped += 1;
        }
    }
}

#[cfg(test)]
mod tests;
