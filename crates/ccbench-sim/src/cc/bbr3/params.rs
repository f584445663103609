//! BBRv3's and BBRv2's constants, /256 fixed point for gains and fractions, and the
//! table through which a scenario overrides them.

use super::Version;
use crate::cc::bbr::model::*;
use crate::cc::params::{apply, param, Kind, Param, ParamError, FLAG, FRACTION, GAIN, MAX_GAIN, PROPORTION};
use serde::Serialize;
use std::collections::BTreeMap;

/// Constants of v3 (and v2).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bbr3Params {
    /// STARTUP pacing gain: v3 2.77 (710/256), v2 2/ln 2 (739/256).
    pub startup_pacing_gain: u32,
    /// STARTUP and DRAIN cwnd gain: v3 2.0, v2 2.885.
    pub startup_cwnd_gain: u32,
    /// DRAIN pacing gain 1/2.885 (88/256).
    pub drain_gain: u32,
    /// PROBE_BW cwnd gain 2.0, plus `probe_up_cwnd_gain_extra` in UP (v3: 64/256).
    pub cwnd_gain: u32,
    pub probe_up_cwnd_gain_extra: u32,
    /// PROBE_BW pacing gains: UP 1.25; DOWN v3 0.906 (232/256), v2 0.75; CRUISE, REFILL 1.
    pub probe_up_gain: u32,
    pub probe_down_gain: u32,
    /// v2: UP ends once inflight reaches this x BDP after a min_rtt (`bw_probe_pif_gain`).
    pub probe_pif_gain: u32,
    pub full_bw_thresh: u32,
    pub full_bw_cnt: u32,
    /// STARTUP exits on this many loss events in a round with loss above threshold
    /// (`full_loss_cnt`: v3 6, v2 8).
    pub full_loss_cnt: u32,
    /// `loss_thresh` = 2% (5/256) of inflight at send time.
    pub loss_thresh: u32,
    /// `beta` = 0.3 (76/256): the multiplicative cut of bw_lo/inflight_lo/inflight_hi.
    pub beta: u32,
    /// `inflight_headroom` = 15% (38/256).
    pub inflight_headroom: u32,
    pub cwnd_min_target: u32,
    pub min_rtt_win_sec: u32,
    /// `probe_rtt_win_ms`: PROBE_RTT at least every 5 s.
    pub probe_rtt_win_ms: u32,
    pub probe_rtt_mode_ms: u32,
    /// `probe_rtt_cwnd_gain` = 0.5 (128/256) of a BDP.
    pub probe_rtt_cwnd_gain: u32,
    /// Probe wait: `bw_probe_base_us` + uniform[0, `bw_probe_rand_us`).
    pub bw_probe_base_us: u32,
    pub bw_probe_rand_us: u32,
    /// Reno-coexistence cap on rounds between probes (`bw_probe_max_rounds`).
    pub bw_probe_max_rounds: u32,
    pub extra_acked_gain: u32,
    pub extra_acked_win_rtts: u32,
    /// `extra_acked_win_rtts` before the pipe is first full (1 round).
    pub startup_extra_acked_win_rtts: u32,
    /// ECN on low-threshold routes (v3; v2 has it off by default, `ecn_enable`):
    /// `ecn_factor` = 1/3 (85/256) of alpha cuts inflight_lo per round with CE;
    /// `ecn_alpha_gain` = 1/16 (16/256); `ecn_thresh` = 50% CE makes a probe too high;
    /// `ecn_max_rtt_us` = 5 ms; `full_ecn_cnt` = 2 rounds end STARTUP;
    /// `ecn_reprobe_gain` = 1/2 (128/256).
    pub ecn_factor: u32,
    pub ecn_alpha_gain: u32,
    pub ecn_thresh: u32,
    pub ecn_max_rtt_us: u32,
    pub full_ecn_cnt: u32,
    pub ecn_reprobe_gain: u32,
    /// 1 = the 2BRobust inflight-deficit patch (pace at `startup_pacing_gain` while less
    /// than a BDP is in flight and the flow is not app-limited); 0 = Google's code.
    pub inflight_deficit: u32,
}

