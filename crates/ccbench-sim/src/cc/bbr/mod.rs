//! BBRv1 as mainline Linux `net/ipv4/tcp_bbr.c`. One file per state
//! (`startup.rs` with DRAIN, `probe_bw.rs`, `probe_rtt.rs`), the loss handling in
//! `recovery.rs`, the model arithmetic shared with v2/v3 in `model.rs`.

pub mod model;
mod probe_bw;
mod probe_rtt;
mod recovery;
mod startup;

use self::model::*;
use super::params::{apply, param, Kind, Param, ParamError, FLAG, GAIN, MAX_GAIN, ROUNDS};
use super::{
    CaEvent, CaState, CongestionControl, ConnInfo, Internals, RateSample, Transitions, Window, INFINITE_SSTHRESH,
};
use crate::base::minmax::MinMax;
use crate::base::rng::Rng;
use serde::Serialize;
use std::collections::BTreeMap;

/// `enum bbr_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeBw => "PROBE_BW",
            Mode::ProbeRtt => "PROBE_RTT",
        }
    }

    /// The moves `bbr_main` makes (tcp_bbr.c, v1 and v3 alike): STARTUP -> DRAIN ->
    /// PROBE_BW (`bbr_check_drain`); any other mode -> PROBE_RTT (`bbr_update_min_rtt`);
    /// PROBE_RTT -> PROBE_BW, or STARTUP before the pipe was ever full (`bbr_reset_mode`);
    /// PROBE_BW -> PROBE_BW restarts its cycle (v1 leaving the policer estimate).
    pub fn can_move_to(self, to: Mode) -> bool {
        use Mode::*;
        match to {
            ProbeRtt => self != ProbeRtt,
            _ => matches!(
                (self, to),
                (Startup, Drain) | (Drain, ProbeBw) | (ProbeBw, ProbeBw) | (ProbeRtt, ProbeBw | Startup)
            ),
        }
    }
}

/// BBRv1's constants, overridable by name; gains are in the kernel's /256 fixed point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BbrParams {
    /// `bbr_high_gain` = 2/ln 2 (739/256): STARTUP pacing and cwnd gain.
    pub high_gain: u32,
    /// `bbr_drain_gain` = 1/2.885 (88/256): DRAIN pacing gain.
    pub drain_gain: u32,
    /// `bbr_cwnd_gain` = 2: PROBE_BW cwnd gain.
    pub cwnd_gain: u32,
    /// `bbr_pacing_gain[0]` = 1.25: the bandwidth probe.
    pub probe_gain: u32,
    /// `bbr_pacing_gain[1]` = 0.75: the drain after a probe.
    pub probe_drain_gain: u32,
    /// `bbr_cycle_rand`: the first phase is drawn among this many.
    pub cycle_rand: u32,
    /// `bbr_bw_rtts` = CYCLE_LEN + 2: max-filter window in rounds.
    pub bw_rtts: u32,
    /// `bbr_min_rtt_win_sec`.
    pub min_rtt_win_sec: u32,
    /// `bbr_probe_rtt_mode_ms`.
    pub probe_rtt_mode_ms: u32,
    /// `bbr_cwnd_min_target`: segments.
    pub cwnd_min_target: u32,
    /// `bbr_full_bw_thresh` = 1.25 (320/256), `bbr_full_bw_cnt` = 3 rounds.
    pub full_bw_thresh: u32,
    pub full_bw_cnt: u32,
    /// `bbr_extra_acked_gain` = 1 (256/256), `bbr_extra_acked_win_rtts` = 5.
    pub extra_acked_gain: u32,
    pub extra_acked_win_rtts: u32,
    /// Long-term (policer) sampling: `bbr_lt_intvl_min_rtts` = 4, `bbr_lt_loss_thresh` =
    /// 50/256, `bbr_lt_bw_ratio` = 1/8 (32/256), `bbr_lt_bw_diff` = 4 kbit/s in bytes/s,
    /// `bbr_lt_bw_max_rtts` = 48; `lt_sampling` = 0 disables it.
    pub lt_sampling: u32,
    pub lt_intvl_min_rtts: u32,
    pub lt_loss_thresh: u32,
    pub lt_bw_ratio: u32,
    pub lt_bw_diff: u64,
    pub lt_bw_max_rtts: u32,
    /// 1 = the 2BRobust inflight-deficit patch (pace at `high_gain` while less than a
    /// BDP is in flight and the flow is not app-limited); 0 = mainline.
    pub inflight_deficit: u32,
}

