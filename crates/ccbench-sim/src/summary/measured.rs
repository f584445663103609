//! What an engine measured in a run, in base units, and the summary built from it and
//! the scenario. Every engine reports through here (the simulator's world directly, the
//! kernel and VM engines through `_core.summarize`), so that rates over a flow's life,
//! delay above the base RTT, utilization, drops and fairness are derived one way.

use super::{jain_index, AckLinkSummary, ConfiguredLink, DownloadSummary, FlowSummary, HostSummary, LinkSummary};
use super::{Stats, Summary, UdpFlowSummary, VERSION};
use crate::config::{Aqm, Scenario};
use crate::time::{Dur, Time};
use crate::units::wire;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    pub engine: String,
    /// When the run ended: its duration, or earlier when every flow was sized and done.
    pub end_ns: u64,
    /// One per scenario flow, in order.
    pub flows: Vec<FlowMeasured>,
    pub link: LinkMeasured,
    /// Events the simulator processed; None for a real kernel.
    #[serde(default)]
    pub events: Option<u64>,
    /// The simulated sender CPU.
    #[serde(skip)]
    pub host: Option<HostSummary>,
    /// One per UDP flow, in order.
    #[serde(default)]
    pub udp: Vec<UdpMeasured>,
    /// Every connection of the arrivals, in order of arrival.
    #[serde(default)]
    pub connections: Vec<ConnMeasured>,
}

/// One connection of a group of arrivals.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnMeasured {
    pub group: u32,
    pub arrival_ns: u64,
    pub size_bytes: u64,
    /// From its arrival to the receiver's having every byte; None if the run ended first.
    pub fct_ns: Option<u64>,
    /// The same transfer's, alone on the empty path.
    pub ideal_fct_ns: Option<u64>,
    pub retransmits: u64,
}

/// What a UDP flow's source sent and its sink received (IP packets and bytes).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpMeasured {
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// Dropped on the way (at its bottleneck, or anywhere for a real path).
    pub dropped: u64,
    #[serde(default)]
    pub one_way_delay_ms: Stats,
}

/// One flow, over all its connections (its algorithm's name, ECN mode, start and size
/// are the scenario's).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowMeasured {
    /// The algorithm's effective parameters, as the engine knows them.
    pub params: serde_json::Value,
    pub paced: bool,
    /// When the receiver had all of the flow (its last download), from the run's start.
    pub completed_ns: Option<u64>,
    /// Payload handed in order to the receiving application.
    pub delivered_bytes: u64,
    /// Payload of this flow that left the bottleneck.
    pub bottleneck_bytes: u64,
    pub sent_bytes: Option<u64>,
    pub retransmits: u64,
    pub lost: Option<u64>,
    pub dropped: u64,
    pub rto_count: Option<u64>,
    pub undos: Option<u64>,
    pub spurious_rtos: Option<u64>,
    /// RTT statistics; left out (zeros) when there were no samples.
    #[serde(default)]
    pub rtt_ms: Stats,
    pub rtt_samples: u64,
    pub final_cwnd: u32,
    pub rwnd_limited_ms: f64,
    /// Absent from measurements of engines that have no such clock.
    #[serde(default)]
    pub sndbuf_limited_ms: f64,
    /// Each download of a flow that repeats them.
    #[serde(default)]
    pub downloads: Option<Vec<DownloadMeasured>>,
    /// With a path MTU (`link.mtu`): the MSS and path MTU the sender had at the end
    /// (`tcpi_snd_mss`, `tcpi_pmtu`), and the packets dropped for their length and the
    /// ICMPs that answered them.
    #[serde(default)]
    pub path_mtu: Option<PathMtuMeasured>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PathMtuMeasured {
    pub final_snd_mss: u32,
    pub final_pmtu: u32,
    pub mtu_dropped: u64,
    pub icmp_sent: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DownloadMeasured {
    pub start_ns: u64,
    pub completed_ns: Option<u64>,
    pub delivered_bytes: u64,
    #[serde(default)]
    pub rtt_ms: Stats,
    pub rtt_samples: u64,
    pub retransmits: u64,
    pub dupacks: Option<u64>,
    pub rto_count: Option<u64>,
}

/// The bottleneck's counters, what it offered, and the ACK link's figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkMeasured {
    /// What a trace or rate steps offered; None for a constant rate, which offered its
    /// rate over the whole run (`end_ns`).
    pub offered: Option<Offered>,
    pub wire_bytes_out: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    pub drops_aqm: u64,
    pub ecn_marks: u64,
    pub queue_delay_ms: Stats,
    pub queue_bytes: Stats,
    pub queue_packets: Stats,
    pub packets_forwarded: u64,
    /// The ACK direction's trace-driven link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_link: Option<AckLinkSummary>,
    /// With `[link.reverse]`: the reverse bottleneck's counters (without `ack_link` or
    /// `reverse` of their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<Box<LinkMeasured>>,
}

