//! Classic pcap files of IPv4/TCP headers: the writer, and a builder of real IPv4/TCP
//! headers (checksums included) for packets that exist only as simulator state.
//!
//! Files use the nanosecond variant of the pcap format (magic `a1b23c4d`, version 2.4)
//! with `LINKTYPE_RAW` (101): each record is an IP packet with no link-layer header.
//! Only headers are kept: a record's captured length covers the IP and TCP headers with
//! their options, and its original length is the whole packet's, as `tcpdump -s` would
//! write. The emulator writes real packets the same way ([`header_len`]).

use std::io::{self, Write};

/// `LINKTYPE_RAW`: raw IPv4 or IPv6, no link-layer header.
pub const LINKTYPE_RAW: u32 = 101;
/// Snapshot length: the longest IPv4 header (60) plus the longest TCP header (60).
pub const SNAPLEN: u32 = 120;
/// Nanosecond-resolution pcap.
const MAGIC_NS: u32 = 0xa1b2_3c4d;

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const ECE: u8 = 0x40;
pub const CWR: u8 = 0x80;

/// The IP ECN field.
pub const NOT_ECT: u8 = 0;
pub const ECT0: u8 = 2;
pub const CE: u8 = 3;

/// Writes a pcap stream: the file header at creation, then one record per packet.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&MAGIC_NS.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        h.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        h.extend_from_slice(&SNAPLEN.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// One record: `bytes` as captured (at most [`SNAPLEN`] are kept) of a packet
    /// `orig_len` bytes long, at `ts_ns` nanoseconds after the epoch.
    pub fn write(&mut self, ts_ns: u64, orig_len: u32, bytes: &[u8]) -> io::Result<()> {
        let kept = &bytes[..bytes.len().min(SNAPLEN as usize)];
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        r[4..8].copy_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
        r[8..12].copy_from_slice(&(kept.len() as u32).to_le_bytes());
        r[12..16].copy_from_slice(&orig_len.max(kept.len() as u32).to_le_bytes());
        self.out.write_all(&r)?;
        self.out.write_all(kept)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Bytes of a real packet worth keeping: the IPv4 header and, for TCP, the TCP header
/// with its options; for anything else (IPv6, other protocols) at most [`SNAPLEN`].
pub fn header_len(p: &[u8]) -> usize {
    let all = p.len().min(SNAPLEN as usize);
    if p.len() < 20 || p[0] >> 4 != 4 {
        return all;
    }
    let ihl = (p[0] & 0x0f) as usize * 4;
    if p[9] != 6 || p.len() < ihl + 20 {
        return all;
    }
    let doff = (p[ihl + 12] >> 4) as usize * 4;
    (ihl + doff).min(p.len())
}

/// A TCP segment to render as IPv4 + TCP headers.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// IP ECN field: [`NOT_ECT`], [`ECT0`] or [`CE`].
    pub ecn: u8,
    /// TCP options, already padded to a multiple of 4 bytes.
    pub options: &'a [u8],
    /// Payload bytes: counted in the lengths, not written.
    pub payload: u32,
}

