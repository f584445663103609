//! H-TCP as Linux v6.1 implements it (`net/ipv4/tcp_htcp.c`; Leith & Shorten, PFLDnet 2004).
//!
//! The increase depends on the time Δ since the last congestion event: α = 1 segment per
//! RTT for the first second, then 1 + 10(Δ − 1) + ((Δ − 1)/2)², optionally scaled by
//! min RTT / 100 ms, times 2(1 − β) so that the average rate matches at any β. The
//! backoff β adapts to min RTT / max RTT (0.5 to 0.8), unless the achieved throughput
//! moved by more than 20% since the last event, which resets it to 0.5. The kernel keeps
//! α and β in 1/128 and the RTTs and times in jiffies. The stack does the reductions
//! themselves (PRR in Recovery/CWR, cwnd = 1 on RTO).

use super::params::{apply, Kind, Param, ParamError};
use super::reno::slow_start;
use super::*;
use crate::time::usecs_to_jiffies;
use serde::Serialize;

/// `ALPHA_BASE`: α = 1.0 in 1/128.
const ALPHA_BASE: u32 = 1 << 7;
/// `BETA_MIN`, `BETA_MAX`: β between 0.5 and 0.8 (102/128) in 1/128.
const BETA_MIN: u8 = 1 << 6;
const BETA_MAX: u8 = 102;
/// `measure_rtt`: max RTT grows by at most 20 ms a sample (spikes are ignored).
const MAX_RTT_STEP_MS: u32 = 20;
/// `htcp_beta_update`: β adapts only when min RTT exceeds 10 ms.
const ADAPTIVE_MIN_RTT_MS: u32 = 10;
/// `measure_achieved_throughput`: within 3 min RTTs of a congestion event the
/// throughput estimate restarts.
const CCOUNT_FRESH: u32 = 3;
/// `htcp_param_update`: max RTT fades 5% of its excess over min RTT per event.
const MAX_RTT_KEEP_PERCENT: u32 = 95;
/// `INITIAL_JIFFIES` (include/linux/jiffies.h): the kernel's jiffies start 300 s before
/// they wrap, so a stored jiffy is 0 (H-TCP's "nothing to undo") only by chance.
const INITIAL_JIFFIES_S: u32 = 300;

/// H-TCP's module parameters (`/sys/module/tcp_htcp/parameters/*`), with the kernel's
/// defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HtcpParams {
    /// `use_rtt_scaling`: scale α by min RTT / 100 ms (clamped to 0.1..2).
    pub use_rtt_scaling: bool,
    /// `use_bandwidth_switch`: a throughput change over 20% resets β to 0.5.
    pub use_bandwidth_switch: bool,
}

impl Default for HtcpParams {
    /// The kernel's module defaults.
    fn default() -> Self {
        HtcpParams {
            use_rtt_scaling: true,      // tcp_htcp.c: use_rtt_scaling
            use_bandwidth_switch: true, // tcp_htcp.c: use_bandwidth_switch
        }
    }
}

impl HtcpParams {
    pub const TABLE: &'static [Param<HtcpParams>] = &[
        Param {
            name: "use_rtt_scaling",
            kernel: "tcp_htcp.c: use_rtt_scaling",
            meaning: "scale the increase by min RTT / 100 ms (clamped to 0.1..2)",
            kind: Kind::Flag,
            min: 0.0,
            max: 1.0,
            field: |p| &mut p.use_rtt_scaling,
        },
        Param {
            name: "use_bandwidth_switch",
            kernel: "tcp_htcp.c: use_bandwidth_switch",
            meaning: "a change of the achieved throughput over 20% between events resets beta to 0.5",
            kind: Kind::Flag,
            min: 0.0,
            max: 1.0,
            field: |p| &mut p.use_bandwidth_switch,
        },
    ];

    /// The defaults with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("htcp", Self::TABLE, HtcpParams::default(), overrides)
    }
}

/// `msecs_to_jiffies`, which rounds up.
fn msecs_to_jiffies(ms: u32, hz: u32) -> u32 {
    (ms as u64 * hz as u64).div_ceil(1_000) as u32
}

/// `between(seq1, seq2, seq3)`: seq2 <= seq1 <= seq3 on wrapping 32-bit counters.
fn between(seq1: u32, seq2: u32, seq3: u32) -> bool {
    seq3.wrapping_sub(seq2) >= seq1.wrapping_sub(seq2)
}

/// The kernel's `jiffies` (and `tcp_jiffies32`, its low 32 bits) at `c.now`.
fn jiffies(c: &ConnInfo) -> u32 {
    c.jiffies.wrapping_add(INITIAL_JIFFIES_S.wrapping_mul(c.hz).wrapping_neg())
}

