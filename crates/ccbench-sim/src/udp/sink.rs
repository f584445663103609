//! A UDP sink: what arrived of a flow, and each datagram's one-way delay.

use crate::base::histogram::Histogram;
use crate::net::Packet;
use crate::time::Time;

#[derive(Default)]
pub struct UdpSink {
    pub packets: u64,
    /// IP bytes received.
    pub bytes: u64,
    /// From its sending to its arrival, ns.
    pub one_way_delay_ns: Histogram,
}

impl UdpSink {
    pub fn on_datagram(&mut self, now: Time, pkt: &Packet) {
        self.packets += 1;
        self.bytes += pkt.wire_bytes as u64;
        self.one_way_delay_ns.record(now.ns() - pkt.ack);
    }
}
