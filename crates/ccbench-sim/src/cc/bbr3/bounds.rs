//! The loss response outside bandwidth probes (v2/v3): once per round with loss, the
//! short-term bounds bw_lo and inflight_lo fall to max(what the last round delivered,
//! 0.7 x their value); cwnd is capped by inflight_hi (or its headroom) and inflight_lo.

use super::{Bbr3, Mode, Phase, UNSET, UNSET_BW};
use crate::cc::bbr::model::*;
use crate::cc::Window;

impl Bbr3 {
    /// `bbr_reset_lower_bounds`.
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = UNSET_BW;
        self.inflight_lo = UNSET;
    }

    /// `bbr_adapt_lower_bounds`: once per round, outside bandwidth probes.
    pub(super) fn adapt_lower_bounds(&mut self, w: &Window) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = UNSET;
        if self.ecn_in_round && self.ecn_eligible && self.p.ecn_factor > 0 {
            // `bbr_ecn_lower_bounds`: cut by alpha x ecn_factor.
            if self.inflight_lo == UNSET {
                self.inflight_lo = w.cwnd;
            }
            let cut = (self.ecn_alpha as u64 * self.p.ecn_factor as u64) >> BBR_SCALE;
            ecn_inflight_lo = ((self.inflight_lo as u64 * (BBR_UNIT as u64).saturating_sub(cut)) >> BBR_SCALE) as u32;
        }
        if self.loss_in_round {
            // `bbr_init_lower_bounds`
            if self.bw_lo == UNSET_BW {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo == UNSET {
                self.inflight_lo = w.cwnd;
            }
            // `bbr_loss_lower_bounds`
            let keep = (BBR_UNIT - self.p.beta) as u64;
            self.bw_lo = self.bw_latest.max(((self.bw_lo as u128 * keep as u128) >> BBR_SCALE) as u64);
            self.inflight_lo = self.inflight_latest.max(((self.inflight_lo as u64 * keep) >> BBR_SCALE) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        if self.bw_lo != UNSET_BW {
            self.bw_lo = self.bw_lo.max(1);
        }
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    pub(super) fn bound_cwnd_for_inflight_model(&self, w: &mut Window) {
        let mut cap = UNSET;
        if self.mode == Mode::ProbeBw && self.phase != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt || (self.mode == Mode::ProbeBw && self.phase == Phase::Cruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(self.p.cwnd_min_target);
        w.cwnd = w.cwnd.min(cap);
    }
}