/// `struct htcp`. RTTs and times in jiffies.
#[derive(Clone, Debug, Default)]
pub struct Htcp {
    p: HtcpParams,
    hz: u32,
    /// α in 1/128: segments per RTT.
    alpha: u32,
    /// β in 1/128.
    beta: u8,
    /// β may adapt (set after the first congestion event).
    modeswitch: bool,
    /// Segments the last ACK in Open acknowledged.
    pkts_acked: u16,
    packetcount: u32,
    min_rtt: u32,
    max_rtt: u32,
    /// When the last congestion event began (ended, once back in Open).
    last_cong: u32,
    /// What `htcp_reset` replaced, for undo; `undo_last_cong` = 0: nothing to undo.
    undo_last_cong: u32,
    undo_max_rtt: u32,
    undo_old_max_b: u32,
    /// Achieved throughput, segments per second: min, max, max at the last event, EWMA.
    min_b: u32,
    max_b: u32,
    old_max_b: u32,
    bi: u32,
    /// Start of the current throughput interval.
    lasttime: u32,
}

impl Htcp {
    pub fn new(p: HtcpParams) -> Self {
        // `hz` is the connection's, set by `init`.
        Htcp { p, hz: 1000, alpha: ALPHA_BASE, beta: BETA_MIN, pkts_acked: 1, ..Htcp::default() }
    }

    pub fn params(&self) -> &HtcpParams {
        &self.p
    }

    /// `htcp_cong_time`: jiffies since the last congestion event.
    fn cong_time(&self, now: u32) -> u32 {
        now.wrapping_sub(self.last_cong)
    }

    /// `htcp_reset`: a congestion event begins now; keep what it replaces for undo.
    fn reset(&mut self, now: u32) {
        self.undo_last_cong = self.last_cong;
        self.undo_max_rtt = self.max_rtt;
        self.undo_old_max_b = self.old_max_b;
        self.last_cong = now;
    }

    /// `measure_rtt`: min RTT ever; max RTT in Open, growing at most 20 ms a sample.
    fn measure_rtt(&mut self, c: &ConnInfo, rtt: u32) {
        if self.min_rtt > rtt || self.min_rtt == 0 {
            self.min_rtt = rtt;
        }
        if c.ca_state == CaState::Open {
            if self.max_rtt < self.min_rtt {
                self.max_rtt = self.min_rtt;
            }
            if self.max_rtt < rtt && rtt <= self.max_rtt.wrapping_add(msecs_to_jiffies(MAX_RTT_STEP_MS, c.hz)) {
                self.max_rtt = rtt;
            }
        }
    }

    /// `measure_achieved_throughput`'s estimate: once a window is ACKed and a min RTT
    /// has passed, a new sample of segments per second.
    fn measure_throughput(&mut self, c: &ConnInfo, cwnd: u32, acked: u32) {
        let now = jiffies(c);
        if !matches!(c.ca_state, CaState::Open | CaState::Disorder) {
            self.packetcount = 0;
            self.lasttime = now;
            return;
        }
        self.packetcount = self.packetcount.wrapping_add(acked);
        let alpha_segments = (self.alpha >> 7).max(1);
        let elapsed = now.wrapping_sub(self.lasttime);
        if self.packetcount >= cwnd.wrapping_sub(alpha_segments) && elapsed >= self.min_rtt && self.min_rtt > 0 {
            let cur_bi = self.packetcount.wrapping_mul(c.hz) / elapsed;
            if self.cong_time(now) / self.min_rtt <= CCOUNT_FRESH {
                (self.min_b, self.max_b, self.bi) = (cur_bi, cur_bi, cur_bi);
            } else {
                self.bi = self.bi.wrapping_mul(3).wrapping_add(cur_bi) / 4;
                self.max_b = self.max_b.max(self.bi);
                self.min_b = self.min_b.min(self.max_b);
            }
            self.packetcount = 0;
            self.lasttime = now;
        }
    }

