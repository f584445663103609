//! The parts of BBR's model shared by every version: fixed-point bandwidth, BDP and
//! inflight targets, pacing-rate conversion, the TSO goal and the ACK-aggregation
//! estimator (tcp_bbr.c). Bandwidth is in segments per µs scaled by 2^24 (`BW_SCALE`),
//! gains are scaled by 256 (`BBR_SCALE`).

use crate::cc::{ConnInfo, Window};

pub const BW_SCALE: u32 = 24;
pub const BW_UNIT: u64 = 1 << BW_SCALE;
pub const BBR_SCALE: u32 = 8;
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// `TCP_INIT_CWND`: the BDP before any RTT sample.
pub const INIT_CWND: u32 = 10;
/// `bbr_pacing_margin_percent`: pace 1% below the estimate.
pub const PACING_MARGIN_PERCENT: u64 = 1;
/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER`: the TSO goal's byte cap.
pub const TSO_MAX_BYTES: u64 = 65536 - 1 - 320;
/// `bbr_min_tso_rate`: 1.2 Mbit/s in bytes per second.
pub const MIN_TSO_RATE_BPS: u64 = 150_000;
/// `bbr_extra_acked_max_us`: the aggregation allowance is at most 100 ms of data.
pub const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// `bbr_ack_epoch_acked_reset_thresh`.
pub const ACK_EPOCH_ACKED_RESET: u32 = 1 << 20;

/// A gain given as a real number, rounded to the kernel's /256 fixed point.
pub fn gain(x: f64) -> u32 {
    (x * BBR_UNIT as f64).round() as u32
}

/// `bbr_bdp`: ceil(bw x min_rtt x gain) in segments; `INIT_CWND` before any RTT.
pub fn bdp(bw: u64, min_rtt_us: u64, gain: u32) -> u32 {
    if min_rtt_us == u64::MAX {
        return INIT_CWND;
    }
    let w = bw as u128 * min_rtt_us as u128;
    (((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128)) as u32
}

/// The 2BRobust patch (Elmenhorst & Aschenbruck, §6.2): a flow that is not app-limited
/// yet has less than one estimated BDP outstanding (`bytes_sent - bytes_acked`, i.e.
/// snd_nxt - snd_una) cannot be network-limited, so its sender is CPU-limited: pace at
/// the high gain until the deficit is gone.
pub fn inflight_deficit_gain(c: &ConnInfo, bw: u64, min_rtt_us: u64, gain: u32, high_gain: u32) -> u32 {
    if !c.app_limited && min_rtt_us != u64::MAX && c.packets_out < bdp(bw, min_rtt_us, BBR_UNIT) {
        gain.max(high_gain)
    } else {
        gain
    }
}

/// `bbr_rate_bytes_per_sec`: bandwidth x gain as payload bytes per second, less the
/// pacing margin.
pub fn rate_bytes_per_sec(bw: u64, mss: u32, gain: u32) -> u64 {
    let mut rate = bw as u128 * mss as u128;
    rate = (rate * gain as u128) >> BBR_SCALE;
    rate *= (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
    (rate >> BW_SCALE) as u64
}

/// `bbr_init_pacing_rate_from_rtt`: the STARTUP gain x cwnd / SRTT (1 ms before any RTT
/// sample). Returns whether an RTT had been seen.
pub fn init_pacing_rate(c: &ConnInfo, w: &mut Window, startup_gain: u32) -> bool {
    let rtt_us = if c.srtt_us > 0 { c.srtt_us } else { 1000 };
    let bw = w.cwnd as u64 * BW_UNIT / rtt_us;
    w.pacing_rate = rate_bytes_per_sec(bw, c.mss, startup_gain);
    c.srtt_us > 0
}

/// `bbr_set_pacing_rate`: until the pipe is first full the rate only ever rises.
pub fn set_pacing_rate(
    c: &ConnInfo,
    w: &mut Window,
    bw: u64,
    gain: u32,
    startup_gain: u32,
    full_bw_reached: bool,
    has_seen_rtt: &mut bool,
) {
    let rate = rate_bytes_per_sec(bw, c.mss, gain);
    if !*has_seen_rtt && c.srtt_us > 0 {
        *has_seen_rtt = init_pacing_rate(c, w, startup_gain);
    }
    if full_bw_reached || rate > w.pacing_rate {
        w.pacing_rate = rate;
    }
}

/// One round of v1's plateau test (`bbr_check_full_bw_reached`, also v2's): the filtered
/// max must grow by `thresh` over the baseline, else one more flat round is counted.
/// Returns whether `rounds` flat rounds have passed.
pub fn plateau_round(full_bw: &mut u64, full_bw_cnt: &mut u32, max_bw: u64, thresh: u32, rounds: u32) -> bool {
    if max_bw >= ((*full_bw as u128 * thresh as u128) >> BBR_SCALE) as u64 {
        *full_bw = max_bw;
        *full_bw_cnt = 0;
        return false;
    }
    *full_bw_cnt += 1;
    *full_bw_cnt >= rounds
}

/// PROBE_RTT's hold, the same in every version: once inflight has fallen to the target,
/// stay for `mode_ms` and at least one round (`probe_rtt_done_stamp`,
/// `probe_rtt_round_done`).
#[derive(Clone, Debug, Default)]
pub struct ProbeRttHold {
    /// Jiffy after which PROBE_RTT may end; None until inflight reached the target.
    pub done_stamp: Option<u32>,
    pub round_done: bool,
}

impl ProbeRttHold {
    /// One ACK in PROBE_RTT. Starts the hold (and a new round, via
    /// `next_rtt_delivered`) when inflight first reaches `target`; returns true once the
    /// hold has covered a round, so the caller should check whether it has expired.
    pub fn on_ack(
        &mut self,
        c: &ConnInfo,
        target: u32,
        mode_ms: u32,
        round_start: bool,
        next_rtt_delivered: &mut u64,
    ) -> bool {
        if self.done_stamp.is_none() && c.inflight <= target {
            let jiffies = (mode_ms as u64 * c.hz as u64).div_ceil(1000) as u32;
            self.done_stamp = Some(c.jiffies.wrapping_add(jiffies));
            self.round_done = false;
            *next_rtt_delivered = c.delivered;
            return false;
        }
        if self.done_stamp.is_some() && round_start {
            self.round_done = true;
        }
        self.done_stamp.is_some() && self.round_done
    }

    /// The hold's time is up (`after(tcp_jiffies32, probe_rtt_done_stamp)`).
    pub fn expired(&self, c: &ConnInfo) -> bool {
        self.done_stamp.is_some_and(|d| (c.jiffies.wrapping_sub(d) as i32) > 0)
    }
}

/// `bbr_min_tso_segs`: 1 segment below 1.2 Mbit/s, else 2.
pub fn min_tso_segs(pacing_rate: u64) -> u32 {
    if pacing_rate < MIN_TSO_RATE_BPS {
        1
    } else {
        2
    }
}

/// `bbr_tso_segs_goal` (v1): about 1 ms of data at the pacing rate, at most 127 segments.
pub fn tso_segs_goal(c: &ConnInfo, pacing_rate: u64) -> u32 {
    let bytes = (pacing_rate >> 10).min(TSO_MAX_BYTES);
    ((bytes / c.mss as u64) as u32).max(min_tso_segs(pacing_rate)).min(0x7f)
}

/// `bbr_packets_in_net_at_edt`: what will still be in flight when the next skb departs.
pub fn packets_in_net_at_edt(c: &ConnInfo, bw: u64, inflight_now: u32, tso_goal_if_probing: u32) -> u32 {
    let edt = c.wstamp.max(c.now);
    let interval_us = edt.since(c.now).us();
    let delivered = ((bw as u128 * interval_us as u128) >> BW_SCALE) as u64;
    let at_edt = inflight_now as u64 + tso_goal_if_probing as u64;
    at_edt.saturating_sub(delivered) as u32
}

/// `bbr_update_ack_aggregation`: how much more was ACKed than the bandwidth estimate
/// explains, as a windowed max over two buckets of `win_rtts` rounds each.
#[derive(Clone, Debug, Default)]
pub struct AckAggregation {
    epoch_us: u64,
    epoch_acked: u32,
    extra_acked: [u32; 2],
    win_rtts: u32,
    win_idx: usize,
}

impl AckAggregation {
    pub fn reset_epoch(&mut self, now_us: u64) {
        self.epoch_us = now_us;
        self.epoch_acked = 0;
    }

    pub fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    pub fn update(&mut self, round_start: bool, win_rtts: u32, delivered_us: u64, bw: u64, acked: u32, cwnd: u32) {
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1f);
            if self.win_rtts >= win_rtts {
                self.win_rtts = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        let epoch = delivered_us.saturating_sub(self.epoch_us);
        let mut expected = ((bw as u128 * epoch as u128) / BW_UNIT as u128) as u64;
        if self.epoch_acked as u64 <= expected || self.epoch_acked + acked >= ACK_EPOCH_ACKED_RESET {
            self.epoch_acked = 0;
            self.epoch_us = delivered_us;
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked).min(0xfffff);
        let extra = (self.epoch_acked as u64 - expected.min(self.epoch_acked as u64)).min(cwnd as u64) as u32;
        let slot = &mut self.extra_acked[self.win_idx];
        *slot = (*slot).max(extra);
    }

    /// `bbr_ack_aggregation_cwnd`: the allowance added to the cwnd target.
    pub fn cwnd_allowance(&self, bw: u64, extra_acked_gain: u32) -> u32 {
        let max = ((bw as u128 * EXTRA_ACKED_MAX_US as u128) / BW_UNIT as u128) as u32;
        ((extra_acked_gain as u64 * self.extra_acked() as u64) >> BBR_SCALE).min(max as u64) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 Mbit/s of 1448-byte segments is 8633 segments/s = 0.008633 per µs.
    fn bw_100mbit() -> u64 {
        (100_000_000u64 as u128 * BW_UNIT as u128 / 8 / 1448 / 1_000_000) as u64
    }

    #[test]
    fn bdp_rounds_up_like_the_kernel() {
        // 0.008633 seg/µs x 40 000 µs = 345.3 segments -> 346.
        assert_eq!(bdp(bw_100mbit(), 40_000, BBR_UNIT), 346);
        assert_eq!(bdp(bw_100mbit(), 40_000, 2 * BBR_UNIT), 691);
        assert_eq!(bdp(bw_100mbit(), u64::MAX, BBR_UNIT), INIT_CWND);
    }

    #[test]
    fn pacing_rate_has_a_one_percent_margin() {
        let r = rate_bytes_per_sec(bw_100mbit(), 1448, BBR_UNIT) as f64;
        let payload = 100e6 / 8.0;
        assert!((r / payload - 0.99).abs() < 1e-4, "{r}");
    }

    #[test]
    fn gains_round_to_the_kernel_constants() {
        assert_eq!(gain(2.0 / std::f64::consts::LN_2), 739);
        assert_eq!(gain(1.25), 320);
        assert_eq!(gain(0.75), 192);
        assert_eq!(gain(1.0 / 2.885), 89); // the kernel's 88 is 1000*256/2885 truncated
    }
}
