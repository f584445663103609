//! Packet capture of simulated flows at chosen points of the dumbbell, written as pcap
//! ([`super::pcap`]).
//!
//! Points:
//! * `sender`: each data segment as the sender's NIC finishes serializing it, and each
//!   ACK as it reaches the sender;
//! * `bottleneck-in`: data segments arriving at the bottleneck queue, also those it then
//!   drops (before any CE mark), and ACKs as they pass the router on the way back;
//! * `bottleneck-out`: data segments leaving the bottleneck (with their CE marks), and
//!   the ACKs passing the router;
//! * `receiver`: data segments reaching the receiver, and each ACK it sends.
//!
//! The simulator models no handshake and no close: each captured flow gets a synthetic
//! SYN and SYN-ACK at its start time, so that tools learn the window scale, MSS, SACK
//! and timestamp options, and the last segment of a sized flow carries FIN. Sequence
//! numbers are bytes from a per-flow ISN drawn from the seed; timestamps (TSval/TSecr)
//! are the simulator's millisecond clock, exactly as the sender and receiver used them.
//! Records are stamped with simulated time (the run starts at the Unix epoch) and
//! written in time order; nothing after the end of the run is written. The caller opens
//! each point's sink (the binding, `DIR/capture-<point>.pcap`): the core opens no files.

use super::pcap::{self, opt, PcapWriter, Segment};
use crate::base::rng;
use crate::config::{ConfigError, Ecn, Scenario};
use crate::net::packet::{Control, SackBlock};
use crate::net::Packet;
use crate::time::{Dur, Time};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io;
use std::path::{Path, PathBuf};

/// Where one capture point's pcap goes.
pub type Sink = Box<dyn io::Write>;

/// Where packets are captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Point {
    Sender,
    BottleneckIn,
    BottleneckOut,
    Receiver,
}

impl Point {
    pub const ALL: [Point; 4] = [Point::Sender, Point::BottleneckIn, Point::BottleneckOut, Point::Receiver];

    pub fn name(self) -> &'static str {
        match self {
            Point::Sender => "sender",
            Point::BottleneckIn => "bottleneck-in",
            Point::BottleneckOut => "bottleneck-out",
            Point::Receiver => "receiver",
        }
    }

    /// `DIR/capture-<point>.pcap`.
    pub fn file_in(self, dir: &Path) -> PathBuf {
        dir.join(format!("capture-{}.pcap", self.name()))
    }
}

/// What to capture: points, flows (indices after `count` expansion; None for all) and
/// the directory that receives `capture-<point>.pcap`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureSpec {
    pub points: Vec<Point>,
    #[serde(default)]
    pub flows: Option<Vec<u32>>,
    pub dir: PathBuf,
}

/// Flows beyond this index have no address in the plan below.
pub const MAX_CAPTURED_FLOW: u32 = 65_534;
/// The sender's own receive window and scale (it receives no data: Linux's initial
/// 64 KiB window with the scale of a 6 MB `tcp_rmem`).
const SENDER_WINDOW: u64 = 65_536;
const SENDER_WSCALE: u8 = 7;
/// Ports: receiver 20000 + i, sender 40000 + i (modulo 20000).
pub const RECEIVER_PORT: u16 = 20_000;
pub const SENDER_PORT: u16 = 40_000;

/// Addresses of flow `i`: sender 10.1.0.0/16 and receiver 10.2.0.0/16, host number i + 1.
pub fn addresses(i: u32) -> ([u8; 4], [u8; 4]) {
    let n = i + 1;
    let (h, l) = ((n >> 8) as u8, n as u8);
    ([10, 1, h, l], [10, 2, h, l])
}

/// Linux's receive-window scale for a window clamp (`tcp_select_initial_window`).
pub fn window_scale(rwnd: u64) -> u8 {
    let log2 = 63 - rwnd.max(1).leading_zeros() as i32;
    (log2 - 15).clamp(0, 14) as u8
}