    /// `htcp_beta_update`: 0.5 after a throughput change over 20% or before the first
    /// event; otherwise min RTT / max RTT clamped to 0.5..0.8.
    fn beta_update(&mut self, min_rtt: u32, max_rtt: u32, hz: u32) {
        if self.p.use_bandwidth_switch {
            let (max_b, old_max_b) = (self.max_b, self.old_max_b);
            self.old_max_b = self.max_b;
            if !between(max_b.wrapping_mul(5), old_max_b.wrapping_mul(4), old_max_b.wrapping_mul(6)) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        if self.modeswitch && min_rtt > msecs_to_jiffies(ADAPTIVE_MIN_RTT_MS, hz) && max_rtt != 0 {
            // The kernel stores the quotient into the u8 before clamping it.
            self.beta = ((min_rtt << 7) / max_rtt) as u8;
            self.beta = self.beta.clamp(BETA_MIN, BETA_MAX);
        } else {
            self.beta = BETA_MIN;
            self.modeswitch = true;
        }
    }

    /// `htcp_alpha_update`: α(Δ), RTT-scaled, times 2(1 − β).
    fn alpha_update(&mut self, now: u32) {
        let hz = self.hz;
        let mut factor: u32 = 1;
        let mut diff = self.cong_time(now);
        if diff > hz {
            diff -= hz;
            let half = diff / 2;
            factor = 1 + (diff.wrapping_mul(10).wrapping_add(half.wrapping_mul(half) / hz)) / hz;
        }
        if self.p.use_rtt_scaling && self.min_rtt != 0 {
            // 100 ms / min RTT in 1/8, clamped to [0.5, 10]: α × min RTT / 100 ms.
            let scale = ((hz << 3).checked_div(self.min_rtt.wrapping_mul(10)).unwrap_or(0)).clamp(1 << 2, 10 << 3);
            factor = ((factor << 3) / scale).max(1);
        }
        self.alpha = 2u32.wrapping_mul(factor).wrapping_mul(ALPHA_BASE - self.beta as u32);
        if self.alpha == 0 {
            self.alpha = ALPHA_BASE;
        }
    }

    /// `htcp_param_update`: new β and α at a congestion event; max RTT fades toward
    /// min RTT.
    fn param_update(&mut self, now: u32) {
        let (min_rtt, max_rtt) = (self.min_rtt, self.max_rtt);
        self.beta_update(min_rtt, max_rtt, self.hz);
        self.alpha_update(now);
        if min_rtt > 0 && max_rtt > min_rtt {
            self.max_rtt = min_rtt + (max_rtt - min_rtt).wrapping_mul(MAX_RTT_KEEP_PERCENT) / 100;
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    /// `htcp_init`.
    fn init(&mut self, c: &ConnInfo, _w: &mut Window) {
        *self = Htcp { hz: c.hz, last_cong: jiffies(c), ..Htcp::new(self.p.clone()) };
    }

    /// `htcp_recalc_ssthresh`: update β and α, cut to β·cwnd.
    fn ssthresh(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        self.param_update(jiffies(c));
        (w.cwnd.wrapping_mul(self.beta as u32) >> 7).max(MIN_SSTHRESH)
    }

    /// `htcp_cong_avoid`: slow start, or +1 once cwnd_cnt·α reaches cwnd (α/cwnd per
    /// segment), counting the segments of the last ACK in Open.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if !c.is_cwnd_limited {
            return;
        }
        if w.in_slow_start() {
            // The segments left over at ssthresh are dropped, as in the kernel.
            slow_start(w, acked);
            return;
        }
        if w.cwnd_cnt.wrapping_mul(self.alpha) >> 7 >= w.cwnd {
            if w.cwnd < w.cwnd_clamp {
                w.cwnd += 1;
            }
            w.cwnd_cnt = 0;
            self.alpha_update(jiffies(c));
        } else {
            w.cwnd_cnt = w.cwnd_cnt.wrapping_add(self.pkts_acked as u32);
        }
        self.pkts_acked = 1;
    }

    /// `measure_achieved_throughput`: the ACK's count, its RTT, and the throughput.
    fn pkts_acked(&mut self, c: &ConnInfo, w: &mut Window, s: &AckSample) {
        if c.ca_state == CaState::Open {
            // `ca->pkts_acked` is a u16.
            self.pkts_acked = s.pkts_acked as u16;
        }
        if s.rtt_us > 0 {
            self.measure_rtt(c, usecs_to_jiffies(s.rtt_us as u32 as u64, c.hz) as u32);
        }
        if self.p.use_bandwidth_switch {
            self.measure_throughput(c, w.cwnd, s.pkts_acked);
        }
    }

    /// `htcp_state`: a congestion event starts Δ over; back in Open after one, Δ counts
    /// from now.
    fn set_state(&mut self, c: &ConnInfo, _w: &mut Window, new: CaState) {
        match new {
            CaState::Open if self.undo_last_cong != 0 => {
                self.last_cong = jiffies(c);
                self.undo_last_cong = 0;
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => self.reset(jiffies(c)),
            _ => {}
        }
    }

    /// `htcp_cwnd_undo`: the event was spurious: restore Δ's start, max RTT and the
    /// throughput memory, then `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        if self.undo_last_cong != 0 {
            self.last_cong = self.undo_last_cong;
            self.max_rtt = self.undo_max_rtt;
            self.old_max_b = self.undo_old_max_b;
            self.undo_last_cong = 0;
        }
        super::reno::undo_cwnd(c, w)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    fn internals(&self) -> Internals {
        Internals::from([
            ("alpha", self.alpha as f64 / ALPHA_BASE as f64),
            ("beta", self.beta as f64 / ALPHA_BASE as f64),
            ("min_rtt_jiffies", self.min_rtt as f64),
            ("max_rtt_jiffies", self.max_rtt as f64),
            ("max_b", self.max_b as f64),
            ("bi", self.bi as f64),
            ("modeswitch", self.modeswitch as u8 as f64),
        ])
    }
}

#[cfg(test)]
mod tests;