/// The capacity a trace or rate steps offered while the counters ran.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offered {
    pub capacity_bits: f64,
    /// The time the counters cover.
    pub window_ns: u64,
}

/// Bits per second over `life` (0 for no time).
fn rate(bytes: u64, life: Dur) -> f64 {
    let secs = life.secs_f64();
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

/// Mean RTT above the base RTT, 0 without samples.
fn above(rtt: &Stats, samples: u64, base: Dur) -> f64 {
    if samples > 0 {
        rtt.mean - base.ms_f64()
    } else {
        0.0
    }
}

impl Summary {
    /// The summary of a run of `s` from what an engine measured.
    pub fn build(s: &Scenario, m: Measured) -> Summary {
        let end = Time(m.end_ns);
        let flows: Vec<FlowSummary> = m.flows.into_iter().enumerate().map(|(i, f)| flow(s, i, f, end)).collect();
        let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
        Summary {
            engine: m.engine,
            version: VERSION,
            seed: s.seed,
            duration_s: end.secs_f64(),
            header_bytes: wire::DATA_OVERHEAD,
            jain_index: jain_index(&goodputs),
            flows,
            link: link(s, m.link, end),
            events: m.events,
            host: m.host,
            udp: m.udp.into_iter().enumerate().map(|(k, u)| udp(s, k, u, end)).collect(),
            arrivals: (0..s.arrivals.len()).map(|k| super::arrivals::summary(s, k, &m.connections)).collect(),
        }
    }
}

fn udp(s: &Scenario, k: usize, u: UdpMeasured, end: Time) -> UdpFlowSummary {
    let c = &s.udp[k];
    let start = Time(c.start_ns);
    let life = c.stop_ns.map_or(end, Time).min(end).since(start);
    // Datagrams still on their way at the end are neither delivered nor lost.
    let settled = u.delivered_packets + u.dropped;
    UdpFlowSummary {
        id: k as u32,
        direction: c.direction,
        start_s: start.secs_f64(),
        offered_bps: rate(u.sent_bytes, life),
        delivered_bps: rate(u.delivered_bytes, life),
        sent_packets: u.sent_packets,
        delivered_packets: u.delivered_packets,
        dropped: u.dropped,
        loss: if settled > 0 { u.dropped as f64 / settled as f64 } else { 0.0 },
        one_way_delay_ms: u.one_way_delay_ms,
    }
}

fn flow(s: &Scenario, i: usize, f: FlowMeasured, end: Time) -> FlowSummary {
    let c = &s.flows[i];
    let start = Time(c.start_ns);
    let access = Dur(c.access_delay_ns);
    let base_rtt = Dur(s.link.rtt_ns) + access + access;
    let done = f.completed_ns.map(Time);
    let downloads = f.downloads.map(|ds| {
        ds.into_iter()
            .enumerate()
            .map(|(k, d)| {
                let (start, done) = (Time(d.start_ns), d.completed_ns.map(Time));
                DownloadSummary {
                    index: k as u32,
                    start_s: start.secs_f64(),
                    completion_s: done.map(|t| t.since(start).secs_f64()),
                    delivered_bytes: d.delivered_bytes,
                    throughput_bps: rate(d.delivered_bytes, done.unwrap_or(end).since(start)),
                    self_inflicted_delay_ms: above(&d.rtt_ms, d.rtt_samples, base_rtt),
                    rtt_ms: d.rtt_ms,
                    retransmits: d.retransmits,
                    dupacks: d.dupacks,
                    rto_count: d.rto_count,
                }
            })
            .collect()
    });
    let life = done.unwrap_or(end).since(start);
    FlowSummary {
        id: i as u32,
        cca: c.cca.clone(),
        params: f.params,
        ecn: c.ecn,
        paced: f.paced,
        start_s: start.secs_f64(),
        base_rtt_ms: base_rtt.ms_f64(),
        goodput_bps: rate(f.delivered_bytes, life),
        throughput_bps: rate(f.bottleneck_bytes, life),
        delivered_bytes: f.delivered_bytes,
        sent_bytes: f.sent_bytes,
        retransmits: f.retransmits,
        lost: f.lost,
        dropped: f.dropped,
        rto_count: f.rto_count,
        undos: f.undos,
        spurious_rtos: f.spurious_rtos,
        self_inflicted_delay_ms: above(&f.rtt_ms, f.rtt_samples, base_rtt),
        rtt_ms: f.rtt_ms,
        size_bytes: c.size_bytes,
        completion_s: done.map(|t| t.since(start).secs_f64()),
        final_cwnd: f.final_cwnd,
        rwnd_limited_ms: f.rwnd_limited_ms,
        sndbuf_limited_ms: f.sndbuf_limited_ms,
        downloads,
        path_mtu: f.path_mtu,
    }
}

fn link(s: &Scenario, m: LinkMeasured, end: Time) -> LinkSummary {
    let reverse = match (m.reverse.clone(), &s.link.reverse) {
        (Some(r), Some(rc)) => {
            Some(Box::new(link_of(ConfiguredLink::of_reverse(s, rc), rc.rate_bps, &rc.aqm, *r, end)))
        }
        _ => None,
    };
    LinkSummary { reverse, ..link_of(ConfiguredLink::of(s), s.link.rate_bps, &s.link.aqm, m, end) }
}

/// A bottleneck's summary: `configured`, at `rate_bps` unless it offered otherwise.
fn link_of(configured: ConfiguredLink, rate_bps: u64, aqm: &Aqm, m: LinkMeasured, end: Time) -> LinkSummary {
    let secs = |window: Dur| window.secs_f64().max(1e-9);
    let bits = m.wire_bytes_out as f64 * 8.0;
    let (rate_bps, utilization) = match m.offered {
        None => (rate_bps, bits / (rate_bps as f64 * secs(end.since(Time::ZERO)))),
        Some(Offered { capacity_bits: cap, window_ns }) => {
            ((cap / secs(Dur(window_ns))).round() as u64, if cap > 0.0 { bits / cap } else { 0.0 })
        }
    };
    LinkSummary {
        rate_bps,
        rtt_ms: configured.rtt_ms,
        buffer_bytes: configured.buffer_bytes,
        buffer_packets: configured.buffer_packets,
        bdp_bytes: configured.bdp_bytes,
        utilization,
        drops: m.drops_overflow + m.drops_random + m.drops_aqm,
        drops_overflow: m.drops_overflow,
        drops_random: m.drops_random,
        ecn_marks: m.ecn_marks,
        queue_delay_ms: m.queue_delay_ms,
        queue_bytes: m.queue_bytes,
        queue_packets: m.queue_packets,
        packets_forwarded: m.packets_forwarded,
        trace_mean_bps: configured.trace_mean_bps,
        aqm: configured.aqm,
        drops_aqm: (!aqm.is_drop_tail()).then_some(m.drops_aqm),
        loss_model: configured.loss_model,
        ack_link: m.ack_link,
        reverse: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BufferLimit, FlowConfig, LinkConfig, TcpConfig};

    fn stats(mean: f64) -> Stats {
        Stats { min: mean, mean, p50: mean, p95: mean, p99: mean, max: mean }
    }

    fn flow(delivered: u64, completed_ns: Option<u64>) -> FlowMeasured {
        FlowMeasured {
            params: serde_json::Value::Null,
            paced: false,
            completed_ns,
            delivered_bytes: delivered,
            bottleneck_bytes: delivered + 1_000,
            sent_bytes: None,
            retransmits: 1,
            lost: None,
            dropped: 1,
            rto_count: None,
            undos: None,
            spurious_rtos: None,
            rtt_ms: stats(50.0),
            rtt_samples: 10,
            final_cwnd: 10,
            rwnd_limited_ms: 0.0,
            sndbuf_limited_ms: 0.0,
            downloads: None,
            path_mtu: None,
        }
    }

    /// 10 Mbit/s, 40 ms; a bulk flow from 0 and a 1 MB flow from 1 s (access delay 5 ms
    /// each way) done at 3 s, over a 4 s run.
    #[test]
    fn rates_delays_and_utilization_follow_from_the_counts() {
        let mut late = FlowConfig::bulk("cubic");
        (late.start_ns, late.access_delay_ns, late.size_bytes) = (1_000_000_000, 5_000_000, Some(1_000_000));
        let s = Scenario {
            seed: 1,
            duration_ns: 4_000_000_000,
            sample_interval_ns: 0,
            link: LinkConfig::new(10_000_000, 40_000_000, BufferLimit::Packets(100)),
            flows: vec![FlowConfig::bulk("cubic"), late],
            tcp: TcpConfig::default(),
            host: None,
            udp: Vec::new(),
            arrivals: Vec::new(),
        };
        let link = LinkMeasured {
            offered: None,
            wire_bytes_out: 4_000_000,
            drops_overflow: 2,
            drops_random: 0,
            drops_aqm: 0,
            ecn_marks: 0,
            queue_delay_ms: stats(1.0),
            queue_bytes: stats(1.0),
            queue_packets: stats(1.0),
            packets_forwarded: 2_700,
            ack_link: None,
            reverse: None,
        };
        let m = Measured {
            engine: "kernel".into(),
            end_ns: 4_000_000_000,
            flows: vec![flow(3_000_000, None), flow(1_000_000, Some(3_000_000_000))],
            link,
            events: None,
            host: None,
            udp: Vec::new(),
            connections: Vec::new(),
        };
        let sum = Summary::build(&s, m);
        let (a, b) = (&sum.flows[0], &sum.flows[1]);
        assert_eq!(a.goodput_bps, 3e6 * 8.0 / 4.0);
        assert_eq!(b.goodput_bps, 1e6 * 8.0 / 2.0);
        assert_eq!(b.throughput_bps, 1.001e6 * 8.0 / 2.0);
        assert_eq!((b.completion_s, b.start_s, b.base_rtt_ms), (Some(2.0), 1.0, 50.0));
        assert_eq!((a.self_inflicted_delay_ms, b.self_inflicted_delay_ms), (10.0, 0.0));
        assert_eq!(sum.link.utilization, 4e6 * 8.0 / (10e6 * 4.0));
        assert_eq!((sum.link.rate_bps, sum.link.drops, sum.link.drops_aqm), (10_000_000, 2, None));
        // Jain's index of 6 and 4 Mbit/s: 100 / (2 x 52).
        assert!((sum.jain_index - 100.0 / 104.0).abs() < 1e-12);
        assert_eq!((sum.engine.as_str(), sum.duration_s, sum.events), ("kernel", 4.0, None));
    }
}
