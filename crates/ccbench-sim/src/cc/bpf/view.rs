//! The simulator's view of a socket, as a BPF congestion control reads and writes it.
//!
//! One block of memory holds `struct sock`, `inet_connection_sock` and `tcp_sock` at one
//! address, as the kernel nests them (`tcp_sk(sk)` and `inet_csk(sk)` are casts). The
//! layout is the simulator's own: CO-RE relocations (`core.rs`) match fields by name, so
//! an object built against the kernel's `vmlinux.h` or the project's header reads the
//! same fields here. Before each call the connection's state is written into the block;
//! after it, the fields the kernel lets a program write (`bpf_tcp_ca_btf_struct_access`,
//! net/ipv4/bpf_tcp_ca.c) are read back into the sender.

use crate::cc::{AckSample, CaState, ConnInfo, RateSample, Window};

/// A type of the target, as CO-RE sees it.
#[derive(Clone, Debug)]
pub enum TType {
    Int { size: u32, signed: bool },
    Array { elem: usize, n: u32 },
    Struct { name: &'static str, size: u32, members: Vec<TMember> },
    Enum { name: &'static str, size: u32, values: Vec<(&'static str, i64)> },
}

#[derive(Clone, Debug)]
pub struct TMember {
    pub name: &'static str,
    pub ty: usize,
    pub bit_offset: u32,
    pub bitfield_size: u32,
}

/// The target's types, by index.
pub struct Target {
    pub types: Vec<TType>,
}

impl Target {
    fn add(&mut self, t: TType) -> usize {
        self.types.push(t);
        self.types.len() - 1
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        self.types.iter().position(|t| match t {
            TType::Struct { name: n, .. } | TType::Enum { name: n, .. } => *n == name,
            _ => false,
        })
    }

    pub fn size_of(&self, ty: usize) -> u64 {
        match &self.types[ty] {
            TType::Int { size, .. } | TType::Struct { size, .. } | TType::Enum { size, .. } => *size as u64,
            TType::Array { elem, n } => self.size_of(*elem) * *n as u64,
        }
    }
}

/// Byte offsets of the block's fields. `sock` comes first, then the connection-socket
/// fields, then `tcp_sock`'s, as the kernel nests them.
pub mod off {
    pub const SK_PACING_RATE: usize = 0;
    pub const SK_MAX_PACING_RATE: usize = 8;
    pub const SK_PACING_STATUS: usize = 16;
    pub const SK_PACING_SHIFT: usize = 20;
    pub const ICSK_CA_STATE: usize = 64;
    pub const ICSK_RETRANSMITS: usize = 65;
    pub const ICSK_CA_PRIV: usize = 72;
    /// `ICSK_CA_PRIV_SIZE` (include/net/inet_connection_sock.h): 13 u64.
    pub const ICSK_CA_PRIV_SIZE: usize = 104;
    pub const ICSK_ACK_PENDING: usize = 176;
    pub const SND_CWND: usize = 192;
    pub const SND_SSTHRESH: usize = 196;
    pub const SND_CWND_CNT: usize = 200;
    pub const SND_CWND_CLAMP: usize = 204;
    pub const SRTT_US: usize = 208;
    pub const MDEV_US: usize = 212;
    pub const PACKETS_OUT: usize = 216;
    pub const SACKED_OUT: usize = 220;
    pub const LOST_OUT: usize = 224;
    pub const RETRANS_OUT: usize = 228;
    pub const DELIVERED: usize = 232;
    pub const DELIVERED_CE: usize = 236;
    pub const LOST: usize = 240;
    pub const MSS_CACHE: usize = 244;
    pub const SND_UNA: usize = 248;
    pub const SND_NXT: usize = 252;
    pub const RCV_NXT: usize = 256;
    pub const LSNDTIME: usize = 260;
    pub const TCP_MSTAMP: usize = 264;
    pub const TCP_CLOCK_CACHE: usize = 272;
    pub const TCP_WSTAMP_NS: usize = 280;
    pub const APP_LIMITED: usize = 288;
    /// A byte whose bit 0 is `is_cwnd_limited`.
    pub const IS_CWND_LIMITED: usize = 292;
    pub const ECN_FLAGS: usize = 293;
    pub const MAX_PACKETS_OUT: usize = 296;
    pub const PRIOR_CWND: usize = 300;
    pub const PRIOR_SSTHRESH: usize = 304;
    pub const RATE_DELIVERED: usize = 308;
    pub const RATE_INTERVAL_US: usize = 312;
    pub const DELIVERED_MSTAMP: usize = 320;
    /// `struct minmax rtt_min`: three (t, v) u32 samples.
    pub const RTT_MIN: usize = 328;
    pub const TOTAL_RETRANS: usize = 352;
    pub const SND_WND: usize = 356;
    pub const BLOCK: usize = 384;
}

