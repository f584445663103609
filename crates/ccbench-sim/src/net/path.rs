//! The dumbbell's path, sans-IO: the one network that the simulator's world and the
//! emulator both drive.
//!
//! ```text
//! near --NIC (nic_rate, access delay)--> bottleneck --(rate)--> delay rtt/2 --------------> far
//! near <------------ delay rtt/2 + access delay <-- [reverse bottleneck] <--[far NIC]-- far
//! ```
//!
//! Each lane (a flow; the emulator adds one for packets of no flow) has its own NICs and
//! return delay line; the bottleneck, the forward delay line and the reverse direction's
//! bottleneck are shared. A lane going down has its sender near and its receiver far; a
//! lane going up the other way round, so that its data queues at the reverse bottleneck
//! with the down lanes' ACKs, and its ACKs at the forward one with their data. A down
//! lane's ACKs skip the far NIC (a 52-byte ACK takes 42 ns at 10 Gbit/s); an up lane's
//! data crosses it at `nic_rate`, as the near sender's does its NIC. The caller owns the clock: it hands packets in with
//! [`Path::send`] and [`Path::reply`], keeps the wake-ups the path schedules through
//! [`Schedule`], and calls [`Path::handle`] when one is due, which returns the packet
//! (if any) that reaches an end. What happens on the way (a packet entering or leaving
//! the bottleneck, a drop) is told to a [`PathObserver`].

use super::aqm::Dropped;
use super::{Bottleneck, Packet, Pipe};
use crate::event::Schedule;
use crate::time::{Dur, Time};
use crate::units::BitRate;

/// What the path asks to be woken for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathWake {
    /// The head of lane `.0`'s NIC pipe reaches the bottleneck.
    NicExit(u32),
    /// The bottleneck's next service instant: its head packet is serialized, or (on a
    /// trace) a delivery opportunity comes.
    BottleneckService,
    /// The reverse bottleneck's next service instant.
    ReverseService,
    /// The head of the forward delay line reaches its receiver.
    ForwardExit,
    /// The head of lane `.0`'s return path reaches its sender.
    ReverseExit(u32),
    /// Step `.0` of the RTT schedule takes effect.
    RttStep(u32),
    /// The head of lane `.0`'s far NIC (an up lane's sender) reaches the reverse
    /// bottleneck.
    FarNicExit(u32),
}

/// Which end a packet reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Sender,
    Receiver,
}

/// A packet reaching an end of the path.
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    pub to: End,
    /// The lane it travelled in (the return path's lane for ACKs).
    pub lane: u32,
    pub pkt: Packet,
}

/// A direction of the path: down through the forward bottleneck, up through the reverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Down,
    Up,
}

/// What the path tells as it happens, at the bottleneck of direction `dir`. Every
/// method defaults to doing nothing.
pub trait PathObserver {
    /// A packet leaves its NIC and is offered to the bottleneck.
    fn entered(&mut self, _dir: Dir, _now: Time, _pkt: &Packet) {}
    /// A packet leaves the bottleneck; `chained` when it started right as the previous
    /// one finished (the link was busy in between; told of the forward one only).
    fn left(&mut self, _dir: Dir, _now: Time, _pkt: &Packet, _chained: bool) {}
    /// The bottleneck dropped a packet (random loss, overflow, AQM).
    fn dropped(&mut self, _dir: Dir, _drop: &Dropped) {}
}

/// The per-lane and shared delays a path is built with.
pub struct PathShape {
    /// The senders' NIC rate (every lane's).
    pub nic_rate: BitRate,
    /// Half the base RTT: the forward delay line, and the return's besides the access.
    pub one_way: Dur,
    /// Each lane's extra delay on its access link, paid in both directions.
    pub access: Vec<Dur>,
    /// The RTT schedule: at each (time from its origin), the new base RTT.
    pub rtt_steps: Vec<(Dur, Dur)>,
}

pub struct Path {
    pub bottleneck: Bottleneck,
    /// The reverse direction's bottleneck, if any (else a delay line).
    pub reverse_bottleneck: Option<Bottleneck>,
    nic: Vec<Pipe>,
    far_nic: Vec<Pipe>,
    /// Which lanes go up (their sender far, their data through the reverse bottleneck).
    up: Vec<bool>,
    nic_rate: BitRate,
    forward: Pipe,
    reverse: Vec<Pipe>,
    access: Vec<Dur>,
    rtt_steps: Vec<(Dur, Dur)>,
    /// Packets leaving a link at one service event (reused).
    departed: Vec<Packet>,
    /// Whether the packet now on the bottleneck's wire started right as the previous one
    /// finished.
    on_wire_chained: bool,
}

