//! PROBE_BW (v2/v3): cruise at the estimate; every 2-3 s (or after at most 63 rounds,
//! for Reno coexistence) refill the pipe for a round, probe up at 1.25 until the
//! bandwidth plateaus (v3) or inflight reaches 1.25 BDP (v2) or loss exceeds 2%, then
//! drain at DOWN. inflight_hi, the long-term upper bound, is cut on excessive loss and
//! grows, with a doubling slope, while probing without it.

use super::{AckPhase, Bbr3, Mode, Phase, Version, UNSET};
use crate::cc::bbr::model::*;
use crate::cc::{CaState, ConnInfo, LostSegment, RateSample, Window};
use rand::Rng as _;

impl Bbr3 {
    fn has_elapsed_in_phase(&self, c: &ConnInfo, interval_us: u64) -> bool {
        c.now.us() > self.cycle_us + interval_us
    }

    /// `bbr_pick_probe_wait`: a random 0 or 1 round head start, and 2 s + U[0, 1 s).
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.gen_range(0..2);
        self.probe_wait_us =
            self.p.bw_probe_base_us as u64 + self.rng.gen_range(0..self.p.bw_probe_rand_us.max(1)) as u64;
    }

    /// `bbr_start_bw_probe_down`.
    pub(super) fn start_probe_down(&mut self, c: &ConnInfo) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait();
        self.cycle_us = c.now.us();
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = c.delivered;
        self.phase_to(c.now, Phase::Down);
    }

    /// `bbr_start_bw_probe_cruise`.
    pub(super) fn start_probe_cruise(&mut self, c: &ConnInfo) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.phase_to(c.now, Phase::Cruise);
    }

    /// `bbr_start_bw_probe_refill`: forget the lower bounds, refill for one round.
    fn start_probe_refill(&mut self, c: &ConnInfo, probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = c.delivered;
        self.phase_to(c.now, Phase::Refill);
    }

    /// `bbr_start_bw_probe_up`.
    fn start_probe_up(&mut self, c: &ConnInfo, w: &Window) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = c.delivered;
        self.cycle_us = c.now.us();
        self.reset_full_bw();
        self.full_bw = self.sample_bw;
        self.phase_to(c.now, Phase::Up);
        self.raise_inflight_hi_slope(w);
    }

    /// `bbr_raise_inflight_hi_slope`: each round in UP doubles inflight_hi's growth.
    fn raise_inflight_hi_slope(&mut self, w: &Window) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (w.cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`: grow inflight_hi while it is what limits cwnd.
    fn probe_inflight_hi_upward(&mut self, c: &ConnInfo, w: &Window, rs: &RateSample) {
        if !c.is_cwnd_limited || w.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope(w);
        }
    }

    /// `bbr_inflight_with_headroom`: inflight_hi less 15%, to leave room for others.
    pub(super) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = ((self.inflight_hi as u64 * self.p.inflight_headroom as u64) >> BBR_SCALE).max(1) as u32;
        self.inflight_hi.saturating_sub(headroom).max(self.p.cwnd_min_target)
    }

    /// `bbr_handle_inflight_too_high`: cut inflight_hi (once per probe) and stop probing.
    fn handle_inflight_too_high(&mut self, c: &ConnInfo, w: &Window, tx_in_flight: u32, app_limited: bool) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !app_limited {
            let cut = ((self.target_inflight(c, w) as u64 * (BBR_UNIT - self.p.beta) as u64) >> BBR_SCALE) as u32;
            self.inflight_hi = tx_in_flight.max(cut);
        }
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            self.start_probe_down(c);
        }
    }

    /// `bbr_note_loss`: the round (and the cycle) saw a loss; the first one of the round
    /// remembers where the round's delivery stood.
    fn note_loss(&mut self, c: &ConnInfo) {
        if !self.loss_in_round {
            self.loss_round_delivered = c.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// `bbr_run_loss_probe_recovery` (v3, `bbr_loss_probe_recovery`): a loss a TLP probe
    /// repaired is a loss of this round (`bbr_note_loss`), and while probing, one lost
    /// segment on top of the latest round's delivery may show inflight too high.
    pub(super) fn run_loss_probe_recovery(&mut self, c: &ConnInfo, w: &Window) {
        self.note_loss(c);
        if !self.bw_probe_samples {
            return;
        }
        let tx_in_flight = self.inflight_latest.saturating_add(1);
        if self.inflight_too_high(1, tx_in_flight, 0, 0) {
            self.handle_inflight_too_high(c, w, tx_in_flight, c.tlp_orig_data_app_limited);
        }
    }

    /// `bbr_skb_marked_lost`: note the loss for this round, and while probing check
    /// whether this packet's flight crossed the 2% loss threshold, and where.
    pub(super) fn skb_marked_lost(&mut self, c: &ConnInfo, w: &Window, seg: &LostSegment) {
        self.note_loss(c);
        if !self.bw_probe_samples {
            return;
        }
        let lost = seg.lost_now - seg.lost_at_send;
        if self.inflight_too_high(lost, seg.tx_in_flight, 0, 0) {
            let tx_in_flight = self.inflight_hi_from_lost_segment(seg.tx_in_flight, lost);
            self.handle_inflight_too_high(c, w, tx_in_flight, seg.is_app_limited);
        }
    }

    /// `bbr_inflight_hi_from_lost_skb`: the inflight at which loss crossed the threshold,
    /// interpolated within this (one-segment) packet.
    fn inflight_hi_from_lost_segment(&self, tx_in_flight: u32, lost: u64) -> u32 {
        const PCOUNT: u64 = 1;
        let Some(inflight_prev) = (tx_in_flight as u64).checked_sub(PCOUNT) else { return UNSET };
        let Some(lost_prev) = lost.checked_sub(PCOUNT) else { return UNSET };
        let budget = (inflight_prev * self.p.loss_thresh as u64 + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let prefix = if lost_prev >= budget {
            0
        } else {
            ((budget - lost_prev) << BBR_SCALE) / (BBR_UNIT - self.p.loss_thresh) as u64
        };
        (inflight_prev + prefix).min(UNSET as u64 - 1) as u32
    }

    /// `bbr_adapt_upper_bounds`. Returns true if it decided a state transition.
    fn adapt_upper_bounds(&mut self, c: &ConnInfo, w: &Window, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The probe's ACKs are over: its bandwidth samples age into the older bucket.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.is_app_limited && self.bw_hi[1] > 0 {
                self.bw_hi = [self.bw_hi[1], 0];
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_probe_refill(c, 0);
                return true;
            }
        }
        if self.inflight_too_high(rs.lost, rs.tx_in_flight, rs.delivered, rs.delivered_ce) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(c, w, rs.tx_in_flight, rs.is_app_limited);
            }
        } else {
            if self.inflight_hi == UNSET {
                return false;
            }
            // Random loss must not ratchet the bound down forever: raise it to any
            // level seen to be safe.
            self.inflight_hi = self.inflight_hi.max(rs.tx_in_flight);
            if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
                self.probe_inflight_hi_upward(c, w, rs);
            }
        }
        false
    }

    /// `bbr_is_reno_coexistence_probe_time`.
    fn reno_coexistence_probe_time(&self, c: &ConnInfo, w: &Window) -> bool {
        self.rounds_since_probe >= self.target_inflight(c, w).min(self.p.bw_probe_max_rounds)
    }

    /// `bbr_check_time_to_probe_bw`.
    fn check_time_to_probe_bw(&mut self, c: &ConnInfo, w: &Window) -> bool {
        // ECN marks but no loss this cycle: re-probe soon, in case cross traffic left.
        if self.p.ecn_reprobe_gain > 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && c.ca_state == CaState::Open
        {
            let n = (self.inflight_hi as u64 * self.p.ecn_reprobe_gain as u64) >> BBR_SCALE;
            self.start_probe_refill(c, n.max(1).ilog2());
            return true;
        }
        if self.has_elapsed_in_phase(c, self.probe_wait_us) || self.reno_coexistence_probe_time(c, w) {
            self.start_probe_refill(c, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise`: drained below both the headroom and one BDP.
    fn check_time_to_cruise(&self, c: &ConnInfo, w: &Window, inflight: u32, bw: u64) -> bool {
        inflight <= self.inflight_with_headroom() && inflight <= self.inflight(c, w, bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`.
    pub(super) fn update_cycle_phase(&mut self, c: &ConnInfo, w: &Window, rs: &RateSample) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(c, w, rs) || self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.in_net_at_edt(c, w, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.phase {
            Phase::Cruise => {
                self.check_time_to_probe_bw(c, w);
            }
            Phase::Refill => {
                if self.round_start {
                    // One round of refilling is over: samples now reflect probing.
                    self.bw_probe_samples = true;
                    self.start_probe_up(c, w);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else {
                    match self.v {
                        Version::V3 => {
                            if c.is_cwnd_limited && w.cwnd >= self.inflight_hi {
                                // inflight_hi, not the path, limits growth: keep probing.
                                self.reset_full_bw();
                                self.full_bw = self.sample_bw;
                            } else if self.full_bw_now {
                                done = true; // bandwidth plateau
                            }
                        }
                        Version::V2 => {
                            if self.has_elapsed_in_phase(c, self.min_rtt_us)
                                && inflight >= self.inflight(c, w, bw, self.p.probe_pif_gain)
                            {
                                done = true; // a queue is building
                            }
                        }
                    }
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_probe_down(c);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(c, w) {
                    return;
                }
                if self.check_time_to_cruise(c, w, inflight, bw) {
                    self.start_probe_cruise(c);
                }
            }
        }
    }
}