/// `struct ack_sample` and `struct rate_sample` (include/net/tcp.h), laid out as the
/// kernel lays them out on x86-64.
pub mod sample {
    pub const ACK_SIZE: usize = 12;
    pub const RS_PRIOR_MSTAMP: usize = 0;
    pub const RS_PRIOR_DELIVERED: usize = 8;
    pub const RS_PRIOR_DELIVERED_CE: usize = 12;
    pub const RS_DELIVERED: usize = 16;
    pub const RS_DELIVERED_CE: usize = 20;
    pub const RS_INTERVAL_US: usize = 24;
    pub const RS_SND_INTERVAL_US: usize = 32;
    pub const RS_RCV_INTERVAL_US: usize = 36;
    pub const RS_RTT_US: usize = 40;
    pub const RS_LOSSES: usize = 48;
    pub const RS_ACKED_SACKED: usize = 52;
    pub const RS_PRIOR_IN_FLIGHT: usize = 56;
    pub const RS_LAST_END_SEQ: usize = 60;
    pub const RS_IS_APP_LIMITED: usize = 64;
    pub const RS_IS_RETRANS: usize = 65;
    pub const RS_IS_ACK_DELAYED: usize = 66;
    pub const RS_SIZE: usize = 72;
}

/// Byte ranges of the block a program may write (`bpf_tcp_ca_btf_struct_access`).
pub const WRITABLE: &[(usize, usize, &str)] = &[
    (off::SK_PACING_RATE, 8, "sock.sk_pacing_rate"),
    (off::SK_PACING_STATUS, 4, "sock.sk_pacing_status"),
    (off::ICSK_CA_PRIV, off::ICSK_CA_PRIV_SIZE, "inet_connection_sock.icsk_ca_priv"),
    (off::ICSK_ACK_PENDING, 1, "inet_connection_sock.icsk_ack.pending"),
    (off::SND_CWND, 4, "tcp_sock.snd_cwnd"),
    (off::SND_SSTHRESH, 4, "tcp_sock.snd_ssthresh"),
    (off::SND_CWND_CNT, 4, "tcp_sock.snd_cwnd_cnt"),
    (off::APP_LIMITED, 4, "tcp_sock.app_limited"),
    (off::ECN_FLAGS, 1, "tcp_sock.ecn_flags"),
];

/// Whether a write of `len` bytes at `at` stays inside one writable field.
pub fn writable(at: usize, len: usize) -> bool {
    WRITABLE.iter().any(|&(o, n, _)| at >= o && at + len <= o + n)
}

/// The field of the block at byte `at`, for messages.
pub fn field_at(target: &Target, at: usize) -> String {
    fn walk(target: &Target, ty: usize, at: usize, path: &str) -> Option<String> {
        if let TType::Struct { members, .. } = &target.types[ty] {
            for m in members {
                let (o, n) = ((m.bit_offset / 8) as usize, target.size_of(m.ty).max(1) as usize);
                if at >= o && at < o + n {
                    let p = format!("{path}.{}", m.name);
                    return walk(target, m.ty, at, &p).or(Some(p));
                }
            }
        }
        None
    }
    target.find("tcp_sock").and_then(|t| walk(target, t, at, "tcp_sock")).unwrap_or_else(|| format!("byte {at}"))
}