impl CaptureSpec {
    pub fn check(&self, s: &Scenario) -> Result<(), ConfigError> {
        let e = |field: &str, m: String| ConfigError { field: format!("capture.{field}"), message: m };
        if self.points.is_empty() {
            return Err(e("points", "name at least one of sender, bottleneck-in, bottleneck-out, receiver".into()));
        }
        if s.flows.is_empty() {
            // Only TCP flows have a wire identity here; an empty file would look like a run.
            return Err(e(
                "points",
                "the scenario has no TCP flows to capture (UDP flows and arrivals are not captured)".into(),
            ));
        }
        for &f in self.flows.iter().flatten() {
            if f as usize >= s.flows.len() {
                return Err(e(
                    "flows",
                    format!(
                        "flow {f} out of range; the scenario has {} flows (0..{})",
                        s.flows.len(),
                        s.flows.len() - 1
                    ),
                ));
            }
            if f > MAX_CAPTURED_FLOW {
                return Err(e("flows", format!("flow {f}: only flows 0..{MAX_CAPTURED_FLOW} can be captured")));
            }
        }
        if let Some(i) = s.flows.iter().position(|f| f.repeat > 1) {
            // Each download is a new connection; the capture knows one per flow.
            return Err(e("points", format!("flows[{i}] repeats its download; capture runs without repeat")));
        }
        if self.flows.is_none() && s.flows.len() > MAX_CAPTURED_FLOW as usize + 1 {
            return Err(e("flows", format!("choose the flows to capture; only flows 0..{MAX_CAPTURED_FLOW} can be")));
        }
        Ok(())
    }
}

/// The wire identity of one captured flow.
struct FlowWire {
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    isn_s: u32,
    isn_r: u32,
    mss: u32,
    /// Sized flows: payload bytes; FIN rides on the last segment.
    size: Option<u64>,
    rwnd: u64,
    wscale: u8,
    ecn: bool,
}

impl FlowWire {
    /// Sequence number of stream offset `byte` (a FIN counts once passed).
    fn edge(&self, byte: u64) -> u32 {
        let fin = self.size.is_some_and(|size| byte >= size) as u64;
        self.isn_s.wrapping_add(1).wrapping_add((byte + fin) as u32)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Syn,
    SynAck,
    Data,
    Ack,
}

impl Kind {
    /// A packet's kind: a handshake's SYN or SYN-ACK, else `other` (what its direction
    /// carries).
    fn of(pkt: &Packet, other: Kind) -> Kind {
        match pkt.ctl {
            Control::Syn => Kind::Syn,
            Control::SynAck => Kind::SynAck,
            Control::Ack | Control::None | Control::FragNeeded | Control::Datagram => other,
        }
    }
}

struct Pending {
    t: Time,
    n: u64,
    kind: Kind,
    pkt: Packet,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.n) == (o.t, o.n)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.t, self.n).cmp(&(o.t, o.n))
    }
}

/// One capture point's file, with the records not yet due (a data segment's NIC
/// departure and an ACK's passage at the router are known before they happen).
struct Out {
    point: Point,
    w: PcapWriter<Sink>,
    pending: BinaryHeap<Reverse<Pending>>,
}

pub struct Capture {
    outs: Vec<Out>,
    flows: Vec<Option<FlowWire>>,
    one_way: Dur,
    n: u64,
    buf: Vec<u8>,
    opts: Vec<u8>,
    error: Option<(PathBuf, io::Error)>,
}

/// The error of a capture file that cannot be written.
pub fn write_error(path: &Path, e: io::Error) -> ConfigError {
    ConfigError { field: "capture.dir".into(), message: format!("cannot write '{}': {e}", path.display()) }
}