impl Default for BbrParams {
    /// The constants of mainline tcp_bbr.c.
    fn default() -> Self {
        BbrParams {
            high_gain: BBR_UNIT * 2885 / 1000 + 1, // tcp_bbr.c: bbr_high_gain
            drain_gain: BBR_UNIT * 1000 / 2885,    // tcp_bbr.c: bbr_drain_gain
            cwnd_gain: BBR_UNIT * 2,               // tcp_bbr.c: bbr_cwnd_gain
            probe_gain: BBR_UNIT * 5 / 4,          // tcp_bbr.c: bbr_pacing_gain[0]
            probe_drain_gain: BBR_UNIT * 3 / 4,    // tcp_bbr.c: bbr_pacing_gain[1]
            cycle_rand: 7,                         // tcp_bbr.c: bbr_cycle_rand
            bw_rtts: CYCLE_LEN as u32 + 2,         // tcp_bbr.c: bbr_bw_rtts
            min_rtt_win_sec: 10,                   // tcp_bbr.c: bbr_min_rtt_win_sec
            probe_rtt_mode_ms: 200,                // tcp_bbr.c: bbr_probe_rtt_mode_ms
            cwnd_min_target: 4,                    // tcp_bbr.c: bbr_cwnd_min_target
            full_bw_thresh: BBR_UNIT * 5 / 4,      // tcp_bbr.c: bbr_full_bw_thresh
            full_bw_cnt: 3,                        // tcp_bbr.c: bbr_full_bw_cnt
            extra_acked_gain: BBR_UNIT,            // tcp_bbr.c: bbr_extra_acked_gain
            extra_acked_win_rtts: 5,               // tcp_bbr.c: bbr_extra_acked_win_rtts
            lt_sampling: 1,                        // (always on in tcp_bbr.c)
            lt_intvl_min_rtts: 4,                  // tcp_bbr.c: bbr_lt_intvl_min_rtts
            lt_loss_thresh: 50,                    // tcp_bbr.c: bbr_lt_loss_thresh
            lt_bw_ratio: BBR_UNIT / 8,             // tcp_bbr.c: bbr_lt_bw_ratio
            lt_bw_diff: 4000 / 8,                  // tcp_bbr.c: bbr_lt_bw_diff
            lt_bw_max_rtts: 48,                    // tcp_bbr.c: bbr_lt_bw_max_rtts
            inflight_deficit: 0,                   // (a patch: model.rs, inflight_deficit_gain)
        }
    }
}