/// Build the target's types: `sock`, `inet_sock`, `inet_connection_sock`, `tcp_sock`,
/// `ack_sample`, `rate_sample`, `minmax`, and the enums programs compare against.
pub fn target() -> Target {
    let mut t = Target { types: Vec::new() };
    let ints = Ints {
        u8_: t.add(TType::Int { size: 1, signed: false }),
        u32_: t.add(TType::Int { size: 4, signed: false }),
        u64_: t.add(TType::Int { size: 8, signed: false }),
        s32: t.add(TType::Int { size: 4, signed: true }),
        s64: t.add(TType::Int { size: 8, signed: true }),
    };
    let icsk = socket_types(&mut t, &ints);
    tcp_sock(&mut t, &ints, icsk);
    samples(&mut t, &ints);
    enums(&mut t);
    t
}

/// The integer types members use.
struct Ints {
    u8_: usize,
    u32_: usize,
    u64_: usize,
    s32: usize,
    s64: usize,
}

fn member(name: &'static str, ty: usize, at: usize) -> TMember {
    TMember { name, ty, bit_offset: at as u32 * 8, bitfield_size: 0 }
}

fn bitfield(name: &'static str, ty: usize, at: usize, width: u32) -> TMember {
    TMember { name, ty, bit_offset: at as u32 * 8, bitfield_size: width }
}

/// `sock`, `inet_sock` and `inet_connection_sock`; returns the last.
fn socket_types(t: &mut Target, i: &Ints) -> usize {
    let sock = t.add(TType::Struct {
        name: "sock",
        size: 64,
        members: vec![
            member("sk_pacing_rate", i.u64_, off::SK_PACING_RATE),
            member("sk_max_pacing_rate", i.u64_, off::SK_MAX_PACING_RATE),
            member("sk_pacing_status", i.u32_, off::SK_PACING_STATUS),
            member("sk_pacing_shift", i.u8_, off::SK_PACING_SHIFT),
        ],
    });
    let inet_sock = t.add(TType::Struct { name: "inet_sock", size: 64, members: vec![member("sk", sock, 0)] });
    let ca_priv = t.add(TType::Array { elem: i.u64_, n: (off::ICSK_CA_PRIV_SIZE / 8) as u32 });
    let icsk_ack = t.add(TType::Struct { name: "", size: 8, members: vec![member("pending", i.u8_, 0)] });
    t.add(TType::Struct {
        name: "inet_connection_sock",
        size: 192,
        members: vec![
            member("icsk_inet", inet_sock, 0),
            bitfield("icsk_ca_state", i.u8_, off::ICSK_CA_STATE, 5),
            member("icsk_retransmits", i.u8_, off::ICSK_RETRANSMITS),
            member("icsk_ca_priv", ca_priv, off::ICSK_CA_PRIV),
            member("icsk_ack", icsk_ack, off::ICSK_ACK_PENDING),
        ],
    })
}

