//! The TCP sender: one connection's state, made of parts that each own theirs (the write
//! queue, RACK, the loss probe, undo, PRR, pacing, TCP Small Queues, the retransmit
//! timer, in `tcp/`), and the kernel's functions that work across them, one file per
//! concern. Each file below calls only those above it in this list:
//!
//! - `conn.rs`: what every other file reads or changes of the connection (the view
//!   congestion control gets, the CA state, marking a segment lost);
//! - `timer.rs`: arming the retransmit timer (`tcp_rearm_rto`, `tcp_schedule_loss_probe`);
//! - `reduction.rs`: cwnd reductions (`tcp_enter_cwr`, PRR, `tcp_end_cwnd_reduction`)
//!   and the restart after idle;
//! - `mtu.rs`: the MSS the path allows (`tcp_sync_mss`, black-hole detection, an MTU
//!   probe's success) and cutting a lost skb to it;
//! - `output.rs`: `tcp_write_xmit` with the MTU probe, retransmissions and
//!   `__tcp_transmit_skb`;
//! - `probe0.rs`: pushing what was written, and the zero-window probe;
//! - `reno.rs`: recovery without SACK (NewReno);
//! - `undo.rs`: the undo paths and the Loss state's ACK (`tcp_try_undo_*`,
//!   `tcp_process_loss`);
//! - `recovery.rs`: `tcp_fastretrans_alert`, RACK's marking, `tcp_xmit_recovery`,
//!   `tcp_simple_retransmit`;
//! - `timeouts.rs`: what the retransmit timer does when it fires (RTO, loss probe, RACK's
//!   reordering timeout, zero-window probe) and the other timers;
//! - `sacktag.rs`: SACK and DSACK tagging (`tcp_sacktag_write_queue`);
//! - `ack.rs`: `tcp_ack`, step by step;
//! - `socket.rs`: what the application does (writes, TCP_NODELAY, TCP_CORK);
//! - `fin.rs`: our FIN (`tcp_send_fin`) and its retransmission;
//! - `connect.rs`: the world's entry points, which open a connection in time first
//!   (`tcp_connect`, `tcp_rcv_synsent_state_process`), and take an ICMP
//!   (`tcp_v4_err`).
//!
//! This file holds the connection's state and the reads the world makes of it.

mod ack;
mod conn;
mod connect;
mod fin;
mod mtu;
mod output;
mod probe0;
mod recovery;
mod reduction;
mod reno;
mod sacktag;
mod socket;

pub use socket::WriteFlags;
mod timeouts;
mod timer;
mod undo;
#[cfg(test)]
mod undo_tests;

use super::chrono::Chronos;
use super::config::{Connect, FlowConfig, TcpConfig};
use super::cwnd_use::CwndUse;
use super::handshake::{Accepting, Connecting, FastOpenCache, INIT_CWND_AT_SYN};
use super::mtu::PathMtu;
use super::pacing::Pacing;
use super::prr::Prr;
use super::rack::{Rack, Reordering};
use super::rate::{Pick, RateState};
use super::rtt::RttEstimator;
use super::sack::SackState;
use super::scoreboard::Scoreboard;
use super::sndbuf::SendBuffer;
use super::tlp::Tlp;
use super::tsopt::Timestamps;
use super::tsq::Tsq;
use super::undo::Undo;
use super::write::WriteQueue;
use super::xmit_timer::RetransmitTimer;
use crate::base::histogram::Histogram;
use crate::cc::{CaState, CongestionControl, Window};
use crate::time::{Dur, Time};

// `tcp_ack` flags (tcp_input.c), the subset the model uses.
/// The ACK came with data (a scripted peer's; simulated receivers send none).
const FLAG_DATA: u32 = 0x01;
const FLAG_WIN_UPDATE: u32 = 0x02;
const FLAG_DATA_ACKED: u32 = 0x04;
const FLAG_RETRANS_DATA_ACKED: u32 = 0x08;
const FLAG_DATA_SACKED: u32 = 0x20;
const FLAG_ECE: u32 = 0x40;
const FLAG_LOST_RETRANS: u32 = 0x80;
const FLAG_ORIG_SACK_ACKED: u32 = 0x200;
const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
const FLAG_DSACKING_ACK: u32 = 0x800;
const FLAG_SET_XMIT_TIMER: u32 = 0x1000;
const FLAG_ACK_MAYBE_DELAYED: u32 = 0x10000;
const FLAG_DSACK_TLP: u32 = 0x20000;
const FLAG_NOT_DUP: u32 = FLAG_DATA | FLAG_DATA_ACKED | FLAG_WIN_UPDATE;
const FLAG_CA_ALERT: u32 = FLAG_DATA_SACKED | FLAG_ECE | FLAG_DSACKING_ACK;

