//! What the emulator is told: the resolved scenario (the simulator's own JSON, so both
//! engines read the same link description) plus where to find the packets.

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
    /// Flow i is the TCP connection whose receiver port is `base_port + i`.
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
        if let Some(i) = (0..s.flows.len()).find(|&i| self.goes_up(i)) {
            if s.link.reverse_link().is_none() {
                return Err(format!("emulator config: flows[{i}] goes up, which needs link.reverse"));
            }
        }
        if s.flows.is_empty() || self.base_port as usize + s.flows.len() > u16::MAX as usize {
            return Err("emulator config: flows must fit in the port range above base_port".into());
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

    /// The flow a port belongs to, if any.
    pub fn flow_of_port(&self, port: u16) -> Option<usize> {
        let i = port.checked_sub(self.base_port)? as usize;
        (i < self.scenario.flows.len()).then_some(i)
    }

    /// Whether flow `i`'s data goes up: its sender is on the far side, behind the reverse
    /// bottleneck.
    pub fn goes_up(&self, i: usize) -> bool {
        self.scenario.flows.get(i).is_some_and(|f| f.direction == Direction::Up)
    }

    /// The segment from `src_port` to `dst_port` read from the near device (`near`) or
    /// the far one, if it belongs to a flow. A down flow's sender is near and an up
    /// flow's far, so a segment from the near side is a down flow's data or an up flow's
    /// ACK. It is taken first as a down flow's, so that a run without up flows sees its
    /// segments as it always did.
    pub fn segment(&self, near: bool, src_port: u16, dst_port: u16) -> Option<Segment> {
        for from_sender in [near, !near] {
            let (sender_port, receiver_port) = if from_sender { (src_port, dst_port) } else { (dst_port, src_port) };
            let Some((flow, connection)) = self.flow_and_connection(sender_port, receiver_port) else { continue };
            let sender_near = !self.goes_up(flow);
            if sender_near == (near == from_sender) {
                return Some(Segment { flow, connection, from_sender });
            }
        }
        None
    }

    /// The flow of a segment between the data's sender port and receiver port, and the
    /// port that tells its connections apart: the receiver listens on `base_port + i`
    /// (the sender's port varies), or, for a flow whose receiver opens the connections,
    /// the sender does (the receiver's port varies).
    pub fn flow_and_connection(&self, sender_port: u16, receiver_port: u16) -> Option<(usize, u16)> {
        match (self.flow_of_port(receiver_port), self.flow_of_port(sender_port)) {
            (Some(i), _) => Some((i, sender_port)),
            (None, Some(i)) => Some((i, receiver_port)),
            (None, None) => None,
        }
    }
}

/// A segment of a flow, as the emulator reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub flow: usize,
    /// The port that tells the flow's connections apart (`flow_and_connection`).
    pub connection: u16,
    /// It comes from the flow's sender (its data and handshake), not its receiver.
    pub from_sender: bool,
}
