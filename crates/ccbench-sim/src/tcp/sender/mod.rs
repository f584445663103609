//! The TCP sender: connection state and the ACK path in the order of Linux's `tcp_ack`
//! (net/ipv4/tcp_input.c). Loss recovery is in `recovery.rs`, the output path in `output.rs`.

mod output;
mod probe0;
mod recovery;
mod reno;
mod sacktag;
mod socket;
mod undo;
#[cfg(test)]
mod undo_tests;

use super::chrono::Chrono;
use super::config::{FlowConfig, TcpConfig};
use super::cwnd_use::CwndUse;
use super::io::Io;
use super::pacing::Pacing;
use super::prr::Prr;
use super::rack::{Rack, Reordering};
use super::rate::{Pick, RateState, TxSnapshot};
use super::rtt::RttEstimator;
use super::sack::SackState;
use super::scoreboard::{Scoreboard, EVER_RETRANS, RETRANS, SACKED};
use super::tlp::Tlp;
use super::tsopt::{ts_ms, Timestamps};
use super::tsq::Tsq;
use super::undo::Undo;
use super::wake::{SenderTimer, Wake};
use super::write::WriteQueue;
use super::xmit_timer::{RetransmitTimer, XmitTimer};
use crate::base::histogram::Histogram;
use crate::cc::{AckSample, CaState, CongestionControl, ConnInfo, LostSegment, RateSample, Window};
use crate::event::Schedule;
use crate::net::Ecn;
use crate::net::Packet;
use crate::time::{Dur, Time};
use recovery::Rexmit;

// `tcp_ack` flags (tcp_input.c), the subset the model uses.
/// The ACK came with data (a scripted peer's; simulated receivers send none).
pub(super) const FLAG_DATA: u32 = 0x01;
pub(super) const FLAG_DATA_ACKED: u32 = 0x04;
pub(super) const FLAG_WIN_UPDATE: u32 = 0x02;
pub(super) const FLAG_RETRANS_DATA_ACKED: u32 = 0x08;
pub(super) const FLAG_DATA_SACKED: u32 = 0x20;
pub(super) const FLAG_ECE: u32 = 0x40;
pub(super) const FLAG_LOST_RETRANS: u32 = 0x80;
pub(super) const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
pub(super) const FLAG_DSACKING_ACK: u32 = 0x800;
pub(super) const FLAG_ORIG_SACK_ACKED: u32 = 0x200;
pub(super) const FLAG_DSACK_TLP: u32 = 0x20000;
pub(super) const FLAG_SET_XMIT_TIMER: u32 = 0x1000;
pub(super) const FLAG_ACK_MAYBE_DELAYED: u32 = 0x10000;
pub(super) const FLAG_NOT_DUP: u32 = FLAG_DATA | FLAG_DATA_ACKED | FLAG_WIN_UPDATE;
pub(super) const FLAG_CA_ALERT: u32 = FLAG_DATA_SACKED | FLAG_ECE | FLAG_DSACKING_ACK;

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

pub struct Sender {
    pub p: SenderParams,
    pub cc: Box<dyn CongestionControl>,
    pub w: Window,
    pub sb: Scoreboard,
    /// What the application has written, and its Nagle setting.
    write: WriteQueue,
    /// Peer's advertised window in bytes (`snd_wnd`).
    pub(super) snd_wnd: u64,
    pub delivered: u64,
    pub delivered_ce: u64,
    pub lost: u64,
    pub rate: RateState,
    pub rtt: RttEstimator,
    pub ca_state: CaState,
    pub(super) high_seq: u64,
    /// Proportional Rate Reduction's counts for the current reduction.
    prr: Prr,
    /// RACK's most recently sent delivered segment.
    rack: Rack,
    /// How far the path has been seen to reorder.
    reordering: Reordering,
    /// The highest SACK and the previous ACK's blocks.
    sack: SackState,
    /// The tail loss probe's episode.
    tlp: Tlp,
    /// Whether the last window used the cwnd (`tcp_cwnd_validate`).
    cwnd_use: CwndUse,
    /// Time of the last data transmission (`lsndtime`).
    pub(super) last_send: Time,
    /// The EDT clock and the pacing timer.
    pacing: Pacing,
    /// TCP Small Queues: this socket's skbs below it, and the TX-completion wake-up.
    tsq: Tsq,
    // Timers
    /// The retransmit timer: RTO, loss probe, RACK's reordering timeout, zero-window probe.
    xmit: RetransmitTimer,
    /// Send CWR on the next new data segment (`TCP_ECN_QUEUE_CWR`).
    pub(super) ecn_queue_cwr: bool,
    /// RTOs since the last forward progress (`icsk_retransmits`).
    pub(super) rto_retransmits: u32,
    /// Zero-window probes since the last ACK (`icsk_probes_out`).
    pub(super) probes_out: u32,
    pub stats: SenderStats,
    pub started: bool,
    /// The timestamp option: the peer's latest TSval and the echo of the ACK at hand.
    ts: Timestamps,
    /// What an undo of the current reduction restores.
    undo: Undo,
    /// Busy and window-limited time (`tcp_chrono_*`).
    pub chronos: super::chrono::Chronos,
    /// When set, every skb handed to the NIC is recorded here (a scripted endpoint reads
    /// them as one packet each, as a GSO-capable device sees them).
    pub tx_log: Option<Vec<TxRecord>>,
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
}

