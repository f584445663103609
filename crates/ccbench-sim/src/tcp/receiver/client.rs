//! The receiver as the client of a download it opens (`connect = "receiver"`): its SYN,
//! sent again by the retransmit timer while no SYN-ACK comes (`tcp_retransmit_timer` in
//! `SYN_SENT`); its ACK of the SYN-ACK with the request (`tcp_rcv_synsent_state_process`,
//! then the application's write), or, with a Fast Open cookie, the request in the SYN
//! (`tcp_send_syn_data`); and the request sent again on its RTO (the SYN-ACK's sample in
//! the sender's RTT estimator, backed off) until the response's first data arrives. The server's side is the sender's (`sender/connect.rs`).

use super::Receiver;
use crate::event::TimerFire;
use crate::net::Packet;
use crate::tcp::handshake::{handshake_ack, syn_data_bytes, Client, Connecting, REQUEST_BYTES};
use crate::tcp::io::Io;
use crate::tcp::rtt::RttEstimator;
use crate::tcp::wake::Wake;
use crate::tcp::xmit_timer::jiffy_deadline;
use crate::time::{Dur, Time};

impl Receiver {
    /// The client calls `connect()` for its download at `now`.
    pub fn connect(&mut self, now: Time, q: &mut impl Io) {
        let fastopen = self.p.flow.fastopen;
        let data = match fastopen && self.fastopen.may_send_data(now) {
            true => syn_data_bytes(self.p.tcp.mss, REQUEST_BYTES as u64),
            false => 0,
        };
        let c = Connecting::new(now, data, fastopen);
        q.reply(now, self.p.id, c.syn(now, self.p.id, self.p.conn));
        self.arm_connect_timer(now, c.timeout(), q);
        self.client = Some(Client::new(c));
    }

    /// The SYN-ACK: ACK it, with the request unless the SYN carried it and the server
    /// took it. A SYN-ACK again (ours was lost) gets the same answer.
    pub(super) fn on_syn_ack(&mut self, now: Time, synack: &Packet, q: &mut impl Io) {
        let Some(mut c) = self.client.take() else { return };
        let rto = match c.synack.take() {
            Some((_, rto)) => rto,
            None => {
                // The SYN-ACK's sample sets the RTO, as `tcp_ack_update_rtt` does.
                let rtt = c.syn.established(now, synack, &mut self.fastopen).rtt;
                let tcp = &self.p.tcp;
                let mut rto = RttEstimator::new(tcp.hz, Dur(tcp.rto_min_ns), Dur(tcp.rto_init_ns));
                rto.sample(rtt.us().max(1), 0, 0);
                rto
            }
        };
        self.ts_recent = synack.ts_val;
        let in_syn = c.syn.syn_data > 0 && synack.ack as u32 >= c.syn.syn_data;
        let request = if in_syn { 0 } else { REQUEST_BYTES };
        q.reply(now, self.p.id, handshake_ack(now, synack, request));
        c.request_pending = request > 0;
        if c.request_pending {
            self.arm_connect_timer(now, rto.rto, q);
        } else {
            self.connect_timer.cancel();
        }
        c.synack = Some((*synack, rto));
        self.client = Some(c);
    }

    /// Data of the response has come: the server has the request.
    pub(super) fn response_started(&mut self) {
        if let Some(c) = self.client.as_mut().filter(|c| c.request_pending) {
            c.request_pending = false;
            self.connect_timer.cancel();
        }
    }

    /// The client's retransmit timer: the SYN again (without data or cookie), or the
    /// request, each time after twice as long; after `tcp_syn_retries` SYNs, no more.
    pub fn on_connect_timer(&mut self, now: Time, q: &mut impl Io) {
        match self.connect_timer.fire(now) {
            TimerFire::Requeue(t) => return q.push(t, Wake::Connect(self.p.id)),
            TimerFire::Stale => return,
            TimerFire::Expired => {}
        }
        let Some(mut c) = self.client.take() else { return };
        match c.synack {
            None => {
                if let Some(timeout) = c.syn.retransmit(now) {
                    q.reply(now, self.p.id, c.syn.syn(now, self.p.id, self.p.conn));
                    self.arm_connect_timer(now, timeout, q);
                }
            }
            Some((synack, ref mut rto)) if c.request_pending => {
                q.reply(now, self.p.id, handshake_ack(now, &synack, REQUEST_BYTES));
                rto.on_timeout();
                let after = rto.rto;
                self.arm_connect_timer(now, after, q);
            }
            Some(_) => {}
        }
        self.client = Some(c);
    }

    /// Arm the client's timer `after` from `now`, on the timer wheel.
    fn arm_connect_timer(&mut self, now: Time, after: Dur, q: &mut impl Io) {
        let at = jiffy_deadline(now, after, self.p.tcp.hz);
        q.arm(&mut self.connect_timer, at, Wake::Connect(self.p.id));
    }
}
