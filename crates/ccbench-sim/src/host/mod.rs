//! The sender host's CPU (docs/model.md, "Sender CPU"): one processor runs every sender-side
//! task of every flow in arrival order — ACK processing, pacing-timer and
//! TX-completion wake-ups, retransmission timers, the application's first write.
//! While it is busy or descheduled the work waits, and each task runs, stamps its
//! packets and samples the clock at the time it actually starts.

pub mod config;
pub mod cpu;
pub mod deadline;
pub mod presets;

pub use config::{CpuAvailability, CpuCost, HostConfig};

use crate::base::histogram::Histogram;
use crate::event::Schedule;
use crate::net::Packet;
use crate::tcp::SenderTimer;
use crate::time::{Dur, Time};
use cpu::Availability;
use deadline::DeadlineServer;
use std::collections::VecDeque;

/// `NAPI_POLL_WEIGHT`: a NAPI poll takes at most this many packets; the softirq then
/// polls again.
const NAPI_WEIGHT: u32 = 64;

/// The host's wake-up: its CPU may take its next task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuRun;

/// A piece of sender work for flow `flow`.
#[derive(Clone, Copy, Debug)]
pub enum Task {
    /// The application's first write (`tcp_sendmsg`).
    Start,
    /// An ACK taken from the NIC's receive ring.
    Ack(Packet),
    /// A sender timer that expired.
    Timer(SenderTimer),
}

impl Task {
    /// The work a task is before what it sends: an ACK, or a wake-up (through an
    /// hrtimer unless it is a TX completion, which arrives by interrupt).
    pub fn work(&self) -> Work {
        match self {
            Task::Start => Work { wakeups: 1, ..Work::default() },
            Task::Ack(_) => Work { acks: 1, ..Work::default() },
            Task::Timer(which) => {
                Work { wakeups: 1, timers: (*which != SenderTimer::TxCompletion) as u64, ..Work::default() }
            }
        }
    }
}

/// What a task did, which sets its cost.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Work {
    /// Times the CPU came back to waiting work after being off (descheduled or
    /// throttled), at a task's start or in its middle.
    pub resumes: u64,
    /// Tasks that found the CPU idle and woke it.
    pub idle_exits: u64,
    pub acks: u64,
    pub timers: u64,
    pub wakeups: u64,
    pub bursts: u64,
    pub packets: u64,
    pub bytes: u64,
    /// CPU time spent getting going again after absences (`per_resume_ns`,
    /// `per_idle_refill_ns`, scaled by `cache_decay_ns`).
    pub refill_ns: u64,
}

impl Work {
    fn add(&mut self, o: &Work) {
        self.resumes += o.resumes;
        self.idle_exits += o.idle_exits;
        self.acks += o.acks;
        self.timers += o.timers;
        self.wakeups += o.wakeups;
        self.bursts += o.bursts;
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.refill_ns += o.refill_ns;
    }

    /// The CPU time of the work counted, and of the refills already charged.
    pub fn cost(&self, c: &CpuCost) -> Dur {
        Dur(self.refill_ns
            + self.idle_exits * c.per_idle_exit_ns
            + self.acks * c.per_ack_ns
            + self.timers * c.per_timer_ns
            + self.wakeups * c.per_wakeup_ns
            + self.bursts * c.per_burst_ns
            + self.packets * c.per_packet_ns
            + self.bytes * c.per_byte_ps / 1000)
    }
}

/// When the CPU may run: fixed on/off intervals, or a SCHED_DEADLINE reservation whose
/// on-times follow the work.
enum Cpu {
    Intervals {
        avail: Availability,
        /// End of the on-interval in which the CPU last worked (a new one costs a resume).
        slice_end: Option<Time>,
    },
    Deadline(DeadlineServer),
}

pub struct Host {
    cpu: Cpu,
    cost: CpuCost,
    queue: VecDeque<(Time, u32, Task)>,
    busy_until: Time,
    /// When the CPU last finished a task: how long it has been away when the next starts.
    worked_until: Time,
    /// The next task woke the CPU from idle; it waited for the CPU to be given back.
    idle_exit: bool,
    resume: bool,
    /// A `CpuRun` event is in the heap.
    run_queued: bool,
    /// ACK tasks waiting, and the receive ring's capacity for them.
    pending_acks: u32,
    rx_ring: u32,
    pub busy: Dur,
    pub tasks: u64,
    /// Everything the CPU did.
    pub work: Work,
    /// ACKs dropped because the receive ring was full.
    pub rx_dropped: u64,
    /// How long tasks waited for the CPU, ns.
    pub wait_ns: Histogram,
    /// The NAPI poll the CPU is in, taking ACKs from the receive ring one after another:
    /// when it began and how many it has taken. The driver reaps TX completions when a
    /// poll begins (`virtnet_poll_cleantx`), so one that arrives during it reaches TCP
    /// Small Queues only at the next poll, the TX poll, or a transmit (`Io::reaped`).
    poll: Option<(Time, u32)>,
}

