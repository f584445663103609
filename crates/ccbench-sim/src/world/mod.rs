//! The dumbbell and its run loop: each flow's sender (on the host's CPU, if modelled)
//! and receiver at the two ends of the scenario's `net::Path`. The world routes the
//! packets the path delivers to the endpoints and what the endpoints send into the path,
//! and keeps per-flow counts, samples and the capture.

mod arrivals;
mod event;
mod finish;
mod path_mtu;
mod taps;

use finish::download_measured;

pub use arrivals::{alone_fct_ns, alone_fcts};
pub use event::Event;

use crate::base::rng;
use crate::cc::{bpf, Algorithm};
use crate::config::{build, ConfigError, Scenario};
use crate::event::{EventQueue, Schedule};
use crate::host::{Host, Task};
use crate::meter::LinkMeter;
use crate::net::aqm::Dropped;
use crate::net::packet::Control;
use crate::net::{Dir, Ecn, End, Packet, Path, PathObserver};
use crate::observe::capture::{Capture, CaptureSpec, Point, Sink};
use crate::observe::recorder::{FlowRow, Recorder};
use crate::observe::series::Series;
use crate::summary::{DownloadMeasured, Summary};
use crate::tcp::config::{Connect, Direction, FlowConfig};
use crate::tcp::receiver::ReceiverParams;
use crate::tcp::{Io, Receiver, Sender, SenderParams, SenderTotals, Wake};
use crate::time::{Dur, Time, NS_PER_MS};
use crate::udp::{UdpSink, UdpSource};
use path_mtu::PathMtuGate;
use rand::Rng as _;
use taps::Taps;

/// Everything a run produces.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub summary: Summary,
    pub series: Series,
    /// Hash of the processed event sequence, for determinism checks.
    pub trace_hash: u64,
}

/// Per-flow facts and counters beside the endpoints' own.
struct FlowMeta {
    size_bytes: Option<u64>,
    last_delivered: u64,
    /// Repeated downloads: how many more, the pause before each, which connection is
    /// open, when its download started, the ones finished, and the totals of closed
    /// connections.
    repeats_left: u32,
    pause: Dur,
    conn: u16,
    download_start: Time,
    downloads: Vec<DownloadMeasured>,
    /// What the flow's closed connections delivered, sent and measured.
    closed_delivered: u64,
    closed: SenderTotals,
}

/// A flow's connection `conn`: its sender and receiver (`rng` streams per connection, the
/// first one's as for a single connection).
fn connection(s: &Scenario, i: usize, conn: u16, objects: &bpf::Objects) -> Result<(Sender, Receiver), ConfigError> {
    let stream = rng::stream(s.seed, "cc", i as u64 | (conn as u64) << 32);
    let log = s.sample_interval_ns > 0;
    endpoints(s, i as u32, &s.flows[i], &format!("flows[{i}]"), conn, stream, log, objects)
}

/// The sender and receiver of connection `conn` of `f` on lane `id` (named `at` in
/// errors), its algorithm on random stream `stream`, logging its moves if `log`.
#[allow(clippy::too_many_arguments)]
fn endpoints(
    s: &Scenario,
    id: u32,
    f: &FlowConfig,
    at: &str,
    conn: u16,
    stream: rng::Rng,
    log: bool,
    objects: &bpf::Objects,
) -> Result<(Sender, Receiver), ConfigError> {
    let (link, tcp) = (&s.link, &s.tcp);
    let mut cc = match bpf::Spec::parse(&f.cca) {
        Some(spec) => objects.instance(id as usize, &spec, &f.params, tcp.hz, stream).map_err(|r| match r.param {
            Some(p) => ConfigError { field: format!("{at}.params.{p}"), message: r.message },
            None => ConfigError { field: format!("{at}.cca"), message: format!("{}: {}", spec.path, r.message) },
        })?,
        None => Algorithm::from_name(&f.cca)
            .expect("validated")
            .build(&f.params, stream)
            .map_err(|m| ConfigError { field: format!("{at}.params"), message: m })?,
    };
    if log {
        if let Some(log) = cc.transitions() {
            log.listen();
        }
    }
    let access = Dur(f.access_delay_ns);
    let base_rtt = Dur(link.rtt_ns) + access + access;
    // An algorithm that needs ECN negotiates it, and the receiver, running it too,
    // echoes each segment's mark (`tcp_ca_needs_ecn`, `dctcp_ece_ack_update`).
    let flow = match cc.needs_ecn() {
        true => FlowConfig { ecn: Ecn::Low, ..f.clone() },
        false => f.clone(),
    };
    let sender = Sender::new(
        SenderParams { id, tcp: tcp.clone(), flow: flow.clone(), handshake_rtt: base_rtt, conn, gso: true },
        cc,
    );
    let receiver = Receiver::new(ReceiverParams { id, tcp: tcp.clone(), flow, rtt: base_rtt, conn });
    Ok((sender, receiver))
}

