//! PROBE_BW (v1): the eight-phase pacing-gain cycle 1.25, 0.75, 1 x 6, each phase at
//! least one min_rtt long, entered at a random phase other than the 0.75 one.

use super::model::*;
use super::{Bbr, Mode, CYCLE_LEN};
use crate::cc::{ConnInfo, RateSample, Window};
use rand::Rng as _;

impl Bbr {
    /// `bbr_pacing_gain[phase]`.
    pub(super) fn cycle_gain(&self, phase: usize) -> u32 {
        match phase {
            0 => self.p.probe_gain,
            1 => self.p.probe_drain_gain,
            _ => BBR_UNIT,
        }
    }

    /// `bbr_reset_probe_bw_mode`: start at phase 7 - rand(cycle_rand), then advance, so
    /// the first phase is one of {2..7, 0}.
    pub(super) fn reset_probe_bw_mode(&mut self, c: &ConnInfo) {
        self.transition_to(c.now, Mode::ProbeBw);
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.gen_range(0..self.p.cycle_rand) as usize;
        self.advance_cycle_phase(c.delivered_us);
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, delivered_us: u64) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_us = delivered_us;
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, c: &ConnInfo, w: &Window, rs: &RateSample) -> bool {
        let full_length = c.delivered_us.saturating_sub(self.cycle_us) > self.min_rtt_us;
        if self.pacing_gain == BBR_UNIT {
            return full_length;
        }
        let inflight = self.in_net_at_edt(c, w, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            // Probe until inflight reaches gain x BDP; give up after a min_rtt on loss.
            return full_length && (rs.losses > 0 || inflight >= self.inflight(c, w, bw, self.pacing_gain));
        }
        // Drain until inflight is back to one BDP, or a min_rtt passed.
        full_length || inflight <= self.inflight(c, w, bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`.
    pub(super) fn update_cycle_phase(&mut self, c: &ConnInfo, w: &Window, rs: &RateSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(c, w, rs) {
            self.advance_cycle_phase(c.delivered_us);
        }
    }
}