/// `tcp_sock`, with `minmax` for `rtt_min`.
fn tcp_sock(t: &mut Target, i: &Ints, icsk: usize) {
    let sample = t.add(TType::Struct {
        name: "minmax_sample",
        size: 8,
        members: vec![member("t", i.u32_, 0), member("v", i.u32_, 4)],
    });
    let samples = t.add(TType::Array { elem: sample, n: 3 });
    let minmax = t.add(TType::Struct { name: "minmax", size: 24, members: vec![member("s", samples, 0)] });
    let mut tcp = vec![member("inet_conn", icsk, 0)];
    let u32s = [
        ("snd_cwnd", off::SND_CWND),
        ("snd_ssthresh", off::SND_SSTHRESH),
        ("snd_cwnd_cnt", off::SND_CWND_CNT),
        ("snd_cwnd_clamp", off::SND_CWND_CLAMP),
        ("srtt_us", off::SRTT_US),
        ("mdev_us", off::MDEV_US),
        ("packets_out", off::PACKETS_OUT),
        ("sacked_out", off::SACKED_OUT),
        ("lost_out", off::LOST_OUT),
        ("retrans_out", off::RETRANS_OUT),
        ("delivered", off::DELIVERED),
        ("delivered_ce", off::DELIVERED_CE),
        ("lost", off::LOST),
        ("mss_cache", off::MSS_CACHE),
        ("snd_una", off::SND_UNA),
        ("snd_nxt", off::SND_NXT),
        ("rcv_nxt", off::RCV_NXT),
        ("lsndtime", off::LSNDTIME),
        ("app_limited", off::APP_LIMITED),
        ("max_packets_out", off::MAX_PACKETS_OUT),
        ("prior_cwnd", off::PRIOR_CWND),
        ("prior_ssthresh", off::PRIOR_SSTHRESH),
        ("rate_delivered", off::RATE_DELIVERED),
        ("rate_interval_us", off::RATE_INTERVAL_US),
        ("total_retrans", off::TOTAL_RETRANS),
        ("snd_wnd", off::SND_WND),
    ];
    tcp.extend(u32s.into_iter().map(|(name, at)| member(name, i.u32_, at)));
    let u64s = [
        ("tcp_mstamp", off::TCP_MSTAMP),
        ("tcp_clock_cache", off::TCP_CLOCK_CACHE),
        ("tcp_wstamp_ns", off::TCP_WSTAMP_NS),
        ("delivered_mstamp", off::DELIVERED_MSTAMP),
    ];
    tcp.extend(u64s.into_iter().map(|(name, at)| member(name, i.u64_, at)));
    tcp.push(bitfield("is_cwnd_limited", i.u8_, off::IS_CWND_LIMITED, 1));
    tcp.push(member("ecn_flags", i.u8_, off::ECN_FLAGS));
    tcp.push(member("rtt_min", minmax, off::RTT_MIN));
    t.add(TType::Struct { name: "tcp_sock", size: off::BLOCK as u32, members: tcp });
}

/// `ack_sample` and `rate_sample`.
fn samples(t: &mut Target, i: &Ints) {
    t.add(TType::Struct {
        name: "ack_sample",
        size: sample::ACK_SIZE as u32,
        members: vec![member("pkts_acked", i.u32_, 0), member("rtt_us", i.s32, 4), member("in_flight", i.u32_, 8)],
    });
    use sample::*;
    t.add(TType::Struct {
        name: "rate_sample",
        size: RS_SIZE as u32,
        members: vec![
            member("prior_mstamp", i.u64_, RS_PRIOR_MSTAMP),
            member("prior_delivered", i.u32_, RS_PRIOR_DELIVERED),
            member("prior_delivered_ce", i.u32_, RS_PRIOR_DELIVERED_CE),
            member("delivered", i.s32, RS_DELIVERED),
            member("delivered_ce", i.s32, RS_DELIVERED_CE),
            member("interval_us", i.s64, RS_INTERVAL_US),
            member("snd_interval_us", i.u32_, RS_SND_INTERVAL_US),
            member("rcv_interval_us", i.u32_, RS_RCV_INTERVAL_US),
            member("rtt_us", i.s64, RS_RTT_US),
            member("losses", i.s32, RS_LOSSES),
            member("acked_sacked", i.u32_, RS_ACKED_SACKED),
            member("prior_in_flight", i.u32_, RS_PRIOR_IN_FLIGHT),
            member("last_end_seq", i.u32_, RS_LAST_END_SEQ),
            member("is_app_limited", i.u8_, RS_IS_APP_LIMITED),
            member("is_retrans", i.u8_, RS_IS_RETRANS),
            member("is_ack_delayed", i.u8_, RS_IS_ACK_DELAYED),
        ],
    });
}

