//! A TCP segment as the simulator carries it. Sequence numbers are stream offsets
//! (bytes from the first byte of data, a FIN taking one more), as on the wire: the
//! sender numbers its segments, which the MSS may cut again, and maps them to bytes.

use crate::time::Time;
use serde::{Deserialize, Serialize};

/// A flow's ECN mode: off, classic (RFC 3168: ECE echoed until CWR) or low (DCTCP-style
/// echo of each segment's CE state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecn {
    #[default]
    Off,
    Classic,
    Low,
}

/// A SACK block `[start, end)`: stream offsets on the wire, segment numbers inside the
/// sender.
pub type SackBlock = (u64, u64);

/// The handshake's segments. Their `seq` and `ack` count bytes of the data they carry
/// (a Fast Open SYN's, a client's request), outside the numbered segments of the stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Control {
    /// A segment of the stream, or one of its ACKs.
    #[default]
    None,
    Syn,
    SynAck,
    /// The opener's ACK of the SYN-ACK, with the client's request if the SYN did not
    /// carry it.
    Ack,
    /// Not TCP: an ICMP "fragmentation needed" from a router on the path, quoting the
    /// segment at `seq`, with the next-hop MTU in `ack`.
    FragNeeded,
    /// Not TCP: a UDP datagram (`udp`), its number in `seq`, when it was sent (ns) in
    /// `ack`.
    Datagram,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    pub flow: u32,
    /// Bytes on the wire (IPv4 packet).
    pub wire_bytes: u32,
    /// Data: the stream offset of the first byte; payload bytes (0 for a pure ACK).
    pub seq: u64,
    pub payload: u32,
    /// TCP timestamp option (ms clock): value and echo.
    pub ts_val: u32,
    pub ts_ecr: u32,
    /// ACK: cumulative ACK (the next stream offset expected) and advertised window in
    /// bytes.
    pub ack: u64,
    pub rwnd: u64,
    /// SACK blocks, most recent first; with `dsack` the first one reports a duplicate.
    pub sacks: [SackBlock; 3],
    pub n_sacks: u8,
    pub dsack: bool,
    /// ECN: the packet is ECN-capable (ECT), was marked Congestion Experienced, and the
    /// TCP flags ECE (on ACKs) and CWR (on data).
    pub ect: bool,
    pub ce: bool,
    pub ece: bool,
    pub cwr: bool,
    /// PSH: on the last segment of every skb of more than one segment and at the end of
    /// the application's data (`__tcp_transmit_skb`, `tcp_push`).
    pub psh: bool,
    /// A handshake segment of a connection that opens in time (`tcp::handshake`), with
    /// the Fast Open option if `fastopen`.
    pub ctl: Control,
    pub fastopen: bool,
    /// When the packet entered the bottleneck queue (for sojourn time).
    pub enqueued: Time,
    /// Which of the flow's connections sent it (repeated downloads open a new one each
    /// time); a packet of an earlier connection is ignored on arrival.
    pub conn: u16,
}

impl Packet {
    pub fn is_syn(&self) -> bool {
        self.ctl == Control::Syn
    }
    pub fn is_data(&self) -> bool {
        self.payload > 0
    }
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sacks[..self.n_sacks as usize]
    }
}
