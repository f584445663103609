//! A FIFO pipe: optional serialization at a fixed rate, then a delay. Packets leave in
//! the order they entered, so only the head needs an event. The delay may change (an
//! RTT step); a packet never overtakes one sent before it, as on a single path.

use super::Packet;
use crate::time::{Dur, Time};
use crate::units::BitRate;
use std::collections::VecDeque;

pub struct Pipe {
    /// None: no serialization (an uncongested path).
    rate: Option<BitRate>,
    delay: Dur,
    busy_until: Time,
    in_flight: VecDeque<(Time, Packet)>,
    /// Exit time of the last packet pushed.
    last_exit: Time,
}

impl Pipe {
    pub fn new(rate: Option<BitRate>, delay: Dur) -> Pipe {
        Pipe { rate, delay, busy_until: Time::ZERO, in_flight: VecDeque::new(), last_exit: Time::ZERO }
    }

    /// Enqueue at `now`. Returns (time serialization completes, whether the head changed
    /// so that the caller must schedule an exit event for `exit_time`).
    pub fn push(&mut self, now: Time, pkt: Packet) -> (Time, Option<Time>) {
        let sent = match self.rate {
            Some(r) => {
                self.busy_until = self.busy_until.max(now) + r.tx_time(pkt.wire_bytes);
                self.busy_until
            }
            None => now,
        };
        // With a constant delay exits are already in order; after the delay shrinks a
        // packet waits for the one ahead of it.
        let exit = (sent + self.delay).max(self.last_exit);
        self.last_exit = exit;
        let was_empty = self.in_flight.is_empty();
        self.in_flight.push_back((exit, pkt));
        (sent, was_empty.then_some(exit))
    }

    /// Remove the head, which must be due; returns it and the next head's exit time.
    pub fn pop(&mut self, now: Time) -> (Packet, Option<Time>) {
        let (t, p) = self.in_flight.pop_front().expect("pipe event without a packet");
        debug_assert!(t <= now);
        (p, self.in_flight.front().map(|(t, _)| *t))
    }

    /// The propagation delay for packets pushed from now on.
    pub fn set_delay(&mut self, delay: Dur) {
        self.delay = delay;
    }

    pub fn delay(&self) -> Dur {
        self.delay
    }

    pub fn len(&self) -> usize {
        self.in_flight.len()
    }
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }
}
