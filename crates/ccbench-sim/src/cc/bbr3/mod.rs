//! BBRv3 (google/bbr `v3`, the basis of draft-ietf-ccwg-bbr) and BBRv2 (google/bbr
//! `v2alpha`, `tcp_bbr2.c`). One struct serves both; every place they differ matches
//! on [`Version`]. Files: `startup.rs` (STARTUP, DRAIN), `probe_bw.rs` (DOWN, CRUISE,
//! REFILL, UP and the upper bound inflight_hi), `probe_rtt.rs`, `bounds.rs` (the loss
//! response: bw_lo, inflight_lo, and the cwnd bound), `params.rs` (the constants and
//! their overrides). Shared arithmetic is in `bbr::model`.

mod bounds;
mod params;
mod probe_bw;
mod probe_rtt;
mod startup;

use super::bbr::model::*;
use super::bbr::Mode;
use super::{
    CaEvent, CaState, CongestionControl, ConnInfo, Internals, LostSegment, RateSample, Transitions, Window,
    INFINITE_SSTHRESH,
};
use crate::base::rng::Rng;
pub use params::Bbr3Params;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Version {
    V2,
    V3,
}

/// PROBE_BW sub-states (`enum bbr_pacing_gain_phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Phase {
    Up,
    Down,
    Cruise,
    Refill,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Up => "UP",
            Phase::Down => "DOWN",
            Phase::Cruise => "CRUISE",
            Phase::Refill => "REFILL",
        }
    }

    /// The moves of `bbr_update_cycle_phase` and `bbr_adapt_upper_bounds`: DOWN -> CRUISE,
    /// DOWN or CRUISE -> REFILL, REFILL -> UP; and any phase -> DOWN
    /// (`bbr_start_bw_probe_down`, on entering PROBE_BW or ending a probe).
    pub fn can_move_to(self, to: Phase) -> bool {
        use Phase::*;
        to == Down || matches!((self, to), (Down, Cruise) | (Down | Cruise, Refill) | (Refill, Up))
    }
}

/// Where the ACKs of a bandwidth probe are (`enum bbr_ack_phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// "Unset" for the bounds (`~0U`).
const UNSET: u32 = u32::MAX;
const UNSET_BW: u64 = u64::MAX;

/// `struct bbr` of the v2/v3 trees.
pub struct Bbr3 {
    v: Version,
    p: Bbr3Params,
    rng: Rng,
    mss: u32,
    init_cwnd: u32,
    mode: Mode,
    phase: Phase,
    ack_phase: AckPhase,
    pacing_gain: u32,
    cwnd_gain: u32,
    // Bandwidth model.
    /// Max-bw filter: the maxima of the previous and current probing cycles.
    bw_hi: [u64; 2],
    bw_lo: u64,
    bw_latest: u64,
    inflight_latest: u32,
    inflight_hi: u32,
    inflight_lo: u32,
    // Rounds.
    next_rtt_delivered: u64,
    round_start: bool,
    rounds_since_probe: u32,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_in_cycle: bool,
    loss_events_in_round: u32,
    // ECN (low-threshold routes only).
    ecn_eligible: bool,
    ecn_alpha: u32,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,
    ecn_in_round: bool,
    ecn_in_cycle: bool,
    startup_ecn_rounds: u32,
    // STARTUP plateau.
    full_bw: u64,
    full_bw_cnt: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    // PROBE_BW.
    cycle_us: u64,
    probe_wait_us: u64,
    bw_probe_up_rounds: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    // min_rtt and PROBE_RTT.
    min_rtt_us: u64,
    min_rtt_stamp: u32,
    probe_rtt_min_us: u64,
    probe_rtt_min_stamp: u32,
    probe_rtt: ProbeRttHold,
    // Recovery and idle.
    prior_cwnd: u32,
    /// Bounds saved on entering recovery, restored by an undo (`undo_bw_lo`, ...).
    undo: (u64, u32, u32),
    prev_ca_state: CaState,
    idle_restart: bool,
    has_seen_rtt: bool,
    aggregation: AckAggregation,
    /// The bandwidth sample of the ACK being processed.
    sample_bw: u64,
    transitions: Transitions,
}