impl BbrParams {
    /// What a scenario may override, with the ranges the kernel's fields can hold.
    pub const TABLE: &'static [Param<BbrParams>] = &[
        param!("high_gain", "tcp_bbr.c: bbr_high_gain", GAIN, high_gain, "STARTUP pacing and cwnd gain (2/ln 2)"),
        param!("drain_gain", "tcp_bbr.c: bbr_drain_gain", GAIN, drain_gain, "DRAIN pacing gain (ln 2/2)"),
        param!("cwnd_gain", "tcp_bbr.c: bbr_cwnd_gain", GAIN, cwnd_gain, "PROBE_BW cwnd gain"),
        param!(
            "probe_gain",
            "tcp_bbr.c: bbr_pacing_gain[0]",
            GAIN,
            probe_gain,
            "PROBE_BW pacing gain of the bandwidth probe"
        ),
        param!(
            "probe_drain_gain",
            "tcp_bbr.c: bbr_pacing_gain[1]",
            GAIN,
            probe_drain_gain,
            "PROBE_BW pacing gain of the drain after a probe"
        ),
        param!(
            "full_bw_thresh",
            "tcp_bbr.c: bbr_full_bw_thresh",
            GAIN,
            full_bw_thresh,
            "STARTUP counts a round as growth only if bandwidth grew by this factor"
        ),
        param!(
            "extra_acked_gain",
            "tcp_bbr.c: bbr_extra_acked_gain",
            (Kind::Gain, 0.0, MAX_GAIN),
            extra_acked_gain,
            "share of the ACK-aggregation estimate added to cwnd; 0 turns it off"
        ),
        param!(
            "cycle_rand",
            "tcp_bbr.c: bbr_cycle_rand",
            (Kind::Integer, 1.0, CYCLE_LEN as f64 - 1.0),
            cycle_rand,
            "PROBE_BW starts at a phase drawn among this many (never the probe)"
        ),
        param!("bw_rtts", "tcp_bbr.c: bbr_bw_rtts", ROUNDS, bw_rtts, "window of the max-bandwidth filter, rounds"),
        param!(
            "min_rtt_win_sec",
            "tcp_bbr.c: bbr_min_rtt_win_sec",
            (Kind::Integer, 1.0, 3600.0),
            min_rtt_win_sec,
            "window of the min-RTT filter, seconds"
        ),
        param!(
            "probe_rtt_mode_ms",
            "tcp_bbr.c: bbr_probe_rtt_mode_ms",
            (Kind::Integer, 0.0, 3.6e6),
            probe_rtt_mode_ms,
            "time held in PROBE_RTT, ms; 0 never enters PROBE_RTT"
        ),
        param!(
            "cwnd_min_target",
            "tcp_bbr.c: bbr_cwnd_min_target",
            (Kind::Integer, 1.0, 1e6),
            cwnd_min_target,
            "the smallest cwnd, segments (PROBE_RTT's cwnd)"
        ),
        param!(
            "full_bw_cnt",
            "tcp_bbr.c: bbr_full_bw_cnt",
            (Kind::Integer, 1.0, 3.0),
            full_bw_cnt,
            "rounds without growth that end STARTUP (the kernel counts them in 2 bits, full_bw_cnt:2)"
        ),
        param!(
            "extra_acked_win_rtts",
            "tcp_bbr.c: bbr_extra_acked_win_rtts",
            (Kind::Integer, 1.0, 31.0),
            extra_acked_win_rtts,
            "window of the ACK-aggregation filter, rounds (counted in 5 bits, extra_acked_win_rtts:5)"
        ),
        param!(
            "lt_sampling",
            "tcp_bbr.c: bbr_lt_bw_sampling",
            FLAG,
            lt_sampling,
            "long-term (policer) bandwidth sampling on"
        ),
        param!(
            "lt_intvl_min_rtts",
            "tcp_bbr.c: bbr_lt_intvl_min_rtts",
            (Kind::Integer, 1.0, 31.0),
            lt_intvl_min_rtts,
            "shortest long-term sampling interval, rounds (4 times it must fit lt_rtt_cnt:7)"
        ),
        param!(
            "lt_bw_max_rtts",
            "tcp_bbr.c: bbr_lt_bw_max_rtts",
            (Kind::Integer, 1.0, 127.0),
            lt_bw_max_rtts,
            "rounds the long-term bandwidth is used before sampling again (counted in lt_rtt_cnt:7)"
        ),
        param!(
            "inflight_deficit",
            "cc/bbr/model.rs: inflight_deficit_gain (the 2BRobust patch)",
            FLAG,
            inflight_deficit,
            "pace at high_gain while less than a BDP is in flight and the flow is not app-limited"
        ),
    ];

    /// The defaults with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("bbr", Self::TABLE, BbrParams::default(), overrides)
    }
}

/// `CYCLE_LEN`: phases of the PROBE_BW gain cycle.
pub const CYCLE_LEN: usize = 8;