impl Capture {
    /// Validate `spec` against the scenario and start each point's pcap on the sink that
    /// `open` gives for it.
    pub fn new(
        spec: &CaptureSpec,
        s: &Scenario,
        mut open: impl FnMut(Point) -> Result<Sink, ConfigError>,
    ) -> Result<Capture, ConfigError> {
        spec.check(s)?;
        let mut points = spec.points.clone();
        points.sort();
        points.dedup();
        let mut outs = Vec::new();
        for p in points {
            let w = PcapWriter::new(open(p)?).map_err(|e| write_error(&p.file_in(&spec.dir), e))?;
            outs.push(Out { point: p, w, pending: BinaryHeap::new() });
        }
        let wanted = |i: u32| spec.flows.as_ref().is_none_or(|v| v.contains(&i));
        let flows = s
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let i = i as u32;
                if !wanted(i) {
                    return None;
                }
                let (src, dst) = addresses(i);
                let mss = s.tcp.mss;
                let mut r = rng::stream(s.seed, "isn", i as u64);
                Some(FlowWire {
                    src,
                    dst,
                    sport: SENDER_PORT + (i % 20_000) as u16,
                    dport: RECEIVER_PORT + (i % 20_000) as u16,
                    isn_s: r.next_u32(),
                    isn_r: r.next_u32(),
                    mss,
                    size: f.size_bytes,
                    rwnd: f.rwnd_bytes,
                    wscale: window_scale(f.rwnd_bytes),
                    ecn: f.ecn != Ecn::Off,
                })
            })
            .collect();
        Ok(Capture {
            outs,
            flows,
            one_way: Dur(s.link.rtt_ns / 2),
            n: 0,
            buf: Vec::new(),
            opts: Vec::new(),
            error: None,
        })
    }

    fn captured(&self, flow: u32) -> bool {
        self.flows.get(flow as usize).is_some_and(|f| f.is_some())
    }

    fn push(&mut self, point: Point, t: Time, kind: Kind, pkt: &Packet) {
        if let Some(o) = self.outs.iter_mut().find(|o| o.point == point) {
            self.n += 1;
            o.pending.push(Reverse(Pending { t, n: self.n, kind, pkt: *pkt }));
        }
    }

    /// A flow starts: its synthetic handshake at every point.
    pub fn flow_start(&mut self, now: Time, flow: u32) {
        if !self.captured(flow) {
            return;
        }
        let p = Packet { flow, ..Default::default() };
        for point in Point::ALL {
            self.push(point, now, Kind::Syn, &p);
            self.push(point, now, Kind::SynAck, &p);
        }
    }

    /// Segments the sender just handed to its NIC, each with the time it leaves the
    /// host (its serialization by the NIC done).
    pub fn sent(&mut self, flow: u32, pkts: impl Iterator<Item = (Time, Packet)>) {
        let Some(Some(_)) = self.flows.get(flow as usize) else { return };
        for (at, pkt) in pkts {
            self.push(Point::Sender, at, Kind::of(&pkt, Kind::Data), &pkt);
        }
    }
    pub fn bottleneck_in(&mut self, now: Time, pkt: &Packet) {
        if self.captured(pkt.flow) {
            self.push(Point::BottleneckIn, now, Kind::of(pkt, Kind::Data), pkt);
        }
    }

    pub fn bottleneck_out(&mut self, now: Time, pkt: &Packet) {
        if self.captured(pkt.flow) {
            self.push(Point::BottleneckOut, now, Kind::of(pkt, Kind::Data), pkt);
        }
    }

    pub fn receiver_data(&mut self, now: Time, pkt: &Packet) {
        if self.captured(pkt.flow) {
            self.push(Point::Receiver, now, Kind::of(pkt, Kind::Data), pkt);
        }
    }

    /// ACKs the receiver just sent (the new tail of its reverse pipe).
    /// With a trace-driven ACK link the ACKs' passage through the router is stamped as
    /// if the reverse path were uncongested (an approximation).
    pub fn acks_sent(&mut self, now: Time, flow: u32, pkts: impl Iterator<Item = Packet>) {
        if !self.captured(flow) {
            return;
        }
        let router = now + self.one_way;
        for pkt in pkts {
            let (pkt, kind) = (&pkt, Kind::of(&pkt, Kind::Ack));
            self.push(Point::Receiver, now, kind, pkt);
            self.push(Point::BottleneckIn, router, kind, pkt);
            self.push(Point::BottleneckOut, router, kind, pkt);
        }
    }

    pub fn ack_arrival(&mut self, now: Time, pkt: &Packet) {
        if self.captured(pkt.flow) {
            self.push(Point::Sender, now, Kind::of(pkt, Kind::Ack), pkt);
        }
    }

    /// Write every record due by `now`. Every record created from now on is stamped
    /// `now` or later, so these are final.
    pub fn flush(&mut self, now: Time) {
        for k in 0..self.outs.len() {
            while self.outs[k].pending.peek().is_some_and(|Reverse(p)| p.t <= now) {
                let Reverse(p) = self.outs[k].pending.pop().expect("peeked");
                let f = self.flows[p.pkt.flow as usize].as_ref().expect("captured flow");
                let orig = render(f, p.kind, &p.pkt, p.t, &mut self.opts, &mut self.buf);
                if let Err(e) = self.outs[k].w.write(p.t.ns(), orig, &self.buf) {
                    self.error.get_or_insert((self.outs[k].point.file_in(Path::new("")), e));
                }
            }
        }
    }

    /// Write what is due by `end`, drop the rest, and close the files.
    pub fn finish(mut self, end: Time) -> Result<(), ConfigError> {
        self.flush(end);
        for o in &mut self.outs {
            if let Err(e) = o.w.flush() {
                self.error.get_or_insert((o.point.file_in(Path::new("")), e));
            }
        }
        match self.error {
            None => Ok(()),
            Some((p, e)) => {
                Err(ConfigError { field: "capture.dir".into(), message: format!("writing {}: {e}", p.display()) })
            }
        }
    }
}

