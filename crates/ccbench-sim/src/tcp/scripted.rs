//! A scripted endpoint: one [`Sender`] driven by explicit writes and ACKs at explicit
//! times, with its own event queue for its timers, and every skb it sends recorded as
//! it leaves TCP. This is the simulator's side of a packetdrill script, which plays the
//! remote peer: the host parts a packetdrill tun device does not have are off (no NIC
//! rate limit, no access delay), so what leaves TCP is what the script sees.

mod close;

use super::close::Close;
use super::config::{FlowConfig, TcpConfig};
use super::io::Loopback;
use super::mtu::PathMtu;
use super::sender::{Sender, SenderParams, TxRecord, WriteFlags};
use super::wake::Wake;
use crate::base::rng;
use crate::cc::{Algorithm, CaState, INFINITE_SSTHRESH};
use crate::net::packet::SackBlock;
use crate::net::Ecn;
use crate::net::Packet;
use crate::time::{Dur, Time};
use crate::units::wire;
use crate::units::wire::MAX_TCP_OPTION_SPACE;
use std::collections::BTreeMap;

/// How the scripted connection is set up.
#[derive(Clone, Debug)]
pub struct ScriptedParams {
    /// Congestion control by name, with parameter overrides by name.
    pub cca: String,
    pub cc_params: BTreeMap<String, f64>,
    /// SYN to handshake-completing ACK, which seeds SRTT and min RTT.
    pub handshake_rtt: Dur,
    /// The peer's window in bytes, after window scaling.
    pub snd_wnd: u64,
    pub ecn: Ecn,
    /// Paced by an fq qdisc (EDT).
    pub paced: bool,
    /// The tun device takes skbs of many segments (off: `ethtool -K tun0 tso off gso off`).
    pub gso: bool,
    /// The stack's settings; `mss` is the effective MSS after the handshake
    /// (`tcp_sync_mss` with the peer's MSS option), `sack` whether the peer sent `sackOK`.
    pub tcp: TcpConfig,
    /// TCP option bytes on every data segment (12 with timestamps), and the handshake's
    /// `mss_clamp` (the peer's MSS option within `TCP_MAXSEG`; None: `mss` and options).
    pub tcp_options: u32,
    pub mss_clamp: Option<u32>,
}

impl Default for ScriptedParams {
    /// packetdrill's defaults: a 1000-byte MSS, no slow start after idle, and a tun
    /// device that takes each skb at once (no TCP Small Queues limit in effect).
    fn default() -> Self {
        ScriptedParams {
            cca: "cubic".into(),
            cc_params: BTreeMap::new(),
            handshake_rtt: Dur::from_ms(100),
            snd_wnd: 65535,
            ecn: Ecn::Off,
            paced: false,
            gso: true,
            tcp_options: 0,
            mss_clamp: None,
            tcp: TcpConfig {
                mss: 1000,
                slow_start_after_idle: false,
                tsq_limit_bytes: u64::MAX / 2,
                ..TcpConfig::default()
            },
        }
    }
}

/// An ACK from the peer, in segments of the sender's MSS.
#[derive(Clone, Debug, Default)]
pub struct PeerAck {
    /// Next segment expected.
    pub ack: u64,
    /// Advertised window in bytes (scaled).
    pub rwnd: u64,
    /// SACK blocks `[start, end)` in segments, as the option lists them.
    pub sacks: Vec<SackBlock>,
    pub ece: bool,
    /// Bytes of data the segment carries (an ACK with data is never a duplicate).
    pub data: u32,
}

pub struct ScriptedSender {
    pub sender: Sender,
    /// A tun device: each skb is taken (and its TSQ budget freed) the instant it is sent.
    q: Loopback,
    now: Time,
    /// The socket's state, from ESTABLISHED to CLOSED (see `scripted/close.rs`).
    close: Close,
}