pub struct World {
    scenario: Scenario,
    /// The run's BPF objects, loaded once and shared by the connections that run them.
    objects: bpf::Objects,
    q: EventQueue<Event>,
    senders: Vec<Sender>,
    receivers: Vec<Receiver>,
    flows: Vec<FlowMeta>,
    path: Path,
    /// The senders' CPU; None when ideal (work runs the instant it is due).
    host: Option<Host>,
    /// From the NIC's having sent an skb to the host's hearing of it.
    tx_completion: Dur,
    /// Up to when the host has reaped TX completions: its last transmit (virtio_net's
    /// `start_xmit` reaps the device's, `free_old_xmit_skbs`) or NAPI poll (`Host::reaped`).
    reaped: Time,
    /// What one endpoint handler sent, kept for the capture (reused).
    sent: Vec<(Time, Packet)>,
    end: Time,
    interval: Dur,
    recorder: Recorder,
    /// What the path carried: per-flow counts, the link's samples and totals.
    meter: LinkMeter,
    events: u64,
    trace_hash: u64,
    /// Packet capture; none (the default) costs one branch per tap.
    taps: Taps,
    /// A path MTU below the hosts' (`link.mtu`).
    path_mtu: Option<PathMtuGate>,
    /// Which lanes go up: their sender is the far host, whose CPU is not modelled.
    up: Vec<bool>,
    /// The UDP flows' ends (lanes from the TCP flows' count on).
    udp: Vec<UdpSource>,
    udp_sinks: Vec<UdpSink>,
    /// The groups of arrivals and their connections, if any (lanes after the UDP flows').
    arrivals: Option<arrivals::Arrivals>,
}

impl World {
    pub fn new(s: &Scenario) -> Result<World, ConfigError> {
        let link = &s.link;
        let mut path = build::path(s, s.lanes());
        // A trace's opportunities fall on a millisecond grid that a real flow does not
        // start in step with (Mahimahi's link clock runs from its shell's start): each
        // trace starts at a sub-millisecond phase drawn from the seed.
        let phase = |k| Time(rng::stream(s.seed, "trace-phase", k).gen_range(0..NS_PER_MS));
        if link.trace.is_some() {
            path.bottleneck.restart_capacity_at(phase(0));
        }
        if let Some(reverse) = path.reverse_bottleneck.as_mut() {
            reverse.restart_capacity_at(phase(1));
        }
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        let mut flows = Vec::new();
        let mut q = EventQueue::default();
        let objects = bpf::Objects::default();
        for (i, f) in s.flows.iter().enumerate() {
            let id = i as u32;
            let (sender, receiver) = connection(s, i, 0, &objects)?;
            senders.push(sender);
            receivers.push(receiver);
            flows.push(FlowMeta {
                size_bytes: f.size_bytes,
                last_delivered: 0,
                repeats_left: f.repeat - 1,
                pause: Dur(f.pause_ns),
                conn: 0,
                download_start: Time(f.start_ns),
                downloads: Vec::new(),
                closed_delivered: 0,
                closed: SenderTotals::default(),
            });
            q.push(Time(f.start_ns), Event::FlowStart(id));
        }
        let end = Time(s.duration_ns);
        let n = s.flows.len();
        let udp: Vec<UdpSource> =
            (s.udp.iter().enumerate()).map(|(k, u)| UdpSource::new(u, (n + k) as u32, s.seed, k as u64, end)).collect();
        for (k, u) in s.udp.iter().enumerate() {
            q.push(Time(u.start_ns), Event::UdpSend(k as u32));
        }
        let arrivals = arrivals::Arrivals::new(s, s.lanes() as u32, end, &mut q);
        let interval = Dur(s.sample_interval_ns);
        if s.sample_interval_ns > 0 {
            q.push(Time::ZERO + interval, Event::Sample);
        }
        path.start_rtt_schedule(Time::ZERO, &mut q);
        q.push(end, Event::End);
        Ok(World {
            objects,
            scenario: s.clone(),
            q,
            senders,
            receivers,
            flows,
            path,
            host: s.host.as_ref().and_then(Host::new),
            tx_completion: Dur(s.host.as_ref().map_or(0, |h| h.tx_completion_ns)),
            reaped: Time::ZERO,
            sent: Vec::new(),
            end,
            interval,
            recorder: Recorder::default(),
            meter: LinkMeter::new(s, s.lanes()),
            up: (0..s.lanes()).map(|i| s.lane_direction(i) == Direction::Up).collect(),
            udp,
            udp_sinks: (0..s.udp.len()).map(|_| UdpSink::default()).collect(),
            arrivals,
            events: 0,
            trace_hash: 0xcbf2_9ce4_8422_2325,
            taps: Taps::default(),
            path_mtu: link.mtu_bytes.map(|mtu| {
                let access = s.flows.iter().map(|f| Dur(f.access_delay_ns)).collect();
                PathMtuGate::new(mtu, link.mtu_black_hole, access)
            }),
        })
    }

