//! What the emulator is told: the resolved scenario (the simulator's own JSON, so both
//! engines read the same link description) plus where to find the packets.
//!
//! Lanes, in the path's order: each TCP flow's and each UDP flow's, as the simulator
//! lays them out (`Scenario::lanes`); one per group of arrivals, which all its
//! connections share; last, one for packets of no flow. Each has a port above
//! `base_port`, at its place among them: TCP flow i listens on `base_port + i` (its
//! receiver, or its sender where the receiver opens the connections), UDP flow k's sink
//! on `base_port + flows + k`, and group g's receivers (or senders) on the port after
//! the UDP flows' (`base_port + flows + udp + g`).

use ccbench_sim::config::build::resolve_limit;
use ccbench_sim::config::{Direction, Scenario};
use ccbench_sim::net::bottleneck::QueueLimit;
use ccbench_sim::observe::capture::CaptureSpec;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmuConfig {
    /// The scenario as the simulator reads it. Only the link, the flows' access delays
    /// and the seed matter here; algorithm names are not checked.
    pub scenario: Scenario,
    /// TUN device on the near side: its packets come from the senders of flows going
    /// down (and receive their ACKs), and from the receivers of flows going up.
    pub tun_sender: String,
    /// TUN device on the far side: it delivers to the receivers of flows going down, and
    /// its packets come from the senders of flows going up.
    pub tun_receiver: String,
    /// The lanes' ports start here (the module's documentation).
    pub base_port: u16,
    /// The emulator exits by itself this long after it starts, whatever happens.
    pub max_runtime_ns: u64,
    /// SCHED_FIFO priority for the emulator's thread (1..=99), 0 for none. The loop
    /// sleeps between packets, so it uses little CPU, but without it the agents and
    /// the TCP stacks on a small machine can delay its wake-ups by milliseconds.
    #[serde(default)]
    pub realtime_priority: u8,
    /// Write pcap files of the flows' packets (the simulator's capture points).
    #[serde(default)]
    pub capture: Option<CaptureSpec>,
}

impl EmuConfig {
    pub fn from_json(json: &str) -> Result<EmuConfig, String> {
        let cfg: EmuConfig = serde_json::from_str(json).map_err(|e| format!("emulator config: {e}"))?;
        cfg.check()?;
        Ok(cfg)
    }

    fn check(&self) -> Result<(), String> {
        let s = &self.scenario;
        let rate_ok = s.link.trace.is_some() || s.link.rate_bps > 0;
        if !rate_ok || s.link.rtt_ns == 0 || s.link.nic_rate_bps == 0 {
            return Err("emulator config: rate, rtt and nic_rate must be positive".into());
        }
        if !(0.0..1.0).contains(&s.link.loss) {
            return Err("emulator config: loss must be in [0, 1)".into());
        }
        s.validate_link_models().map_err(|e| format!("emulator config: {e}"))?;
        if let Some(i) = (0..self.no_flow_lane()).find(|&i| self.lane_up(i)) {
            if s.link.reverse_link().is_none() {
                return Err(format!("emulator config: {} goes up, which needs link.reverse", self.lane_name(i)));
            }
        }
        let traffic = self.no_flow_lane();
        if traffic == 0 || self.base_port as usize + traffic > u16::MAX as usize {
            return Err(
                "emulator config: the flows, UDP flows and arrivals must fit in the ports above base_port".into()
            );
        }
        if self.realtime_priority > 99 {
            return Err("emulator config: realtime_priority must be 0..=99".into());
        }
        for name in [&self.tun_sender, &self.tun_receiver] {
            if name.is_empty() || name.len() > 15 {
                return Err(format!("emulator config: bad device name {name:?} (1 to 15 bytes)"));
            }
        }
        Ok(())
    }

    /// The drop-tail limit, resolved as the simulator does.
    pub fn queue_limit(&self) -> QueueLimit {
        resolve_limit(&self.scenario, self.scenario.link.buffer)
    }

    /// The lane for packets of no flow, after every flow's and group's.
    pub fn no_flow_lane(&self) -> usize {
        self.scenario.lanes() + self.scenario.arrivals.len()
    }

    /// Every lane, the one for packets of no flow included.
    pub fn lanes(&self) -> usize {
        self.no_flow_lane() + 1
    }

