//! A thread under SCHED_DEADLINE, as the host kernel runs a VM's vCPU thread
//! (kernel/sched/deadline.c): `runtime` of CPU time per `period`, to be used within
//! `deadline` of the period's start.
//!
//! - Running consumes the budget, but the kernel notices an exhausted budget only at its
//!   next scheduler tick (`task_tick_dl`; `HRTICK_DL` is off by default) or when the
//!   thread sleeps (`dequeue_task_dl`): a busy thread overruns by up to a tick and pays
//!   the overrun back from later periods (`replenish_dl_entity`).
//! - A throttled thread waits for its next period (`start_dl_timer`, `dl_next_period`).
//! - A waking thread starts a new period if its deadline has passed or its budget left
//!   exceeds its bandwidth until the deadline (`update_dl_entity`,
//!   `dl_entity_overflow`). With a deadline shorter than the period it is throttled
//!   until the next period if it wakes between the two (`dl_check_constrained_dl`), and
//!   otherwise keeps only the budget its density allows (`update_dl_revised_wakeup`).
//!
//! With deadline = runtime (the 2BRobust set-up) a busy thread gets one window of
//! `runtime` at the start of every period; with deadline = period it may spend its
//! budget at any time of the period.

use super::cpu::{Pending, Returns};
use crate::time::Time;

/// `DL_SCALE`: `dl_entity_overflow` compares products of values shifted by 10 bits.
const DL_SCALE: u32 = 10;
/// `BW_SHIFT`: fixed-point bandwidths and densities (`to_ratio`).
const BW_SHIFT: u32 = 20;

#[derive(Clone, Debug)]
pub struct DeadlineServer {
    runtime: i64,
    deadline_rel: u64,
    period: u64,
    tick: u64,
    /// `dl_se->runtime`: budget left in this period (negative after an overrun).
    budget: i64,
    /// `dl_se->deadline`, absolute.
    deadline: u64,
    /// The replenishment timer, while throttled.
    throttled_until: Option<u64>,
    /// Times the thread was throttled.
    pub throttles: u64,
}

impl DeadlineServer {
    /// Parameters set on a running thread at time 0 (`setup_new_dl_entity`).
    pub fn new(runtime: u64, deadline: u64, period: u64, tick: u64) -> DeadlineServer {
        DeadlineServer {
            runtime: runtime as i64,
            deadline_rel: deadline,
            period,
            tick: tick.max(1),
            budget: runtime as i64,
            deadline,
            throttled_until: None,
            throttles: 0,
        }
    }

    pub fn share(&self) -> f64 {
        self.runtime as f64 / self.period as f64
    }

    fn implicit(&self) -> bool {
        self.deadline_rel == self.period
    }

    /// `dl_next_period`: the start of the period after the current one.
    fn next_period(&self) -> u64 {
        self.deadline - self.deadline_rel + self.period
    }

    /// `replenish_dl_entity` at `now`.
    fn replenish(&mut self, now: u64) {
        while self.budget <= 0 {
            self.deadline += self.period;
            self.budget += self.runtime;
        }
        if self.deadline < now {
            self.new_period(now);
        }
    }

    /// `replenish_dl_new_period`.
    fn new_period(&mut self, now: u64) {
        self.deadline = now + self.deadline_rel;
        self.budget = self.runtime;
    }

    /// Throttle at `now` (`start_dl_timer`): the time the thread may run again. A timer
    /// that would fire in the past replenishes at once.
    fn throttle(&mut self, now: u64) -> u64 {
        let at = self.next_period();
        if at <= now {
            self.replenish(now);
            return now;
        }
        self.throttles += 1;
        self.throttled_until = Some(at);
        at
    }