    /// Capture packets as `spec` says, each point to the sink `open` gives.
    pub fn with_capture(
        mut self,
        spec: &CaptureSpec,
        open: impl FnMut(Point) -> Result<Sink, ConfigError>,
    ) -> Result<World, ConfigError> {
        self.taps = Taps::new(Capture::new(spec, &self.scenario, open)?);
        Ok(self)
    }

    /// Run a sender handler, then hand the segments it sent to the capture.
    fn at_sender(&mut self, now: Time, i: u32, f: impl FnOnce(&mut Sender, &mut Ports)) {
        let keep = self.taps.is_on().then_some(&mut self.sent);
        let gate = self.path_mtu.as_mut();
        let meter = &mut self.meter;
        let sender = match self.senders.get_mut(i as usize) {
            Some(s) => s,
            None => match self.arrivals.as_mut().and_then(|a| a.sender(i)) {
                Some(s) => s,
                None => return, // an arrival's connection that has finished
            },
        };
        if self.up[i as usize] {
            // The far host: TX completions at once.
            let mut io =
                Ports { q: &mut self.q, path: &mut self.path, keep, completion: Dur::ZERO, reaped: now, gate, meter };
            f(sender, &mut io);
        } else {
            let completion = self.tx_completion;
            let reaped = self.host.as_ref().map_or(now, |h| h.reaped(now)).max(self.reaped);
            let mut io = Ports { q: &mut self.q, path: &mut self.path, keep, completion, reaped, gate, meter };
            f(sender, &mut io);
            self.reaped = io.reaped;
        }
        self.taps.tap(|c| c.sent(i, self.sent.drain(..)));
    }

    /// Run a receiver handler, then hand the ACKs it sent to the capture.
    fn at_receiver(&mut self, now: Time, i: u32, f: impl FnOnce(&mut Receiver, &mut Ports)) {
        let keep = self.taps.is_on().then_some(&mut self.sent);
        let completion = Dur::ZERO; // the receiver's ACKs are not the sender host's
        let meter = &mut self.meter;
        let receiver = match self.receivers.get_mut(i as usize) {
            Some(r) => r,
            None => match self.arrivals.as_mut().and_then(|a| a.receiver(i)) {
                Some(r) => r,
                None => return,
            },
        };
        let io = &mut Ports { q: &mut self.q, path: &mut self.path, keep, completion, reaped: now, gate: None, meter };
        f(receiver, io);
        self.taps.tap(|c| c.acks_sent(now, i, self.sent.drain(..).map(|(_, p)| p)));
    }