impl Path {
    /// `up`: which lanes go up (none if shorter than the lanes).
    pub fn new(shape: PathShape, bottleneck: Bottleneck, reverse: Option<Bottleneck>, mut up: Vec<bool>) -> Path {
        let PathShape { nic_rate, one_way, access, rtt_steps } = shape;
        up.resize(access.len(), false);
        debug_assert!(reverse.is_some() || !up.contains(&true), "an up lane needs a reverse bottleneck");
        Path {
            bottleneck,
            reverse_bottleneck: reverse,
            nic: access.iter().map(|&a| Pipe::new(Some(nic_rate), a)).collect(),
            far_nic: access.iter().map(|_| Pipe::new(Some(nic_rate), Dur::ZERO)).collect(),
            up,
            nic_rate,
            forward: Pipe::new(None, one_way),
            reverse: access.iter().map(|&a| Pipe::new(None, one_way + a)).collect(),
            access,
            rtt_steps,
            departed: Vec::new(),
            on_wire_chained: false,
        }
    }

    /// A new lane with access delay `access`, going up if `up`; returns its number.
    pub fn add_lane(&mut self, access: Dur, up: bool) -> u32 {
        debug_assert!(self.reverse_bottleneck.is_some() || !up, "an up lane needs a reverse bottleneck");
        self.nic.push(Pipe::new(Some(self.nic_rate), access));
        self.far_nic.push(Pipe::new(Some(self.nic_rate), Dur::ZERO));
        // The return delay line takes the base RTT in force (an RTT step may have moved it).
        self.reverse.push(Pipe::new(None, self.forward.delay() + access));
        self.access.push(access);
        self.up.push(up);
        self.access.len() as u32 - 1
    }

    /// Schedule the RTT schedule's steps, counted from `origin`.
    pub fn start_rtt_schedule(&self, origin: Time, q: &mut impl Schedule<PathWake>) {
        for (k, &(at, _)) in self.rtt_steps.iter().enumerate() {
            q.push(origin + at, PathWake::RttStep(k as u32));
        }
    }

    /// Whether lane `lane` goes up.
    #[inline(always)]
    pub fn is_up(&self, lane: u32) -> bool {
        self.up[lane as usize]
    }

    /// Lane `lane`'s sender hands `pkt` to its NIC at `now` (the near one, or the far one
    /// for an up lane). Returns when the NIC will have serialized it.
    #[inline(always)]
    pub fn send(&mut self, now: Time, lane: u32, pkt: Packet, q: &mut impl Schedule<PathWake>) -> Time {
        if self.up[lane as usize] {
            return self.far_send(now, lane, pkt, q);
        }
        self.near_send(now, lane, pkt, q)
    }

    /// Lane `lane`'s receiver sends `pkt` back at `now`. A down lane's goes behind the
    /// reverse bottleneck if there is one, else straight onto the return delay line; an
    /// up lane's through the near NIC and the forward bottleneck. What a full reverse
    /// queue drops is told to `obs`.
    #[inline(always)]
    pub fn reply(
        &mut self,
        now: Time,
        lane: u32,
        pkt: Packet,
        q: &mut impl Schedule<PathWake>,
        obs: &mut impl PathObserver,
    ) {
        if self.up[lane as usize] {
            self.near_send(now, lane, pkt, q);
            return;
        }
        match self.reverse_bottleneck.as_mut() {
            Some(link) => {
                if let Some(t) = link.offer(now, pkt) {
                    q.push(t, PathWake::ReverseService);
                }
                if !link.drops.is_empty() {
                    self.report_reverse_drops(obs);
                }
            }
            None => self.push_reverse(now, lane, pkt, q),
        }
    }

    #[inline(always)]
    fn near_send(&mut self, now: Time, lane: u32, pkt: Packet, q: &mut impl Schedule<PathWake>) -> Time {
        let (sent, head) = self.nic[lane as usize].push(now, pkt);
        if let Some(t) = head {
            q.push(t, PathWake::NicExit(lane));
        }
        sent
    }