/// `struct bbr` (v1).
pub struct Bbr {
    p: BbrParams,
    rng: Rng,
    mode: Mode,
    /// Windowed max of delivery-rate samples, timed in rounds (`bbr->bw`).
    bw: MinMax,
    rtt_cnt: u32,
    next_rtt_delivered: u64,
    round_start: bool,
    min_rtt_us: u64,
    /// `min_rtt_stamp` in jiffies.
    min_rtt_stamp: u32,
    probe_rtt: ProbeRttHold,
    cycle_idx: usize,
    cycle_us: u64,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw: u64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    prior_cwnd: u32,
    prev_ca_state: CaState,
    packet_conservation: bool,
    idle_restart: bool,
    has_seen_rtt: bool,
    mss: u32,
    lt: recovery::LongTerm,
    aggregation: AckAggregation,
    transitions: Transitions,
}

impl Bbr {
    pub fn new(p: BbrParams, rng: Rng) -> Bbr {
        Bbr {
            pacing_gain: p.high_gain,
            cwnd_gain: p.high_gain,
            p,
            rng,
            mode: Mode::Startup,
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt_us: u64::MAX,
            min_rtt_stamp: 0,
            probe_rtt: ProbeRttHold::default(),
            cycle_idx: 0,
            cycle_us: 0,
            full_bw: 0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            prior_cwnd: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            has_seen_rtt: false,
            mss: 1448,
            lt: recovery::LongTerm::default(),
            aggregation: AckAggregation::default(),
            transitions: Transitions::default(),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Enter `to` at `now`, a move `bbr_main` can make (`Mode::can_move_to`).
    pub(super) fn transition_to(&mut self, now: crate::time::Time, to: Mode) {
        assert!(self.mode.can_move_to(to), "BBR cannot move from {:?} to {:?}", self.mode, to);
        self.mode = to;
        self.transitions.push(now, "mode", to.name());
    }

    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// `bbr_bw`: the policer estimate while in use, else the max filter.
    fn bw(&self) -> u64 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.max_bw()
        }
    }