    /// Sender work due at `now`: with a host CPU it waits its turn there, otherwise it
    /// runs at once.
    fn sender_task(&mut self, now: Time, i: u32, task: Task) {
        match &mut self.host {
            Some(h) if !self.up[i as usize] => h.submit(now, i, task, &mut self.q),
            _ => self.run_task(now, i, task),
        }
    }

    fn run_task(&mut self, now: Time, i: u32, task: Task) {
        match task {
            Task::Start => self.at_sender(now, i, |s, io| s.open(now, io)),
            Task::Ack(pkt) => self.at_sender(now, i, |s, io| s.on_packet(now, &pkt, io)),
            Task::Timer(which) => self.at_sender(now, i, |s, io| s.on_timer(now, which, io)),
        }
    }

    /// The host CPU takes its next task, if it is free: run it at `now` and charge what
    /// it did.
    fn run_cpu_task(&mut self, now: Time) {
        let host = self.host.as_mut().expect("CpuRun needs a host");
        let Some((i, task)) = host.next_task(now, &mut self.q) else { return };
        let mut work = task.work();
        let before = self.sent_counts(i);
        self.run_task(now, i, task);
        // An arrival's connection that had finished did nothing.
        if let (Some(before), Some(after)) = (before, self.sent_counts(i)) {
            work.bursts = after.0 - before.0;
            work.packets = after.1 - before.1;
            work.bytes = after.2 - before.2;
        }
        self.host.as_mut().expect("a host").finished(now, work, &mut self.q);
    }

    /// Lane `i`'s sender's skbs, segments and bytes sent so far, if it has one.
    fn sent_counts(&mut self, i: u32) -> Option<(u64, u64, u64)> {
        let s = match self.senders.get(i as usize) {
            Some(s) => s,
            None => self.arrivals.as_mut()?.sender(i)?,
        };
        Some((s.stats.skbs_sent, s.stats.data_segs_out, s.stats.bytes_sent))
    }