    fn far_send(&mut self, now: Time, lane: u32, pkt: Packet, q: &mut impl Schedule<PathWake>) -> Time {
        let (sent, head) = self.far_nic[lane as usize].push(now, pkt);
        if let Some(t) = head {
            q.push(t, PathWake::FarNicExit(lane));
        }
        sent
    }

    #[inline(always)]
    fn push_reverse(&mut self, now: Time, lane: u32, pkt: Packet, q: &mut impl Schedule<PathWake>) {
        if let (_, Some(t)) = self.reverse[lane as usize].push(now, pkt) {
            q.push(t, PathWake::ReverseExit(lane));
        }
    }

    /// Run wake-up `wake`, due at `now`; the packet it brings to an end, if any.
    #[inline]
    pub fn handle(
        &mut self,
        now: Time,
        wake: PathWake,
        q: &mut impl Schedule<PathWake>,
        obs: &mut impl PathObserver,
    ) -> Option<Arrival> {
        match wake {
            PathWake::NicExit(lane) => self.nic_exit(now, lane, q, obs),
            PathWake::BottleneckService => self.bottleneck_service(now, q, obs),
            PathWake::ReverseService => self.reverse_service(now, q, obs),
            PathWake::ForwardExit => {
                let (pkt, next) = self.forward.pop(now);
                if let Some(t) = next {
                    q.push(t, PathWake::ForwardExit);
                }
                let to = if self.up[pkt.flow as usize] { End::Sender } else { End::Receiver };
                return Some(Arrival { to, lane: pkt.flow, pkt });
            }
            PathWake::ReverseExit(lane) => {
                let (pkt, next) = self.reverse[lane as usize].pop(now);
                if let Some(t) = next {
                    q.push(t, PathWake::ReverseExit(lane));
                }
                let to = if self.up[lane as usize] { End::Receiver } else { End::Sender };
                return Some(Arrival { to, lane, pkt });
            }
            PathWake::RttStep(k) => self.rtt_step(k),
            PathWake::FarNicExit(lane) => self.far_nic_exit(now, lane, q, obs),
        }
        None
    }

    /// The head of lane `lane`'s NIC reaches the bottleneck.
    // These steps inline into `handle`, the per-packet path, as its arms did.
    #[inline(always)]
    fn nic_exit(&mut self, now: Time, lane: u32, q: &mut impl Schedule<PathWake>, obs: &mut impl PathObserver) {
        let (pkt, next) = self.nic[lane as usize].pop(now);
        if let Some(t) = next {
            q.push(t, PathWake::NicExit(lane));
        }
        obs.entered(Dir::Down, now, &pkt);
        if let Some(t) = self.bottleneck.offer(now, pkt) {
            self.on_wire_chained = false;
            q.push(t, PathWake::BottleneckService);
        }
        self.report_drops(obs);
    }

    /// The bottleneck's service instant: usually one packet leaves (always at a rate);
    /// more go to `departed`.
    #[inline(always)]
    fn bottleneck_service(&mut self, now: Time, q: &mut impl Schedule<PathWake>, obs: &mut impl PathObserver) {
        let (mut first, more) = (None, &mut self.departed);
        let next = self.bottleneck.service_with(now, |p| match first {
            None => first = Some(p),
            Some(_) => more.push(p),
        });
        if let Some(t) = next {
            q.push(t, PathWake::BottleneckService);
        }
        if let Some(pkt) = first {
            self.forward(now, pkt, q, obs);
        }
        if !self.departed.is_empty() {
            let mut departed = std::mem::take(&mut self.departed);
            for pkt in departed.drain(..) {
                self.forward(now, pkt, q, obs);
            }
            self.departed = departed;
        }
        self.on_wire_chained = self.bottleneck.is_busy();
        self.report_drops(obs);
    }

    /// The head of an up lane's far NIC reaches the reverse bottleneck.
    fn far_nic_exit(&mut self, now: Time, lane: u32, q: &mut impl Schedule<PathWake>, obs: &mut impl PathObserver) {
        let (pkt, next) = self.far_nic[lane as usize].pop(now);
        if let Some(t) = next {
            q.push(t, PathWake::FarNicExit(lane));
        }
        obs.entered(Dir::Up, now, &pkt);
        let link = self.reverse_bottleneck.as_mut().expect("an up lane has a reverse bottleneck");
        if let Some(t) = link.offer(now, pkt) {
            q.push(t, PathWake::ReverseService);
        }
        self.report_reverse_drops(obs);
    }

