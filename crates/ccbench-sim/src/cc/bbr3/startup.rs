//! STARTUP and DRAIN (v2/v3): exit STARTUP on a bandwidth plateau or on persistent
//! high loss, then drain to one BDP and enter PROBE_BW at DOWN.

use super::{Bbr3, Mode, Version};
use crate::cc::bbr::model::*;
use crate::cc::{CaState, ConnInfo, RateSample, Window};

impl Bbr3 {
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_check_full_bw_reached`. v3 compares each sample with the baseline (any big
    /// sample resets the count) and runs in every mode, so it also detects the plateau
    /// of a PROBE_BW UP; v2 compares the filtered max once per round, as v1.
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        match self.v {
            Version::V3 => {
                if self.full_bw_now || rs.is_app_limited {
                    return;
                }
                let thresh = ((self.full_bw as u128 * self.p.full_bw_thresh as u128) >> BBR_SCALE) as u64;
                if self.sample_bw >= thresh {
                    self.reset_full_bw();
                    self.full_bw = self.sample_bw;
                    return;
                }
                if !self.round_start {
                    return;
                }
                self.full_bw_cnt += 1;
                self.full_bw_now = self.full_bw_cnt >= self.p.full_bw_cnt;
                self.full_bw_reached |= self.full_bw_now;
            }
            Version::V2 => {
                if self.full_bw_reached || !self.round_start || rs.is_app_limited {
                    return;
                }
                let max_bw = self.max_bw();
                self.full_bw_reached = plateau_round(
                    &mut self.full_bw,
                    &mut self.full_bw_cnt,
                    max_bw,
                    self.p.full_bw_thresh,
                    self.p.full_bw_cnt,
                );
            }
        }
    }

    /// `bbr_is_inflight_too_high`: lost more than 2% of what was in flight when the
    /// sampled packet left, or (ECN-eligible) more than half the delivered data was CE.
    pub(super) fn inflight_too_high(&self, lost: u64, tx_in_flight: u32, delivered: i64, delivered_ce: i64) -> bool {
        if lost > 0 && tx_in_flight > 0 && lost > (tx_in_flight as u64 * self.p.loss_thresh as u64) >> BBR_SCALE {
            return true;
        }
        self.ecn_eligible
            && self.p.ecn_thresh > 0
            && delivered > 0
            && delivered_ce > (delivered * self.p.ecn_thresh as i64) >> BBR_SCALE
    }

    /// `bbr_handle_queue_too_high_in_startup`.
    pub(super) fn handle_queue_too_high_in_startup(&mut self, c: &ConnInfo, w: &Window) {
        self.full_bw_reached = true;
        self.inflight_hi = self.inflight(c, w, self.max_bw(), BBR_UNIT).max(self.inflight_latest);
    }

    /// `bbr_check_loss_too_high_in_startup`: in recovery, at the end of a round with at
    /// least `full_loss_cnt` lossy ACKs and loss above the threshold, the pipe is full.
    pub(super) fn check_loss_too_high_in_startup(&mut self, c: &ConnInfo, w: &Window, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.p.full_loss_cnt > 0
            && self.loss_round_start
            && c.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.p.full_loss_cnt
            && self.inflight_too_high(rs.lost, rs.tx_in_flight, rs.delivered, rs.delivered_ce)
        {
            self.handle_queue_too_high_in_startup(c, w);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_reset_congestion_signals`.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_round = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_check_drain`.
    pub(super) fn check_drain(&mut self, c: &ConnInfo, w: &mut Window) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.transition_to(c.now, Mode::Drain);
            w.ssthresh = self.inflight(c, w, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.in_net_at_edt(c, w, c.inflight) <= self.inflight(c, w, self.max_bw(), BBR_UNIT)
        {
            self.transition_to(c.now, Mode::ProbeBw);
            self.start_probe_down(c);
        }
    }
}
