//! Packet capture inside the emulator: the real packets of the run's flows at the same
//! points as the simulator's captures, written with the simulator's pcap writer (headers
//! only, `LINKTYPE_RAW`, nanosecond timestamps on the wall clock).
//!
//! * `sender`: packets as read from the sender's TUN device (as its stack sent them),
//!   and ACKs when they are due back at the sender;
//! * `bottleneck-in`: packets offered to the bottleneck (also those then dropped), and
//!   ACKs passing the router (one base one-way delay after the receiver sent them);
//! * `bottleneck-out`: packets leaving the bottleneck (with CE marks), and those ACKs;
//! * `receiver`: packets when they are due at the receiver, and ACKs as read from the
//!   receiver's TUN device.
//!
//! A flow going up is captured the same way at its own ends (its sender behind the
//! receiver device) and at the bottleneck its data crosses, the reverse one; its router
//! is beside its sender, so its ACKs pass the router as they reach the sender.

use ccbench_sim::observe::capture::{CaptureSpec, Point};
use ccbench_sim::observe::pcap::{header_len, PcapWriter};
use ccbench_sim::time::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::BufWriter;

/// A record not yet final: (time, order, captured bytes, original length).
type Pending = Reverse<(Time, u64, Vec<u8>, u32)>;

struct Out {
    point: Point,
    w: PcapWriter<BufWriter<File>>,
    pending: BinaryHeap<Pending>,
}

pub struct EmuCapture {
    outs: Vec<Out>,
    flows: Option<Vec<u32>>,
    /// Wall-clock nanoseconds of emulator time zero.
    epoch_ns: u64,
    n: u64,
    error: Option<String>,
}

impl EmuCapture {
    pub fn open(spec: &CaptureSpec, epoch_ns: u64) -> Result<EmuCapture, String> {
        std::fs::create_dir_all(&spec.dir).map_err(|e| format!("capture: creating {}: {e}", spec.dir.display()))?;
        let mut points = spec.points.clone();
        points.sort();
        points.dedup();
        let mut outs = Vec::new();
        for point in points {
            let path = point.file_in(&spec.dir);
            let file = File::create(&path).map_err(|e| format!("capture: {}: {e}", path.display()))?;
            let w = PcapWriter::new(BufWriter::with_capacity(1 << 20, file))
                .map_err(|e| format!("capture: {}: {e}", path.display()))?;
            outs.push(Out { point, w, pending: BinaryHeap::new() });
        }
        Ok(EmuCapture { outs, flows: spec.flows.clone(), epoch_ns, n: 0, error: None })
    }

    pub fn wants(&self, flow: usize) -> bool {
        self.flows.as_ref().is_none_or(|f| f.contains(&(flow as u32)))
    }

    /// Record `packet` at `point`, stamped `t` (emulator time).
    pub fn record(&mut self, point: Point, t: Time, flow: usize, packet: &[u8]) {
        if !self.wants(flow) {
            return;
        }
        if let Some(o) = self.outs.iter_mut().find(|o| o.point == point) {
            self.n += 1;
            let kept = packet[..header_len(packet)].to_vec();
            o.pending.push(Reverse((t, self.n, kept, packet.len() as u32)));
        }
    }

    /// Write the records stamped at or before `now`; everything recorded later is
    /// stamped `now` or after.
    pub fn flush(&mut self, now: Time) {
        for o in &mut self.outs {
            while o.pending.peek().is_some_and(|Reverse(r)| r.0 <= now) {
                let Reverse((t, _, bytes, orig)) = o.pending.pop().expect("peeked");
                if let Err(e) = o.w.write(self.epoch_ns + t.ns(), orig, &bytes) {
                    self.error.get_or_insert(format!("capture {}: {e}", o.point.name()));
                }
            }
        }
    }

    /// Write everything and close the files; the first error, if any.
    pub fn finish(&mut self) -> Option<String> {
        self.flush(Time::NEVER);
        for o in &mut self.outs {
            if let Err(e) = o.w.flush() {
                self.error.get_or_insert(format!("capture {}: {e}", o.point.name()));
            }
        }
        self.error.take()
    }
}
