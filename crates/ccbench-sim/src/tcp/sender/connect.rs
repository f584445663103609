//! The world's entry points to a sender. A sender that connects when its data is due
//! opens its connection first (`tcp::handshake`): `tcp_connect` sends the SYN and arms the
//! retransmit timer, which resends it (`tcp_retransmit_timer` in `SYN_SENT`), and the
//! SYN-ACK (`tcp_rcv_synsent_state_process`) establishes the connection, whose write
//! then starts. A sender whose receiver opens the connection listens: it answers each
//! SYN with a SYN-ACK (`tcp_conn_request`), and the opener's ACK with the request
//! establishes the connection (`tcp_rcv_state_process` in `TCP_SYN_RECV`), after which
//! the application reads the request and writes its response. A Fast Open SYN with the
//! request establishes it at once (`tcp_fastopen_create_child`), without an RTT sample
//! until the opener's ACK. Until the connection is established nothing else it receives
//! has a meaning.

use super::Sender;
use crate::net::packet::Control;
use crate::net::Packet;
use crate::tcp::config::Connect;
use crate::tcp::handshake::{server_takes, syn_ack, syn_data_bytes, Connecting};
use crate::tcp::io::Io;
use crate::tcp::wake::SenderTimer;
use crate::tcp::xmit_timer::XmitTimer;
use crate::time::{Dur, Time};

impl Sender {
    /// The flow's data is due at `now`: write it, or first `connect()`.
    pub fn open(&mut self, now: Time, q: &mut impl Io) {
        if self.p.flow.connect == Connect::Ahead {
            return self.start(now, q);
        }
        let fastopen = self.p.flow.fastopen;
        let data = match fastopen && self.fastopen.may_send_data(now) {
            true => syn_data_bytes(self.p.tcp.mss, self.p.flow.size_bytes.unwrap_or(u64::MAX)),
            false => 0,
        };
        let c = Connecting::new(now, data, fastopen);
        self.send_syn(now, &c, q);
        self.connecting = Some(c);
    }

    /// A packet from the receiver arrives at `now`.
    pub fn on_packet(&mut self, now: Time, pkt: &Packet, q: &mut impl Io) {
        if pkt.ctl == Control::None {
            if self.connecting.is_none() && self.accepting.is_none_or(|a| a.established()) {
                let ack = self.ack_in_segments(pkt);
                self.on_ack(now, &ack, q);
            }
            return;
        }
        if pkt.conn != self.p.conn {
            return; // a closed connection's handshake, still in flight
        }
        match pkt.ctl {
            Control::FragNeeded => self.icmp_frag_needed(now, pkt.ack as u32, pkt.seq, q),
            Control::SynAck if self.connecting.is_some() => self.on_syn_ack(now, pkt, q),
            Control::Syn if self.accepting.is_some() => self.on_syn(now, pkt, q),
            Control::Ack if self.accepting.is_some() => self.on_opener_ack(now, pkt, q),
            _ => {}
        }
    }

    /// The sender's timer `which` has expired at `now`.
    pub fn on_timer(&mut self, now: Time, which: SenderTimer, q: &mut impl Io) {
        match self.connecting {
            None => self.on_timer_expired(now, which, q),
            Some(_) if which == SenderTimer::Retransmit => self.syn_timeout(now, q),
            Some(_) => {}
        }
    }

    /// Hand the current SYN to the NIC and time it out (`inet_csk_reset_xmit_timer`
    /// with `icsk_rto`, `TCP_TIMEOUT_INIT` doubled per retransmission).
    fn send_syn(&mut self, now: Time, c: &Connecting, q: &mut impl Io) {
        let syn = c.syn(now, self.p.id, self.p.conn);
        q.transmit(now, self.p.id, syn);
        self.xmit.reset(now, XmitTimer::Rto, c.timeout(), Dur::ZERO, q);
    }

    /// The SYN timed out: send it again, or give up after `tcp_syn_retries` (the
    /// connection then never opens).
    fn syn_timeout(&mut self, now: Time, q: &mut impl Io) {
        let mut c = self.connecting.take().expect("connecting");
        if c.retransmit(now).is_some() {
            self.stats.retransmits += 1;
            self.send_syn(now, &c, q);
        }
        self.connecting = Some(c);
    }

    /// The SYN-ACK: the connection is established, and the write starts with what the
    /// SYN's data did not already deliver.
    fn on_syn_ack(&mut self, now: Time, synack: &Packet, q: &mut impl Io) {
        let c = self.connecting.take().expect("connecting");
        self.xmit.cancel();
        let e = c.established(now, synack, &mut self.fastopen);
        self.ts.on_ack(synack.ts_val, synack.ts_ecr);
        self.snd_wnd = synack.rwnd;
        self.establish(now, Some(e.rtt), e.syn_retransmits);
        let bytes = match self.p.flow.size_bytes {
            Some(size) => size - e.data_acked as u64,
            None => u64::MAX,
        };
        self.start_write(now, bytes, q);
    }

    /// The opener's SYN: a SYN-ACK answers it. A Fast Open SYN carrying the request
    /// establishes the connection now; the response follows the SYN-ACK.
    fn on_syn(&mut self, now: Time, syn: &Packet, q: &mut impl Io) {
        let mut a = self.accepting.expect("listening");
        let fresh = !a.established() && server_takes(syn, self.p.flow.fastopen) > 0;
        if fresh {
            a.taken = syn.payload;
        }
        self.ts.on_ack(syn.ts_val, 0);
        // The SYN-ACK acknowledges the request taken, by this SYN or an earlier one.
        q.transmit(now, self.p.id, syn_ack(now, syn, self.p.flow.rwnd_bytes, self.p.flow.fastopen, a.taken));
        a.synack_sent(now);
        self.accepting = Some(a);
        if fresh {
            self.establish(now, None, 0);
            self.start_write(now, self.p.flow.size_bytes.unwrap_or(u64::MAX), q);
        }
    }

    /// The opener's ACK of the SYN-ACK, with its request unless the SYN carried it: the
    /// connection is established with the SYN-ACK's RTT, and the response is written; a
    /// Fast Open connection takes its first RTT sample.
    fn on_opener_ack(&mut self, now: Time, ack: &Packet, q: &mut impl Io) {
        let a = self.accepting.take().expect("listening");
        self.ts.on_ack(ack.ts_val, ack.ts_ecr);
        if a.established() {
            if let Some(rtt) = a.rtt(now) {
                self.handshake_rtt_sample(now, rtt);
            }
            return;
        }
        self.establish(now, a.rtt(now), 0);
        self.start_write(now, self.p.flow.size_bytes.unwrap_or(u64::MAX), q);
    }

    /// An ICMP "fragmentation needed" with next-hop `mtu` quoting the segment at stream
    /// offset `quoted` (`tcp_v4_err`: one outside `snd_una..=snd_nxt` is ignored), then
    /// `tcp_v4_mtu_reduced`: the route takes the MTU, and a path now narrower than the
    /// MSS's resends at once what was too large.
    pub fn icmp_frag_needed(&mut self, now: Time, mtu: u32, quoted: u64, q: &mut impl Io) {
        if self.connecting.is_some() || self.accepting.is_some_and(|a| !a.established()) {
            return;
        }
        let window = self.wire_seq(self.sb.snd_una)..=self.wire_seq(self.snd_nxt());
        if !window.contains(&quoted) {
            return;
        }
        let mtu = self.pmtu.icmp_update(mtu);
        if self.pmtu.cookie > mtu {
            self.sync_mss(mtu);
            self.simple_retransmit(now, q);
        }
    }
}