/// Per-ACK bookkeeping while tagging and cleaning the queue (`tcp_sacktag_state`).
#[derive(Default)]
pub(super) struct AckScan {
    pub(super) pick: Pick,
    pub(super) first_ackt: Option<Time>,
    pub(super) last_ackt: Option<Time>,
    pub(super) first_sackt: Option<Time>,
    pub(super) last_sackt: Option<Time>,
    pub(super) pkts_acked: u32,
    pub(super) runt_acked: bool,
    /// The lowest never-retransmitted segment newly SACKed in a hole (`state->reord`).
    pub(super) reord: u64,
}

impl Sender {
    pub fn new(p: SenderParams, cc: Box<dyn CongestionControl>) -> Sender {
        let mut rtt = RttEstimator::new(p.tcp.hz, Dur(p.tcp.rto_min_ns), Dur(p.tcp.rto_init_ns));
        let hs = p.handshake_rtt.us().max(1);
        rtt.update_min(0, hs, false);
        rtt.sample(hs, 0, 0);
        let paced = p.flow.pacing.unwrap_or_else(|| cc.needs_pacing());
        let mut s = Sender {
            cc,
            w: Window::new(p.tcp.init_cwnd),
            sb: Scoreboard::default(),
            write: WriteQueue::new(p.tcp.mss, p.flow.size_bytes),
            snd_wnd: 65535,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            rate: RateState::default(),
            rtt,
            ca_state: CaState::Open,
            high_seq: 0,
            prr: Prr::default(),
            rack: Rack::default(),
            reordering: Reordering::default(),
            sack: SackState::default(),
            tlp: Tlp::default(),
            cwnd_use: CwndUse::default(),
            last_send: Time::ZERO,
            pacing: Pacing::new(paced, p.id),
            tsq: Tsq::new(p.id),
            xmit: RetransmitTimer::new(p.tcp.hz, p.id),
            ecn_queue_cwr: false,
            rto_retransmits: 0,
            probes_out: 0,
            stats: SenderStats::default(),
            started: false,
            ts: Timestamps::default(),
            undo: Default::default(),
            chronos: super::chrono::Chronos::new(p.tcp.hz),
            tx_log: None,
            // Last: the fields above are read from it.
            p,
        };
        let info = s.info(Time::ZERO);
        s.cc.init(&info, &mut s.w);
        if !s.cc.owns_cwnd() {
            s.update_pacing_rate();
        }
        s.hold_overrides();
        s
    }

    /// Re-apply the fixed cwnd and pacing rate after anything may have changed them.
    pub(super) fn hold_overrides(&mut self) {
        if let Some(c) = self.p.flow.fixed_cwnd {
            self.w.cwnd = c;
        }
        if let Some(bps) = self.p.flow.fixed_pacing_rate_bps {
            // `sk_pacing_rate` is in payload bytes per second.
            self.w.pacing_rate = bps / 8;
        }
    }

    /// Whether the internal pacing timer paces this connection.
    pub fn paced(&self) -> bool {
        self.pacing.enabled()
    }

    /// `tcp_packets_in_flight`.
    pub fn inflight(&self) -> u32 {
        self.sb.in_flight()
    }

    /// The peer's advertised window in bytes.
    pub fn snd_wnd(&self) -> u64 {
        self.snd_wnd
    }

    pub fn snd_nxt(&self) -> u64 {
        self.sb.snd_nxt()
    }

