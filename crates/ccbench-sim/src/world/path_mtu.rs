//! The router in front of the bottleneck whose next hop has a smaller MTU
//! (`link.mtu`): a data packet longer than it is dropped there, as a router drops a
//! packet with DF set (Linux sets DF on TCP), and, unless the path is a black hole,
//! answered with ICMP "fragmentation needed" carrying the MTU (RFC 1191 section 4),
//! which reaches the sender after its access delay both ways. The kernel engine's
//! emulator does the same where its packets enter it.

use super::event::Event;
use crate::event::EventQueue;
use crate::net::packet::Control;
use crate::net::Packet;
use crate::time::{Dur, Time};
use crate::units::wire;
use std::collections::VecDeque;

/// IPv4 header, ICMP header, and the quoted IPv4 header and 8 bytes.
const ICMP_BYTES: u32 = wire::IP_HEADER + 8 + wire::IP_HEADER + 8;

pub struct PathMtuGate {
    mtu: u32,
    black_hole: bool,
    /// Each flow's access delay, paid both ways by the ICMP.
    access: Vec<Dur>,
    /// Each flow's ICMPs on their way, in order.
    pending: Vec<VecDeque<Packet>>,
    /// Each flow's packets dropped for their length, and ICMPs sent.
    pub dropped: Vec<u64>,
    pub icmp_sent: Vec<u64>,
}

impl PathMtuGate {
    pub fn new(mtu: u32, black_hole: bool, access: Vec<Dur>) -> PathMtuGate {
        let n = access.len();
        PathMtuGate {
            mtu,
            black_hole,
            access,
            pending: vec![VecDeque::new(); n],
            dropped: vec![0; n],
            icmp_sent: vec![0; n],
        }
    }

    /// Whether `pkt`, sent by flow `flow` at `now`, is too long for the path: then it is
    /// counted and, unless in a black hole, answered.
    #[inline]
    pub fn stops(&mut self, now: Time, flow: u32, pkt: &Packet, q: &mut EventQueue<Event>) -> bool {
        if pkt.wire_bytes <= self.mtu {
            return false;
        }
        let i = flow as usize;
        self.dropped[i] += 1;
        if !self.black_hole {
            self.icmp_sent[i] += 1;
            self.pending[i].push_back(frag_needed(pkt, self.mtu));
            q.push(now + self.access[i] + self.access[i], Event::Icmp(flow));
        }
        true
    }

    /// Flow `flow`'s next ICMP arrives.
    pub fn arrive(&mut self, flow: u32) -> Packet {
        self.pending[flow as usize].pop_front().expect("an ICMP on its way")
    }
}

/// The ICMP that answers `pkt`: it quotes the segment's sequence number, and carries the
/// next-hop MTU in `ack`.
fn frag_needed(pkt: &Packet, mtu: u32) -> Packet {
    Packet {
        flow: pkt.flow,
        conn: pkt.conn,
        wire_bytes: ICMP_BYTES,
        seq: pkt.seq,
        ack: mtu as u64,
        ctl: Control::FragNeeded,
        ..Default::default()
    }
}