impl Bbr3 {
    pub fn new(v: Version, p: Bbr3Params, rng: Rng) -> Bbr3 {
        Bbr3 {
            v,
            pacing_gain: p.startup_pacing_gain,
            cwnd_gain: p.startup_cwnd_gain,
            p,
            rng,
            mss: 1448,
            init_cwnd: INIT_CWND,
            mode: Mode::Startup,
            phase: Phase::Down,
            ack_phase: AckPhase::Init,
            bw_hi: [0, 0],
            bw_lo: UNSET_BW,
            bw_latest: 0,
            inflight_latest: 0,
            inflight_hi: UNSET,
            inflight_lo: UNSET,
            next_rtt_delivered: 0,
            round_start: false,
            rounds_since_probe: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_in_round: false,
            loss_in_cycle: false,
            loss_events_in_round: 0,
            ecn_eligible: false,
            ecn_alpha: BBR_UNIT,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            ecn_in_round: false,
            ecn_in_cycle: false,
            startup_ecn_rounds: 0,
            full_bw: 0,
            full_bw_cnt: 0,
            full_bw_now: false,
            full_bw_reached: false,
            cycle_us: 0,
            probe_wait_us: 0,
            bw_probe_up_rounds: 0,
            bw_probe_up_cnt: UNSET,
            bw_probe_up_acks: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            min_rtt_us: u64::MAX,
            min_rtt_stamp: 0,
            probe_rtt_min_us: u64::MAX,
            probe_rtt_min_stamp: 0,
            probe_rtt: ProbeRttHold::default(),
            prior_cwnd: 0,
            undo: (UNSET_BW, UNSET, UNSET),
            prev_ca_state: CaState::Open,
            idle_restart: false,
            has_seen_rtt: false,
            aggregation: AckAggregation::default(),
            sample_bw: 0,
            transitions: Transitions::default(),
        }
    }

    /// Enter mode `to` at `now`, a move `bbr_main` can make (`Mode::can_move_to`).
    pub(super) fn transition_to(&mut self, now: crate::time::Time, to: Mode) {
        assert!(self.mode.can_move_to(to), "BBR cannot move from {:?} to {:?}", self.mode, to);
        self.mode = to;
        self.transitions.push(now, "mode", to.name());
    }

