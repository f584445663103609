//! Open-loop arrivals in the world: each group's connections open when their process
//! says, on lanes kept in a pool per group (a finished connection's lane carries the
//! group's next one, its packets still in flight told apart by the connection number).
//! A finished connection leaves only its figures (`ConnRecord`), not its state, so that
//! memory follows the connections open at once, not the run's length.

use super::{endpoints, Event, World};
use crate::arrivals::ArrivalProcess;
use crate::base::rng;
use crate::config::{ArrivalsConfig, Direction, Scenario};
use crate::event::EventQueue;
use crate::observe::series::{Table, Values};
use crate::summary::ConnMeasured;
use crate::tcp::config::Connect;
use crate::tcp::{Receiver, Sender};
use crate::time::{Dur, Time};
use std::collections::HashMap;

/// One finished (or still open) connection's figures.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnRecord {
    group: u16,
    arrival: Time,
    size: u64,
    done: Option<Time>,
    retransmits: u64,
}

struct Group {
    process: ArrivalProcess,
    /// Lanes of this group whose connection has finished.
    free: Vec<u32>,
}

/// A lane of the arrivals' pool: its group, its current connection's number, and that
/// connection while it is open.
struct Slot {
    group: u16,
    conn: u16,
    open: Option<Box<Open>>,
}

struct Open {
    sender: Sender,
    receiver: Receiver,
    record: usize,
}

pub(super) struct Arrivals {
    groups: Vec<Group>,
    /// Lane `base + j` is slot `j`.
    base: u32,
    slots: Vec<Slot>,
    pub(super) records: Vec<ConnRecord>,
}

impl Arrivals {
    /// The scenario's groups, their first arrivals scheduled; None without any.
    pub(super) fn new(s: &Scenario, base: u32, end: Time, q: &mut EventQueue<Event>) -> Option<Arrivals> {
        if s.arrivals.is_empty() {
            return None;
        }
        let groups = (s.arrivals.iter().enumerate())
            .map(|(k, a)| {
                let mut process = ArrivalProcess::new(a, s.arrival_rate(k), s.seed, k as u64, end);
                if let Some(t) = process.next_after(Time(a.start_ns)) {
                    q.push(t, Event::Arrival(k as u32));
                }
                Group { process, free: Vec::new() }
            })
            .collect();
        Some(Arrivals { groups, base, slots: Vec::new(), records: Vec::new() })
    }

    /// Lane `i`'s open connection, if it is an arrivals' lane with one.
    #[inline]
    fn open(&mut self, i: u32) -> Option<&mut Open> {
        let j = i.checked_sub(self.base)?;
        self.slots.get_mut(j as usize)?.open.as_deref_mut()
    }

    pub(super) fn sender(&mut self, i: u32) -> Option<&mut Sender> {
        self.open(i).map(|o| &mut o.sender)
    }

    pub(super) fn receiver(&mut self, i: u32) -> Option<&mut Receiver> {
        self.open(i).map(|o| &mut o.receiver)
    }

    /// Every open connection's sender and receiver (for the audits).
    pub(super) fn open_endpoints(&self) -> impl Iterator<Item = (u32, &Sender, &Receiver)> {
        (self.slots.iter().enumerate())
            .filter_map(|(j, s)| s.open.as_ref().map(|o| (self.base + j as u32, &o.sender, &o.receiver)))
    }

    /// The per-connection table: group, arrival, size, FCT and slowdown (NaN unfinished).
    pub(super) fn table(records: &[ConnMeasured]) -> Table {
        let f = |get: fn(&ConnMeasured) -> f64| Values::F64(records.iter().map(get).collect());
        let ms = |t: Option<u64>| t.map_or(f64::NAN, |ns| ns as f64 / 1e6);
        Table {
            columns: vec![
                ("group".into(), Values::U32(records.iter().map(|r| r.group).collect())),
                ("arrival_s".into(), f(|r| r.arrival_ns as f64 / 1e9)),
                ("size_bytes".into(), f(|r| r.size_bytes as f64)),
                ("fct_ms".into(), Values::F64(records.iter().map(|r| ms(r.fct_ns)).collect())),
                ("ideal_fct_ms".into(), Values::F64(records.iter().map(|r| ms(r.ideal_fct_ns)).collect())),
                ("retransmits".into(), f(|r| r.retransmits as f64)),
            ],
        }
    }
}

