//! STARTUP and DRAIN (v1): leave STARTUP once the max-filtered bandwidth has not grown
//! by 25% for three rounds, then drain the queue STARTUP built.

use super::model::*;
use super::{Bbr, Mode};
use crate::cc::{ConnInfo, RateSample, Window};

impl Bbr {
    /// `bbr_check_full_bw_reached`: once per round, on non-app-limited samples.
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let max_bw = self.max_bw();
        self.full_bw_reached =
            plateau_round(&mut self.full_bw, &mut self.full_bw_cnt, max_bw, self.p.full_bw_thresh, self.p.full_bw_cnt);
    }

    /// `bbr_check_drain`: STARTUP -> DRAIN when the pipe is full; DRAIN -> PROBE_BW once
    /// what will be in flight at the next departure fits one BDP.
    pub(super) fn check_drain(&mut self, c: &ConnInfo, w: &mut Window) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.transition_to(c.now, Mode::Drain);
            w.ssthresh = self.inflight(c, w, self.max_bw(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.in_net_at_edt(c, w, c.inflight) <= self.inflight(c, w, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(c);
        }
    }
}