    /// Enter PROBE_BW phase `to` at `now` (`Phase::can_move_to`).
    pub(super) fn phase_to(&mut self, now: crate::time::Time, to: Phase) {
        assert!(self.phase.can_move_to(to), "BBR cannot move from phase {:?} to {:?}", self.phase, to);
        self.phase = to;
        self.transitions.push(now, "phase", to.name());
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn phase(&self) -> Phase {
        self.phase
    }

    fn max_bw(&self) -> u64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`: the max filter capped by the short-term lower bound.
    fn bw(&self) -> u64 {
        self.max_bw().min(self.bw_lo)
    }

    /// `bbr_tso_segs_generic`: about 1 ms of data plus the short-RTT bonus, >= 2 segments.
    fn tso_segs_goal(&self, c: &ConnInfo, w: &Window) -> u32 {
        let mut bytes = w.pacing_rate >> 10;
        let r = self.min_rtt_us >> 9;
        if r < 64 {
            bytes += 65536 >> r;
        }
        ((bytes.min(TSO_MAX_BYTES) / c.mss as u64) as u32).max(2)
    }

    /// `bbr_quantization_budget` (v2/v3): at least three TSO bursts and the minimum cwnd,
    /// plus 2 while probing up.
    fn quantization_budget(&self, c: &ConnInfo, w: &Window, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.max(3 * self.tso_segs_goal(c, w)).max(self.p.cwnd_min_target);
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            cwnd += 2;
        }
        cwnd
    }

    fn inflight(&self, c: &ConnInfo, w: &Window, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(c, w, bdp(bw, self.min_rtt_us, gain))
    }

    /// `bbr_target_inflight`: what to keep in flight in steady state.
    fn target_inflight(&self, c: &ConnInfo, w: &Window) -> u32 {
        self.inflight(c, w, self.bw(), BBR_UNIT).min(w.cwnd)
    }

    fn in_net_at_edt(&self, c: &ConnInfo, w: &Window, inflight_now: u32) -> u32 {
        let tso = if self.pacing_gain > BBR_UNIT { self.tso_segs_goal(c, w) } else { 0 };
        packets_in_net_at_edt(c, self.bw(), inflight_now, tso)
    }

    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup || (self.mode == Mode::ProbeBw && matches!(self.phase, Phase::Refill | Phase::Up))
    }

    fn set_pacing_rate(&mut self, c: &ConnInfo, w: &mut Window, bw: u64, gain: u32) {
        set_pacing_rate(c, w, bw, gain, self.p.startup_pacing_gain, self.full_bw_reached, &mut self.has_seen_rtt);
    }

    /// `bbr_update_round_start`.
    fn update_round_start(&mut self, c: &ConnInfo, w: &Window, rs: &RateSample) {
        self.round_start = false;
        if rs.interval_us > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = c.delivered;
            self.round_start = true;
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            self.update_ecn_alpha(c, w);
        }
    }

    /// `bbr_update_ecn_alpha`: once per round, an EWMA (gain 1/16) of the CE fraction;
    /// a flow becomes ECN-eligible on a low-threshold route with min_rtt <= 5 ms.
    fn update_ecn_alpha(&mut self, c: &ConnInfo, w: &Window) {
        if !self.ecn_eligible
            && c.ecn_low
            && self.p.ecn_factor > 0
            && (self.min_rtt_us <= self.p.ecn_max_rtt_us as u64 || self.p.ecn_max_rtt_us == 0)
        {
            self.ecn_eligible = true;
        }
        let delivered = c.delivered - self.alpha_last_delivered;
        let delivered_ce = c.delivered_ce - self.alpha_last_delivered_ce;
        if delivered == 0 {
            return;
        }
        let ce_ratio = ((delivered_ce << BBR_SCALE) / delivered) as u32;
        let gain = self.p.ecn_alpha_gain;
        let alpha = (((BBR_UNIT - gain) * self.ecn_alpha) >> BBR_SCALE) + ((gain * ce_ratio) >> BBR_SCALE);
        self.ecn_alpha = alpha.min(BBR_UNIT);
        self.alpha_last_delivered = c.delivered;
        self.alpha_last_delivered_ce = c.delivered_ce;
        // `bbr_check_ecn_too_high_in_startup`
        if self.full_bw_reached || !self.ecn_eligible || self.p.full_ecn_cnt == 0 || self.p.ecn_thresh == 0 {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_cnt {
            self.handle_queue_too_high_in_startup(c, w);
        }
    }

    /// `bbr_update_latest_delivery_signals`: per-round maxima and loss-round starts.
    fn update_latest_delivery_signals(&mut self, c: &ConnInfo, rs: &RateSample) {
        self.loss_round_start = false;
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(self.sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = c.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals`.
    fn advance_latest_delivery_signals(&mut self, c: &ConnInfo, rs: &RateSample) {
        // v3: an ACK that may be for a TLP retransmission keeps the filter, to remember
        // what the path delivered before a tail loss the probe may have repaired.
        let tlp = self.v == Version::V3 && rs.is_acking_tlp_retrans_seq;
        if self.loss_round_start && !tlp {
            self.bw_latest = self.sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
        }
        self.prev_ca_state = c.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// `bbr_update_congestion_signals`: feed the max filter; once per loss round adapt
    /// the lower bounds.
    fn update_congestion_signals(&mut self, w: &Window, rs: &RateSample) {
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        if !rs.is_app_limited || self.sample_bw >= self.max_bw() {
            self.bw_hi[1] = self.bw_hi[1].max(self.sample_bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(w);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (self.p.startup_pacing_gain, self.p.startup_cwnd_gain),
            Mode::Drain => (self.p.drain_gain, self.p.startup_cwnd_gain),
            Mode::ProbeBw => match self.phase {
                Phase::Up => (self.p.probe_up_gain, self.p.cwnd_gain + self.p.probe_up_cwnd_gain_extra),
                Phase::Down => (self.p.probe_down_gain, self.p.cwnd_gain),
                Phase::Cruise | Phase::Refill => (BBR_UNIT, self.p.cwnd_gain),
            },
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_set_cwnd` (v2/v3): no packet conservation; the loss response is in the
    /// bounds applied afterwards.
    fn set_cwnd(&mut self, c: &ConnInfo, w: &mut Window, rs: &RateSample, bw: u64) {
        let acked = rs.acked_sacked;
        let mut cwnd = w.cwnd;
        if acked > 0 {
            let mut target = bdp(bw, self.min_rtt_us, self.cwnd_gain);
            target += self.aggregation.cwnd_allowance(bw, self.p.extra_acked_gain);
            target = self.quantization_budget(c, w, target);
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            }
            cwnd = cwnd.max(self.p.cwnd_min_target);
        }
        w.cwnd = cwnd.min(w.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    fn save_cwnd(&mut self, w: &Window) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = w.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
        }
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, c: &ConnInfo, w: &mut Window, rs: &RateSample) {
        self.update_congestion_signals(w, rs);
        if rs.acked_sacked > 0 && rs.delivered >= 0 && rs.interval_us > 0 {
            let win =
                if self.full_bw_reached { self.p.extra_acked_win_rtts } else { self.p.startup_extra_acked_win_rtts };
            self.aggregation.update(self.round_start, win, c.delivered_us, self.bw(), rs.acked_sacked, w.cwnd);
        }
        self.check_loss_too_high_in_startup(c, w, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(c, w);
        self.update_cycle_phase(c, w, rs);
        self.update_min_rtt(c, w, rs);
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        match self.v {
            Version::V2 => "bbr2",
            Version::V3 => "bbr3",
        }
    }

    fn init(&mut self, c: &ConnInfo, w: &mut Window) {
        w.ssthresh = INFINITE_SSTHRESH;
        self.mss = c.mss;
        self.init_cwnd = w.cwnd;
        self.next_rtt_delivered = c.delivered;
        self.loss_round_delivered = c.delivered;
        self.min_rtt_us = c.min_rtt_us;
        self.min_rtt_stamp = c.jiffies;
        self.probe_rtt_min_us = c.min_rtt_us;
        self.probe_rtt_min_stamp = c.jiffies;
        self.has_seen_rtt = init_pacing_rate(c, w, self.p.startup_pacing_gain);
        self.aggregation.reset_epoch(c.now.us());
        // `bbr_reset_startup_mode`: the first state.
        self.transitions.push(c.now, "mode", self.mode.name());
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    fn needs_pacing(&self) -> bool {
        true
    }

    /// `bbr_sndbuf_expand`: room for the cwnd boosts of startup and probing.
    fn sndbuf_expand(&self, _c: &ConnInfo) -> u32 {
        3
    }

    /// `bbr_ssthresh`: save cwnd and the bounds, in case the recovery is undone.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        self.save_cwnd(w);
        self.undo = (self.bw_lo, self.inflight_lo, self.inflight_hi);
        w.ssthresh
    }

    /// `bbr_main` (always the slow path; the fast path is an optimisation with the same
    /// results).
    fn cong_control(&mut self, c: &ConnInfo, w: &mut Window, rs: &RateSample) -> bool {
        self.update_round_start(c, w, rs);
        self.ecn_in_round |= self.ecn_eligible && rs.ece;
        // `bbr_calculate_bw_sample`: v2/v3 round the sample up.
        self.sample_bw = if rs.interval_us > 0 && rs.delivered >= 0 {
            (rs.delivered as u64 * BW_UNIT).div_ceil(rs.interval_us as u64)
        } else {
            0
        };
        self.update_latest_delivery_signals(c, rs);
        self.update_model(c, w, rs);
        self.update_gains();
        let bw = self.bw();
        if self.p.inflight_deficit != 0 {
            self.pacing_gain =
                inflight_deficit_gain(c, bw, self.min_rtt_us, self.pacing_gain, self.p.startup_pacing_gain);
        }
        self.set_pacing_rate(c, w, bw, self.pacing_gain);
        self.set_cwnd(c, w, rs, bw);
        self.bound_cwnd_for_inflight_model(w);
        self.advance_latest_delivery_signals(c, rs);
        true
    }

    fn segment_lost(&mut self, c: &ConnInfo, w: &mut Window, seg: &LostSegment) {
        self.skb_marked_lost(c, w, seg);
    }

    /// `bbr_set_state`.
    fn set_state(&mut self, _c: &ConnInfo, w: &mut Window, new: CaState) {
        if new == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET {
                // The per-round adaptation needs the cwnd from before the RTO.
                self.inflight_lo = w.cwnd.max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss {
            self.prev_ca_state = new;
            w.cwnd = w.cwnd.max(self.prior_cwnd);
        }
    }

    fn cwnd_event(&mut self, c: &ConnInfo, w: &mut Window, ev: CaEvent) {
        if ev == CaEvent::TlpRecovery && self.v == Version::V3 {
            self.run_loss_probe_recovery(c, w);
        }
        if ev == CaEvent::TxStart && c.app_limited {
            self.idle_restart = true;
            self.aggregation.reset_epoch(c.now.us());
            match self.mode {
                Mode::ProbeBw => self.set_pacing_rate(c, w, self.bw(), BBR_UNIT),
                Mode::ProbeRtt => self.check_probe_rtt_done(c, w),
                _ => {}
            }
        }
    }

    /// `bbr_undo_cwnd`: the loss was spurious; restore the bounds and cwnd.
    fn undo_cwnd(&mut self, _c: &ConnInfo, _w: &Window) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        let (bw_lo, inflight_lo, inflight_hi) = self.undo;
        self.bw_lo = self.bw_lo.max(bw_lo);
        self.inflight_lo = self.inflight_lo.max(inflight_lo);
        self.inflight_hi = self.inflight_hi.max(inflight_hi);
        self.prior_cwnd
    }

    fn min_tso_segs(&self, pacing_rate: u64) -> u32 {
        min_tso_segs(pacing_rate)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    fn transitions(&mut self) -> Option<&mut Transitions> {
        Some(&mut self.transitions)
    }

    fn internals(&self) -> Internals {
        let bps =
            |bw: u64| if bw == UNSET_BW { f64::NAN } else { bw as f64 / BW_UNIT as f64 * 1e6 * self.mss as f64 * 8.0 };
        let segs = |x: u32| if x == UNSET { f64::NAN } else { x as f64 };
        let mut m = Internals::new();
        m.insert("mode", self.mode as u8 as f64);
        m.insert("phase", self.phase as u8 as f64);
        m.insert("pacing_gain", self.pacing_gain as f64 / BBR_UNIT as f64);
        m.insert("cwnd_gain", self.cwnd_gain as f64 / BBR_UNIT as f64);
        m.insert("bw_bps", bps(self.bw()));
        m.insert("max_bw_bps", bps(self.max_bw()));
        m.insert("bw_lo_bps", bps(self.bw_lo));
        m.insert("inflight_hi", segs(self.inflight_hi));
        m.insert("inflight_lo", segs(self.inflight_lo));
        m.insert("min_rtt_ms", if self.min_rtt_us == u64::MAX { f64::NAN } else { self.min_rtt_us as f64 / 1e3 });
        m.insert("full_bw_reached", self.full_bw_reached as u8 as f64);
        m.insert("extra_acked", self.aggregation.extra_acked() as f64);
        m.insert("ecn_alpha", if self.ecn_eligible { self.ecn_alpha as f64 / BBR_UNIT as f64 } else { f64::NAN });
        m
    }
}

#[cfg(test)]
mod tests;
