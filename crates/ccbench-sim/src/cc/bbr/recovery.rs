//! Loss handling (v1): packet conservation for one round at the start of recovery,
//! cwnd restored afterwards, and the long-term ("policer") bandwidth sampler.

use super::model::*;
use super::Bbr;
use crate::cc::{CaState, ConnInfo, RateSample, Window};

/// `bbr_lt_bw_sampling` state.
#[derive(Clone, Debug, Default)]
pub struct LongTerm {
    pub is_sampling: bool,
    pub use_bw: bool,
    pub bw: u64,
    rtt_cnt: u32,
    last_delivered: u64,
    last_lost: u64,
    /// Interval start, ms of `delivered_mstamp`.
    last_stamp_ms: u64,
}

impl LongTerm {
    /// `bbr_reset_lt_bw_sampling` (with a connection) or forget everything (without).
    pub fn reset(&mut self, c: Option<&ConnInfo>) {
        self.bw = 0;
        self.use_bw = false;
        self.is_sampling = false;
        if let Some(c) = c {
            self.reset_interval(c);
        }
    }

    fn reset_interval(&mut self, c: &ConnInfo) {
        self.last_stamp_ms = c.delivered_us / 1000;
        self.last_delivered = c.delivered;
        self.last_lost = c.lost;
        self.rtt_cnt = 0;
    }
}

impl Bbr {
    /// `bbr_set_cwnd_to_recover_or_restore`: returns (cwnd, conserving packets).
    pub(super) fn recover_or_restore(&mut self, c: &ConnInfo, w: &Window, rs: &RateSample) -> (u32, bool) {
        let (prev, state) = (self.prev_ca_state, c.ca_state);
        let acked = rs.acked_sacked;
        let mut cwnd = w.cwnd;
        // An ACK for P packets releases at most 2P: first deduct what was lost.
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: conserve packets, start a round now.
            self.packet_conservation = true;
            self.next_rtt_delivered = c.delivered;
            cwnd = c.inflight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(c.inflight + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_lt_bw_sampling`: detect a token-bucket policer from two consecutive lossy
    /// intervals with nearly equal delivery rates, then pace at that rate for 48 rounds.
    pub(super) fn lt_bw_sampling(&mut self, c: &ConnInfo, losses: u32, app_limited: bool) {
        if self.p.lt_sampling == 0 {
            return;
        }
        if self.lt.use_bw {
            if self.mode == super::Mode::ProbeBw && self.round_start {
                self.lt.rtt_cnt += 1;
                if self.lt.rtt_cnt >= self.p.lt_bw_max_rtts {
                    self.lt.reset(Some(c));
                    self.reset_probe_bw_mode(c);
                }
            }
            return;
        }
        // Start only at a loss, when a policer's tokens are exhausted.
        if !self.lt.is_sampling {
            if losses == 0 {
                return;
            }
            self.lt.reset_interval(c);
            self.lt.is_sampling = true;
        }
        if app_limited {
            self.lt.reset(Some(c));
            return;
        }
        if self.round_start {
            self.lt.rtt_cnt += 1;
        }
        if self.lt.rtt_cnt < self.p.lt_intvl_min_rtts {
            return;
        }
        if self.lt.rtt_cnt > 4 * self.p.lt_intvl_min_rtts {
            self.lt.reset(Some(c));
            return;
        }
        if losses == 0 {
            return;
        }
        let lost = c.lost - self.lt.last_lost;
        let delivered = c.delivered - self.lt.last_delivered;
        if delivered == 0 || (lost << BBR_SCALE) < self.p.lt_loss_thresh as u64 * delivered {
            return;
        }
        let t_ms = (c.delivered_us / 1000).saturating_sub(self.lt.last_stamp_ms);
        if t_ms < 1 {
            return;
        }
        let bw = delivered * BW_UNIT / (t_ms * 1000);
        self.lt_interval_done(c, bw);
    }

    /// `bbr_lt_bw_interval_done`.
    fn lt_interval_done(&mut self, c: &ConnInfo, bw: u64) {
        if self.lt.bw > 0 {
            let diff = bw.abs_diff(self.lt.bw);
            if diff * BBR_UNIT as u64 <= self.p.lt_bw_ratio as u64 * self.lt.bw
                || rate_bytes_per_sec(diff, c.mss, BBR_UNIT) <= self.p.lt_bw_diff
            {
                self.lt.bw = (bw + self.lt.bw) >> 1;
                self.lt.use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt.rtt_cnt = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.lt.reset_interval(c);
    }
}
