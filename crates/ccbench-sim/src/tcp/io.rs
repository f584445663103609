//! What a TCP endpoint acts on: the clock it asks to be woken by (`Schedule<Wake>`) and
//! the path its packets leave on. The world gives its event queue and `net::Path`; unit
//! tests and the packetdrill driver give a [`Loopback`] that keeps what is sent.

use super::wake::Wake;
use crate::event::{EventQueue, Schedule};
use crate::net::Packet;
use crate::time::Time;

pub trait Io: Schedule<Wake> {
    /// Flow `flow`'s sender hands a segment to its host's NIC at `now`. Returns when the
    /// NIC's TX completion for it reaches the host (serialized, and reported so), when
    /// TCP Small Queues frees its budget (`tcp_wfree`).
    fn transmit(&mut self, now: Time, flow: u32, pkt: Packet) -> Time;
    /// Up to when the host's driver has reaped TX completions, at `now`: freed skbs
    /// return their memory to the socket only then (`tcp_wfree`). An ideal host reaps
    /// each the instant it completes.
    fn reaped(&self, now: Time) -> Time {
        now
    }
    /// The host's qdisc refuses every packet (`NET_XMIT_DROP`: a `tc` qdisc with no room,
    /// such as `pfifo limit 0`). Never, on a simulated host.
    fn drops_all(&self) -> bool {
        false
    }
    /// Flow `flow`'s receiver sends an ACK at `now`.
    fn reply(&mut self, now: Time, flow: u32, pkt: Packet);
}

/// An endpoint's own queue of wake-ups, and a device that takes every packet the instant
/// it is sent (a tun device): what was sent is kept, with its time, until taken; or, with
/// `drop_all`, a qdisc in front of it that refuses everything.
#[derive(Default)]
pub struct Loopback {
    pub q: EventQueue<Wake>,
    pub sent: Vec<(Time, Packet)>,
    pub acks: Vec<(Time, Packet)>,
    pub drop_all: bool,
}

impl Schedule<Wake> for Loopback {
    #[inline]
    fn push(&mut self, time: Time, wake: Wake) {
        self.q.push(time, wake);
    }
}

impl Io for Loopback {
    fn transmit(&mut self, now: Time, _flow: u32, pkt: Packet) -> Time {
        self.sent.push((now, pkt));
        now
    }
    fn drops_all(&self) -> bool {
        self.drop_all
    }
    fn reply(&mut self, now: Time, _flow: u32, pkt: Packet) {
        self.acks.push((now, pkt));
    }
}