/// `enum tcp_ca_event`, `enum tcp_ca_state` and `enum sk_pacing` (include/net/tcp.h,
/// include/net/sock.h).
fn enums(t: &mut Target) {
    let events = [
        "CA_EVENT_TX_START",
        "CA_EVENT_CWND_RESTART",
        "CA_EVENT_COMPLETE_CWR",
        "CA_EVENT_LOSS",
        "CA_EVENT_ECN_NO_CE",
        "CA_EVENT_ECN_IS_CE",
    ];
    let states = ["TCP_CA_Open", "TCP_CA_Disorder", "TCP_CA_CWR", "TCP_CA_Recovery", "TCP_CA_Loss"];
    let pacing = ["SK_PACING_NONE", "SK_PACING_NEEDED", "SK_PACING_FQ"];
    for (name, values) in [("tcp_ca_event", &events[..]), ("tcp_ca_state", &states[..]), ("sk_pacing", &pacing[..])] {
        let values = values.iter().enumerate().map(|(k, v)| (*v, k as i64)).collect();
        t.add(TType::Enum { name, size: 4, values });
    }
}

/// `enum tcp_ca_state` as the kernel numbers it.
pub fn ca_state_number(s: CaState) -> u8 {
    match s {
        CaState::Open => 0,
        CaState::Disorder => 1,
        CaState::Cwr => 2,
        CaState::Recovery => 3,
        CaState::Loss => 4,
    }
}

fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

pub fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// `TCP_ECN_OK`.
pub const TCP_ECN_OK: u8 = 1;

/// Write the connection's state into the block; the fields a program owns between calls
/// (`icsk_ca_priv`, `icsk_ack.pending`, `ecn_flags` above `TCP_ECN_OK`) keep their bytes.
pub fn fill(b: &mut [u8], c: &ConnInfo, w: &Window) {
    put(b, off::SK_PACING_RATE, &w.pacing_rate.to_le_bytes());
    put(b, off::SK_MAX_PACING_RATE, &u64::MAX.to_le_bytes());
    put(b, off::SK_PACING_STATUS, &u32::from(c.paced).to_le_bytes());
    // `sk_pacing_shift`: 10, ~1 ms of data per TSO burst (sk_pacing_shift_update).
    b[off::SK_PACING_SHIFT] = 10;
    b[off::ICSK_CA_STATE] = (b[off::ICSK_CA_STATE] & !0x1f) | ca_state_number(c.ca_state);
    let us = c.now.0 / 1000;
    let min_rtt = if c.min_rtt_us == u64::MAX { u32::MAX } else { c.min_rtt_us as u32 };
    for (at, v) in [
        (off::SND_CWND, w.cwnd),
        (off::SND_SSTHRESH, w.ssthresh),
        (off::SND_CWND_CNT, w.cwnd_cnt),
        (off::SND_CWND_CLAMP, w.cwnd_clamp),
        (off::SRTT_US, c.srtt_us8 as u32),
        (off::MDEV_US, c.mdev_us4 as u32),
        (off::PACKETS_OUT, c.packets_out),
        (off::SACKED_OUT, c.sacked_out),
        (off::LOST_OUT, c.lost_out),
        (off::RETRANS_OUT, c.retrans_out),
        (off::DELIVERED, c.delivered as u32),
        (off::DELIVERED_CE, c.delivered_ce as u32),
        (off::LOST, c.lost as u32),
        (off::MSS_CACHE, c.mss),
        (off::SND_UNA, c.snd_una as u32),
        (off::SND_NXT, c.snd_nxt as u32),
        // The data sender's peer sends no data: rcv_nxt stays one past its SYN.
        (off::RCV_NXT, 1),
        (off::LSNDTIME, c.lsndtime.jiffies(c.hz)),
        (off::APP_LIMITED, u32::from(c.app_limited)),
        (off::MAX_PACKETS_OUT, c.max_packets_out),
        (off::PRIOR_CWND, c.prior_cwnd),
        (off::TOTAL_RETRANS, c.total_retrans),
        (off::SND_WND, c.snd_wnd),
        (off::RTT_MIN + 4, min_rtt),
        (off::RTT_MIN + 12, min_rtt),
        (off::RTT_MIN + 20, min_rtt),
    ] {
        put(b, at, &v.to_le_bytes());
    }
    for (at, v) in [
        (off::TCP_MSTAMP, us),
        (off::TCP_CLOCK_CACHE, c.now.0),
        (off::TCP_WSTAMP_NS, c.wstamp.0),
        (off::DELIVERED_MSTAMP, c.delivered_us),
    ] {
        put(b, at, &v.to_le_bytes());
    }
    b[off::IS_CWND_LIMITED] = u8::from(c.cwnd_limited_bit);
    b[off::ECN_FLAGS] = (b[off::ECN_FLAGS] & !TCP_ECN_OK) | if c.ecn_ok { TCP_ECN_OK } else { 0 };
}

