//! Just enough IPv4 and TCP parsing to classify packets by port and to follow
//! sequence and acknowledgment numbers. Packets are never modified.

pub const PROTO_TCP: u8 = 6;

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_ACK: u8 = 0x10;

/// The TCP fields the emulator looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tcp {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// Payload bytes (IP total length minus both headers).
    pub payload: u32,
}

impl Tcp {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The TCP header of an unfragmented IPv4 packet, or None for anything else
/// (IPv6, other protocols, fragments, truncated headers).
pub fn parse_tcp(b: &[u8]) -> Option<Tcp> {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return None;
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    let total = (be16(b, 2) as usize).min(b.len());
    let fragment_offset = be16(b, 6) & 0x1fff;
    if ihl < 20 || b[9] != PROTO_TCP || fragment_offset != 0 || total < ihl + 20 {
        return None;
    }
    let t = &b[ihl..total];
    let doff = (t[12] >> 4) as usize * 4;
    if doff < 20 || doff > t.len() {
        return None;
    }
    Some(Tcp {
        src_port: be16(t, 0),
        dst_port: be16(t, 2),
        seq: be32(t, 4),
        ack: be32(t, 8),
        flags: t[13],
        payload: (t.len() - doff) as u32,
    })
}

/// The SACK blocks (RFC 2018, option kind 5) of an IPv4/TCP packet, at most four.
pub fn sack_blocks(b: &[u8]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    if b.len() < 20 || b[0] >> 4 != 4 {
        return out;
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    if b.len() < ihl + 20 {
        return out;
    }
    let t = &b[ihl..];
    let doff = ((t[12] >> 4) as usize * 4).min(t.len());
    let mut at = 20;
    while at < doff {
        match t[at] {
            0 => break,
            1 => at += 1,
            kind => {
                let len = t.get(at + 1).copied().unwrap_or(0) as usize;
                if len < 2 || at + len > doff {
                    break;
                }
                if kind == 5 {
                    for k in 0..(len - 2) / 8 {
                        let o = at + 2 + 8 * k;
                        out.push((be32(t, o), be32(t, o + 4)));
                    }
                }
                at += len;
            }
        }
    }
    out
}

/// The ECN field of an IPv4 packet (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE); 0 for
/// anything that is not IPv4.
pub fn ecn(b: &[u8]) -> u8 {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return 0;
    }
    b[1] & 0x03
}

/// Mark an IPv4 packet Congestion Experienced and recompute its header checksum.
pub fn set_ce(b: &mut [u8]) {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return;
    }
    let ihl = ((b[0] & 0x0f) as usize * 4).clamp(20, b.len());
    b[1] |= 0x03;
    b[10] = 0;
    b[11] = 0;
    let mut sum: u32 = b[..ihl].chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    b[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Build an IPv4/TCP packet with a timestamp option (as Linux sends), for tests.
pub fn build_tcp(src_port: u16, dst_port: u16, seq: u32, ack: u32, flags: u8, payload: usize) -> Vec<u8> {
    let tcp_len = 32; // 20 + 12 bytes of options
    let total = 20 + tcp_len + payload;
    let mut b = vec![0u8; total];
    b[0] = 0x45;
    b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    b[8] = 64;
    b[9] = PROTO_TCP;
    b[12..16].copy_from_slice(&[10, 0, 0, 1]);
    b[16..20].copy_from_slice(&[10, 0, 0, 2]);
    let t = &mut b[20..];
    t[0..2].copy_from_slice(&src_port.to_be_bytes());
    t[2..4].copy_from_slice(&dst_port.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = ((tcp_len / 4) as u8) << 4;
    t[13] = flags;
    b
}

/// `x` (a 32-bit sequence number) as the 64-bit value nearest to `reference`.
pub fn unwrap_seq(x: u32, reference: u64) -> u64 {
    let delta = x.wrapping_sub(reference as u32) as i32 as i64;
    (reference as i64 + delta).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_builds() {
        let b = build_tcp(40000, 20001, 7, 9, TCP_ACK, 1448);
        assert_eq!(b.len(), 1500);
        let t = parse_tcp(&b).unwrap();
        assert_eq!((t.src_port, t.dst_port, t.seq, t.ack, t.payload), (40000, 20001, 7, 9, 1448));
        assert!(t.has(TCP_ACK) && !t.has(TCP_SYN));
    }

    #[test]
    fn rejects_non_tcp_and_truncated() {
        let mut b = build_tcp(1, 2, 0, 0, 0, 0);
        b[9] = 17;
        assert!(parse_tcp(&b).is_none());
        assert!(parse_tcp(&[0x60; 40]).is_none());
        assert!(parse_tcp(&build_tcp(1, 2, 0, 0, 0, 0)[..30]).is_none());
    }

    #[test]
    fn ce_mark_keeps_the_header_checksum_valid() {
        let mut b = build_tcp(1, 2, 0, 0, TCP_ACK, 10);
        b[1] = 0x02; // ECT(0)
        set_ce(&mut b);
        assert_eq!(ecn(&b), 3);
        let sum: u32 = b[..20].chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
        let folded = (sum & 0xffff) + (sum >> 16);
        assert_eq!(folded as u16, 0xffff);
    }

    #[test]
    fn unwraps_across_the_32_bit_boundary() {
        assert_eq!(unwrap_seq(5, (1u64 << 32) - 10), (1u64 << 32) + 5);
        assert_eq!(unwrap_seq(u32::MAX - 1, 1u64 << 32), (1u64 << 32) - 2);
        assert_eq!(unwrap_seq(100, 50), 100);
    }

    #[test]
    fn reads_sack_blocks_after_other_options() {
        let mut b = build_tcp(1, 2, 0, 0, TCP_ACK, 0);
        // NOP, NOP, SACK with two blocks; the header grows to 20 + 20 bytes of options.
        let mut opts = vec![1u8, 1, 5, 18];
        for v in [100u32, 200, 300, 400] {
            opts.extend_from_slice(&v.to_be_bytes());
        }
        b.truncate(20 + 20);
        b.extend_from_slice(&opts);
        b[32] = (((20 + opts.len()) / 4) << 4) as u8;
        let total = b.len() as u16;
        b[2..4].copy_from_slice(&total.to_be_bytes());
        assert_eq!(sack_blocks(&b), vec![(100, 200), (300, 400)]);
        assert!(sack_blocks(&build_tcp(1, 2, 0, 0, TCP_ACK, 0)).is_empty());
    }
}