/// What `tcp_fastretrans_alert` asks the ACK path to send (`REXMIT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rexmit {
    None,
    /// Lost segments (`REXMIT_LOST`).
    Lost,
    /// New data, F-RTO's probe of a spurious timeout (`REXMIT_NEW`).
    New,
}

/// Everything a sender needs to know about its flow and host.
#[derive(Clone, Debug)]
pub struct SenderParams {
    pub id: u32,
    /// The stack's settings (sysctls, route metrics, constants).
    pub tcp: TcpConfig,
    /// The flow as the scenario gives it: `pacing` (None: as the algorithm asks,
    /// `sk_pacing_status`), `size_bytes` (None: bulk), `ecn`, and the study's knobs
    /// (pacing stride; cwnd, pacing rate or the model held whatever the algorithm says).
    pub flow: FlowConfig,
    /// RTT measured by the handshake, which seeds SRTT, min RTT and RTO.
    pub handshake_rtt: Dur,
    /// Which of the flow's connections this is (stamped on every packet).
    pub conn: u16,
    /// The device takes skbs of many segments (TSO/GSO); without, each skb is one
    /// segment (`ethtool -K dev tso off gso off`).
    pub gso: bool,
}

#[derive(Default, Debug, Clone)]
pub struct SenderStats {
    pub data_segs_out: u64,
    pub retransmits: u64,
    pub rto_count: u64,
    pub tlp_count: u64,
    pub dsacks: u64,
    pub bytes_sent: u64,
    /// skbs handed to the NIC (TSO bursts), retransmissions included.
    pub skbs_sent: u64,
    /// Duplicate ACKs: no new data acknowledged, no window change, data outstanding.
    pub dupacks: u64,
    /// Newest-packet RTT of every ACK that carried one, ns.
    pub rtt_ns: Histogram,
    /// Undone reductions, as Linux's MIB counters `TCPFullUndo`, `TCPPartialUndo`,
    /// `TCPDSACKUndo`, `TCPLossUndo`, and the RTOs F-RTO found spurious (`TCPSpuriousRTOs`).
    pub full_undo: u64,
    pub partial_undo: u64,
    pub dsack_undo: u64,
    pub loss_undo: u64,
    pub spurious_rtos: u64,
}

impl SenderStats {
    /// Every undone reduction (the four undo counters).
    pub fn undos(&self) -> u64 {
        self.full_undo + self.partial_undo + self.dsack_undo + self.loss_undo
    }
}

/// Per-ACK bookkeeping while tagging and cleaning the queue (`tcp_sacktag_state`).
#[derive(Default)]
struct AckScan {
    pick: Pick,
    first_ackt: Option<Time>,
    last_ackt: Option<Time>,
    first_sackt: Option<Time>,
    last_sackt: Option<Time>,
    pkts_acked: u32,
    runt_acked: bool,
    /// The lowest never-retransmitted segment newly SACKed in a hole (`state->reord`).
    reord: u64,
}