    /// The lane of arrivals group `g`.
    pub fn arrivals_lane(&self, g: usize) -> usize {
        self.scenario.lanes() + g
    }

    /// What lane `i` carries, as the scenario names it: `flows[i]`, `udp[k]`,
    /// `arrivals[g]`, or packets of no flow.
    pub fn lane_name(&self, i: usize) -> String {
        let s = &self.scenario;
        match (i.checked_sub(s.flows.len()), i.checked_sub(s.lanes())) {
            (None, _) => format!("flows[{i}]"),
            (Some(k), None) => format!("udp[{k}]"),
            (_, Some(g)) if g < s.arrivals.len() => format!("arrivals[{g}]"),
            _ => "packets of no flow".into(),
        }
    }

    /// Whether lane `i`'s data goes up: its sender is on the far side, behind the reverse
    /// bottleneck (packets of no flow go down).
    pub fn lane_up(&self, i: usize) -> bool {
        let s = &self.scenario;
        let direction = match i.checked_sub(s.lanes()) {
            None => s.lane_direction(i),
            Some(g) => s.arrivals.get(g).map_or(Direction::Down, |a| a.direction),
        };
        direction == Direction::Up
    }

    /// Lane `i`'s access delay, each way (none for packets of no flow).
    pub fn lane_access_ns(&self, i: usize) -> u64 {
        let s = &self.scenario;
        match i.checked_sub(s.lanes()) {
            None => s.lane_access_ns(i),
            Some(g) => s.arrivals.get(g).map_or(0, |a| a.access_delay_ns),
        }
    }

    /// The TCP lane (a flow's, or a group of arrivals') whose port is `port`, if any.
    pub fn tcp_lane_of_port(&self, port: u16) -> Option<usize> {
        let i = port.checked_sub(self.base_port)? as usize;
        let s = &self.scenario;
        (i < s.flows.len() || (s.lanes()..self.no_flow_lane()).contains(&i)).then_some(i)
    }

    /// The UDP flow's lane of a datagram to `dst_port` read from the near device (`near`)
    /// or the far one, if that is where the flow's source is.
    pub fn udp_lane(&self, near: bool, dst_port: u16) -> Option<usize> {
        let i = dst_port.checked_sub(self.base_port)? as usize;
        let udp = self.scenario.flows.len()..self.scenario.lanes();
        // A down flow's source is near, an up flow's far.
        (udp.contains(&i) && self.lane_up(i) != near).then_some(i)
    }

    /// The segment from `src_port` to `dst_port` read from the near device (`near`) or
    /// the far one, if it belongs to a TCP lane. A down lane's sender is near and an up
    /// lane's far, so a segment from the near side is a down lane's data or an up lane's
    /// ACK. It is taken first as a down lane's, so that a run without up flows sees its
    /// segments as it always did.
    pub fn segment(&self, near: bool, src_port: u16, dst_port: u16) -> Option<Segment> {
        for from_sender in [near, !near] {
            let (sender_port, receiver_port) = if from_sender { (src_port, dst_port) } else { (dst_port, src_port) };
            let Some((lane, connection)) = self.lane_and_connection(sender_port, receiver_port) else { continue };
            let sender_near = !self.lane_up(lane);
            if sender_near == (near == from_sender) {
                return Some(Segment { lane, connection, from_sender });
            }
        }
        None
    }

    /// The TCP lane of a segment between the data's sender port and receiver port, and
    /// the port that tells its connections apart: the receiver listens on the lane's port
    /// (the sender's port varies), or, where the receiver opens the connections, the
    /// sender does (the receiver's port varies).
    pub fn lane_and_connection(&self, sender_port: u16, receiver_port: u16) -> Option<(usize, u16)> {
        match (self.tcp_lane_of_port(receiver_port), self.tcp_lane_of_port(sender_port)) {
            (Some(i), _) => Some((i, sender_port)),
            (None, Some(i)) => Some((i, receiver_port)),
            (None, None) => None,
        }
    }
}

/// A segment of a TCP lane (a flow's, or a group of arrivals'), as the emulator reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub lane: usize,
    /// The port that tells the lane's connections apart (`lane_and_connection`).
    pub connection: u16,
    /// It comes from the lane's sender (its data and handshake), not its receiver.
    pub from_sender: bool,
}