/// One's-complement sum of 16-bit big-endian words (odd length padded with zero).
fn sum16(bytes: &[u8], mut acc: u32) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for w in &mut chunks {
        acc += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [b] = chunks.remainder() {
        acc += (*b as u32) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

impl Segment<'_> {
    /// Render the headers into `out` (cleared first); returns the whole packet's length.
    ///
    /// The payload is not written. The TCP checksum is the one of the whole packet with
    /// a payload of zero bytes, which add nothing to the one's-complement sum: only the
    /// length in the pseudo-header counts them. A tool that pads the missing payload
    /// with zeros verifies it; tools that see a truncated packet leave it unverified.
    pub fn render(&self, out: &mut Vec<u8>) -> u32 {
        debug_assert!(self.options.len().is_multiple_of(4) && self.options.len() <= 40);
        let tcp_hdr = 20 + self.options.len();
        let total = (20 + tcp_hdr) as u32 + self.payload;
        out.clear();
        // IPv4: version 4, IHL 5, DSCP 0, length, ID 0, DF, TTL 64, TCP.
        out.extend_from_slice(&[0x45, self.ecn & 3]);
        out.extend_from_slice(&(total as u16).to_be_bytes());
        out.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
        out.extend_from_slice(&self.src);
        out.extend_from_slice(&self.dst);
        let ip_sum = fold(sum16(&out[..20], 0));
        out[10..12].copy_from_slice(&ip_sum.to_be_bytes());
        // TCP
        out.extend_from_slice(&self.sport.to_be_bytes());
        out.extend_from_slice(&self.dport.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.ack.to_be_bytes());
        out.push(((tcp_hdr / 4) as u8) << 4);
        out.push(self.flags);
        out.extend_from_slice(&self.window.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        out.extend_from_slice(self.options);
        let tcp_len = total - 20;
        let mut acc = sum16(&self.src, 0);
        acc = sum16(&self.dst, acc);
        acc += 6 + (tcp_len >> 16) + (tcp_len & 0xffff);
        let tcp_sum = fold(sum16(&out[20..], acc));
        out[36..38].copy_from_slice(&tcp_sum.to_be_bytes());
        total
    }
}

/// TCP option builders, in the order and padding Linux uses.
pub mod opt {
    pub const NOP: u8 = 1;

    /// NOP, NOP, timestamps (12 bytes): every segment after the handshake.
    pub fn timestamps(out: &mut Vec<u8>, val: u32, ecr: u32) {
        out.extend_from_slice(&[NOP, NOP, 8, 10]);
        out.extend_from_slice(&val.to_be_bytes());
        out.extend_from_slice(&ecr.to_be_bytes());
    }

    /// NOP, NOP, SACK with up to 4 blocks `[left, right)`.
    pub fn sack(out: &mut Vec<u8>, blocks: &[(u32, u32)]) {
        if blocks.is_empty() {
            return;
        }
        out.extend_from_slice(&[NOP, NOP, 5, 2 + 8 * blocks.len() as u8]);
        for &(l, r) in blocks {
            out.extend_from_slice(&l.to_be_bytes());
            out.extend_from_slice(&r.to_be_bytes());
        }
    }

    /// A SYN's options (20 bytes): MSS, SACK permitted, timestamps, NOP, window scale.
    pub fn syn(out: &mut Vec<u8>, mss: u16, ts_val: u32, ts_ecr: u32, wscale: u8) {
        out.extend_from_slice(&[2, 4]);
        out.extend_from_slice(&mss.to_be_bytes());
        out.extend_from_slice(&[4, 2, 8, 10]);
        out.extend_from_slice(&ts_val.to_be_bytes());
        out.extend_from_slice(&ts_ecr.to_be_bytes());
        out.extend_from_slice(&[NOP, 3, 3, wscale]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verify(sum_over: &[u8], acc: u32) -> bool {
        fold(sum16(sum_over, acc)) == 0
    }

    #[test]
    fn checksums_verify_over_the_full_packet_with_a_zero_payload() {
        let mut opts = Vec::new();
        opt::timestamps(&mut opts, 123_456, 654_321);
        opt::sack(&mut opts, &[(1000, 2448)]);
        let seg = Segment {
            src: [10, 1, 0, 1],
            dst: [10, 2, 0, 1],
            sport: 40000,
            dport: 20000,
            seq: 0xdead_beef,
            ack: 77,
            flags: ACK | ECE,
            window: 49152,
            ecn: ECT0,
            options: &opts,
            payload: 1448,
        };
        let mut hdr = Vec::new();
        let total = seg.render(&mut hdr);
        assert_eq!(total, 20 + 20 + 24 + 1448);
        assert_eq!(hdr.len(), 64);
        assert_eq!(header_len(&hdr), 64);
        assert!(verify(&hdr[..20], 0), "IP header checksum");
        let mut full = hdr.clone();
        full.resize(total as usize, 0);
        let tcp_len = total - 20;
        let pseudo = sum16(&full[12..20], 6 + tcp_len);
        assert!(verify(&full[20..], pseudo), "TCP checksum");
    }

    #[test]
    fn file_and_record_headers() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write(1_500_000_001, 1500, &[0x45; 52]).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), LINKTYPE_RAW);
        let r = &b[24..40];
        assert_eq!(u32::from_le_bytes(r[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(r[4..8].try_into().unwrap()), 500_000_001);
        assert_eq!(u32::from_le_bytes(r[8..12].try_into().unwrap()), 52);
        assert_eq!(u32::from_le_bytes(r[12..16].try_into().unwrap()), 1500);
        assert_eq!(b.len(), 24 + 16 + 52);
    }
}