/// One connection's sender (`struct tcp_sock`, its sending half).
pub struct Sender {
    pub p: SenderParams,
    pub cc: Box<dyn CongestionControl>,
    pub w: Window,
    pub sb: Scoreboard,
    /// `tp->delivered`, `delivered_ce`, `lost`: segments delivered (CE-marked) and lost.
    pub delivered: u64,
    pub delivered_ce: u64,
    pub lost: u64,
    pub rate: RateState,
    pub rtt: RttEstimator,
    pub ca_state: CaState,
    pub stats: SenderStats,
    /// Busy and window-limited time (`tcp_chrono_*`).
    pub chronos: Chronos,
    /// When set, every skb handed to the NIC is recorded here (a scripted endpoint reads
    /// them as one packet each, as a GSO-capable device sees them).
    pub tx_log: Option<Vec<TxRecord>>,
    /// The application has written (the flow started).
    started: bool,
    /// A connection the sender opens in time, until its SYN-ACK arrives (`SYN_SENT`).
    connecting: Option<Connecting>,
    /// A connection the receiver opens, until it is established and measured
    /// (`TCP_LISTEN`, `TCP_SYN_RECV`).
    accepting: Option<Accepting>,
    /// What the client knows of the server for Fast Open; the world carries it from one
    /// connection of a flow to the next.
    pub fastopen: FastOpenCache,
    /// What the application has written, and its Nagle setting.
    write: WriteQueue,
    /// Bytes of the application's current write not yet copied (`u64::MAX`: a bulk
    /// writer's, without end).
    app_pending: u64,
    /// That write was sent with MSG_EOR.
    app_eor: bool,
    /// `pushed_seq`: the end (bytes) of what the last push covered (`tcp_mark_push`).
    pushed_seq: u64,
    /// The send buffer: its size, autotuning, and the writer waiting for room.
    sndbuf: SendBuffer,
    /// Peer's advertised window in bytes (`snd_wnd`).
    snd_wnd: u64,
    /// `high_seq`: `snd_nxt` when the current reduction or Loss episode began.
    high_seq: u64,
    /// Time of the last data transmission (`lsndtime`).
    last_send: Time,
    /// Send CWR on the next new data segment (`TCP_ECN_QUEUE_CWR`).
    ecn_queue_cwr: bool,
    /// RTOs since the last forward progress (`icsk_retransmits`).
    rto_retransmits: u32,
    /// Zero-window probes since the last ACK (`icsk_probes_out`).
    probes_out: u32,
    /// The timestamp option: the peer's latest TSval and the echo of the ACK at hand.
    ts: Timestamps,
    /// The highest SACK and the previous ACK's blocks.
    sack: SackState,
    /// RACK's most recently sent delivered segment.
    rack: Rack,
    /// How far the path has been seen to reorder.
    reordering: Reordering,
    /// The tail loss probe's episode.
    tlp: Tlp,
    /// What an undo of the current reduction restores.
    undo: Undo,
    /// Proportional Rate Reduction's counts for the current reduction.
    prr: Prr,
    /// Whether the last window used the cwnd (`tcp_cwnd_validate`).
    cwnd_use: CwndUse,
    /// The EDT clock and the pacing timer.
    pacing: Pacing,
    /// TCP Small Queues: this socket's skbs below it, and the TX-completion wake-up.
    tsq: Tsq,
    /// The retransmit timer: RTO, loss probe, RACK's reordering timeout, zero-window probe.
    xmit: RetransmitTimer,
    /// The path MTU as the connection knows it, and MTU probing's search.
    pmtu: PathMtu,
}

/// One skb as it leaves TCP (`__tcp_transmit_skb`); a zero-window probe has no segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxRecord {
    pub time: Time,
    /// First segment number, its stream offset, and how many segments the skb holds.
    pub seq: u64,
    pub start: u64,
    pub segs: u32,
    pub bytes: u64,
    pub retrans: bool,
    pub ect: bool,
    pub cwr: bool,
    /// PSH on the skb's last segment.
    pub psh: bool,
    /// FIN on the skb's last segment.
    pub fin: bool,
}

impl Sender {
    pub fn new(p: SenderParams, cc: Box<dyn CongestionControl>) -> Sender {
        let rtt = RttEstimator::new(p.tcp.hz, Dur(p.tcp.rto_min_ns), Dur(p.tcp.rto_init_ns));
        let paced = p.flow.pacing.unwrap_or_else(|| cc.needs_pacing());
        let mut s = Sender {
            cc,
            w: Window::new(p.tcp.init_cwnd),
            sb: Scoreboard::default(),
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            rate: RateState::default(),
            rtt,
            ca_state: CaState::Open,
            stats: SenderStats::default(),
            chronos: Chronos::new(p.tcp.hz),
            tx_log: None,
            started: false,
            connecting: None,
            accepting: (p.flow.connect == Connect::Receiver).then(Accepting::default),
            fastopen: FastOpenCache::default(),
            write: WriteQueue::new(p.tcp.mss, p.flow.size_bytes.is_some_and(|b| b > 0)),
            app_pending: 0,
            app_eor: false,
            pushed_seq: 0,
            sndbuf: SendBuffer::new(p.tcp.wmem),
            snd_wnd: super::rcvbuf::syn_ack_window(&p.flow, &p.tcp).unwrap_or(65535),
            high_seq: 0,
            last_send: Time::ZERO,
            ecn_queue_cwr: false,
            rto_retransmits: 0,
            probes_out: 0,
            ts: Timestamps::default(),
            sack: SackState::default(),
            rack: Rack::default(),
            reordering: Reordering::default(),
            tlp: Tlp::default(),
            undo: Undo::default(),
            prr: Prr::default(),
            cwnd_use: CwndUse::default(),
            pacing: Pacing::new(paced, p.id),
            tsq: Tsq::new(p.id),
            xmit: RetransmitTimer::new(p.tcp.hz, p.id),
            pmtu: PathMtu::of_host(&p.tcp),
            // Last: the fields above are read from it.
            p,
        };
        if s.p.flow.connect == Connect::Ahead {
            s.establish(Time::ZERO, Some(s.p.handshake_rtt), 0);
        }
        s
    }

