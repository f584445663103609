//! The test path and the ACK-by-ACK driver shared by the scripted tests of every BBR
//! version (`bbr/tests.rs`, `bbr3/tests.rs`).
//!
//! The path: min RTT 40 ms and a delivery rate of exactly 1/64 segment per µs
//! (15 625 segments/s), so that the bandwidth is exact in the kernel's 2^24 fixed point
//! (2^18) and one BDP is exactly 625 segments. ACKs arrive every 320 µs for 5 segments,
//! 125 ACKs per packet-timed round.

use crate::cc::{CaState, CongestionControl, ConnInfo, LostSegment, RateSample, Window};
use crate::time::{Dur, Time, NS_PER_SEC};

/// Runs start well past jiffy 0, like a kernel's clock.
pub const T0: Time = Time(1_000 * NS_PER_SEC);
pub const HZ: u32 = 1000;
pub const MSS: u32 = 1448;
pub const RTT_US: u64 = 40_000;
pub const ACK_GAP_US: u64 = 320;
pub const PER_ACK: u32 = 5;
/// 1/64 segment per µs in BW_UNIT (2^24) fixed point.
pub const BW: u64 = 1 << 18;
pub const BW_SEGS_PER_US: f64 = 1.0 / 64.0;
/// bw x min_rtt = 15 625 seg/s x 40 ms.
pub const BDP: u32 = 625;
/// ACKs per packet-timed round: 40 000 µs / 320 µs.
pub const ACKS_PER_ROUND: u64 = RTT_US / ACK_GAP_US;

/// `bbr_bw_to_pacing_rate` as a formula: payload bytes/s = bw x MSS x gain x 0.99,
/// truncated.
pub fn pacing_rate_closed(bw_segs_per_us: f64, gain: u32) -> u64 {
    (bw_segs_per_us * MSS as f64 * gain as f64 / 256.0 * 0.99 * 1e6).floor() as u64
}

/// `bbr_bdp` on the test path: ceil(bw x min_rtt x gain).
pub fn bdp_closed(gain: u32) -> u32 {
    (BDP * gain).div_ceil(256)
}

/// One connection driven the way the stack drives `cong_control` (`tcp_ack`,
/// tcp_input.c): per ACK the delivered count and delivered stamp advance, a rate sample
/// is formed, the algorithm runs, and its app-limited request is taken. `prior_delivered`
/// is the delivered count one `round_us` earlier (the newest delivered packet left one
/// round trip ago), so a packet-timed round lasts `round_us`. By default each sample is
/// the data delivered in the last `round_us` over `round_us`; `inflight` is whatever
/// the test set in `c` (one BDP to begin with).
pub struct Driver<C> {
    pub cc: C,
    pub c: ConnInfo,
    pub w: Window,
    pub round_us: u64,
    pub rtt_us: i64,
    /// Time between ACKs, and segments each one delivers.
    pub gap_us: u64,
    pub per_ack: u32,
    /// How far the next departure (EDT) is ahead of now.
    pub edt_lead_us: u64,
    /// `rs.prior_in_flight` (and `tx_in_flight`) when not the current inflight.
    pub prior_in_flight: Option<u32>,
    /// (time µs, delivered after the ACK).
    hist: Vec<(u64, u64)>,
    pub acks: u64,
    /// The algorithm asked the stack to mark the connection app-limited on the last ACK.
    pub app_limited_requested: bool,
}

impl<C: CongestionControl> Driver<C> {
    /// `cc` initialised on a path of `rtt_us` with an ACK every `gap_us` for `per_ack`
    /// segments, one BDP in flight.
    pub fn start(mut cc: C, rtt_us: u64, gap_us: u64, per_ack: u32) -> Self {
        let c = ConnInfo {
            now: T0,
            jiffies: T0.jiffies(HZ),
            hz: HZ,
            mss: MSS,
            srtt_us: rtt_us,
            min_rtt_us: rtt_us,
            lsndtime: T0,
            wstamp: T0,
            delivered_us: T0.us(),
            inflight: (rtt_us / gap_us) as u32 * per_ack,
            ..ConnInfo::default()
        };
        let mut w = Window::new(10);
        cc.init(&c, &mut w);
        Driver {
            cc,
            c,
            w,
            round_us: rtt_us,
            rtt_us: rtt_us as i64,
            gap_us,
            per_ack,
            edt_lead_us: 0,
            prior_in_flight: None,
            hist: Vec::new(),
            acks: 0,
            app_limited_requested: false,
        }
    }

    pub fn now_us(&self) -> u64 {
        self.c.now.us()
    }

    /// One steady ACK.
    pub fn ack(&mut self) {
        self.ack_with(|_, _| {});
    }

    /// One steady ACK whose sample (or connection view) the test adjusts first.
    pub fn ack_with(&mut self, tweak: impl FnOnce(&mut RateSample, &mut ConnInfo)) {
        self.ack_full(self.gap_us, self.per_ack, tweak);
    }

    pub fn app_limited_ack(&mut self) {
        self.ack_with(|rs, _| rs.is_app_limited = true);
    }

    /// An ACK `gap_us` after the previous one, delivering `acked` segments.
    pub fn ack_full(&mut self, gap_us: u64, acked: u32, tweak: impl FnOnce(&mut RateSample, &mut ConnInfo)) {
        let now = self.c.now + Dur::from_us(gap_us);
        self.c.now = now;
        self.c.jiffies = now.jiffies(HZ);
        self.c.delivered += acked as u64;
        self.c.delivered_us = now.us();
        self.c.wstamp = now + Dur::from_us(self.edt_lead_us);
        let back = now.us() - self.round_us;
        let i = self.hist.partition_point(|&(t, _)| t <= back);
        let prior = if i == 0 { 0 } else { self.hist[i - 1].1 };
        let pif = self.prior_in_flight.unwrap_or(self.c.inflight);
        let mut rs = RateSample {
            prior_delivered: prior,
            delivered: (self.c.delivered - prior) as i64,
            interval_us: self.round_us as i64,
            rtt_us: self.rtt_us,
            acked_sacked: acked,
            prior_in_flight: pif,
            tx_in_flight: pif,
            ..RateSample::default()
        };
        tweak(&mut rs, &mut self.c);
        assert!(self.cc.cong_control(&self.c, &mut self.w, &rs));
        self.app_limited_requested = std::mem::take(&mut self.w.mark_app_limited);
        self.hist.push((now.us(), self.c.delivered));
        self.acks += 1;
    }

    /// Steady ACKs until `done`; panics after `max` ACKs.
    pub fn ack_until(&mut self, max: u64, mut done: impl FnMut(&Self) -> bool) {
        for _ in 0..max {
            self.ack();
            if done(self) {
                return;
            }
        }
        panic!("not reached in {max} ACKs, at {} µs: {:?}", self.now_us() - T0.us(), self.cc.internals());
    }

    /// The stack entering fast recovery: `ssthresh` (BBR saves cwnd), then the state.
    pub fn enter_recovery(&mut self) {
        self.w.ssthresh = self.cc.ssthresh(&self.c, &self.w);
        self.cc.set_state(&self.c, &mut self.w, CaState::Recovery);
        self.c.ca_state = CaState::Recovery;
    }

    /// The stack marks one (single-segment) packet lost.
    pub fn lose(&mut self, seg: LostSegment) {
        self.cc.segment_lost(&self.c, &mut self.w, &seg);
    }
}