    fn hash_event(&mut self, t: Time, ev: &Event) {
        let code = ev.code();
        for x in [t.ns(), code] {
            self.trace_hash = (self.trace_hash ^ x).wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn run(self) -> RunOutput {
        self.run_audited(0).expect("audits are off")
    }

    /// Run, checking every sender's and receiver's invariants after every `every`-th
    /// event (0: never). Used by the property tests.
    pub fn run_audited(self, every: u64) -> Result<RunOutput, String> {
        self.simulate(every).map(|(out, _)| out)
    }

    /// The run loop; also returns how closing the capture files went.
    fn simulate(mut self, every: u64) -> Result<(RunOutput, Result<(), ConfigError>), String> {
        let now = self.run_events(every)?;
        // A last sample for the (possibly partial) interval that ends the run.
        if self.interval > Dur::ZERO && now > self.meter.last_sample() {
            self.sample(now);
        }
        let capture = self.taps.finish(now.min(self.end));
        Ok((self.finish(now), capture))
    }

    // One arm per kind of event: the loop is the world's dispatch table, read in one place.
    /// The events, in time order, until the end; returns when the last happened.
    fn run_events(&mut self, every: u64) -> Result<Time, String> {
        let mut now = Time::ZERO;
        while let Some((t, ev)) = self.q.pop() {
            if every > 0 && self.events.is_multiple_of(every) {
                self.audit(t)?;
            }
            now = t;
            self.events += 1;
            self.hash_event(t, &ev);
            self.taps.tap(|c| c.flush(now));
            match ev {
                Event::FlowStart(i) => {
                    // A connection opened in time has its SYN and SYN-ACK captured as they go.
                    if self.scenario.flows[i as usize].connect == Connect::Ahead {
                        self.taps.tap(|c| c.flow_start(now, i));
                    }
                    self.open(now, i);
                }
                Event::NicExit(_)
                | Event::BottleneckService
                | Event::ReverseService
                | Event::ForwardExit
                | Event::ReverseExit(_)
                | Event::RttStep(_)
                | Event::FarNicExit(_) => {
                    let w = ev.path_wake().expect("a path event");
                    let mut obs = Counting { taps: &mut self.taps, meter: &mut self.meter, up: &self.up };
                    let Some(a) = self.path.handle(now, w, &mut self.q, &mut obs) else { continue };
                    let i = a.lane;
                    if a.pkt.ctl == Control::Datagram {
                        self.udp_sinks[i as usize - self.senders.len()].on_datagram(now, &a.pkt);
                        continue;
                    }
                    match a.to {
                        End::Receiver => {
                            self.taps.tap(|c| c.receiver_data(now, &a.pkt));
                            self.at_receiver(now, i, |r, io| r.on_data(now, &a.pkt, io));
                            let k = i as usize;
                            if k >= self.receivers.len() {
                                let done = self.arrivals.as_mut().and_then(|a| a.receiver(i)).map(|r| r.completed_at);
                                if done == Some(Some(now)) {
                                    self.arrival_done(i, now);
                                }
                                continue;
                            }
                            if self.receivers[k].completed_at == Some(now)
                                && self.flows[k].downloads.len() == self.flows[k].conn as usize
                            {
                                self.download_done(i, now);
                            }
                            if self.all_sized_flows_done() {
                                break;
                            }
                        }
                        End::Sender => {
                            self.taps.tap(|c| c.ack_arrival(now, &a.pkt));
                            self.sender_task(now, i, Task::Ack(a.pkt));
                        }
                    }
                }
                Event::Sender(i, which) => {
                    let q = &mut self.q;
                    let due = match self.senders.get_mut(i as usize) {
                        Some(s) => s.timer_due(now, which, q),
                        None => {
                            self.arrivals.as_mut().and_then(|a| a.sender(i)).is_some_and(|s| s.timer_due(now, which, q))
                        }
                    };
                    if due {
                        self.sender_task(now, i, Task::Timer(which));
                    }
                }
                Event::CpuRun => self.run_cpu_task(now),
                Event::FlowRestart(i) => self.next_download(i, now),
                Event::UdpSend(k) => self.udp_send(now, k),
                Event::Arrival(k) => self.arrive(now, k),
                Event::Icmp(i) => {
                    let icmp = self.path_mtu.as_mut().expect("a path MTU").arrive(i);
                    self.sender_task(now, i, Task::Ack(icmp));
                }
                Event::DelayedAck(i) => self.at_receiver(now, i, |r, io| r.on_delack_timer(now, io)),
                Event::SackCompress(i) => self.at_receiver(now, i, |r, io| r.on_sack_compress_timer(now, io)),
                Event::Connect(i) => self.at_receiver(now, i, |r, io| r.on_connect_timer(now, io)),
                Event::Sample => {
                    self.sample(now);
                    self.q.push(now + self.interval, Event::Sample);
                }
                Event::End => break,
            }
        }
        Ok(now)
    }

    /// UDP flow `k` is due at `now`: its datagram goes to its NIC (it is not the TCP
    /// senders' host work).
    fn udp_send(&mut self, now: Time, k: u32) {
        let (pkt, next) = self.udp[k as usize].wake(now);
        if let Some(pkt) = pkt {
            self.path.send(now, pkt.flow, pkt, &mut self.q);
        }
        if let Some(t) = next {
            self.q.push(t, Event::UdpSend(k));
        }
    }

    /// Flow `i`'s current download completed at `now`: record it and, if more are due,
    /// open the next connection after the pause.
    fn download_done(&mut self, i: u32, now: Time) {
        let k = i as usize;
        if self.scenario.flows[k].repeat == 1 {
            return;
        }
        let d = download_measured(&self.flows[k], &self.senders[k], &self.receivers[k]);
        let f = &mut self.flows[k];
        f.downloads.push(d);
        if f.repeats_left > 0 {
            self.q.push(now + f.pause, Event::FlowRestart(i));
        }
    }

    /// Close flow `i`'s connection and open the next one, which starts its download.
    /// Packets of the old connection still in the network are ignored on arrival; the
    /// NIC and the return path carry on.
    fn next_download(&mut self, i: u32, now: Time) {
        let k = i as usize;
        let f = &mut self.flows[k];
        f.repeats_left -= 1;
        f.conn = f.conn.wrapping_add(1);
        f.download_start = now;
        f.closed_delivered += self.receivers[k].delivered_bytes();
        f.closed.add(&self.senders[k].totals(now));
        self.senders[k].close(now);
        self.take_transitions(i);
        let f = &self.flows[k];
        let (mut sender, mut receiver) =
            connection(&self.scenario, k, f.conn, &self.objects).expect("validated at the start");
        // The client keeps what it learned of the server for Fast Open, and the host the
        // path MTU an ICMP taught its route.
        sender.fastopen = self.senders[k].fastopen;
        receiver.fastopen = self.receivers[k].fastopen;
        sender.learn_route(self.senders[k].route_mtu());
        self.senders[k] = sender;
        self.receivers[k] = receiver;
        self.open(now, i);
    }

    /// Flow `i`'s download is due at `now`: its sender writes (or first connects), or its
    /// receiver connects to ask for it.
    fn open(&mut self, now: Time, i: u32) {
        match self.scenario.flows[i as usize].connect {
            Connect::Receiver => self.at_receiver(now, i, |r, io| r.connect(now, io)),
            Connect::Ahead | Connect::Sender => self.sender_task(now, i, Task::Start),
        }
    }

    /// Invariants: the scoreboard's counters match its bits, inflight never exceeds
    /// what was sent, nothing is delivered that was not sent, and the bottleneck never
    /// forwards more than its rate allows.
    fn audit(&self, now: Time) -> Result<(), String> {
        let open = self.arrivals.iter().flat_map(|a| a.open_endpoints()).map(|(i, s, r)| (i as usize, s, r));
        for (i, s, r) in self.senders.iter().zip(&self.receivers).enumerate().map(|(i, (s, r))| (i, s, r)).chain(open) {
            s.audit().map_err(|e| format!("flow {i} at {now}: {e}"))?;
            let (snd_una, snd_nxt) = (s.wire_seq(s.sb.snd_una), s.wire_seq(s.snd_nxt()));
            if r.rcv_nxt > snd_nxt {
                return Err(format!("flow {i} at {now}: receiver has {} bytes, sender sent {snd_nxt}", r.rcv_nxt));
            }
            if snd_una > r.rcv_nxt {
                return Err(format!("flow {i} at {now}: snd_una {snd_una} beyond rcv_nxt {}", r.rcv_nxt));
            }
        }
        let capacity_bits = self.path.bottleneck.capacity_bits(Time::ZERO, now + Dur(1));
        let sent_bits = self.path.bottleneck.counters.wire_bytes_out as f64 * 8.0;
        if sent_bits > capacity_bits + 8.0 * 1500.0 {
            return Err(format!("bottleneck forwarded {sent_bits} bits by {now}, capacity {capacity_bits}"));
        }
        Ok(())
    }

    fn all_sized_flows_done(&self) -> bool {
        // Arrivals come until the run ends.
        self.arrivals.is_none()
            && self
                .flows
                .iter()
                .zip(&self.receivers)
                .all(|(f, r)| f.size_bytes.is_some() && r.completed_at.is_some() && f.repeats_left == 0)
    }

    /// Move flow `i`'s logged state-machine moves to the recorder.
    fn take_transitions(&mut self, i: u32) {
        if let Some(log) = self.senders[i as usize].cc.transitions() {
            for t in log.drain() {
                self.recorder.transition(i, t);
            }
        }
    }

    fn sample(&mut self, now: Time) {
        for i in 0..self.senders.len() as u32 {
            self.take_transitions(i);
        }
        let secs = now.since(self.meter.last_sample()).secs_f64();
        let link = self.meter.sample(now, &self.path);
        self.recorder.link(link);
        for (i, sender) in self.senders.iter().enumerate() {
            let f = &mut self.flows[i];
            let delivered = f.closed_delivered + self.receivers[i].delivered_bytes();
            let s = sender.sample();
            let mss = s.mss as f64;
            self.recorder.flow(FlowRow {
                time_s: now.secs_f64(),
                flow: i as u32,
                goodput_bps: (delivered - f.last_delivered) as f64 * 8.0 / secs,
                throughput_bps: self.meter.lanes()[i].throughput_bps,
                cwnd: s.cwnd as f64,
                ssthresh: s.ssthresh.map_or(f64::NAN, |x| x as f64),
                inflight: s.inflight as f64,
                inflight_bytes: s.inflight as f64 * mss,
                rwnd_bytes: s.snd_wnd as f64,
                pacing_rate_bps: s.pacing_rate as f64 * 8.0,
                delivery_rate_bps: s.delivery_rate_segs * mss * 8.0,
                srtt_ms: s.srtt_us as f64 / 1e3,
                min_rtt_ms: s.min_rtt_us.map_or(f64::NAN, |x| x as f64 / 1e3),
                retransmits: (f.closed.retransmits + s.retransmits) as f64,
                lost: (f.closed.lost + s.lost) as f64,
                ca_state: s.ca_state as u8 as f64,
                internals: s.internals,
            });
            f.last_delivered = delivered;
        }
    }

    /// Run with capture: the output, or the first error writing the capture files.
    pub fn run_captured(self) -> Result<RunOutput, ConfigError> {
        let (out, capture) = self.simulate(0).expect("audits are off");
        capture.map(|_| out)
    }
}

/// The world's side of an endpoint's I/O: wake-ups go to the event queue, packets into
/// the path; with a capture, what was sent is kept for it.
struct Ports<'a> {
    q: &'a mut EventQueue<Event>,
    path: &'a mut Path,
    keep: Option<&'a mut Vec<(Time, Packet)>>,
    /// The host's TX completion delay.
    completion: Dur,
    /// Up to when the host's TX completions are reaped; a transmit reaps them up to now.
    reaped: Time,
    /// A path MTU below the hosts', which a sender's packet may be too long for.
    gate: Option<&'a mut PathMtuGate>,
    /// Told of the ACKs a full reverse queue drops.
    meter: &'a mut LinkMeter,
}

impl Schedule<Wake> for Ports<'_> {
    #[inline]
    fn push(&mut self, time: Time, wake: Wake) {
        self.q.push(time, wake.into());
    }
}

