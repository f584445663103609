//! Pushing what was written (`tcp_push_pending_frames`), and the zero-window probes that
//! follow a push which leaves data waiting: the persist timer (`ICSK_TIME_PROBE0`) that
//! keeps asking a peer whose window is shut whether it has opened, as
//! `tcp_check_probe_timer`, `tcp_send_probe0` and `tcp_write_wakeup`
//! (net/ipv4/tcp_output.c), `tcp_probe_timer` (tcp_timer.c) and `tcp_ack_probe`
//! (tcp_input.c) do.
//!
//! Not modelled: the abort after `tcp_retries2` probes that no ACK answers
//! (`tcp_write_err`); a peer that answers its probes, as every modelled one does, never
//! reaches it.

use super::output::TxKind;
use super::*;
use crate::net::Packet;
use crate::tcp::io::Io;
use crate::tcp::rtt::RTO_MAX;
use crate::tcp::tsopt::ts_ms;
use crate::tcp::xmit_timer::XmitTimer;
use crate::time::{Dur, Time};
use crate::units::wire;

/// `TCP_RTO_MIN`: the probe interval's floor (`tcp_probe0_base`), whatever the route's
/// `rto_min`.
const TCP_RTO_MIN: Dur = Dur::from_ms(200);
/// `sysctl_tcp_retries2`'s default: the backoff stops growing here (`tcp_send_probe0`).
const TCP_RETRIES2: u32 = 15;

impl Sender {
    /// `tcp_probe0_base`.
    fn probe0_base(&self) -> Dur {
        self.rtt.rto.max(TCP_RTO_MIN)
    }

    /// `tcp_probe0_when`: the base interval backed off, at most `TCP_RTO_MAX`.
    fn probe0_when(&self) -> Dur {
        self.rtt.backed_off(self.probe0_base(), RTO_MAX)
    }

    /// `tcp_push_pending_frames`: push with the socket's own Nagle setting.
    pub(super) fn push_pending_frames(&mut self, now: Time, q: &mut impl Io) {
        self.push_frames(now, self.write.nonagle(), q);
    }

    /// `__tcp_push_pending_frames`: send what may go, and if that leaves data waiting with
    /// nothing in flight, `tcp_check_probe_timer`: arm the probe timer unless a timer is
    /// pending.
    pub(super) fn push_frames(&mut self, now: Time, nonagle: u8, q: &mut impl Io) {
        self.write_xmit(now, 0, nonagle, q);
        if self.sb.packets_out() == 0 && self.has_unsent() && !self.xmit.is_armed() {
            let base = self.probe0_base();
            self.reset_xmit_timer(now, XmitTimer::Probe0, base, q);
        }
    }

    /// `tcp_probe_timer` -> `tcp_send_probe0`: probe, then back off, or stop once data is
    /// in flight or nothing waits.
    pub(super) fn probe_timer(&mut self, now: Time, q: &mut impl Io) {
        if self.sb.packets_out() > 0 || !self.has_unsent() {
            self.probes_out = 0;
            return;
        }
        self.write_wakeup(now, q);
        if self.sb.packets_out() > 0 || !self.has_unsent() {
            self.probes_out = 0;
            self.rtt.backoff = 0;
            return;
        }
        self.probes_out += 1;
        if self.rtt.backoff < TCP_RETRIES2 {
            self.rtt.backoff += 1;
        }
        let when = self.probe0_when();
        self.reset_xmit_timer(now, XmitTimer::Probe0, when, q);
    }

    /// `tcp_write_wakeup`: the next segment if the window admits it (whatever cwnd says),
    /// else an empty segment (`tcp_xmit_probe_skb`).
    fn write_wakeup(&mut self, now: Time, q: &mut impl Io) {
        let seq = self.snd_nxt();
        if self.rwnd_allows(seq) {
            if self.send_skb(now, seq..seq + 1, TxKind::New, q) {
                self.rearm_rto(now, q); // tcp_event_new_data_sent with nothing in flight before
            }
            return;
        }
        self.xmit_probe_skb(now, q);
    }