    /// `bbr_quantization_budget`: room for three TSO bursts (qdisc, NIC, receiver),
    /// rounded up to even, plus 2 in the probing phase.
    fn quantization_budget(&self, c: &ConnInfo, w: &Window, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * tso_segs_goal(c, w.pacing_rate);
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`: BDP at `gain` plus the quantization budget.
    fn inflight(&self, c: &ConnInfo, w: &Window, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(c, w, bdp(bw, self.min_rtt_us, gain))
    }

    fn in_net_at_edt(&self, c: &ConnInfo, w: &Window, inflight_now: u32) -> u32 {
        let tso = if self.pacing_gain > BBR_UNIT { tso_segs_goal(c, w.pacing_rate) } else { 0 };
        packets_in_net_at_edt(c, self.bw(), inflight_now, tso)
    }

    fn set_pacing_rate(&mut self, c: &ConnInfo, w: &mut Window, bw: u64, gain: u32) {
        set_pacing_rate(c, w, bw, gain, self.p.high_gain, self.full_bw_reached, &mut self.has_seen_rtt);
    }

    /// `bbr_update_bw`: round counting, long-term sampling, the max filter.
    fn update_bw(&mut self, c: &ConnInfo, rs: &RateSample) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = c.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(c, rs.losses, rs.is_app_limited);
        let bw = rs.delivered as u64 * BW_UNIT / rs.interval_us as u64;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(self.p.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (self.p.high_gain, self.p.high_gain),
            Mode::Drain => (self.p.drain_gain, self.p.high_gain),
            Mode::ProbeBw => {
                (if self.lt.use_bw { BBR_UNIT } else { self.cycle_gain(self.cycle_idx) }, self.p.cwnd_gain)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, c: &ConnInfo, w: &mut Window, rs: &RateSample, bw: u64) {
        let acked = rs.acked_sacked;
        let mut cwnd = w.cwnd;
        if acked > 0 {
            let (recovered, conserving) = self.recover_or_restore(c, w, rs);
            cwnd = recovered;
            if !conserving {
                let mut target = bdp(bw, self.min_rtt_us, self.cwnd_gain);
                if self.full_bw_reached {
                    target += self.aggregation.cwnd_allowance(bw, self.p.extra_acked_gain);
                }
                target = self.quantization_budget(c, w, target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || c.delivered < INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(self.p.cwnd_min_target);
            }
        }
        w.cwnd = cwnd.min(w.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(self.p.cwnd_min_target);
        }
    }

    /// `bbr_save_cwnd`: remember a good cwnd before recovery or PROBE_RTT cut it.
    fn save_cwnd(&mut self, w: &Window) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = w.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
        }
    }

    /// `bbr_reset_mode`: back to PROBE_BW if the pipe was ever full, else STARTUP.
    fn reset_mode(&mut self, c: &ConnInfo) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(c);
        } else {
            self.transition_to(c.now, Mode::Startup);
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// `bbr_init`.
    fn init(&mut self, c: &ConnInfo, w: &mut Window) {
        w.ssthresh = INFINITE_SSTHRESH;
        self.mss = c.mss;
        self.next_rtt_delivered = c.delivered;
        self.min_rtt_us = c.min_rtt_us;
        self.min_rtt_stamp = c.jiffies;
        self.bw.reset(0, 0);
        self.has_seen_rtt = init_pacing_rate(c, w, self.p.high_gain);
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

    /// `bbr_ssthresh`: save cwnd, leave ssthresh alone.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        self.save_cwnd(w);
        w.ssthresh
    }

    /// `bbr_main`.
    fn cong_control(&mut self, c: &ConnInfo, w: &mut Window, rs: &RateSample) -> bool {
        self.update_bw(c, rs);
        if rs.acked_sacked > 0 && rs.delivered >= 0 && rs.interval_us > 0 {
            self.aggregation.update(
                self.round_start,
                self.p.extra_acked_win_rtts,
                c.delivered_us,
                self.bw(),
                rs.acked_sacked,
                w.cwnd,
            );
        }
        self.update_cycle_phase(c, w, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(c, w);
        self.update_min_rtt(c, w, rs);
        self.update_gains();
        let bw = self.bw();
        if self.p.inflight_deficit != 0 {
            self.pacing_gain = inflight_deficit_gain(c, bw, self.min_rtt_us, self.pacing_gain, self.p.high_gain);
        }
        self.set_pacing_rate(c, w, bw, self.pacing_gain);
        self.set_cwnd(c, w, rs, bw);
        true
    }

    /// `bbr_set_state`: an RTO ends the round and feeds the policer detector a loss.
    fn set_state(&mut self, c: &ConnInfo, _w: &mut Window, new: CaState) {
        if new == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            self.lt_bw_sampling(c, 1, false);
        }
    }

    /// `bbr_cwnd_event`: restarting from idle.
    fn cwnd_event(&mut self, c: &ConnInfo, w: &mut Window, ev: CaEvent) {
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

    /// `bbr_undo_cwnd`.
    fn undo_cwnd(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.lt.reset(None);
        w.cwnd
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
        let bw_bps = |bw: u64| bw as f64 / BW_UNIT as f64 * 1e6 * self.mss as f64 * 8.0;
        let mut m = Internals::new();
        m.insert("mode", self.mode as u8 as f64);
        m.insert("cycle_idx", self.cycle_idx as f64);
        m.insert("pacing_gain", self.pacing_gain as f64 / BBR_UNIT as f64);
        m.insert("cwnd_gain", self.cwnd_gain as f64 / BBR_UNIT as f64);
        m.insert("bw_bps", bw_bps(self.bw()));
        m.insert("max_bw_bps", bw_bps(self.max_bw()));
        m.insert("min_rtt_ms", if self.min_rtt_us == u64::MAX { f64::NAN } else { self.min_rtt_us as f64 / 1e3 });
        m.insert("full_bw_reached", self.full_bw_reached as u8 as f64);
        m.insert("lt_use_bw", self.lt.use_bw as u8 as f64);
        m.insert("extra_acked", self.aggregation.extra_acked() as f64);
        m.insert("round", self.rtt_cnt as f64);
        m
    }
}

/// The test path and driver shared with the v2/v3 tests.
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