impl Bbr3Params {
    /// The constants of google/bbr `v3` (tcp_bbr.c) or `v2alpha` (tcp_bbr2.c); names are
    /// v3's, and v2's differ only where noted.
    pub fn defaults(v: Version) -> Self {
        let unit = BBR_UNIT;
        let v3 = v == Version::V3;
        let v1_high_gain = unit * 2885 / 1000 + 1; // tcp_bbr2.c: bbr_high_gain
        Bbr3Params {
            startup_pacing_gain: if v3 { unit * 277 / 100 + 1 } else { v1_high_gain }, // bbr_startup_pacing_gain
            startup_cwnd_gain: if v3 { unit * 2 } else { v1_high_gain },               // bbr_startup_cwnd_gain
            drain_gain: unit * 1000 / 2885,                                            // bbr_drain_gain
            cwnd_gain: unit * 2,                                                       // bbr_cwnd_gain
            probe_up_cwnd_gain_extra: if v3 { unit / 4 } else { 0 }, // bbr_bw_probe_cwnd_gain (in units of 1/4)
            probe_up_gain: unit * 5 / 4,                             // bbr_pacing_gain[BBR_BW_PROBE_UP]
            probe_down_gain: if v3 { unit * 91 / 100 } else { unit * 3 / 4 }, // bbr_pacing_gain[BBR_BW_PROBE_DOWN]
            probe_pif_gain: unit * 5 / 4,                            // tcp_bbr2.c: bbr_bw_probe_pif_gain
            full_bw_thresh: unit * 5 / 4,                            // bbr_full_bw_thresh
            full_bw_cnt: 3,                                          // bbr_full_bw_cnt
            full_loss_cnt: if v3 { 6 } else { 8 },                   // bbr_full_loss_cnt
            loss_thresh: unit * 2 / 100,                             // bbr_loss_thresh
            beta: unit * 30 / 100,                                   // bbr_beta
            inflight_headroom: unit * 15 / 100,                      // bbr_inflight_headroom
            cwnd_min_target: 4,                                      // bbr_cwnd_min_target
            min_rtt_win_sec: 10,                                     // bbr_min_rtt_win_sec
            probe_rtt_win_ms: 5000,                                  // bbr_probe_rtt_win_ms
            probe_rtt_mode_ms: 200,                                  // bbr_probe_rtt_mode_ms
            probe_rtt_cwnd_gain: unit / 2,                           // bbr_probe_rtt_cwnd_gain
            bw_probe_base_us: 2_000_000,                             // bbr_bw_probe_base_us
            bw_probe_rand_us: 1_000_000,                             // bbr_bw_probe_rand_us
            bw_probe_max_rounds: 63,                                 // bbr_bw_probe_max_rounds
            extra_acked_gain: unit,                                  // bbr_extra_acked_gain
            extra_acked_win_rtts: 5,                                 // bbr_extra_acked_win_rtts
            startup_extra_acked_win_rtts: 1, // bbr_update_ack_aggregation (1 round before full bw)
            ecn_factor: if v3 { unit / 3 } else { 0 }, // bbr_ecn_factor (v2: ecn_enable off)
            ecn_alpha_gain: unit / 16,       // bbr_ecn_alpha_gain
            ecn_thresh: unit / 2,            // bbr_ecn_thresh
            ecn_max_rtt_us: 5000,            // bbr_ecn_max_rtt_us
            full_ecn_cnt: 2,                 // bbr_full_ecn_cnt
            ecn_reprobe_gain: if v3 { unit / 2 } else { 0 }, // bbr_ecn_reprobe_gain
            inflight_deficit: 0,             // (a patch: bbr::model::inflight_deficit_gain)
        }
    }