impl Host {
    /// None for an ideal host, which the world bypasses entirely.
    pub fn new(cfg: &HostConfig) -> Option<Host> {
        if cfg.is_ideal() {
            return None;
        }
        let cpu = match cfg.cpu {
            CpuAvailability::Deadline { runtime_ns, deadline_ns, period_ns, tick_ns } => {
                Cpu::Deadline(DeadlineServer::new(runtime_ns, deadline_ns, period_ns, tick_ns))
            }
            ref other => Cpu::Intervals { avail: Availability::new(other), slice_end: None },
        };
        Some(Host {
            cpu,
            cost: cfg.cost.clone(),
            queue: VecDeque::new(),
            busy_until: Time::ZERO,
            worked_until: Time::ZERO,
            idle_exit: false,
            resume: false,
            run_queued: false,
            pending_acks: 0,
            rx_ring: cfg.rx_ring,
            busy: Dur::ZERO,
            tasks: 0,
            work: Work::default(),
            rx_dropped: 0,
            wait_ns: Histogram::default(),
            poll: None,
        })
    }

    /// Queue a task that became due at `now`.
    pub fn submit(&mut self, now: Time, flow: u32, task: Task, q: &mut impl Schedule<CpuRun>) {
        if let Task::Ack(_) = task {
            if self.pending_acks >= self.rx_ring {
                self.rx_dropped += 1;
                return;
            }
            self.pending_acks += 1;
        }
        self.queue.push_back((now, flow, task));
        if !self.run_queued {
            self.run_queued = true;
            q.push(now.max(self.busy_until), CpuRun);
        }
    }

    /// On `CpuRun` at `now`: the task to run now, or None if the CPU is not free yet
    /// (the event is rescheduled for when it is).
    pub fn next_task(&mut self, now: Time, q: &mut impl Schedule<CpuRun>) -> Option<(u32, Task)> {
        self.run_queued = false;
        if self.queue.is_empty() {
            return None;
        }
        if now > self.busy_until {
            // The CPU went idle when its last task ended; this one wakes it.
            self.idle_exit = true;
            if let Cpu::Deadline(server) = &mut self.cpu {
                server.sleep(self.busy_until);
                self.busy_until = server.wake(now);
                self.resume = self.busy_until > now;
            }
        }
        let start = match &self.cpu {
            Cpu::Intervals { avail, .. } => avail.next_on(now.max(self.busy_until)),
            Cpu::Deadline(_) => now.max(self.busy_until),
        };
        if start > now {
            self.run_queued = true;
            q.push(start, CpuRun);
            return None;
        }
        let (due, flow, task) = self.queue.pop_front().expect("not empty");
        if let Task::Ack(_) = task {
            self.pending_acks -= 1;
        }
        // An ACK continues the poll unless the CPU went idle before it (the ring was empty
        // and the driver re-enabled its interrupt) or the poll took its weight; any other
        // task ends it.
        self.poll = match (task, self.poll) {
            (Task::Ack(_), Some((began, n))) if !self.idle_exit && n < NAPI_WEIGHT => Some((began, n + 1)),
            (Task::Ack(_), _) => Some((now, 1)),
            _ => None,
        };
        self.wait_ns.record(now.since(due).ns());
        Some((flow, task))
    }