    /// Data written and not yet sent (`!tcp_write_queue_empty`).
    pub(super) fn has_unsent(&self) -> bool {
        self.write.has_unsent(self.snd_nxt())
    }

    pub fn all_acked(&self) -> bool {
        self.sb.snd_una >= self.write.written_segs()
    }

    /// `tcp_is_cwnd_limited`.
    pub(super) fn cwnd_limited(&self) -> bool {
        self.cwnd_use.is_limited(self.w.in_slow_start(), self.w.cwnd)
    }

    /// The connection as congestion control sees it.
    pub fn info(&self, now: Time) -> ConnInfo {
        ConnInfo {
            now,
            jiffies: now.jiffies(self.p.tcp.hz),
            hz: self.p.tcp.hz,
            mss: self.p.tcp.mss,
            inflight: self.inflight(),
            packets_out: self.sb.packets_out(),
            delivered: self.delivered,
            lost: self.lost,
            srtt_us: self.rtt.srtt_us(),
            min_rtt_us: self.rtt.min_rtt_us(),
            is_cwnd_limited: self.cwnd_limited(),
            ca_state: self.ca_state,
            snd_una: self.sb.snd_una,
            snd_nxt: self.snd_nxt(),
            pacing_rate: self.w.pacing_rate,
            paced: self.pacing.enabled(),
            app_limited: self.rate.app_limited != 0,
            prior_cwnd: self.prr.prior_cwnd(),
            lsndtime: self.last_send,
            wstamp: self.pacing.wstamp(),
            delivered_ce: self.delivered_ce,
            ecn_low: self.p.flow.ecn == Ecn::Low,
            delivered_us: self.rate.delivered_us,
            tlp_orig_data_app_limited: self.tlp.orig_data_app_limited(),
        }
    }

    /// Set the peer's advertised window (bytes), as the handshake leaves it.
    pub fn set_snd_wnd(&mut self, bytes: u64) {
        self.snd_wnd = bytes;
    }

    /// How far the path has been seen to reorder (`tcpi_reordering`, `tcpi_reord_seen`).
    pub fn reordering(&self) -> &Reordering {
        &self.reordering
    }

    /// RTO expirations since the last forward progress (`icsk_retransmits`).
    pub fn rto_retransmits(&self) -> u32 {
        self.rto_retransmits
    }

    /// `tcp_slow_start_after_idle_check` (run as a write queues data, `tcp_skb_entail`,
    /// and as a window update finds data waiting, `tcp_ack_update_window`): after more
    /// than an RTO with nothing sent, `tcp_cwnd_restart`.
    pub(super) fn slow_start_after_idle_check(&mut self, now: Time) {
        if !self.p.tcp.slow_start_after_idle || self.sb.packets_out() > 0 || self.cc.owns_cwnd() {
            return;
        }
        let tick = crate::time::NS_PER_SEC / self.p.tcp.hz as u64;
        let delta = now.jiffies(self.p.tcp.hz) as i64 - self.last_send.jiffies(self.p.tcp.hz) as i64;
        let rto = (self.rtt.rto.ns() / tick) as i64;
        if delta > rto {
            self.cwnd_restart(now, delta, rto);
        }
    }