    /// The reverse bottleneck's service instant: what leaves goes on to its lane's
    /// return path.
    #[inline(always)]
    fn reverse_service(&mut self, now: Time, q: &mut impl Schedule<PathWake>, obs: &mut impl PathObserver) {
        let link = self.reverse_bottleneck.as_mut().expect("a reverse bottleneck");
        let mut departed = std::mem::take(&mut self.departed);
        if let Some(t) = link.service(now, &mut departed) {
            q.push(t, PathWake::ReverseService);
        }
        for pkt in departed.drain(..) {
            obs.left(Dir::Up, now, &pkt, false);
            self.push_reverse(now, pkt.flow, pkt, q);
        }
        self.departed = departed;
        self.report_reverse_drops(obs);
    }

    fn report_reverse_drops(&mut self, obs: &mut impl PathObserver) {
        let link = self.reverse_bottleneck.as_mut().expect("a reverse bottleneck");
        for d in link.drops.drain(..) {
            obs.dropped(Dir::Up, &d);
        }
    }

    /// Step `k` of the RTT schedule: the delay lines take its base RTT.
    fn rtt_step(&mut self, k: u32) {
        let one_way = Dur(self.rtt_steps[k as usize].1.ns() / 2);
        self.forward.set_delay(one_way);
        for (r, &a) in self.reverse.iter_mut().zip(&self.access) {
            r.set_delay(one_way + a);
        }
    }

    /// A packet leaving the bottleneck, on its way to the receiver.
    #[inline(always)]
    fn forward(&mut self, now: Time, pkt: Packet, q: &mut impl Schedule<PathWake>, obs: &mut impl PathObserver) {
        obs.left(Dir::Down, now, &pkt, self.on_wire_chained);
        self.on_wire_chained = true;
        if let (_, Some(t)) = self.forward.push(now, pkt) {
            q.push(t, PathWake::ForwardExit);
        }
    }