    /// `tcp_xmit_probe_skb`: an empty ACK-flagged segment whose sequence number is one
    /// byte below `snd_una`, which the peer can only answer with an ACK of where it is
    /// and the window it has. It is no data: no sequence space, no RTO, no `lsndtime`,
    /// not charged to the socket's memory (a pure ACK's destructor is `__sock_wfree`).
    /// `seq` carries `snd_una`; a packet without payload means the byte before it.
    fn xmit_probe_skb(&mut self, now: Time, q: &mut impl Io) {
        if q.drops_all() {
            self.enter_cwr(now);
            return;
        }
        let snd_una = self.sb.snd_una;
        let pkt = Packet {
            flow: self.p.id,
            conn: self.p.conn,
            wire_bytes: wire::ACK_BYTES,
            seq: self.wire_seq(snd_una),
            payload: 0,
            ts_val: ts_ms(now),
            ts_ecr: self.ts.recent(),
            ..Default::default()
        };
        q.transmit(now, self.p.id, pkt);
        let start = self.write.seg_start(snd_una);
        if let Some(log) = self.tx_log.as_mut() {
            log.push(TxRecord { time: now, seq: snd_una, start, ..Default::default() });
        }
    }

    /// `tcp_ack`'s end for an ACK that found nothing in flight (`no_queue`), with data
    /// waiting: `tcp_ack_probe`. A window that admits the next segment stops the probe
    /// timer and clears the backoff; a window still shut re-arms it.
    pub(super) fn ack_probe(&mut self, now: Time, q: &mut impl Io) {
        if self.rwnd_allows(self.snd_nxt()) {
            self.rtt.backoff = 0;
            self.xmit.cancel();
        } else {
            let when = self.probe0_when();
            self.reset_xmit_timer(now, XmitTimer::Probe0, when, q);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::scripted::{PeerAck, ScriptedParams, ScriptedSender};
    use crate::time::Time;

    const MS: u64 = 1_000_000;

    fn ack(ack: u64, rwnd: u64) -> PeerAck {
        PeerAck { ack, rwnd, ..Default::default() }
    }

    /// slow-start-after-win-update.pkt's story: the peer shuts its window as it ACKs
    /// everything; the application writes more. With SRTT 100 ms the RTO is 300 ms, so
    /// the probes are armed 300, 600 and 1,200 ms apart (and run at the timer wheel's
    /// next 8- or 64-jiffy boundary: 308, 608, 1,216 ms); each is an empty segment below
    /// `snd_una`, and cwnd stays.
    /// The window reopens 3.1 s after the last data left, over ten RTOs: the idle
    /// restart halves cwnd 36 -> 18 -> 9, floored at the initial window 10.
    #[test]
    fn a_shut_window_is_probed_with_exponential_backoff_until_it_opens() {
        let mut p = ScriptedParams { snd_wnd: 1 << 20, ..Default::default() };
        p.tcp.slow_start_after_idle = true;
        p.tcp.min_tso_segs = 10;
        let mut h = ScriptedSender::new(&p).unwrap();
        h.write(Time(100 * MS), 26_000, false);
        h.receive(Time(200 * MS), &ack(10, 1 << 20));
        h.receive(Time(300 * MS), &ack(26, 0));
        assert_eq!(h.tcp_info()["tcpi_snd_cwnd"], 36);
        h.take_sent();
        h.write(Time(300 * MS), 20_000, false);
        assert!(h.take_sent().is_empty(), "a shut window lets no data out");
        h.advance(Time(3_000 * MS));
        let probes = h.take_sent();
        let times: Vec<u64> = probes.iter().map(|r| (r.time.0 - 300 * MS) / MS).collect();
        assert_eq!(times, vec![308, 916, 2_132], "{probes:?}");
        assert!(probes.iter().all(|r| r.segs == 0 && r.bytes == 0 && r.seq == 26 && !r.retrans));
        let info = h.tcp_info();
        assert_eq!((info["tcpi_snd_cwnd"], info["tcpi_probes"], info["tcpi_backoff"]), (36, 3, 3));
        assert_eq!(info["tcpi_data_segs_out"], 26, "probes are not data");
        // An ACK that leaves the window shut clears the probe count, not the backoff.
        h.receive(Time(3_000 * MS), &ack(26, 0));
        assert_eq!((h.tcp_info()["tcpi_probes"], h.tcp_info()["tcpi_backoff"]), (0, 3));
        h.receive(Time(3_300 * MS), &ack(26, 1 << 20));
        let sent = h.take_sent();
        assert_eq!((sent[0].seq, sent[0].segs), (26, 5), "{sent:?}");
        let info = h.tcp_info();
        assert_eq!((info["tcpi_snd_cwnd"], info["tcpi_backoff"]), (10, 0));
    }
}
