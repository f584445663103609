//! TCP Small Queues (net/ipv4/tcp_output.c, `tcp_small_queue_check`): the bytes of this
//! socket's skbs the qdisc and NIC still hold (`sk_wmem_alloc`), the limit that throttles
//! the socket while about 1 ms of data waits below it, and the wake-up when the NIC's TX
//! completion frees an skb (`tcp_wfree` -> `tcp_tsq_handler`).

use super::wake::{SenderTimer, Wake};
use crate::event::{Schedule, Timer, TimerFire};
use crate::time::Time;
use std::collections::VecDeque;

/// Socket-buffer overhead charged per skb on top of its payload (approximate `truesize`).
const SKB_OVERHEAD: u64 = 768;
/// `sk_wmem_alloc` starts at one, the socket's own reference (`sk_alloc`), so two skbs of
/// the size about to be sent already exceed TCP Small Queues' limit of twice its truesize.
const WMEM_SELF_REF: u64 = 1;

/// The skbs below the socket and the TX-completion wake-up.
#[derive(Clone, Debug)]
pub struct Tsq {
    /// Each skb the NIC has not freed yet: when its completion reaches the host, and its
    /// truesize.
    nic_skbs: VecDeque<(Time, u64)>,
    /// `sk_wmem_alloc` less the socket's own reference: the truesizes of `nic_skbs`.
    wmem: u64,
    /// The TX completion that wakes a throttled socket.
    timer: Timer,
    /// The flow whose sender it wakes.
    flow: u32,
}

impl Tsq {
    pub fn new(flow: u32) -> Tsq {
        Tsq { nic_skbs: VecDeque::new(), wmem: 0, timer: Timer::default(), flow }
    }

    /// `tcp_small_queue_check`'s limit for an skb of `payload` bytes: about 1 ms of data at
    /// the pacing rate (`sk_pacing_rate >> sk_pacing_shift`), at least two skbs of its
    /// truesize, at most `unpaced_cap` without pacing (`tcp_limit_output_bytes`), doubled
    /// `factor` times (retransmissions: once).
    pub fn limit(payload: u64, pacing_rate: u64, pacing_shift: u32, unpaced_cap: Option<u64>, factor: u32) -> u64 {
        let truesize = payload + SKB_OVERHEAD;
        let mut limit = (2 * truesize).max(pacing_rate >> pacing_shift);
        if let Some(cap) = unpaced_cap {
            limit = limit.min(cap);
        }
        limit << factor
    }

    /// Bytes below the socket as last counted (`sk_wmem_alloc` less its own reference),
    /// without reaping completions.
    pub fn wmem(&self) -> u64 {
        self.wmem
    }

    /// An skb of `payload` bytes went to the NIC; its completion reaches the host at `done`.
    pub fn on_sent(&mut self, done: Time, payload: u64) {
        let truesize = payload + SKB_OVERHEAD;
        self.nic_skbs.push_back((done, truesize));
        self.wmem += truesize;
    }

    /// Over `limit` once the completions reaped by `reaped` are freed.
    pub fn over_limit(&mut self, limit: u64, reaped: Time) -> bool {
        while let Some(&(done, bytes)) = self.nic_skbs.front() {
            if done > reaped {
                break;
            }
            self.wmem -= bytes;
            self.nic_skbs.pop_front();
        }
        self.wmem + WMEM_SELF_REF > limit
    }

    /// Throttled at `now`: the oldest skb's TX completion wakes the socket (completed but
    /// not yet reaped: the TX poll comes after the work queued).
    pub fn wait_for_completion(&mut self, now: Time, q: &mut impl Schedule<Wake>) {
        if let Some(&(done, _)) = self.nic_skbs.front() {
            q.arm(&mut self.timer, done.max(now), Wake::Sender(self.flow, SenderTimer::TxCompletion));
        }
    }

    /// What the timer's heap entry popped at `now` means.
    pub fn fire(&mut self, now: Time) -> TimerFire {
        self.timer.fire(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventQueue;

    const US: u64 = 1_000;

    #[test]
    fn the_limit_is_a_millisecond_of_data_or_two_skbs() {
        // 100 Mbit/s (12.5 MB/s) >> 10: 12,207 bytes, more than two 2-segment skbs.
        assert_eq!(Tsq::limit(2_896, 12_500_000, 10, None, 0), 12_207);
        // A slow flow: two truesizes.
        assert_eq!(Tsq::limit(2_896, 125_000, 10, None, 0), 2 * (2_896 + 768));
        // Unpaced, capped; a retransmission gets twice the room.
        assert_eq!(Tsq::limit(2_896, 12_500_000, 10, Some(10_000), 0), 10_000);
        assert_eq!(Tsq::limit(2_896, 12_500_000, 10, Some(10_000), 1), 20_000);
    }

    #[test]
    fn reaped_completions_free_their_skbs_and_the_first_pending_one_wakes_the_socket() {
        let mut q: EventQueue<Wake> = EventQueue::default();
        let mut t = Tsq::new(5);
        t.on_sent(Time(10 * US), 1_448);
        t.on_sent(Time(20 * US), 1_448);
        assert_eq!(t.wmem(), 2 * (1_448 + 768));
        // Two skbs of this size fill a limit of twice the truesize: the socket's own
        // reference tips it over.
        let limit = Tsq::limit(1_448, 0, 10, None, 0);
        assert!(t.over_limit(limit, Time(5 * US)));
        t.wait_for_completion(Time(5 * US), &mut q);
        assert_eq!(q.pop(), Some((Time(10 * US), Wake::Sender(5, SenderTimer::TxCompletion))));
        assert_eq!(t.fire(Time(10 * US)), TimerFire::Expired);
        assert!(!t.over_limit(limit, Time(10 * US)), "the first completion reaped");
        assert_eq!(t.wmem(), 1_448 + 768);
        // A completion already due but not reaped wakes the socket at once.
        t.wait_for_completion(Time(30 * US), &mut q);
        assert_eq!(q.pop().map(|(at, _)| at), Some(Time(30 * US)));
    }
}
