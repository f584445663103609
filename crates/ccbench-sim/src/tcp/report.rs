//! What a sender reports to the world: a snapshot of its state for the time series
//! (`FlowSample`), the totals of what it did (`SenderTotals`), which a flow sums over
//! its connections, and its invariants (`audit`, for the property tests). The world
//! reads these instead of the sender's fields.

use super::sender::Sender;
use crate::base::histogram::Histogram;
use crate::cc::{CaState, Internals, INFINITE_SSTHRESH};
use crate::time::Time;

/// A sender's state at an instant, as `tcp_get_info` would read it.
#[derive(Clone, Debug)]
pub struct FlowSample {
    pub mss: u32,
    pub cwnd: u32,
    /// None until the first reduction (`TCP_INFINITE_SSTHRESH`).
    pub ssthresh: Option<u32>,
    /// Segments in flight (`tcp_packets_in_flight`).
    pub inflight: u32,
    /// The receive window the peer last advertised (`snd_wnd`), bytes.
    pub snd_wnd: u64,
    /// Bytes per second.
    pub pacing_rate: u64,
    /// The last delivery-rate sample, segments per second.
    pub delivery_rate_segs: f64,
    pub srtt_us: u64,
    /// None before the first RTT sample.
    pub min_rtt_us: Option<u64>,
    pub ca_state: CaState,
    /// This connection's retransmitted and lost segments so far.
    pub retransmits: u64,
    pub lost: u64,
    /// The algorithm's own figures.
    pub internals: Internals,
}

/// What a connection's sender did, summed over a flow's connections.
#[derive(Clone, Debug, Default)]
pub struct SenderTotals {
    pub sent_bytes: u64,
    pub retransmits: u64,
    pub lost: u64,
    pub rto_count: u64,
    pub undos: u64,
    pub spurious_rtos: u64,
    /// Time the peer's window held new data back (`tcpi_rwnd_limited`), microseconds.
    pub rwnd_limited_us: u64,
    /// Time a writer waited for the send buffer with nothing left to send
    /// (`tcpi_sndbuf_limited`), microseconds.
    pub sndbuf_limited_us: u64,
    pub rtt_ns: Histogram,
}

impl SenderTotals {
    pub fn add(&mut self, o: &SenderTotals) {
        self.sent_bytes += o.sent_bytes;
        self.retransmits += o.retransmits;
        self.lost += o.lost;
        self.rto_count += o.rto_count;
        self.undos += o.undos;
        self.spurious_rtos += o.spurious_rtos;
        self.rwnd_limited_us += o.rwnd_limited_us;
        self.sndbuf_limited_us += o.sndbuf_limited_us;
        self.rtt_ns.merge(&o.rtt_ns);
    }
}

impl Sender {
    pub fn sample(&self) -> FlowSample {
        let min_rtt = self.rtt.min_rtt_us();
        FlowSample {
            mss: self.p.tcp.mss,
            cwnd: self.w.cwnd,
            ssthresh: (self.w.ssthresh < INFINITE_SSTHRESH).then_some(self.w.ssthresh),
            inflight: self.inflight(),
            snd_wnd: self.snd_wnd(),
            pacing_rate: self.w.pacing_rate,
            delivery_rate_segs: self.rate.delivery_rate_segs(),
            srtt_us: self.rtt.srtt_us(),
            min_rtt_us: (min_rtt != u64::MAX).then_some(min_rtt),
            ca_state: self.ca_state,
            retransmits: self.stats.retransmits,
            lost: self.lost,
            internals: self.cc.internals(),
        }
    }

    /// The scoreboard's invariants: its counters match its bits, and (a loss probe can
    /// put a segment in flight twice, so inflight may exceed packets_out) SACKed and lost
    /// segments never overlap.
    pub fn audit(&self) -> Result<(), String> {
        let sb = &self.sb;
        sb.audit(!self.p.tcp.sack)?;
        if sb.sacked_out + sb.lost_out > sb.packets_out() {
            return Err(format!("sacked {} + lost {} > packets_out {}", sb.sacked_out, sb.lost_out, sb.packets_out()));
        }
        Ok(())
    }

    /// What this connection did up to `now`.
    pub fn totals(&self, now: Time) -> SenderTotals {
        SenderTotals {
            sent_bytes: self.stats.bytes_sent,
            retransmits: self.stats.retransmits,
            lost: self.lost,
            rto_count: self.stats.rto_count,
            undos: self.stats.undos(),
            spurious_rtos: self.stats.spurious_rtos,
            rwnd_limited_us: self.chronos.info_us(now).1,
            sndbuf_limited_us: self.chronos.info_us(now).2,
            rtt_ns: self.stats.rtt_ns.clone(),
        }
    }
}