impl ScriptedSender {
    pub fn new(p: &ScriptedParams) -> Result<ScriptedSender, String> {
        let alg = Algorithm::from_name(&p.cca).ok_or_else(|| format!("unknown congestion control {:?}", p.cca))?;
        let cc = alg.build(&p.cc_params, rng::stream(0, "cc", 0))?;
        let flow = FlowConfig { size_bytes: Some(0), pacing: Some(p.paced), ecn: p.ecn, ..FlowConfig::bulk(&p.cca) };
        let sp = SenderParams { id: 0, tcp: p.tcp.clone(), flow, handshake_rtt: p.handshake_rtt, conn: 0, gso: p.gso };
        let mut sender = Sender::new(sp, cc);
        let (mss, opts) = (p.tcp.mss, p.tcp_options);
        if opts > MAX_TCP_OPTION_SPACE || p.mss_clamp.is_some_and(|c| !(mss..=u16::MAX as u32).contains(&c)) {
            return Err(format!(
                "tcp_options must be at most {MAX_TCP_OPTION_SPACE} bytes and mss_clamp from the MSS ({mss}) to 65535"
            ));
        }
        let path = PathMtu::new(mss, opts, mss + opts + wire::IP_HEADER + wire::TCP_HEADER);
        sender.set_path(Time::ZERO, path.with_clamp(p.mss_clamp.unwrap_or(mss + opts)));
        sender.set_snd_wnd(p.snd_wnd);
        sender.tx_log = Some(Vec::new());
        Ok(ScriptedSender { sender, q: Loopback::default(), now: Time::ZERO, close: Close::new() })
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Run the sender's timers up to `until` (a time before the current one is the
    /// current one).
    pub fn advance(&mut self, until: Time) {
        while let Some(t) = self.next_event() {
            if t > until {
                break;
            }
            let (t, ev) = self.q.q.pop().expect("peeked");
            self.now = self.now.max(t);
            let now = self.now;
            if let Wake::Sender(_, which) = ev {
                if self.aborted() {
                    continue; // `tcp_done` stopped the timers
                }
                if self.sender.timer_due(now, which, &mut self.q) {
                    self.sender.on_timer_expired(now, which, &mut self.q);
                }
            }
            self.drain_nic();
        }
        self.now = self.now.max(until);
    }

    /// Time of the next queued event (a timer entry, possibly stale), if any.
    pub fn next_event(&self) -> Option<Time> {
        self.q.q.peek_time()
    }

    fn drain_nic(&mut self) {
        self.q.sent.clear();
    }

    /// The application writes `bytes` at `now`, with MSG_MORE if `more`. What the send
    /// buffer does not take waits ([`ScriptedSender::write_pending`]) for ACKs.
    pub fn write(&mut self, now: Time, bytes: u64, more: bool) {
        self.write_with(now, bytes, WriteFlags { more, eor: false });
    }

    /// The application writes `bytes` at `now` with `flags` (MSG_MORE, MSG_EOR).
    pub fn write_with(&mut self, now: Time, bytes: u64, flags: WriteFlags) {
        self.advance(now);
        let now = self.now;
        self.sender.app_write(now, bytes, flags, &mut self.q);
        self.drain_nic();
    }

    /// A Fast Open SYN's data that the SYN-ACK did not acknowledge, sent again at `now`
    /// as the connection opens (`tcp_rcv_fastopen_synack`): in the model new data, which
    /// Linux retransmits outside `tcp_write_xmit`, so it sets no Nagle state.
    pub fn resend_syn_data(&mut self, now: Time, bytes: u64) {
        self.write_with(now, bytes, WriteFlags::default());
        self.sender.forget_short_sent();
    }

    /// Bytes of the last write still waiting for room in the send buffer.
    pub fn write_pending(&self) -> u64 {
        self.sender.write_pending()
    }

    /// A non-blocking write returns short: what waits is the application's again.
    pub fn return_short(&mut self) {
        self.sender.return_short();
    }

    /// SO_SNDBUF as the kernel keeps it (doubled): the buffer is that, not autotuned.
    pub fn set_sndbuf(&mut self, bytes: u64) {
        self.sender.set_sndbuf(bytes);
    }

    /// From now on the local qdisc refuses every packet (`drop`), or takes them again.
    pub fn set_qdisc_drops(&mut self, drop: bool) {
        self.q.drop_all = drop;
    }

    /// The local qdisc refused a segment the driver sent for the stack (a pure ACK, FIN
    /// or RST) at `now`: `__tcp_transmit_skb` -> `tcp_enter_cwr`.
    pub fn refused_packet(&mut self, now: Time) {
        self.advance(now);
        let now = self.now;
        self.sender.on_refused_segment(now);
    }

    /// TCP_NODELAY (`nodelay`) or TCP_CORK set on or off at `now`.
    pub fn setsockopt(&mut self, now: Time, nodelay: bool, on: bool) {
        self.advance(now);
        let now = self.now;
        if nodelay {
            self.sender.set_nodelay(now, on, &mut self.q);
        } else {
            self.sender.set_cork(now, on, &mut self.q);
        }
        self.drain_nic();
    }

    /// An ACK from the peer arrives at `now`.
    pub fn receive(&mut self, now: Time, a: &PeerAck) {
        self.advance(now);
        let now = self.now;
        let mut pkt = Packet { ack: a.ack, rwnd: a.rwnd, ece: a.ece, payload: a.data, ..Default::default() };
        for (i, b) in a.sacks.iter().take(pkt.sacks.len()).enumerate() {
            pkt.sacks[i] = *b;
            pkt.n_sacks = i as u8 + 1;
        }
        // A first block below the cumulative ACK, or inside the second one, is a DSACK
        // (RFC 2883, `tcp_check_dsack`).
        if let Some(&(s, e)) = a.sacks.first() {
            pkt.dsack = s < a.ack || a.sacks.get(1).is_some_and(|&(s2, e2)| s >= s2 && e <= e2);
            let _ = e;
        }
        if self.aborted() {
            return;
        }
        self.sender.on_ack(now, &pkt, &mut self.q);
        self.drain_nic();
        self.on_ack_state(now);
    }

    /// An ICMP "fragmentation needed" with next-hop `mtu`, quoting the segment at stream
    /// offset `quoted`, arrives at `now`.
    pub fn icmp_frag_needed(&mut self, now: Time, mtu: u32, quoted: u64) {
        self.advance(now);
        if self.aborted() {
            return;
        }
        let now = self.now;
        self.sender.icmp_frag_needed(now, mtu, quoted, &mut self.q);
        self.drain_nic();
    }

    /// The route to the peer changed at `now` (`ip route change ... mtu [lock] N`).
    pub fn route_changed(&mut self, now: Time, mtu: u32, locked: bool) {
        self.advance(now);
        self.sender.route_changed(mtu, locked);
    }

    /// The skbs sent since the last call, in order.
    pub fn take_sent(&mut self) -> Vec<TxRecord> {
        std::mem::take(self.sender.tx_log.get_or_insert_with(Vec::new))
    }

    /// Bytes the send buffer has taken from the application's writes.
    pub fn written(&self) -> u64 {
        self.sender.written_bytes()
    }

    /// `TCP_INFO` as `tcp_get_info` (net/ipv4/tcp.c) fills the fields the model has.
    pub fn tcp_info(&self) -> BTreeMap<&'static str, i64> {
        let s = &self.sender;
        let mut m = BTreeMap::new();
        let ca = match s.ca_state {
            CaState::Open => 0,
            CaState::Disorder => 1,
            CaState::Cwr => 2,
            CaState::Recovery => 3,
            CaState::Loss => 4,
        };
        m.insert("tcpi_ca_state", ca);
        m.insert("tcpi_state", self.state().tcpi_state() as i64);
        m.insert("tcpi_snd_cwnd", s.w.cwnd as i64);
        // `tcp_in_initial_slowstart` reports TCP_INFINITE_SSTHRESH.
        m.insert("tcpi_snd_ssthresh", s.w.ssthresh.min(INFINITE_SSTHRESH) as i64);
        m.insert("tcpi_retransmits", s.rto_retransmits() as i64);
        m.insert("tcpi_backoff", s.rtt.backoff as i64);
        m.insert("tcpi_probes", s.probes_out() as i64);
        m.insert("tcpi_unacked", s.sb.packets_out() as i64);
        m.insert("tcpi_sacked", s.sb.sacked_out as i64);
        m.insert("tcpi_lost", s.sb.lost_out as i64);
        m.insert("tcpi_retrans", s.sb.retrans_out as i64);
        m.insert("tcpi_total_retrans", s.stats.retransmits as i64);
        m.insert("tcpi_snd_mss", s.mss() as i64);
        m.insert("tcpi_pmtu", s.pmtu_cookie() as i64);
        m.insert("tcpi_rtt", s.rtt.srtt_us() as i64);
        m.insert("tcpi_rttvar", s.rtt.mdev_us() as i64);
        let min_rtt = s.rtt.min_rtt_us();
        m.insert("tcpi_min_rtt", if min_rtt == u64::MAX { u32::MAX as i64 } else { min_rtt as i64 });
        m.insert("tcpi_rto", s.rtt.rto.us() as i64);
        m.insert("tcpi_data_segs_out", s.stats.data_segs_out as i64);
        m.insert("tcpi_segs_out", s.stats.data_segs_out as i64);
        m.insert("tcpi_delivered", s.delivered as i64 + 1);
        m.insert("tcpi_delivered_ce", s.delivered_ce as i64);
        m.insert("tcpi_bytes_sent", s.stats.bytes_sent as i64);
        // `tcp_snd_una_update` counts our FIN's sequence number once it is acknowledged.
        m.insert("tcpi_bytes_acked", (s.seg_start(s.sb.snd_una) + s.fin_acked() as u64) as i64);
        m.insert("tcpi_notsent_bytes", (s.written_bytes() - s.seg_start(s.snd_nxt())) as i64);
        m.insert("tcpi_snd_wnd", s.snd_wnd() as i64);
        m.insert("tcpi_pacing_rate", s.w.pacing_rate.min(u64::MAX >> 1) as i64);
        m.insert("tcpi_reordering", s.reordering().degree() as i64);
        m.insert("tcpi_reord_seen", s.reordering().seen() as i64);
        let (busy, rwnd_limited, sndbuf_limited) = s.chronos.info_us(self.now);
        m.insert("tcpi_busy_time", busy as i64);
        m.insert("tcpi_rwnd_limited", rwnd_limited as i64);
        m.insert("tcpi_sndbuf_limited", sndbuf_limited as i64);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(ack: u64, sacks: &[SackBlock]) -> PeerAck {
        PeerAck { ack, rwnd: 1 << 20, sacks: sacks.to_vec(), ..Default::default() }
    }

    #[test]
    fn initial_window_leaves_as_min_tso_segs_skbs_and_acks_grow_cwnd() {
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.write(Time(200_000_000), 20_000, false);
        let sent = h.take_sent();
        // The pacing rate set at the end of the handshake (10 segments per 100 ms at
        // 200%) makes `tcp_tso_autosize` fall back to `tcp_min_tso_segs` = 2.
        assert_eq!(sent.len(), 5, "{sent:?}");
        assert_eq!((sent[0].seq, sent[0].segs, sent[0].bytes), (0, 2, 2_000));
        assert_eq!((sent[4].seq, sent[4].segs), (8, 2));
        assert_eq!(sent[0].time, Time(200_000_000));
        assert!(sent.iter().all(|r| r.psh), "every skb of two segments carries PSH");
        h.receive(Time(300_000_000), &ack(2, &[]));
        assert_eq!(h.tcp_info()["tcpi_snd_cwnd"], 12);
        let sent = h.take_sent();
        assert_eq!(sent.iter().map(|r| r.segs).sum::<u32>(), 4, "{sent:?}");
        assert_eq!(sent[0].seq, 10);
    }

    /// A Fast Open SYN's data sent again after the SYN-ACK is a short segment that holds
    /// no later one: the next write's short tail goes with its full segments at once.
    #[test]
    fn resent_syn_data_does_not_hold_the_next_short_segment() {
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.resend_syn_data(Time(200_000_000), 960);
        h.write(Time(200_000_000), 2_040, false);
        let sent = h.take_sent();
        assert_eq!(sent.iter().map(|r| r.bytes).sum::<u64>(), 3_000, "{sent:?}");
        assert!(sent.iter().all(|r| r.time == Time(200_000_000)), "{sent:?}");
        // The same data written by the application holds the 40-byte tail (Minshall).
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.write(Time(200_000_000), 960, false);
        h.write(Time(200_000_000), 2_040, false);
        assert!(h.take_sent().iter().map(|r| r.bytes).sum::<u64>() < 3_000);
    }

    /// PSH as `__tcp_transmit_skb` and `tcp_push` set it: on every skb of more than one
    /// segment, and on the last segment written; a lone segment inside the data has none.
    #[test]
    fn psh_marks_multi_segment_skbs_and_the_end_of_the_written_data() {
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.write(Time(200_000_000), 3_000, false);
        let sent = h.take_sent();
        assert_eq!(sent.iter().map(|r| (r.segs, r.psh)).collect::<Vec<_>>(), vec![(2, true), (1, true)]);
        // A shut window lets one segment out at a time, from the middle of a write.
        h.receive(Time(300_000_000), &ack(3, &[]));
        h.write(Time(300_000_000), 5_000, false);
        h.take_sent();
        h.receive(Time(400_000_000), &PeerAck { ack: 8, rwnd: 1_000, ..Default::default() });
        h.write(Time(400_000_000), 3_000, false);
        let sent = h.take_sent();
        assert_eq!(sent.iter().map(|r| (r.seq, r.segs, r.psh)).collect::<Vec<_>>(), vec![(8, 1, false)]);
    }

    #[test]
    fn three_sacked_segments_start_fast_recovery_with_one_retransmission() {
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.write(Time(200_000_000), 10_000, false);
        h.take_sent();
        h.receive(Time(310_000_000), &ack(0, &[(1, 2)]));
        h.receive(Time(320_000_000), &ack(0, &[(1, 3)]));
        h.receive(Time(330_000_000), &ack(0, &[(1, 4)]));
        let sent = h.take_sent();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert!(sent[0].retrans && sent[0].seq == 0 && sent[0].segs == 1);
        let info = h.tcp_info();
        assert_eq!(info["tcpi_ca_state"], 3);
        assert_eq!(info["tcpi_snd_cwnd"], 7);
        assert_eq!(info["tcpi_snd_ssthresh"], 7);
    }

    /// A peer without SACK (RFC 6582 NewReno as `tcp_add_reno_sack`,
    /// `tcp_newreno_mark_lost` and `tcp_try_undo_recovery` do it): each duplicate ACK
    /// lets one new segment out (limited transmit, RFC 3042), the third retransmits the
    /// head, a partial ACK retransmits the next hole at once, and Recovery holds until
    /// data above `high_seq` is acknowledged.
    #[test]
    fn without_sack_duplicate_acks_drive_newreno_recovery() {
        let mut p = ScriptedParams { snd_wnd: 1 << 20, ..Default::default() };
        p.tcp.sack = false;
        let mut h = ScriptedSender::new(&p).unwrap();
        h.write(Time(200_000_000), 15_000, false);
        assert_eq!(h.take_sent().iter().map(|r| r.segs).sum::<u32>(), 10);
        h.receive(Time(310_000_000), &ack(0, &[]));
        h.receive(Time(320_000_000), &ack(0, &[]));
        let sent = h.take_sent();
        assert_eq!(sent.iter().map(|r| (r.seq, r.retrans)).collect::<Vec<_>>(), vec![(10, false), (11, false)]);
        assert_eq!((h.tcp_info()["tcpi_ca_state"], h.tcp_info()["tcpi_sacked"]), (1, 2));
        h.receive(Time(330_000_000), &ack(0, &[]));
        let sent = h.take_sent();
        assert_eq!(sent.iter().map(|r| (r.seq, r.segs, r.retrans)).collect::<Vec<_>>(), vec![(0, 1, true)]);
        let info = h.tcp_info();
        assert_eq!((info["tcpi_ca_state"], info["tcpi_snd_ssthresh"], info["tcpi_sacked"]), (3, 7, 3));
        // A partial ACK: segment 6 is the next hole, resent first.
        h.receive(Time(400_000_000), &ack(6, &[]));
        let sent = h.take_sent();
        assert!(sent[0].retrans && sent[0].seq == 6, "{sent:?}");
        assert_eq!((h.tcp_info()["tcpi_ca_state"], h.tcp_info()["tcpi_sacked"]), (3, 0));
        // Everything up to high_seq (12): still Recovery; above it: Open at ssthresh.
        h.receive(Time(410_000_000), &ack(12, &[]));
        assert_eq!(h.tcp_info()["tcpi_ca_state"], 3);
        h.receive(Time(420_000_000), &ack(13, &[]));
        let info = h.tcp_info();
        assert_eq!((info["tcpi_ca_state"], info["tcpi_snd_cwnd"]), (0, 7));
    }

    #[test]
    fn without_sack_more_duplicate_acks_than_holes_mean_reordering() {
        // `tcp_limit_reno_sacked`: 4 segments out, 4 duplicate ACKs: one must be a hole,
        // so at most 3 count, and the reordering degree becomes the window.
        let mut p = ScriptedParams { snd_wnd: 1 << 20, ..Default::default() };
        p.tcp.sack = false;
        let mut h = ScriptedSender::new(&p).unwrap();
        h.write(Time(200_000_000), 4_000, false);
        for k in 0..4 {
            h.receive(Time(310_000_000 + k * 1_000_000), &ack(0, &[]));
        }
        let info = h.tcp_info();
        assert_eq!((info["tcpi_sacked"], info["tcpi_reordering"], info["tcpi_reord_seen"]), (3, 4, 1));
    }

    /// `tcp_may_raise_cwnd`: once reordering beyond the initial degree has been seen, a
    /// SACK of new data grows cwnd too (in order only, before).
    #[test]
    fn after_reordering_is_seen_sacked_delivery_grows_cwnd() {
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.write(Time(200_000_000), 10_000, false);
        h.receive(Time(300_000_000), &ack(0, &[(9, 10)]));
        assert_eq!(h.tcp_info()["tcpi_snd_cwnd"], 10, "reordering 3: a SACK alone grows nothing");
        // Segment 3 SACKed below the highest SACK, never retransmitted: the path
        // reorders by 7 segments (`tcp_check_sack_reordering`), and this SACK counts.
        h.receive(Time(300_000_000), &ack(0, &[(3, 4), (9, 10)]));
        let info = h.tcp_info();
        assert_eq!((info["tcpi_reordering"], info["tcpi_snd_cwnd"]), (7, 11));
    }

    /// An ACK that comes with data is never a duplicate ACK (`FLAG_DATA`).
    #[test]
    fn an_ack_carrying_data_is_not_a_duplicate() {
        let mut p = ScriptedParams { snd_wnd: 1 << 20, ..Default::default() };
        p.tcp.sack = false;
        let mut h = ScriptedSender::new(&p).unwrap();
        h.write(Time(200_000_000), 4_000, false);
        for k in 0..3 {
            h.receive(
                Time(310_000_000 + k * 1_000_000),
                &PeerAck { ack: 0, rwnd: 1 << 20, data: 100, ..Default::default() },
            );
        }
        assert_eq!((h.tcp_info()["tcpi_sacked"], h.sender.stats.dupacks), (0, 0));
    }

    /// A local qdisc that refuses every packet (`NET_XMIT_DROP`): nothing counts as sent,
    /// a CWR reduction starts (`__tcp_transmit_skb` -> `tcp_enter_cwr`), and an RTO whose
    /// retransmission is refused tries again 500 ms later without backing off
    /// (`TCP_RESOURCE_PROBE_INTERVAL`).
    #[test]
    fn a_qdisc_that_refuses_everything_leaves_data_unsent_and_enters_cwr() {
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.write(Time(200_000_000), 2_000, false);
        h.take_sent();
        h.set_qdisc_drops(true);
        h.write(Time(210_000_000), 3_000, false);
        let info = h.tcp_info();
        assert_eq!((info["tcpi_ca_state"], info["tcpi_notsent_bytes"], info["tcpi_unacked"]), (2, 3_000, 2));
        // The tail loss probe and the RTO are refused too; the RTO keeps its value.
        h.advance(Time(2_000_000_000));
        let info = h.tcp_info();
        assert!(h.take_sent().is_empty());
        assert_eq!((info["tcpi_total_retrans"], info["tcpi_backoff"]), (0, 0));
        assert!(info["tcpi_retransmits"] >= 2, "{info:?}");
        h.set_qdisc_drops(false);
        h.advance(Time(3_000_000_000));
        let sent = h.take_sent();
        assert!(sent[0].retrans && sent[0].seq == 0, "{sent:?}");
    }

    #[test]
    fn a_tail_probe_is_followed_by_an_rto_retransmission_one_rto_later() {
        // One segment, SRTT 100 ms: the probe after min(2 SRTT + RTO_min, RTO) = 300 ms,
        // then the RTO 300 ms after it resends the head (the probe set no R bit); each
        // timer of 300 jiffies fires at the next 8-jiffy boundary of the timer wheel.
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.write(Time(200_000_000), 1000, false);
        h.take_sent();
        h.advance(Time(1_000_000_000));
        let sent = h.take_sent();
        let times: Vec<u64> = sent.iter().map(|r| r.time.0 / 1_000_000).collect();
        assert_eq!(times, vec![504, 808], "{sent:?}");
        assert!(sent.iter().all(|r| r.retrans && r.seq == 0));
        assert_eq!(h.tcp_info()["tcpi_ca_state"], 4);
    }

    /// `tcp_sendmsg_locked` runs `tcp_rate_check_app_limited` before it queues the write,
    /// so a connection's first flight is app-limited and its first transmission is a
    /// TX_START that sets BBR's `idle_restart`. A flow that starts writing more than
    /// `bbr_min_rtt_win_sec` after its handshake takes its first ACK's longer RTT as the
    /// new min RTT without entering PROBE_RTT (whose cwnd of 4 would cost it the start).
    #[test]
    fn a_first_write_is_app_limited_and_a_late_starting_bbr_skips_probe_rtt() {
        for cca in ["bbr", "bbr3"] {
            let p = ScriptedParams { cca: cca.into(), snd_wnd: 1 << 20, ..Default::default() };
            let mut h = ScriptedSender::new(&p).unwrap();
            h.write(Time(11_000_000_000), 30_000, false);
            let sent: u32 = h.take_sent().iter().map(|r| r.segs).sum();
            assert_eq!(sent, 10, "{cca}");
            assert!((0..10).all(|s| h.sender.sb.get(s).tx.app_limited), "{cca}: the first flight is app-limited");
            h.receive(Time(11_300_000_000), &ack(2, &[]));
            assert_eq!(h.tcp_info()["tcpi_snd_cwnd"], 12, "{cca}: STARTUP grows cwnd, no PROBE_RTT");
        }
    }

    /// `tcp_tso_should_defer` holds back a small skb only for an ACK due within
    /// min(srtt/2, 1 ms) ("tcp: fix tcp_tso_should_defer() vs large RTT"). A 5000-byte
    /// peer window leaves one segment of room behind a two-segment skb, as in
    /// tests/conformance/scripts/tso-defer-ack-due.pkt, which Linux 6.18 passes.
    #[test]
    fn tso_deferral_waits_only_for_an_ack_due_within_a_millisecond() {
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 5000, ..Default::default() }).unwrap();
        let skbs = |h: &mut ScriptedSender| h.take_sent().iter().map(|r| (r.seq, r.segs)).collect::<Vec<_>>();
        let peer = |ack| PeerAck { ack, rwnd: 5000, ..Default::default() };
        h.write(Time(200_000_000), 30_000, false);
        assert_eq!(skbs(&mut h), [(0, 2), (2, 2), (4, 1)]);
        // The oldest unacknowledged segment (3) left one srtt ago: its ACK is due now.
        h.receive(Time(300_000_000), &peer(3));
        assert_eq!(skbs(&mut h), [(5, 2)]);
        // The oldest (5) left 60 ms ago, its ACK due in about 47 ms: the room is used at
        // once (the rule before the fix, age > srtt/2, would wait).
        h.receive(Time(360_000_000), &peer(5));
        assert_eq!(skbs(&mut h), [(7, 2), (9, 1)]);
    }

    #[test]
    fn a_write_after_an_idle_rto_restarts_from_the_initial_window() {
        let mut p = ScriptedParams { snd_wnd: 1 << 20, ..Default::default() };
        p.tcp.slow_start_after_idle = true;
        let mut h = ScriptedSender::new(&p).unwrap();
        h.write(Time(200_000_000), 10_000, false);
        h.receive(Time(300_000_000), &ack(10, &[]));
        assert_eq!(h.tcp_info()["tcpi_snd_cwnd"], 20);
        // Two seconds idle with an RTO of 300 ms: halved once, then floored at IW 10.
        h.write(Time(2_300_000_000), 10_000, false);
        assert_eq!(h.tcp_info()["tcpi_snd_cwnd"], 10);
    }

    #[test]
    fn unacknowledged_data_is_retransmitted_when_the_rto_fires() {
        let mut h = ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, ..Default::default() }).unwrap();
        h.write(Time(200_000_000), 1000, false);
        h.take_sent();
        h.advance(Time(2_000_000_000));
        let sent = h.take_sent();
        assert!(!sent.is_empty() && sent.iter().all(|r| r.retrans && r.seq == 0), "{sent:?}");
        assert!(sent[0].time > Time(400_000_000));
    }
}
