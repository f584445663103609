//! Where the run loop hands what happens to the packet capture, if the run has one:
//! without one each tap is a single branch, and the loop reads the same either way.

use crate::config::ConfigError;
use crate::net::Packet;
use crate::observe::capture::Capture;
use crate::time::Time;

#[derive(Default)]
pub(super) struct Taps(Option<Capture>);

impl Taps {
    pub fn new(capture: Capture) -> Taps {
        Taps(Some(capture))
    }

    #[inline]
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Write every record due by `now` (see `Capture::flush`).
    #[inline]
    pub fn flush(&mut self, now: Time) {
        if let Some(c) = self.0.as_mut() {
            c.flush(now);
        }
    }

    #[inline]
    pub fn flow_start(&mut self, now: Time, flow: u32) {
        if let Some(c) = self.0.as_mut() {
            c.flow_start(now, flow);
        }
    }

    /// The segments flow `flow`'s sender handed to its NIC, with the times they left it
    /// (`kept` is emptied).
    #[inline]
    pub fn sent(&mut self, flow: u32, kept: &mut Vec<(Time, Packet)>) {
        if let Some(c) = self.0.as_mut() {
            c.sent(flow, kept.drain(..));
        }
    }

    /// The ACKs flow `flow`'s receiver sent at `now` (`kept` is emptied).
    #[inline]
    pub fn acks_sent(&mut self, now: Time, flow: u32, kept: &mut Vec<(Time, Packet)>) {
        if let Some(c) = self.0.as_mut() {
            c.acks_sent(now, flow, kept.drain(..).map(|(_, p)| p));
        }
    }

    #[inline]
    pub fn bottleneck_in(&mut self, now: Time, pkt: &Packet) {
        if let Some(c) = self.0.as_mut() {
            c.bottleneck_in(now, pkt);
        }
    }

    #[inline]
    pub fn bottleneck_out(&mut self, now: Time, pkt: &Packet) {
        if let Some(c) = self.0.as_mut() {
            c.bottleneck_out(now, pkt);
        }
    }

    #[inline]
    pub fn receiver_data(&mut self, now: Time, pkt: &Packet) {
        if let Some(c) = self.0.as_mut() {
            c.receiver_data(now, pkt);
        }
    }

    #[inline]
    pub fn ack_arrival(&mut self, now: Time, pkt: &Packet) {
        if let Some(c) = self.0.as_mut() {
            c.ack_arrival(now, pkt);
        }
    }

    /// Write what is due by `end` and close the files: the first error writing them.
    pub fn finish(&mut self, end: Time) -> Result<(), ConfigError> {
        self.0.take().map_or(Ok(()), |c| c.finish(end))
    }
}