    /// `tcp_cwnd_restart`: halve cwnd per idle RTO, down to the initial window.
    fn cwnd_restart(&mut self, now: Time, mut delta: i64, rto: i64) {
        let info = self.info(now);
        self.cc.cwnd_event(&info, &mut self.w, crate::cc::CaEvent::CwndRestart);
        // tcp_current_ssthresh
        if !matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.w.ssthresh = self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2));
        }
        let restart = self.p.tcp.init_cwnd.min(self.w.cwnd);
        let mut cwnd = self.w.cwnd;
        loop {
            delta -= rto;
            if delta <= 0 || cwnd <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.w.cwnd = cwnd.max(restart);
        self.hold_overrides();
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

    /// `tcp_ack` for an ACK arriving at `now`.
    pub fn on_ack(&mut self, now: Time, ack: &Packet, q: &mut impl Io) {
        let prior_snd_una = self.sb.snd_una;
        if ack.conn != self.p.conn {
            return; // an ACK of a closed connection, still in flight
        }
        self.ts.on_ack(ack.ts_val, ack.ts_ecr);
        if ack.ack > self.snd_nxt() {
            return; // ACK of unsent data: ignored
        }
        if ack.ack < prior_snd_una {
            if ack.n_sacks > 0 {
                self.old_ack(now, ack, q);
            }
            return;
        }
        self.probes_out = 0;
        let prior_packets = self.sb.packets_out();
        let prior_in_flight = self.inflight();
        let prior_delivered = self.delivered;
        let prior_lost = self.lost;
        let prior_sacked = self.sb.sacked_out;
        let mut flag = if ack.payload > 0 { FLAG_DATA } else { 0 };
        if ack.ack > prior_snd_una {
            flag |= FLAG_SND_UNA_ADVANCED;
            self.rto_retransmits = 0;
        }
        if ack.rwnd != self.snd_wnd {
            flag |= FLAG_WIN_UPDATE;
            self.snd_wnd = ack.rwnd;
            self.undo.note_window(ack.rwnd);
            if self.has_unsent() {
                self.slow_start_after_idle_check(now);
            }
        }
        if flag == 0 && self.sb.packets_out() > 0 {
            self.stats.dupacks += 1;
        }
        let prior_fack = self.highest_sack_seq();
        let mut scan = AckScan::default();
        if ack.n_sacks > 0 {
            flag |= self.sacktag(now, ack, &mut scan);
        }
        flag |= self.clean_rtx_queue(now, ack.ack, prior_fack, &mut scan);
        // `tcp_ecn_rcv_ecn_echo` and `tcp_count_delivered(.., ece_ack)`.
        let ece = ack.ece && self.p.flow.ecn != Ecn::Off;
        if ece {
            flag |= FLAG_ECE;
            self.delivered_ce += self.delivered - prior_delivered;
        }

        // tcp_clean_rtx_queue's RTT samples, then tcp_ack_update_rtt.
        let now_us = now.us();
        let mut seq_rtt = -1i64;
        let mut ca_rtt = -1i64;
        if let (Some(first), Some(last)) = (scan.first_ackt, scan.last_ackt) {
            if flag & FLAG_RETRANS_DATA_ACKED == 0 {
                seq_rtt = now_us.saturating_sub(first.us()) as i64;
                ca_rtt = now_us.saturating_sub(last.us()) as i64;
                if scan.pkts_acked == 1 && scan.runt_acked && prior_sacked == 0 && flag & FLAG_CA_ALERT == 0 {
                    flag |= FLAG_ACK_MAYBE_DELAYED;
                }
            }
        }
        let mut sack_rtt = -1i64;
        if let (Some(first), Some(last)) = (scan.first_sackt, scan.last_sackt) {
            sack_rtt = now_us.saturating_sub(first.us()) as i64;
            ca_rtt = now_us.saturating_sub(last.us()) as i64;
        }
        if seq_rtt < 0 {
            seq_rtt = sack_rtt;
        }
        if seq_rtt < 0 && ack.ts_ecr != 0 && flag & FLAG_DATA_ACKED != 0 {
            // RTTM from the timestamp echo (1 ms clock), for retransmitted data.
            let delta_ms = ts_ms(now).wrapping_sub(ack.ts_ecr);
            if delta_ms < i32::MAX as u32 / 1000 {
                seq_rtt = delta_ms.max(1) as i64 * 1000;
                ca_rtt = seq_rtt;
            }
        }
        if seq_rtt >= 0 {
            self.rtt.update_min(now.jiffies(self.p.tcp.hz), ca_rtt as u64, flag & FLAG_ACK_MAYBE_DELAYED != 0);
            self.rtt.sample(seq_rtt as u64, self.sb.snd_una, self.snd_nxt());
            self.stats.rtt_ns.record(ca_rtt as u64 * 1000);
        }
        if !self.p.flow.freeze_cc {
            let info = self.info(now);
            let sample = AckSample { pkts_acked: scan.pkts_acked, rtt_us: ca_rtt, in_flight: prior_in_flight };
            self.cc.pkts_acked(&info, &mut self.w, &sample);
        }

        let acking_tlp = self.tlp.is_outstanding() && self.process_tlp_ack(now, ack.ack, flag);
        let dubious = flag & FLAG_NOT_DUP == 0 || flag & FLAG_CA_ALERT != 0 || self.ca_state != CaState::Open;
        let mut rexmit = Rexmit::None;
        if dubious {
            let num_dupack = (flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DSACKING_ACK) == 0) as u32;
            rexmit = self.fastretrans_alert(now, prior_snd_una, num_dupack, &mut flag, q);
        }
        if flag & FLAG_SET_XMIT_TIMER != 0 {
            self.set_xmit_timer(now, q);
        }
        let mut rs = RateSample {
            prior_in_flight,
            rtt_us: ca_rtt,
            is_ack_delayed: flag & FLAG_ACK_MAYBE_DELAYED != 0,
            ece,
            is_acking_tlp_retrans_seq: acking_tlp,
            ..Default::default()
        };
        let newly_delivered = (self.delivered - prior_delivered) as u32;
        let newly_lost = (self.lost - prior_lost) as u32;
        self.rate.generate(
            &scan.pick,
            now_us,
            self.delivered,
            self.delivered_ce,
            self.lost,
            newly_delivered,
            newly_lost,
            self.rtt.min_rtt_us(),
            &mut rs,
        );
        if !self.p.flow.freeze_cc {
            self.cong_control(now, flag, &rs);
        }
        self.hold_overrides();
        if prior_packets == 0 && self.has_unsent() {
            self.ack_probe(now, q);
        }
        self.xmit_recovery(now, rexmit, q);
        self.push_pending_frames(now, q);
    }

    /// `tcp_ack`'s `old_ack`: an ACK below `snd_una` (reordered on the way back) still
    /// carries SACK information: tag it, let recovery act on it, and send what the window
    /// now allows. Nothing else of the ACK counts (no RTT sample, no rate sample).
    fn old_ack(&mut self, now: Time, ack: &Packet, q: &mut impl Io) {
        let mut scan = AckScan::default();
        let mut flag = self.sacktag(now, ack, &mut scan);
        let rexmit = self.fastretrans_alert(now, self.sb.snd_una, 0, &mut flag, q);
        self.xmit_recovery(now, rexmit, q);
        self.push_pending_frames(now, q);
    }

    /// `tcp_clean_rtx_queue`: drop cumulatively acknowledged segments.
    fn clean_rtx_queue(&mut self, now: Time, ack_seq: u64, prior_fack: u64, scan: &mut AckScan) -> u32 {
        let mut flag = 0;
        let mut reord = self.snd_nxt();
        while self.sb.snd_una < ack_seq {
            let seq = self.sb.snd_una;
            let mut seg = *self.sb.get(seq);
            let ever_retrans = seg.has(EVER_RETRANS);
            self.rate.on_delivered(&mut scan.pick, seg.tx_time.us(), seq + 1, &mut seg.tx, false, ever_retrans);
            if seg.has(EVER_RETRANS) {
                flag |= FLAG_RETRANS_DATA_ACKED;
            } else if !seg.has(SACKED) {
                scan.first_ackt.get_or_insert(seg.tx_time);
                scan.last_ackt = Some(seg.tx_time);
                reord = reord.min(seq);
                if seq < self.high_seq {
                    flag |= FLAG_ORIG_SACK_ACKED;
                }
            }
            if !seg.has(SACKED) && !self.is_reno() {
                self.delivered += 1;
                if !(ever_retrans && self.ts.ecr_before(seg.tx_time)) {
                    // not `tcp_skb_spurious_retrans`: the ACK is not for the original
                    self.rack_advance(now, seg.flags, seq + 1, seg.tx_time);
                }
            }
            scan.runt_acked = seg.len < self.p.tcp.mss;
            self.sb.pop_acked();
            scan.pkts_acked += 1;
        }
        if scan.pkts_acked > 0 {
            flag |= FLAG_DATA_ACKED | FLAG_SET_XMIT_TIMER;
            if self.is_reno() {
                self.remove_reno_sacks(scan.pkts_acked);
                // Without SACK bits an original cannot be told from its retransmission.
                if flag & FLAG_RETRANS_DATA_ACKED != 0 {
                    flag &= !FLAG_ORIG_SACK_ACKED;
                }
            } else if reord < prior_fack {
                // A hole filled by a never-retransmitted segment: that is reordering.
                self.check_sack_reordering(reord);
            }
        }
        if self.sb.is_empty() {
            self.sack.forget();
            self.chronos.stop(now, Chrono::Busy, !self.has_unsent());
        }
        // Forget acknowledged transmissions so the send order stays window-sized.
        self.sb.prune_send_order();
        flag
    }

    /// `tcp_cong_control`.
    fn cong_control(&mut self, now: Time, flag: u32, rs: &RateSample) {
        let info = self.info(now);
        let owned = self.cc.cong_control(&info, &mut self.w, rs);
        self.apply_app_limited_request();
        if owned {
            return;
        }
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.cwnd_reduction(rs.acked_sacked, rs.losses, flag);
        } else if self.may_raise_cwnd(flag) {
            self.cc.cong_avoid(&info, &mut self.w, rs.acked_sacked);
        }
        self.update_pacing_rate();
    }

    /// `tcp_may_raise_cwnd`: on a path seen to reorder more than the initial degree, any
    /// delivery grows cwnd, SACKed included (`FLAG_FORWARD_PROGRESS`); otherwise only
    /// in-order delivery does (RFC 5681).
    fn may_raise_cwnd(&self, flag: u32) -> bool {
        if self.reordering.beyond_initial() {
            return flag & (FLAG_DATA_ACKED | FLAG_DATA_SACKED) != 0;
        }
        flag & FLAG_DATA_ACKED != 0
    }

    /// Whether the heap entry of timer `which` popped at `now` means it expired (a
    /// superseded entry is dropped, a postponed one re-queued).
    pub fn timer_due(&mut self, now: Time, which: SenderTimer, q: &mut impl Schedule<Wake>) -> bool {
        use crate::event::TimerFire;
        let fire = match which {
            SenderTimer::Retransmit => self.xmit.fire(now),
            SenderTimer::Pacing => self.pacing.fire(now),
            SenderTimer::TxCompletion => self.tsq.fire(now),
        };
        match fire {
            TimerFire::Stale => false,
            TimerFire::Requeue(t) => {
                q.push(t, Wake::Sender(self.p.id, which));
                false
            }
            TimerFire::Expired => true,
        }
    }

    /// The handler of an expired timer, run when the CPU gets to it.
    pub fn on_timer_expired(&mut self, now: Time, which: SenderTimer, q: &mut impl Io) {
        match which {
            SenderTimer::Retransmit => match self.xmit.kind() {
                XmitTimer::Rto => self.retransmit_timer(now, q),
                XmitTimer::LossProbe => self.send_loss_probe(now, q),
                XmitTimer::ReoTimeout => self.rack_reo_timeout(now, q),
                XmitTimer::Probe0 => self.probe_timer(now, q),
            },
            // tcp_pace_kick / tcp_tsq_handler -> tcp_tsq_write
            SenderTimer::Pacing | SenderTimer::TxCompletion => {
                if self.sb.lost_out > self.sb.retrans_out && self.w.cwnd > self.inflight() {
                    self.xmit_retransmit_queue(now, q);
                }
                self.write_xmit(now, 0, self.write.nonagle(), q);
            }
        }
    }

    /// `tcp_rack_advance`: remember the most recently sent delivered segment.
    pub(super) fn rack_advance(&mut self, now: Time, flags: u8, end_seq: u64, tx_time: Time) {
        let retransmitted = flags & (RETRANS | EVER_RETRANS) != 0;
        self.rack.advance(now.us(), retransmitted, end_seq, tx_time.us(), self.rtt.min_rtt_us());
    }

    /// Apply an algorithm's request to mark the connection app-limited now.
    pub(super) fn apply_app_limited_request(&mut self) {
        if std::mem::take(&mut self.w.mark_app_limited) {
            self.rate.app_limited = (self.delivered + self.inflight() as u64).max(1);
        }
    }

    /// `tcp_mark_skb_lost`, telling the algorithm (`skb_marked_lost`).
    pub(super) fn mark_lost(&mut self, now: Time, seq: u64) {
        if !self.sb.mark_lost(seq) {
            return;
        }
        self.lost += 1;
        let tx = self.sb.get(seq).tx;
        let seg = LostSegment {
            tx_in_flight: tx.in_flight,
            lost_at_send: tx.lost,
            lost_now: self.lost,
            is_app_limited: tx.app_limited,
        };
        let info = self.info(now);
        self.cc.segment_lost(&info, &mut self.w, &seg);
    }

    /// The sender-side snapshot stored into each transmitted segment.
    pub(super) fn tx_snapshot(&self, in_flight_after: u32) -> TxSnapshot {
        TxSnapshot {
            delivered: self.delivered,
            delivered_ce: self.delivered_ce,
            lost: self.lost,
            in_flight: in_flight_after,
            ..Default::default()
        }
    }
}