    /// What a scenario may override, with the ranges the kernel's fields can hold
    /// (the bit widths are those of `struct bbr` in google/bbr v3 tcp_bbr.c).
    pub const TABLE: &'static [Param<Bbr3Params>] = &[
        param!(
            "startup_pacing_gain",
            "google/bbr v3 tcp_bbr.c: bbr_startup_pacing_gain",
            GAIN,
            startup_pacing_gain,
            "STARTUP pacing gain (v2: bbr_high_gain)"
        ),
        param!(
            "startup_cwnd_gain",
            "google/bbr v3 tcp_bbr.c: bbr_startup_cwnd_gain",
            GAIN,
            startup_cwnd_gain,
            "STARTUP and DRAIN cwnd gain"
        ),
        param!("drain_gain", "google/bbr v3 tcp_bbr.c: bbr_drain_gain", GAIN, drain_gain, "DRAIN pacing gain"),
        param!("cwnd_gain", "google/bbr v3 tcp_bbr.c: bbr_cwnd_gain", GAIN, cwnd_gain, "PROBE_BW cwnd gain"),
        param!(
            "probe_up_cwnd_gain_extra",
            "google/bbr v3 tcp_bbr.c: bbr_bw_probe_cwnd_gain",
            (Kind::Gain, 0.0, 0.75),
            probe_up_cwnd_gain_extra,
            "added to cwnd_gain in PROBE_BW UP (the kernel's 0 to 3 quarters)"
        ),
        param!(
            "probe_up_gain",
            "google/bbr v3 tcp_bbr.c: bbr_pacing_gain[BBR_BW_PROBE_UP]",
            GAIN,
            probe_up_gain,
            "PROBE_BW UP pacing gain"
        ),
        param!(
            "probe_down_gain",
            "google/bbr v3 tcp_bbr.c: bbr_pacing_gain[BBR_BW_PROBE_DOWN]",
            GAIN,
            probe_down_gain,
            "PROBE_BW DOWN pacing gain"
        ),
        param!(
            "probe_pif_gain",
            "tcp_bbr2.c: bbr_bw_probe_pif_gain",
            GAIN,
            probe_pif_gain,
            "v2: UP ends once inflight reaches this many BDPs after a min_rtt"
        ),
        param!(
            "full_bw_thresh",
            "google/bbr v3 tcp_bbr.c: bbr_full_bw_thresh",
            GAIN,
            full_bw_thresh,
            "STARTUP and UP count a round as growth only if bandwidth grew by this factor"
        ),
        param!(
            "loss_thresh",
            "google/bbr v3 tcp_bbr.c: bbr_loss_thresh",
            FRACTION,
            loss_thresh,
            "loss rate of a round that makes a probe too high"
        ),
        param!(
            "beta",
            "google/bbr v3 tcp_bbr.c: bbr_beta",
            FRACTION,
            beta,
            "multiplicative cut of bw_lo, inflight_lo and inflight_hi on loss"
        ),
        param!(
            "inflight_headroom",
            "google/bbr v3 tcp_bbr.c: bbr_inflight_headroom",
            FRACTION,
            inflight_headroom,
            "share of inflight_hi left free in CRUISE"
        ),
        param!(
            "probe_rtt_cwnd_gain",
            "google/bbr v3 tcp_bbr.c: bbr_probe_rtt_cwnd_gain",
            (Kind::Gain, 0.0, MAX_GAIN),
            probe_rtt_cwnd_gain,
            "PROBE_RTT cwnd in BDPs (at least cwnd_min_target)"
        ),
        param!(
            "extra_acked_gain",
            "google/bbr v3 tcp_bbr.c: bbr_extra_acked_gain",
            (Kind::Gain, 0.0, MAX_GAIN),
            extra_acked_gain,
            "share of the ACK-aggregation estimate added to cwnd; 0 turns it off"
        ),
        param!(
            "full_bw_cnt",
            "google/bbr v3 tcp_bbr.c: bbr_full_bw_cnt",
            (Kind::Integer, 1.0, 3.0),
            full_bw_cnt,
            "rounds without growth that end STARTUP (counted in full_bw_cnt:2)"
        ),
        param!(
            "full_loss_cnt",
            "google/bbr v3 tcp_bbr.c: bbr_full_loss_cnt",
            (Kind::Integer, 0.0, 15.0),
            full_loss_cnt,
            "loss events in a round that end STARTUP; 0 turns the test off (counted in loss_events_in_round:4)"
        ),
        param!(
            "cwnd_min_target",
            "google/bbr v3 tcp_bbr.c: bbr_cwnd_min_target",
            (Kind::Integer, 1.0, 1e6),
            cwnd_min_target,
            "the smallest cwnd, segments"
        ),
        param!(
            "min_rtt_win_sec",
            "google/bbr v3 tcp_bbr.c: bbr_min_rtt_win_sec",
            (Kind::Integer, 1.0, 3600.0),
            min_rtt_win_sec,
            "window of the min-RTT filter, seconds"
        ),
        param!(
            "probe_rtt_win_ms",
            "google/bbr v3 tcp_bbr.c: bbr_probe_rtt_win_ms",
            (Kind::Integer, 0.0, 3.6e6),
            probe_rtt_win_ms,
            "PROBE_RTT at least this often, ms"
        ),
        param!(
            "probe_rtt_mode_ms",
            "google/bbr v3 tcp_bbr.c: bbr_probe_rtt_mode_ms",
            (Kind::Integer, 0.0, 3.6e6),
            probe_rtt_mode_ms,
            "time held in PROBE_RTT, ms; 0 never enters PROBE_RTT"
        ),
        param!(
            "bw_probe_base_us",
            "google/bbr v3 tcp_bbr.c: bbr_bw_probe_base_us",
            (Kind::Integer, 0.0, PROBE_WAIT_MAX_US),
            bw_probe_base_us,
            "fixed part of the wait between bandwidth probes, us"
        ),
        param!(
            "bw_probe_rand_us",
            "google/bbr v3 tcp_bbr.c: bbr_bw_probe_rand_us",
            (Kind::Integer, 0.0, PROBE_WAIT_MAX_US),
            bw_probe_rand_us,
            "random part of the wait between bandwidth probes, us"
        ),
        param!(
            "bw_probe_max_rounds",
            "google/bbr v3 tcp_bbr.c: bbr_bw_probe_max_rounds",
            (Kind::Integer, 0.0, 255.0),
            bw_probe_max_rounds,
            "Reno-coexistence cap on rounds between probes (counted in rounds_since_probe:8)"
        ),
        param!(
            "extra_acked_win_rtts",
            "google/bbr v3 tcp_bbr.c: bbr_extra_acked_win_rtts",
            (Kind::Integer, 1.0, 31.0),
            extra_acked_win_rtts,
            "window of the ACK-aggregation filter, rounds (counted in extra_acked_win_rtts:5)"
        ),
        param!(
            "ecn_factor",
            "google/bbr v3 tcp_bbr.c: bbr_ecn_factor",
            PROPORTION,
            ecn_factor,
            "share of ecn_alpha cut from inflight_lo per round with CE; 0 ignores ECN"
        ),
        param!(
            "ecn_alpha_gain",
            "google/bbr v3 tcp_bbr.c: bbr_ecn_alpha_gain",
            PROPORTION,
            ecn_alpha_gain,
            "weight of the newest round in the CE-ratio average ecn_alpha"
        ),
        param!(
            "ecn_thresh",
            "google/bbr v3 tcp_bbr.c: bbr_ecn_thresh",
            PROPORTION,
            ecn_thresh,
            "CE ratio that makes a probe too high; 0 turns the test off"
        ),
        param!(
            "ecn_reprobe_gain",
            "google/bbr v3 tcp_bbr.c: bbr_ecn_reprobe_gain",
            PROPORTION,
            ecn_reprobe_gain,
            "first inflight_hi step after an ECN-only cycle, a share of inflight_hi; 0 turns it off"
        ),
        param!(
            "ecn_max_rtt_us",
            "google/bbr v3 tcp_bbr.c: bbr_ecn_max_rtt_us",
            (Kind::Integer, 0.0, u32::MAX as f64),
            ecn_max_rtt_us,
            "ECN is used only below this min_rtt, us; 0 at any RTT"
        ),
        param!(
            "full_ecn_cnt",
            "google/bbr v3 tcp_bbr.c: bbr_full_ecn_cnt",
            (Kind::Integer, 0.0, 3.0),
            full_ecn_cnt,
            "rounds of high CE ratio that end STARTUP; 0 turns the test off (counted in startup_ecn_rounds:2)"
        ),
        param!(
            "inflight_deficit",
            "cc/bbr/model.rs: inflight_deficit_gain (the 2BRobust patch)",
            FLAG,
            inflight_deficit,
            "pace at startup_pacing_gain while less than a BDP is in flight and the flow is not app-limited"
        ),
    ];

    /// The defaults of version `v` with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(v: Version, overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        let name = match v {
            Version::V2 => "bbr2",
            Version::V3 => "bbr3",
        };
        apply(name, Self::TABLE, Bbr3Params::defaults(v), overrides)
    }
}

/// The probe wait `bw_probe_base_us` + uniform[0, `bw_probe_rand_us`) is held in a u32
/// (`probe_wait_us`, tcp_bbr.c): each part at most half of its range.
const PROBE_WAIT_MAX_US: f64 = i32::MAX as f64;