    /// The task started at `now` did `work`: the CPU is busy until it is done.
    pub fn finished(&mut self, now: Time, mut work: Work, q: &mut impl Schedule<CpuRun>) {
        work.idle_exits = std::mem::take(&mut self.idle_exit) as u64;
        work.resumes = std::mem::take(&mut self.resume) as u64;
        if let Cpu::Intervals { avail, slice_end } = &mut self.cpu {
            let now_end = avail.on_until(now);
            if now_end != *slice_end {
                work.resumes = slice_end.is_some() as u64;
                *slice_end = now_end;
            }
        }
        // The caches went cold for as long as the CPU was away: since it went idle
        // (however long it then waited to be given back), or since it was taken from
        // work that waited for it.
        let away = now.ns().saturating_sub(self.worked_until.ns());
        let cost = &self.cost;
        work.refill_ns = if work.idle_exits > 0 {
            cost.cold(cost.per_idle_refill_ns, away)
        } else if work.resumes > 0 {
            cost.cold(cost.per_resume_ns, away)
        } else {
            0
        };
        let planned = work.cost(cost);
        // Taken away in the middle of the task, the CPU pays for each return.
        let refill = |off: u64| cost.cold(cost.per_resume_ns, off);
        let (end, returns) = match &mut self.cpu {
            Cpu::Intervals { avail, slice_end } => {
                let (end, returns) = avail.finish(now, planned, refill);
                *slice_end = avail.on_until(end).or(*slice_end);
                (end, returns)
            }
            Cpu::Deadline(server) => server.run(now, planned.ns(), refill),
        };
        work.resumes += returns.count;
        work.refill_ns += returns.refill_ns;
        self.busy = self.busy + planned + Dur(returns.refill_ns);
        self.tasks += 1;
        self.work.add(&work);
        self.busy_until = end;
        self.worked_until = end;
        if !self.queue.is_empty() && !self.run_queued {
            self.run_queued = true;
            q.push(self.busy_until, CpuRun);
        }
    }

    /// Up to when the task running at `now` sees TX completions: the start of the NAPI
    /// poll it is part of, or `now` for a task outside one.
    pub fn reaped(&self, now: Time) -> Time {
        self.poll.map_or(now, |(began, _)| began)
    }