    fn report_drops(&mut self, obs: &mut impl PathObserver) {
        if !self.bottleneck.drops.is_empty() {
            for d in self.bottleneck.drops.drain(..) {
                obs.dropped(Dir::Down, &d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventQueue;
    use crate::net::aqm::QueueLimit;
    use crate::net::loss::LossModel;

    /// 10 Mbit/s bottleneck, 20 ms base RTT, a 1 Gbit/s NIC with 1 ms of access delay,
    /// and the RTT stepping to 40 ms at 30 ms.
    fn path() -> Path {
        let shape = PathShape {
            nic_rate: BitRate(1_000_000_000),
            one_way: Dur::from_ms(10),
            access: vec![Dur::from_ms(1)],
            rtt_steps: vec![(Dur::from_ms(30), Dur::from_ms(40))],
        };
        let bottleneck = Bottleneck::fifo(BitRate(10_000_000), QueueLimit::Packets(100), None, LossModel::None);
        Path::new(shape, bottleneck, None, Vec::new())
    }

    #[derive(Default)]
    struct Log(Vec<(&'static str, Time)>, Vec<(Dir, u32)>);

    impl PathObserver for Log {
        fn entered(&mut self, _: Dir, now: Time, _: &Packet) {
            self.0.push(("entered", now));
        }
        fn left(&mut self, _: Dir, now: Time, _: &Packet, _: bool) {
            self.0.push(("left", now));
        }
        fn dropped(&mut self, dir: Dir, d: &Dropped) {
            self.1.push((dir, d.pkt.wire_bytes));
        }
    }

    /// Run wake-ups until `until`; what reached an end, and when.
    fn run(p: &mut Path, q: &mut EventQueue<PathWake>, log: &mut Log, until: Time) -> Vec<(End, Time)> {
        let mut out = Vec::new();
        while q.peek_time().is_some_and(|t| t <= until) {
            let (t, w) = q.pop().expect("peeked");
            if let Some(a) = p.handle(t, w, q, log) {
                out.push((a.to, t));
            }
        }
        out
    }

    #[test]
    fn a_packet_crosses_nic_bottleneck_and_delay_and_its_ack_comes_back_over_the_access_link() {
        let (mut p, mut q, mut log) = (path(), EventQueue::default(), Log::default());
        p.start_rtt_schedule(Time::ZERO, &mut q);
        let pkt = Packet { wire_bytes: 1500, payload: 1448, ..Packet::default() };
        // 1500 bytes: 12 us on the NIC, 1.2 ms at the bottleneck.
        assert_eq!(p.send(Time::ZERO, 0, pkt, &mut q), Time(12_000));
        let at = run(&mut p, &mut q, &mut log, Time(20_000_000));
        assert_eq!(log.0, vec![("entered", Time(1_012_000)), ("left", Time(2_212_000))]);
        assert_eq!(at, vec![(End::Receiver, Time(12_212_000))]);
        p.reply(Time(12_212_000), 0, Packet { wire_bytes: 52, ..Packet::default() }, &mut q, &mut Log::default());
        let at = run(&mut p, &mut q, &mut log, Time(29_000_000));
        assert_eq!(at, vec![(End::Sender, Time(23_212_000))]);
        // After the step, 20 ms each way (plus the access delay back).
        run(&mut p, &mut q, &mut log, Time(30_000_000));
        p.reply(Time(31_000_000), 0, Packet { wire_bytes: 52, ..Packet::default() }, &mut q, &mut Log::default());
        let at = run(&mut p, &mut q, &mut log, Time(100_000_000));
        assert_eq!(at, vec![(End::Sender, Time(52_000_000))]);
    }

    /// An ACK link of one 1500-byte opportunity per millisecond (three 500-byte ACKs)
    /// behind a drop-tail queue of `limit` ACKs, on the 20 ms path of [`path`].
    fn path_with_ack_link(limit: u64) -> Path {
        use crate::net::aqm::{DropTail, Qdisc};
        use crate::net::capacity::Capacity;
        use crate::net::trace::{Trace, TraceServer};
        let server = TraceServer::new(Trace::from_ms(&[1]).unwrap());
        let queue = Qdisc::DropTail(DropTail::new(QueueLimit::Packets(limit)));
        let ack_link = Bottleneck::new(Capacity::Trace(server), queue, None, LossModel::None);
        Path { reverse_bottleneck: Some(ack_link), ..path() }
    }

    #[test]
    fn a_full_ack_queue_drops_what_arrives_and_holds_at_most_its_limit() {
        // 10,000 ACKs a second into 3,000 a second of opportunities, for a second.
        const LIMIT: u64 = 20;
        const ARRIVALS: u64 = 10_000;
        let (mut p, mut q, mut log) = (path_with_ack_link(LIMIT), EventQueue::default(), Log::default());
        let ack = Packet { wire_bytes: 500, ..Packet::default() };
        let mut dropped = 0;
        for k in 0..ARRIVALS {
            let now = Time(k * 100_000);
            // What is due before this ACK arrives (an opportunity at the same instant after it).
            while q.peek_time().is_some_and(|t| t < now) {
                let (t, w) = q.pop().expect("peeked");
                p.handle(t, w, &mut q, &mut log);
            }
            p.reply(now, 0, ack, &mut q, &mut log);
            if let Some(d) = log.1.pop() {
                assert_eq!(d, (Dir::Up, 500));
                dropped += 1;
            }
            assert!(p.reverse_bottleneck.as_ref().unwrap().backlog_packets() <= LIMIT);
        }
        // From the first opportunity on, each of the 999 before the last arrival carries
        // three ACKs; the queue ends full; the rest were dropped on arrival.
        let link = p.reverse_bottleneck.as_ref().unwrap();
        let served = 3 * 999;
        assert_eq!(link.counters.packets_out, served);
        assert_eq!(link.backlog_packets(), LIMIT);
        assert_eq!(dropped, ARRIVALS - served - LIMIT);
        assert_eq!(link.counters.drops_overflow, dropped);
        assert!(link.can_overflow() && link.drops.is_empty());
    }

    #[test]
    fn an_unlimited_ack_queue_drops_nothing() {
        let mut p = path_with_ack_link(u64::MAX);
        let (mut q, mut log): (EventQueue<PathWake>, _) = (EventQueue::default(), Log::default());
        for k in 0..1000 {
            p.reply(Time(k), 0, Packet { wire_bytes: 52, ..Packet::default() }, &mut q, &mut log);
        }
        assert!(log.1.is_empty());
        assert!(!p.reverse_bottleneck.as_ref().unwrap().can_overflow());
    }
}
