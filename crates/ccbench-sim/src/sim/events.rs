//! A min-heap of events ordered by (time, sequence number), and lazily cancelled timers.
//!
//! Components keep the heap small: a FIFO link schedules only its head packet, and each
//! timer keeps at most one live entry (re-arming later leaves the entry in place and
//! moves it when it fires early), so the heap holds O(flows) entries.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Which sender timer fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SenderTimer {
    /// `icsk_retransmit_timer`: RTO, tail-loss probe or RACK reordering timeout.
    Retransmit,
    /// The internal pacing hrtimer (`tcp_pace_kick`).
    Pacing,
    /// TX completion of a throttled socket's skb (TCP Small Queues, `tcp_wfree`).
    TxCompletion,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    FlowStart(u32),
    /// The head of a flow's NIC pipe reaches the bottleneck.
    NicArrival(u32),
    /// The bottleneck's next service instant: its head packet is serialized, or (on a
    /// trace) a delivery opportunity comes.
    LinkTxDone,
    /// A delivery opportunity of the ACK direction's trace-driven link.
    AckLinkTxDone,
    /// Step `k` of the link's RTT schedule takes effect.
    RttStep(u32),
    /// The head of the forward delay line reaches its receiver.
    ReceiverArrival,
    /// The head of a flow's reverse path reaches its sender.
    AckArrival(u32),
    Sender(u32, SenderTimer),
    /// The receiver's delayed-ACK timer.
    DelayedAck(u32),
    /// The receiver's SACK-compression timer.
    SackCompress(u32),
    /// The sender host's CPU may take its next task.
    CpuRun,
    /// A flow opens its next connection for another download.
    FlowRestart(u32),
    Sample,
    End,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: Time,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed so that `BinaryHeap` pops the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, time: Time, event: Event) {
        self.heap.push(Entry { time, seq: self.next_seq, event });
        self.next_seq += 1;
    }
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }
    /// Time of the earliest entry.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Arm `timer` for `at`, pushing a heap entry only when none is queued early enough.
    pub fn arm(&mut self, timer: &mut Timer, at: Time, event: Event) {
        if let Some(t) = timer.arm(at) {
            self.push(t, event);
        }
    }
}

/// `LVL_CLK_SHIFT`, `LVL_BITS` and `LVL_DEPTH` (HZ > 100) of the kernel's timer wheel.
const WHEEL_LVL_CLK_SHIFT: u32 = 3;
const WHEEL_LVL_SIZE: u64 = 64;
const WHEEL_LVL_DEPTH: u32 = 9;

/// The jiffy at which a kernel timer wheel timer armed at jiffy `clk` for jiffy
/// `expires` runs (kernel/time/timer.c, `calc_wheel_index` -> `calc_index`): the level
/// is chosen by the distance, and the expiry is rounded up to the next boundary of that
/// level's granularity (1 jiffy at level 0, 8 at level 1, 64 at level 2, ...) so that
/// a timer never fires early: one jiffy late at the least.
pub fn timer_wheel_expiry(expires: u64, clk: u64) -> u64 {
    let delta = expires.saturating_sub(clk);
    let mut lvl = 0;
    // LVL_START(n) = (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT)
    while lvl + 1 < WHEEL_LVL_DEPTH && delta >= (WHEEL_LVL_SIZE - 1) << (lvl * WHEEL_LVL_CLK_SHIFT) {
        lvl += 1;
    }
    let shift = lvl * WHEEL_LVL_CLK_SHIFT;
    ((expires >> shift) + 1) << shift
}

/// What a timer's heap entry means when it pops.
#[derive(Debug, PartialEq, Eq)]
pub enum TimerFire {
    /// The deadline has passed: run the handler.
    Expired,
    /// The deadline moved later; the entry was re-queued for it.
    Requeue(Time),
    /// Cancelled, or superseded by an earlier entry: ignore.
    Stale,
}

/// A one-shot timer with lazy cancellation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer {
    deadline: Option<Time>,
    queued: Option<Time>,
}

impl Timer {
    /// Set the deadline; returns the time of a heap entry the caller must push, if any.
    pub fn arm(&mut self, at: Time) -> Option<Time> {
        self.deadline = Some(at);
        if self.queued.is_none_or(|q| at < q) {
            self.queued = Some(at);
            Some(at)
        } else {
            None
        }
    }
    pub fn cancel(&mut self) {
        self.deadline = None;
    }
    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }
    pub fn is_armed(&self) -> bool {
        self.deadline.is_some()
    }
    /// Classify a heap entry for this timer popped at `now`.
    pub fn fire(&mut self, now: Time) -> TimerFire {
        if self.queued != Some(now) {
            return TimerFire::Stale;
        }
        self.queued = None;
        match self.deadline {
            None => TimerFire::Stale,
            Some(d) if d > now => {
                self.queued = Some(d);
                TimerFire::Requeue(d)
            }
            Some(_) => {
                self.deadline = None;
                TimerFire::Expired
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_wheel_rounds_up_by_level_granularity() {
        // Level 0 (under 63 jiffies): one jiffy late.
        assert_eq!(timer_wheel_expiry(1007, 1000), 1008);
        // Level 1 (63..504): the next multiple of 8 after the expiry.
        assert_eq!(timer_wheel_expiry(1075, 1000), 1080);
        assert_eq!(timer_wheel_expiry(1080, 1000), 1088);
        // Level 2 (504..4032): multiples of 64.
        assert_eq!(timer_wheel_expiry(1000 + 1000, 1000), 2048);
    }

    #[test]
    fn events_pop_in_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Time(5), Event::Sample);
        q.push(Time(3), Event::End);
        q.push(Time(5), Event::LinkTxDone);
        assert_eq!(q.pop(), Some((Time(3), Event::End)));
        assert_eq!(q.pop(), Some((Time(5), Event::Sample)));
        assert_eq!(q.pop(), Some((Time(5), Event::LinkTxDone)));
    }

    #[test]
    fn timer_rearmed_later_fires_once_at_new_deadline() {
        let mut t = Timer::default();
        assert_eq!(t.arm(Time(10)), Some(Time(10)));
        assert_eq!(t.arm(Time(20)), None);
        assert_eq!(t.fire(Time(10)), TimerFire::Requeue(Time(20)));
        assert_eq!(t.fire(Time(20)), TimerFire::Expired);
    }

    #[test]
    fn timer_rearmed_earlier_ignores_old_entry() {
        let mut t = Timer::default();
        t.arm(Time(10));
        assert_eq!(t.arm(Time(5)), Some(Time(5)));
        assert_eq!(t.fire(Time(5)), TimerFire::Expired);
        assert_eq!(t.fire(Time(10)), TimerFire::Stale);
        t.arm(Time(30));
        t.cancel();
        assert_eq!(t.fire(Time(30)), TimerFire::Stale);
    }
}
