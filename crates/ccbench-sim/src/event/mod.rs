//! The event core: a min-heap of events ordered by (time, sequence number), and lazily
//! cancelled timers. It knows nothing of what the events mean: each layer above names its
//! own wake-ups (`tcp::Wake`, `host::CpuRun`) and the assembly's `world::Event` holds them all.
//!
//! Components keep the heap small: a FIFO link schedules only its head packet, and each
//! timer keeps at most one live entry (re-arming later leaves the entry in place and
//! moves it when it fires early), so the heap holds O(flows) entries.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed so that `BinaryHeap` pops the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue { heap: BinaryHeap::new(), next_seq: 0 }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, time: Time, event: E) {
        self.heap.push(Entry { time, seq: self.next_seq, event });
        self.next_seq += 1;
    }
    pub fn pop(&mut self) -> Option<(Time, E)> {
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
}

/// Where a component schedules its wake-ups `W`: the world's queue, whose event type can
/// hold every layer's wake-ups, or a component's own queue in its tests.
pub trait Schedule<W> {
    fn push(&mut self, time: Time, wake: W);
    /// Arm `timer` for `at`, pushing a heap entry only when none is queued early enough.
    fn arm(&mut self, timer: &mut Timer, at: Time, wake: W) {
        if let Some(t) = timer.arm(at) {
            self.push(t, wake);
        }
    }
}

impl<E, W: Into<E>> Schedule<W> for EventQueue<E> {
    #[inline]
    fn push(&mut self, time: Time, wake: W) {
        EventQueue::push(self, time, wake.into());
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
        q.push(Time(5), "sample");
        q.push(Time(3), "end");
        q.push(Time(5), "link");
        assert_eq!(q.pop(), Some((Time(3), "end")));
        assert_eq!(q.pop(), Some((Time(5), "sample")));
        assert_eq!(q.pop(), Some((Time(5), "link")));
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