impl Io for Ports<'_> {
    #[inline(always)]
    fn transmit(&mut self, now: Time, flow: u32, pkt: Packet) -> Time {
        self.reaped = now;
        if self.gate.as_deref_mut().is_some_and(|g| g.stops(now, flow, &pkt, self.q)) {
            if let Some(k) = self.keep.as_mut() {
                k.push((now, pkt));
            }
            return now + self.completion;
        }
        let sent = self.path.send(now, flow, pkt, self.q);
        if let Some(k) = self.keep.as_mut() {
            k.push((sent, pkt));
        }
        sent + self.completion
    }
    #[inline(always)]
    fn reaped(&self, _now: Time) -> Time {
        self.reaped
    }
    #[inline(always)]
    fn reply(&mut self, now: Time, flow: u32, pkt: Packet) {
        if let Some(k) = self.keep.as_mut() {
            k.push((now, pkt));
        }
        self.path.reply(now, flow, pkt, self.q, self.meter);
    }
}

/// Hands what the path reports to the meter and the capture, which sees a flow at the
/// bottleneck its data crosses.
struct Counting<'a> {
    taps: &'a mut Taps,
    meter: &'a mut LinkMeter,
    up: &'a [bool],
}

impl Counting<'_> {
    /// Whether `pkt`, at direction `dir`'s bottleneck, is a TCP flow's there with its
    /// data (UDP flows are not captured).
    #[inline(always)]
    fn data_way(&self, dir: Dir, pkt: &Packet) -> bool {
        self.up[pkt.flow as usize] == (dir == Dir::Up) && pkt.ctl != Control::Datagram
    }
}

impl PathObserver for Counting<'_> {
    #[inline]
    fn entered(&mut self, dir: Dir, now: Time, pkt: &Packet) {
        if self.data_way(dir, pkt) {
            self.taps.tap(|c| c.bottleneck_in(now, pkt));
        }
    }
    #[inline]
    fn left(&mut self, dir: Dir, now: Time, pkt: &Packet, chained: bool) {
        if self.data_way(dir, pkt) {
            self.taps.tap(|c| c.bottleneck_out(now, pkt));
        }
        self.meter.left(dir, now, pkt, chained);
    }
    #[inline]
    fn dropped(&mut self, dir: Dir, d: &Dropped) {
        self.meter.dropped(dir, d);
    }
}