    /// `dl_entity_overflow`: the budget left would exceed the bandwidth until the deadline.
    fn overflow(&self, t: u64) -> bool {
        let left = (self.deadline_rel >> DL_SCALE) as u128 * ((self.budget.max(0) as u64) >> DL_SCALE) as u128;
        let right = (self.deadline.saturating_sub(t) >> DL_SCALE) as u128 * ((self.runtime as u64) >> DL_SCALE) as u128;
        right < left
    }

    /// The thread goes to sleep at `t`: an exhausted budget is noticed now.
    pub fn sleep(&mut self, t: Time) {
        if self.budget <= 0 && self.throttled_until.is_none() {
            self.throttle(t.ns());
        }
    }

    /// The thread wakes at `t`: when it may run (later than `t` while throttled).
    pub fn wake(&mut self, t: Time) -> Time {
        let t = t.ns();
        if let Some(at) = self.throttled_until.take() {
            // The replenishment timer (`dl_task_timer`).
            self.replenish(at);
            if at >= t {
                return Time(at);
            }
        }
        if !self.implicit() && self.deadline < t && t < self.next_period() {
            // `dl_check_constrained_dl`.
            self.budget = self.budget.min(0);
            let at = self.throttle(t);
            if at > t {
                self.throttled_until = None;
                self.replenish(at);
                return Time(at);
            }
        }
        if self.deadline < t || self.overflow(t) {
            if !self.implicit() && self.deadline >= t {
                // `update_dl_revised_wakeup`: the budget the density allows until the
                // deadline.
                let density = ((self.runtime as u128) << BW_SHIFT) / self.deadline_rel as u128;
                self.budget = ((density * (self.deadline - t) as u128) >> BW_SHIFT) as i64;
            } else {
                self.new_period(t);
            }
        }
        Time(t)
    }