    /// Long-run fraction of time the CPU is available.
    pub fn share(&self) -> f64 {
        match &self.cpu {
            Cpu::Intervals { avail, .. } => avail.share(),
            Cpu::Deadline(server) => server.share(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_costs_add_up_per_unit() {
        let c = CpuCost {
            per_ack_ns: 4,
            per_burst_ns: 2,
            per_packet_ns: 21,
            per_byte_ps: 7300,
            per_wakeup_ns: 20,
            per_timer_ns: 60,
            per_resume_ns: 100,
            per_idle_exit_ns: 30,
            per_idle_refill_ns: 50,
            cache_decay_ns: 0,
        };
        let w = Work {
            resumes: 1,
            idle_exits: 1,
            acks: 2,
            timers: 1,
            wakeups: 1,
            bursts: 3,
            packets: 5,
            bytes: 1000,
            refill_ns: 100,
        };
        assert_eq!(w.cost(&c), Dur(100 + 30 + 2 * 4 + 60 + 20 + 3 * 2 + 5 * 21 + 7300));
    }

    #[test]
    fn an_absence_costs_what_the_caches_lost() {
        let c = CpuCost { per_resume_ns: 1000, cache_decay_ns: 1000, ..CpuCost::default() };
        assert_eq!(c.cold(1000, 0), 0);
        assert_eq!(c.cold(1000, 1000), 632); // 1 - 1/e
        assert_eq!(c.cold(1000, 1_000_000), 1000);
        assert_eq!(c.cold(0, 1_000_000), 0);
        // No decay: every return costs the whole refill.
        assert_eq!(CpuCost::default().cold(700, 1), 700);
    }

    #[test]
    fn a_task_after_idle_pays_the_refill_of_its_idle_time() {
        let cfg = HostConfig {
            cost: CpuCost {
                per_ack_ns: 1000,
                per_idle_exit_ns: 100,
                per_idle_refill_ns: 2000,
                cache_decay_ns: 1000,
                ..CpuCost::default()
            },
            ..HostConfig::default()
        };
        let mut h = Host::new(&cfg).unwrap();
        let mut q = crate::event::EventQueue::<CpuRun>::default();
        // Idle since 0, an ACK at 1 us: 1000 + 100 + 2000 x (1 - 1/e) = 2364 ns.
        h.submit(Time(1000), 0, Task::Ack(Packet::default()), &mut q);
        assert_eq!(q.pop(), Some((Time(1000), CpuRun)));
        assert!(h.next_task(Time(1000), &mut q).is_some());
        h.finished(Time(1000), Work { acks: 1, ..Work::default() }, &mut q);
        assert_eq!(h.busy, Dur(2364));
        assert_eq!((h.work.idle_exits, h.work.refill_ns), (1, 1264));
        // Another queued right behind it finds the CPU busy: no refill.
        h.submit(Time(1500), 0, Task::Ack(Packet::default()), &mut q);
        assert_eq!(q.pop(), Some((Time(3364), CpuRun)));
        assert!(h.next_task(Time(3364), &mut q).is_some());
        h.finished(Time(3364), Work { acks: 1, ..Work::default() }, &mut q);
        assert_eq!(h.busy, Dur(3364));
    }

    /// Runs every task that becomes due, each costing `work`; the start of each with
    /// what it has reaped up to.
    fn drain(h: &mut Host, q: &mut crate::event::EventQueue<CpuRun>, work: Work) -> Vec<(u64, u64)> {
        let mut seen = Vec::new();
        while let Some((t, CpuRun)) = q.pop() {
            if h.next_task(t, q).is_some() {
                seen.push((t.ns(), h.reaped(t).ns()));
                h.finished(t, work, q);
            }
        }
        seen
    }

    #[test]
    fn acks_taken_back_to_back_are_one_poll_that_reaps_when_it_begins() {
        let cfg = HostConfig { cost: CpuCost { per_ack_ns: 1000, ..CpuCost::default() }, ..HostConfig::default() };
        let mut h = Host::new(&cfg).unwrap();
        let mut q = crate::event::EventQueue::<CpuRun>::default();
        let ack = Work { acks: 1, ..Work::default() };
        for _ in 0..3 {
            h.submit(Time(10_000), 0, Task::Ack(Packet::default()), &mut q);
        }
        assert_eq!(drain(&mut h, &mut q, ack), [(10_000, 10_000), (11_000, 10_000), (12_000, 10_000)]);
        // The CPU went idle: the next ACK is a poll of its own.
        h.submit(Time(20_000), 0, Task::Ack(Packet::default()), &mut q);
        assert_eq!(drain(&mut h, &mut q, ack), [(20_000, 20_000)]);
        // A timer (the TX poll, a pacing timer) is in no poll, and ends the one before it.
        h.submit(Time(30_000), 0, Task::Ack(Packet::default()), &mut q);
        h.submit(Time(30_000), 0, Task::Timer(SenderTimer::TxCompletion), &mut q);
        h.submit(Time(30_000), 0, Task::Ack(Packet::default()), &mut q);
        assert_eq!(drain(&mut h, &mut q, ack), [(30_000, 30_000), (31_000, 31_000), (32_000, 32_000)]);
    }

    #[test]
    fn a_poll_takes_napi_weight_acks_then_another_begins() {
        let cfg = HostConfig { cost: CpuCost { per_ack_ns: 1000, ..CpuCost::default() }, ..HostConfig::default() };
        let mut h = Host::new(&cfg).unwrap();
        let mut q = crate::event::EventQueue::<CpuRun>::default();
        for _ in 0..NAPI_WEIGHT + 1 {
            h.submit(Time(0), 0, Task::Ack(Packet::default()), &mut q);
        }
        let seen = drain(&mut h, &mut q, Work { acks: 1, ..Work::default() });
        assert!(seen[..NAPI_WEIGHT as usize].iter().all(|&(_, reaped)| reaped == 0));
        assert_eq!(seen[NAPI_WEIGHT as usize], (64_000, 64_000));
    }

    #[test]
    fn tasks_wait_in_order_and_a_full_ring_drops_acks() {
        let cfg = HostConfig {
            cost: CpuCost { per_ack_ns: 1000, ..CpuCost::default() },
            rx_ring: 2,
            ..HostConfig::default()
        };
        let mut h = Host::new(&cfg).unwrap();
        let mut q = crate::event::EventQueue::<CpuRun>::default();
        for _ in 0..3 {
            h.submit(Time(0), 0, Task::Ack(Packet::default()), &mut q);
        }
        assert_eq!(h.rx_dropped, 1);
        assert_eq!(q.pop(), Some((Time(0), CpuRun)));
        assert!(matches!(h.next_task(Time(0), &mut q), Some((0, Task::Ack(_)))));
        h.finished(Time(0), Work { acks: 1, ..Work::default() }, &mut q);
        // The second ACK runs when the first is done.
        assert_eq!(q.pop(), Some((Time(1000), CpuRun)));
        assert!(h.next_task(Time(1000), &mut q).is_some());
        h.finished(Time(1000), Work { acks: 1, ..Work::default() }, &mut q);
        assert!(q.pop().is_none());
        assert_eq!(h.wait_ns.count(), 2);
    }
}