impl World {
    /// A connection of group `k` arrives at `now`: it opens on a free lane of its group
    /// (or a new one), and the next arrival is scheduled.
    pub(super) fn arrive(&mut self, now: Time, k: u32) {
        let arrivals = self.arrivals.as_mut().expect("an arrival needs arrivals");
        let g = &mut arrivals.groups[k as usize];
        let size = g.process.size();
        if let Some(t) = g.process.next_after(now) {
            self.q.push(t, Event::Arrival(k));
        }
        let cfg = &self.scenario.arrivals[k as usize];
        let j = match g.free.pop() {
            Some(j) => j,
            None => {
                let j = arrivals.slots.len() as u32;
                arrivals.slots.push(Slot { group: k as u16, conn: 0, open: None });
                let up = cfg.direction == Direction::Up;
                self.path.add_lane(Dur(cfg.access_delay_ns), up);
                self.meter.add_lane(up);
                self.up.push(up);
                j
            }
        };
        let (lane, record) = (arrivals.base + j, arrivals.records.len());
        let slot = &mut arrivals.slots[j as usize];
        slot.conn = slot.conn.wrapping_add(1);
        arrivals.records.push(ConnRecord { group: k as u16, arrival: now, size, done: None, retransmits: 0 });
        let stream = rng::stream(self.scenario.seed, "arrival-cc", record as u64);
        let at = format!("arrivals[{k}]");
        let flow = cfg.flow(size);
        let (sender, receiver) = endpoints(&self.scenario, lane, &flow, &at, slot.conn, stream, false, &self.objects)
            .expect("validated at the start");
        slot.open = Some(Box::new(Open { sender, receiver, record }));
        match cfg.connect {
            Connect::Receiver => self.at_receiver(now, lane, |r, io| r.connect(now, io)),
            Connect::Ahead | Connect::Sender => self.sender_task(now, lane, crate::host::Task::Start),
        }
    }

    /// Lane `i`'s connection has delivered everything at `now`: keep its figures, free
    /// its lane for the group's next.
    pub(super) fn arrival_done(&mut self, i: u32, now: Time) {
        let arrivals = self.arrivals.as_mut().expect("an arrivals lane");
        let j = (i - arrivals.base) as usize;
        let slot = &mut arrivals.slots[j];
        let mut open = slot.open.take().expect("an open connection");
        let r = &mut arrivals.records[open.record];
        r.done = Some(now);
        r.retransmits = open.sender.totals(now).retransmits;
        open.sender.close(now);
        arrivals.groups[slot.group as usize].free.push(i - arrivals.base);
    }

    /// Every connection's figures, with the FCT of its transfer alone on the empty path.
    pub(super) fn connections_measured(&self) -> Vec<ConnMeasured> {
        let Some(arrivals) = &self.arrivals else { return Vec::new() };
        let mut alone = Alone::new(&self.scenario);
        (arrivals.records.iter())
            .map(|r| {
                let fct_ns = r.done.map(|t| t.since(r.arrival).ns());
                ConnMeasured {
                    group: r.group as u32,
                    arrival_ns: r.arrival.ns(),
                    size_bytes: r.size,
                    fct_ns,
                    ideal_fct_ns: fct_ns.and_then(|_| alone.fct_ns(r.group as usize, r.size)),
                    retransmits: r.retransmits,
                }
            })
            .collect()
    }
}

/// The FCT alone on the empty path of each `(group, size)` transfer, as the simulator's
/// summary takes it (simulated once per distinct size).
pub fn alone_fcts(s: &Scenario, transfers: &[(usize, u64)]) -> Vec<Option<u64>> {
    let mut alone = Alone::new(s);
    transfers.iter().map(|&(group, size)| alone.fct_ns(group, size)).collect()
}

/// The FCT of a group's transfer alone on the empty path: the scenario's link, stack and
/// host with that one connection, simulated once per distinct size. Every size is run
/// as it is: interpolating between sizes misjudges where slow start overshoots the
/// buffer, and would put a transfer's slowdown below 1.
struct Alone<'a> {
    s: &'a Scenario,
    memo: HashMap<(usize, u64), Option<u64>>,
}

impl<'a> Alone<'a> {
    fn new(s: &'a Scenario) -> Alone<'a> {
        Alone { s, memo: HashMap::new() }
    }

    fn fct_ns(&mut self, group: usize, size: u64) -> Option<u64> {
        let s = self.s;
        *self.memo.entry((group, size)).or_insert_with(|| alone_fct_ns(s, &s.arrivals[group], size))
    }
}

/// One transfer of `size` bytes of group `a`, alone on the scenario's path: its FCT, if
/// it completes within the run's duration (a transfer that finished in the run with
/// company does alone; a size no run could carry is not simulated for days).
pub fn alone_fct_ns(s: &Scenario, a: &ArrivalsConfig, size: u64) -> Option<u64> {
    let alone = Scenario {
        sample_interval_ns: 0,
        flows: vec![a.flow(size)],
        udp: Vec::new(),
        arrivals: Vec::new(),
        ..s.clone()
    };
    // Only its completion: no summary, whose statistics would cost more than the run.
    let mut world = World::new(&alone).expect("validated as the arrivals' connections");
    world.run_events(0).expect("audits are off");
    world.receivers[0].completed_at.map(|t| t.ns())
}