/// Render one record's headers into `buf`; returns the packet's full length.
fn render(f: &FlowWire, kind: Kind, p: &Packet, t: Time, opts: &mut Vec<u8>, buf: &mut Vec<u8>) -> u32 {
    opts.clear();
    let start_ms = (t.ns() / 1_000_000) as u32;
    let forward = Segment {
        src: f.src,
        dst: f.dst,
        sport: f.sport,
        dport: f.dport,
        seq: f.isn_s,
        ack: 0,
        flags: 0,
        window: 0,
        ecn: pcap::NOT_ECT,
        options: &[],
        payload: 0,
    };
    let backward =
        Segment { src: f.dst, dst: f.src, sport: f.dport, dport: f.sport, seq: f.isn_r.wrapping_add(1), ..forward };
    let seg = match kind {
        Kind::Syn => syn(f, opts, start_ms, forward),
        Kind::SynAck => syn_ack(f, opts, start_ms, backward),
        Kind::Data => data(f, p, opts, forward),
        Kind::Ack => ack(f, p, opts, backward),
    };
    seg.render(buf)
}

/// The MSS option: the payload per segment plus the 12 bytes of timestamps it carries.
fn mss_option(f: &FlowWire) -> u16 {
    (f.mss + 12).min(u16::MAX as u32) as u16
}

fn syn<'a>(f: &FlowWire, opts: &'a mut Vec<u8>, start_ms: u32, forward: Segment<'a>) -> Segment<'a> {
    opt::syn(opts, mss_option(f), start_ms, 0, SENDER_WSCALE);
    let ecn = if f.ecn { pcap::ECE | pcap::CWR } else { 0 };
    Segment { flags: pcap::SYN | ecn, window: SENDER_WINDOW.min(65_535) as u16, options: opts, ..forward }
}

fn syn_ack<'a>(f: &FlowWire, opts: &'a mut Vec<u8>, start_ms: u32, backward: Segment<'a>) -> Segment<'a> {
    opt::syn(opts, mss_option(f), start_ms, start_ms, f.wscale);
    let ecn = if f.ecn { pcap::ECE } else { 0 };
    Segment {
        seq: f.isn_r,
        ack: f.isn_s.wrapping_add(1),
        flags: pcap::SYN | pcap::ACK | ecn,
        window: f.rwnd.min(65_535) as u16,
        options: opts,
        ..backward
    }
}

fn data<'a>(f: &FlowWire, p: &Packet, opts: &'a mut Vec<u8>, forward: Segment<'a>) -> Segment<'a> {
    opt::timestamps(opts, p.ts_val, p.ts_ecr);
    let probe = p.payload == 0; // a zero-window probe: one byte below snd_una
    let last = f.size.is_some_and(|size| p.seq + p.payload as u64 >= size) && !probe;
    let flags = pcap::ACK
        | if last { pcap::FIN } else { 0 }
        | if p.cwr { pcap::CWR } else { 0 }
        | if p.psh { pcap::PSH } else { 0 };
    Segment {
        seq: f.edge(p.seq).wrapping_sub(probe as u32),
        ack: f.isn_r.wrapping_add(1),
        flags,
        window: (SENDER_WINDOW >> SENDER_WSCALE) as u16,
        ecn: ecn_field(p),
        options: opts,
        payload: p.payload,
        ..forward
    }
}