    /// The handshake's RTT sample (`tcp_ack_update_rtt` of the SYN-ACK at the client,
    /// `tcp_synack_rtt_meas` at the server).
    fn handshake_rtt_sample(&mut self, now: Time, rtt: Dur) {
        let us = rtt.us().max(1);
        self.rtt.update_min(now.jiffies(self.p.tcp.hz), us, false);
        self.rtt.sample(us, 0, 0);
    }

    /// The connection is established at `now` (`tcp_init_transfer`): the handshake's
    /// RTT sample, if any, seeds SRTT, min RTT and the RTO; after SYN retransmissions, ssthresh is
    /// what the algorithm said at the first timeout (`tcp_enter_loss`, with cwnd at
    /// `TCP_INIT_CWND`) and, after more than one, cwnd starts at 1 (RFC 6298 5.7). Then
    /// the algorithm starts, and the send buffer is sized.
    fn establish(&mut self, now: Time, rtt: Option<Dur>, syn_retransmits: u32) {
        if let Some(rtt) = rtt {
            self.handshake_rtt_sample(now, rtt);
        }
        if syn_retransmits > 0 {
            let info = self.info(now);
            let at_syn = Window { cwnd: INIT_CWND_AT_SYN, ..self.w.clone() };
            self.w.ssthresh = self.cc.ssthresh(&info, &at_syn);
        }
        if syn_retransmits > 1 {
            self.w.cwnd = 1;
        }
        let info = self.info(now);
        self.cc.init(&info, &mut self.w);
        self.pmtu.mtup_init(&self.p.tcp, now.jiffies(self.p.tcp.hz));
        // SO_SNDBUF before connect(), then `tcp_init_buffer_space`, as the connection is
        // established.
        if let Some(bytes) = self.p.flow.sndbuf_bytes {
            self.sndbuf.set(2 * bytes);
        }
        self.sndbuf.note_window(self.snd_wnd);
        let factor = self.cc.sndbuf_expand(&info);
        self.sndbuf.init(self.w.cwnd, self.reordering.degree(), self.write.mss(), factor);
        if !self.cc.owns_cwnd() {
            self.update_pacing_rate();
        }
        self.hold_overrides();
    }

    /// Whether the internal pacing timer paces this connection.
    pub fn paced(&self) -> bool {
        self.pacing.enabled()
    }

    /// The peer's advertised window in bytes.
    pub fn snd_wnd(&self) -> u64 {
        self.snd_wnd
    }

    /// Set the peer's advertised window (bytes), as the handshake leaves it.
    pub fn set_snd_wnd(&mut self, bytes: u64) {
        self.snd_wnd = bytes;
        self.sndbuf.set_max_window(bytes);
    }

    pub fn all_acked(&self) -> bool {
        self.app_pending == 0 && self.sb.snd_una >= self.write.written_segs()
    }

    /// The bytes the application has written so far (the send buffer took).
    pub fn written_bytes(&self) -> u64 {
        self.write.written_bytes()
    }

    /// `sk_sndbuf`.
    pub fn sndbuf(&self) -> u64 {
        self.sndbuf.size()
    }

    /// The segments the application has written so far.
    pub fn written_segs(&self) -> u64 {
        self.write.written_segs()
    }

    /// The stream offset of segment `seq`'s first byte (`seq == written_segs()`: the end
    /// of what was written).
    pub fn seg_start(&self, seq: u64) -> u64 {
        self.write.seg_start(seq)
    }

    /// The last segment that starts at or before stream offset `byte` (the end of what
    /// was written counting as segment `written_segs()`), and where it starts.
    pub fn seg_floor(&self, byte: u64) -> (u64, u64) {
        self.write.seg_floor(byte)
    }

    /// How far the path has been seen to reorder (`tcpi_reordering`, `tcpi_reord_seen`).
    pub fn reordering(&self) -> &Reordering {
        &self.reordering
    }

    /// RTO expirations since the last forward progress (`icsk_retransmits`).
    pub fn rto_retransmits(&self) -> u32 {
        self.rto_retransmits
    }

    /// Zero-window probes since the last ACK (`icsk_probes_out`, `tcpi_probes`).
    pub fn probes_out(&self) -> u32 {
        self.probes_out
    }
}
