//! Just enough IPv4 and TCP parsing to classify packets by port and to follow
//! sequence and acknowledgment numbers, and the ICMP a router answers an oversize
//! packet with. Packets are never modified but for the CE mark.

pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
/// ICMP destination unreachable (RFC 792), code 4: fragmentation needed and DF set.
pub const ICMP_DEST_UNREACH: u8 = 3;
pub const ICMP_FRAG_NEEDED: u8 = 4;
/// The first bytes of the datagram's data an ICMP error quotes after its IP header
/// (RFC 792): the TCP ports and sequence number the sender matches it by.
pub const ICMP_QUOTED_DATA: usize = 8;

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

/// The UDP fields the emulator looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Udp {
    pub src_port: u16,
    pub dst_port: u16,
    /// Payload bytes (IP total length minus the IP and UDP headers).
    pub payload: u32,
}

/// The UDP header of an unfragmented IPv4 packet, or None for anything else.
pub fn parse_udp(b: &[u8]) -> Option<Udp> {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return None;
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    let total = (be16(b, 2) as usize).min(b.len());
    let fragmented = be16(b, 6) & 0x3fff != 0; // more fragments, or an offset
    if ihl < 20 || b[9] != PROTO_UDP || fragmented || total < ihl + 8 {
        return None;
    }
    let u = &b[ihl..total];
    Some(Udp { src_port: be16(u, 0), dst_port: be16(u, 2), payload: (u.len() - 8) as u32 })
}

/// Build an IPv4/UDP packet of `payload` bytes, for tests.
pub fn build_udp(src_port: u16, dst_port: u16, payload: usize) -> Vec<u8> {
    let total = 20 + 8 + payload;
    let mut b = vec![0u8; total];
    b[0] = 0x45;
    b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    b[8] = 64;
    b[9] = PROTO_UDP;
    b[12..16].copy_from_slice(&[10, 0, 0, 1]);
    b[16..20].copy_from_slice(&[10, 0, 0, 2]);
    b[20..22].copy_from_slice(&src_port.to_be_bytes());
    b[22..24].copy_from_slice(&dst_port.to_be_bytes());
    b[24..26].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
    b
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
    let sum = checksum(&b[..ihl]);
    b[10..12].copy_from_slice(&sum.to_be_bytes());
}

/// The Internet checksum (RFC 1071) of `b`: the ones' complement of the ones'
/// complement sum of its 16-bit words, an odd last byte padded with zero.
pub fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = b.chunks(2).map(|w| u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32).sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The total length of an IPv4 packet (its header's field), or None for anything else.
pub fn ipv4_total_len(b: &[u8]) -> Option<u32> {
    (b.len() >= 20 && b[0] >> 4 == 4).then(|| be16(b, 2) as u32)
}

/// The ICMP "fragmentation needed" a router sends back to the source of `b`, an IPv4
/// packet too big for its next hop's `mtu` (RFC 792 destination unreachable, code 4,
/// with RFC 1191 section 4's next-hop MTU in the low 16 bits of the unused word). It
/// quotes `b`'s IP header and the first 8 bytes of its data, and comes from `b`'s
/// destination, an address the source routes towards the path. None when `b` is not
/// an IPv4 packet with a whole header.
pub fn frag_needed(b: &[u8], mtu: u16) -> Option<Vec<u8>> {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return None;
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    if ihl < 20 || b.len() < ihl {
        return None;
    }
    let quoted = &b[..(ihl + ICMP_QUOTED_DATA).min(b.len())];
    let icmp_len = 8 + quoted.len();
    let total = 20 + icmp_len;
    let mut out = vec![0u8; total];
    out[0] = 0x45;
    // IPTOS_PREC_INTERNETCONTROL, as Linux's icmp_send marks its errors.
    out[1] = 0xc0;
    out[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    out[8] = 64;
    out[9] = PROTO_ICMP;
    out[12..16].copy_from_slice(&b[16..20]);
    out[16..20].copy_from_slice(&b[12..16]);
    let ip_sum = checksum(&out[..20]);
    out[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    let icmp = &mut out[20..];
    icmp[0] = ICMP_DEST_UNREACH;
    icmp[1] = ICMP_FRAG_NEEDED;
    icmp[6..8].copy_from_slice(&mtu.to_be_bytes());
    icmp[8..].copy_from_slice(quoted);
    let icmp_sum = checksum(icmp);
    icmp[2..4].copy_from_slice(&icmp_sum.to_be_bytes());
    Some(out)
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
    fn parses_unfragmented_udp_only() {
        let b = build_udp(40000, 20003, 1472);
        assert_eq!(b.len(), 1500);
        assert_eq!(parse_udp(&b), Some(Udp { src_port: 40000, dst_port: 20003, payload: 1472 }));
        assert!(parse_tcp(&b).is_none() && parse_udp(&build_tcp(1, 2, 0, 0, 0, 10)).is_none());
        let mut first = b.clone();
        first[6] = 0x20; // more fragments follow
        let mut later = b;
        later[7] = 0xb9; // offset 185 x 8 bytes
        assert!(parse_udp(&first).is_none() && parse_udp(&later).is_none());
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
    fn frag_needed_quotes_the_header_and_8_bytes_with_valid_checksums() {
        let mut b = build_tcp(40000, 20001, 0x0102_0304, 9, TCP_ACK, 1448);
        b[6] = 0x40; // DF, as Linux sends TCP
        let sum = checksum(&b[..20]);
        b[10..12].copy_from_slice(&sum.to_be_bytes());
        let icmp = frag_needed(&b, 1400).unwrap();
        assert_eq!(icmp.len(), 20 + 8 + 20 + 8);
        assert_eq!(ipv4_total_len(&icmp), Some(56));
        assert_eq!((icmp[9], &icmp[12..16], &icmp[16..20]), (PROTO_ICMP, &[10, 0, 0, 2][..], &[10, 0, 0, 1][..]));
        // A valid checksum sums, with itself, to zero.
        assert_eq!(checksum(&icmp[..20]), 0);
        let m = &icmp[20..];
        assert_eq!(checksum(m), 0);
        assert_eq!((m[0], m[1]), (ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED));
        assert_eq!((&m[4..6], u16::from_be_bytes([m[6], m[7]])), (&[0, 0][..], 1400));
        // The original IP header, then its TCP ports and sequence number.
        assert_eq!(&m[8..28], &b[..20]);
        assert_eq!(&m[28..36], &b[20..28]);
        assert_eq!(be32(&m[28..], 4), 0x0102_0304);
        assert!(frag_needed(&[0x60; 40], 1400).is_none());
    }

    #[test]
    fn checksum_pads_an_odd_length() {
        assert_eq!(checksum(&[0x12, 0x34, 0x56]), !(0x1234u16 + 0x5600));
        assert_eq!(checksum(&[0xff, 0xff]), 0);
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