fn ack<'a>(f: &FlowWire, p: &Packet, opts: &'a mut Vec<u8>, backward: Segment<'a>) -> Segment<'a> {
    opt::timestamps(opts, p.ts_val, p.ts_ecr);
    let blocks: Vec<(u32, u32)> = p.sack_blocks().iter().map(|&(s, e): &SackBlock| (f.edge(s), f.edge(e))).collect();
    opt::sack(opts, &blocks);
    Segment {
        ack: f.edge(p.ack),
        flags: pcap::ACK | if p.ece { pcap::ECE } else { 0 },
        window: (p.rwnd >> f.wscale).min(65_535) as u16,
        ecn: ecn_field(p),
        options: opts,
        ..backward
    }
}

/// The IP header's ECN field of a packet: CE, ECT(0) or not ECN-capable.
fn ecn_field(p: &Packet) -> u8 {
    if p.ce {
        pcap::CE
    } else if p.ect {
        pcap::ECT0
    } else {
        pcap::NOT_ECT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_scale_as_linux() {
        assert_eq!(window_scale(6 * 1024 * 1024), 7);
        assert_eq!(window_scale(65_535), 0);
        assert_eq!(window_scale(100_000), 1);
        assert_eq!(window_scale(u64::MAX), 14);
    }

    fn flow(size: Option<u64>) -> FlowWire {
        FlowWire {
            src: [10, 1, 0, 1],
            dst: [10, 2, 0, 1],
            sport: SENDER_PORT,
            dport: RECEIVER_PORT,
            isn_s: u32::MAX - 1000,
            isn_r: 7,
            mss: 1000,
            size,
            rwnd: 6 << 20,
            wscale: 7,
            ecn: false,
        }
    }

    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn ack_numbers_sack_blocks_and_fin_in_bytes() {
        let f = flow(Some(2500));
        let (mut opts, mut buf) = (Vec::new(), Vec::new());
        // A DSACK for segment 0 ahead of a SACK block for the last segment (with FIN).
        let mut ack =
            Packet { ack: 1000, rwnd: 6 << 20, n_sacks: 2, dsack: true, ts_val: 5, ts_ecr: 4, ..Default::default() };
        ack.sacks[0] = (0, 1000);
        ack.sacks[1] = (2000, 2500);
        let len = render(&f, Kind::Ack, &ack, Time(0), &mut opts, &mut buf);
        assert_eq!(len, 52 + 4 + 16);
        let isn1 = f.isn_s.wrapping_add(1);
        assert_eq!(be32(&buf, 28), isn1.wrapping_add(1000)); // ack
        assert_eq!(u16::from_be_bytes([buf[34], buf[35]]), (6 << 20 >> 7) as u16);
        let sack = &buf[40 + 12 + 4..];
        assert_eq!((be32(sack, 0), be32(sack, 4)), (isn1, isn1.wrapping_add(1000)));
        assert_eq!((be32(sack, 8), be32(sack, 12)), (isn1.wrapping_add(2000), isn1.wrapping_add(2501)));
        // The last segment: 500 bytes with FIN.
        let data = Packet { seq: 2000, payload: 500, wire_bytes: 552, ..Default::default() };
        assert_eq!(render(&f, Kind::Data, &data, Time(0), &mut opts, &mut buf), 552);
        assert_eq!(be32(&buf, 24), isn1.wrapping_add(2000));
        assert_eq!(buf[33], pcap::ACK | pcap::FIN);
    }

    #[test]
    fn a_zero_window_probe_is_an_empty_segment_one_byte_below_snd_una() {
        let f = flow(Some(2500));
        let (mut opts, mut buf) = (Vec::new(), Vec::new());
        let probe = Packet { seq: 2000, payload: 0, wire_bytes: 52, ..Default::default() };
        assert_eq!(render(&f, Kind::Data, &probe, Time(0), &mut opts, &mut buf), 52);
        assert_eq!(be32(&buf, 24), f.isn_s.wrapping_add(1).wrapping_add(1999));
        assert_eq!(buf[33], pcap::ACK, "no FIN on a probe");
    }

    #[test]
    fn addresses_are_distinct_per_flow() {
        assert_eq!(addresses(0), ([10, 1, 0, 1], [10, 2, 0, 1]));
        assert_eq!(addresses(255), ([10, 1, 1, 0], [10, 2, 1, 0]));
    }
}