/// The window fields a program may write, as they stand in the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub cwnd: u32,
    pub ssthresh: u32,
    pub cwnd_cnt: u32,
    pub pacing_rate: u64,
    pub pacing_status: u32,
    pub app_limited: u32,
}

pub fn written(b: &[u8]) -> Written {
    Written {
        cwnd: get_u32(b, off::SND_CWND),
        ssthresh: get_u32(b, off::SND_SSTHRESH),
        cwnd_cnt: get_u32(b, off::SND_CWND_CNT),
        pacing_rate: get_u64(b, off::SK_PACING_RATE),
        pacing_status: get_u32(b, off::SK_PACING_STATUS),
        app_limited: get_u32(b, off::APP_LIMITED),
    }
}

/// Apply what a program wrote: the window, the pacing rate, and an `app_limited` mark
/// (the stack sets the kernel's value, `delivered + inflight`, as BBR's PROBE_RTT does).
pub fn drain(before: &Written, after: &Written, w: &mut Window) {
    w.cwnd = after.cwnd;
    w.ssthresh = after.ssthresh;
    w.cwnd_cnt = after.cwnd_cnt;
    w.pacing_rate = after.pacing_rate;
    if after.app_limited != before.app_limited && after.app_limited != 0 {
        w.mark_app_limited = true;
    }
}

/// Write an `ack_sample`.
pub fn fill_ack_sample(b: &mut [u8], s: &AckSample, mss: u32) {
    put(b, 0, &s.pkts_acked.to_le_bytes());
    put(b, 4, &(s.rtt_us as i32).to_le_bytes());
    // The kernel passes `in_flight` in bytes (tcp_clean_rtx_queue's `sample.in_flight`).
    put(b, 8, &s.in_flight.wrapping_mul(mss).to_le_bytes());
}

/// Write a `rate_sample`.
pub fn fill_rate_sample(b: &mut [u8], rs: &RateSample) {
    use sample::*;
    b.fill(0);
    put(b, RS_PRIOR_DELIVERED, &(rs.prior_delivered as u32).to_le_bytes());
    put(b, RS_PRIOR_DELIVERED_CE, &(rs.prior_delivered_ce as u32).to_le_bytes());
    put(b, RS_DELIVERED, &(rs.delivered as i32).to_le_bytes());
    put(b, RS_DELIVERED_CE, &(rs.delivered_ce as i32).to_le_bytes());
    put(b, RS_INTERVAL_US, &rs.interval_us.to_le_bytes());
    put(b, RS_RTT_US, &rs.rtt_us.to_le_bytes());
    put(b, RS_LOSSES, &(rs.losses as i32).to_le_bytes());
    put(b, RS_ACKED_SACKED, &rs.acked_sacked.to_le_bytes());
    put(b, RS_PRIOR_IN_FLIGHT, &rs.prior_in_flight.to_le_bytes());
    b[RS_IS_APP_LIMITED] = u8::from(rs.is_app_limited);
    b[RS_IS_RETRANS] = u8::from(rs.is_retrans);
    b[RS_IS_ACK_DELAYED] = u8::from(rs.is_ack_delayed);
}