    /// The thread, running from `start`, does `work` ns of CPU time: when it is done.
    /// Throttles at the ticks that find the budget exhausted stretch it, and each return
    /// after a throttle of `d` adds `refill(d)` of work.
    pub fn run(&mut self, start: Time, work: u64, refill: impl Fn(u64) -> u64) -> (Time, Returns) {
        let (mut t, mut left) = (start.ns(), Pending::new(work));
        let mut returns = Returns::default();
        loop {
            // The first tick after `t` at which the budget is used up.
            let spent_at = t + self.budget.max(1) as u64;
            let tick = spent_at.div_ceil(self.tick) * self.tick;
            if t + left.total() <= tick {
                self.budget -= left.total() as i64;
                return (Time(t + left.total()), returns);
            }
            let ran = tick - t;
            self.budget -= ran as i64;
            left.run(ran);
            t = self.throttle(tick);
            if self.throttled_until.take().is_some() {
                self.replenish(t);
            }
            if t > tick {
                returns.add(left.come_back(refill(t - tick)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn free(_: u64) -> u64 {
        0
    }

    #[test]
    fn a_busy_thread_with_deadline_equal_to_runtime_gets_a_window_each_period() {
        // 2 ms of 10 ms, tick 0.5 ms (tick-aligned budget: no overrun).
        let mut s = DeadlineServer::new(2 * MS, 2 * MS, 10 * MS, MS / 2);
        // 5 ms of work from 0: 2 + 2 + 1 ms in three periods.
        assert_eq!(s.run(Time(0), 5 * MS, free).0, Time(21 * MS));
        assert_eq!(s.throttles, 2);
        assert!((s.share() - 0.2).abs() < 1e-12);
    }

    #[test]
    fn each_return_from_a_throttle_adds_the_refill_of_its_absence() {
        // 2 ms of 10 ms, 5 ms of work, and each return costs an eighth of the time away:
        // 0-2, 10-12 (+1 ms after 8 ms away), 20-22 (+1), 30-32 (+1).
        let mut s = DeadlineServer::new(2 * MS, 2 * MS, 10 * MS, MS / 2);
        let (end, returns) = s.run(Time(0), 5 * MS, |off| off / 8);
        assert_eq!(end, Time(32 * MS));
        assert_eq!(returns, Returns { count: 3, refill_ns: 3 * MS });
    }

    #[test]
    fn an_overrun_up_to_the_tick_is_paid_back_from_later_periods() {
        // 150 us of every 1 ms, tick 4 ms. A busy thread runs to the first tick, 3.85 ms
        // over budget; 26 periods repay it and their timer is already due, so it runs on
        // with 50 us, to the next tick (debt 3.95 ms, deadline 26.15 ms). Then it waits
        // for its next period, 27 ms, and runs the last 1 ms of its 9 ms of work.
        let mut s = DeadlineServer::new(150 * US, 150 * US, MS, 4 * MS);
        assert_eq!(s.run(Time(0), 9 * MS, free).0, Time(28 * MS));
        assert_eq!(s.throttles, 1);
    }

    #[test]
    fn a_thread_waking_after_its_window_waits_for_the_next_period() {
        // deadline = runtime = 2 ms of 10 ms: waking at 5 ms, between the deadline and
        // the next period, throttles it to 10 ms (`dl_check_constrained_dl`).
        let mut s = DeadlineServer::new(2 * MS, 2 * MS, 10 * MS, MS / 4);
        assert_eq!(s.run(Time(0), MS / 4, free).0, Time(MS / 4));
        s.sleep(Time(MS / 4));
        assert_eq!(s.wake(Time(5 * MS)), Time(10 * MS));
        // It then has a full window: 2 ms of work ends at 12 ms.
        assert_eq!(s.run(Time(10 * MS), 2 * MS, free).0, Time(12 * MS));
    }

    #[test]
    fn a_thread_waking_inside_its_window_keeps_only_what_is_left_of_it() {
        // Woken at 1.5 ms with 1.75 ms of budget left and 0.5 ms to the deadline: the
        // revised wake-up leaves 0.5 ms (density 1).
        let mut s = DeadlineServer::new(2 * MS, 2 * MS, 10 * MS, MS / 4);
        s.run(Time(0), MS / 4, free);
        s.sleep(Time(MS / 4));
        assert_eq!(s.wake(Time(3 * MS / 2)), Time(3 * MS / 2));
        assert_eq!(s.run(Time(3 * MS / 2), MS, free).0, Time(10 * MS + MS / 2));
    }

    #[test]
    fn with_deadline_equal_to_period_a_sleeping_thread_spends_its_budget_anywhere() {
        // 2 ms of 10 ms, implicit deadline: 1 ms at 0 and 1 ms at 5 ms, each at once.
        let mut s = DeadlineServer::new(2 * MS, 10 * MS, 10 * MS, MS / 4);
        assert_eq!(s.run(Time(0), MS, free).0, Time(MS));
        s.sleep(Time(MS));
        // 1 ms left for the 5 ms to the deadline is exactly the bandwidth: no overflow.
        assert_eq!(s.wake(Time(5 * MS)), Time(5 * MS));
        assert_eq!(s.run(Time(5 * MS), MS, free).0, Time(6 * MS));
        // The budget is gone: sleeping throttles it to the deadline, 10 ms.
        s.sleep(Time(6 * MS));
        assert_eq!(s.wake(Time(9 * MS)), Time(10 * MS));
    }

    #[test]
    fn a_waking_thread_with_too_much_budget_left_starts_a_new_period() {
        // 2 ms of 10 ms, implicit: 0.5 ms used, woken at 9 ms with 1.5 ms left and 1 ms
        // to the deadline: overflow, so a new period from 9 ms with the full 2 ms.
        let mut s = DeadlineServer::new(2 * MS, 10 * MS, 10 * MS, MS / 4);
        s.run(Time(0), MS / 2, free);
        s.sleep(Time(MS / 2));
        assert_eq!(s.wake(Time(9 * MS)), Time(9 * MS));
        assert_eq!(s.run(Time(9 * MS), 2 * MS, free).0, Time(11 * MS));
    }
}
