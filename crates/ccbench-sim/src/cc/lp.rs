//! TCP Low Priority as Linux implements it (`net/ipv4/tcp_lp.c`, Linux 6.1), after
//! Kuzmanovic and Knightly, "TCP-LP: a distributed algorithm for low priority data
//! transfer" (INFOCOM 2003).
//!
//! LP takes only the capacity other flows leave: it watches the one-way delay (from the
//! ACK's timestamp option: the peer's TSval against the echo of ours, with the peer's
//! clock rate estimated on the way) and, once the smoothed delay passes
//! min + 15% of (max − min), halves cwnd; a second such early congestion indication
//! within the inference time (3 × the RTT the echo shows) drops cwnd to 1. While within
//! inference it does not grow; otherwise growth, ssthresh and undo are Reno's. The
//! kernel's integer widths are kept, quirks included: the 32-bit products and
//! differences wrap, and `LP_RESOL / remote_hz` is 0 once the remote clock is
//! estimated above 1000 Hz.
//!
//! What LP reads of the timestamp option is as the kernel's socket sees it: with
//! `net.ipv4.tcp_timestamps = 1` (the default) each end adds a random offset of its own
//! to its TSvals (`secure_tcp_ts_off`), and 6.1's LP compares the echo of its offset
//! TSval with the offset-free `tcp_time_stamp`. The wire's timestamps carry no offset in
//! the simulator (only their differences matter elsewhere), so LP adds the two offsets,
//! drawn from the flow's seeded stream, to what it reads.

use super::reno::Reno;
use super::*;

/// `TCP_TS_HZ`: the TSval clock ticks per second (ms), on both ends in the simulator.
const TCP_TS_HZ: u32 = 1000;
/// `LP_RESOL`: one-way delays are kept in 1/LP_RESOL s (= TCP_TS_HZ since 4.13).
const LP_RESOL: u32 = TCP_TS_HZ;
/// `enum tcp_lp_state`.
pub const LP_VALID_RHZ: u32 = 1 << 0;
pub const LP_VALID_OWD: u32 = 1 << 1;
pub const LP_WITHIN_THR: u32 = 1 << 3;
pub const LP_WITHIN_INF: u32 = 1 << 4;
/// `tcp_lp_remote_hz_estimator`: remote HZ in 1/64, new samples weigh 1/64.
const RHZ_SHIFT: u32 = 6;
/// `tcp_lp_rtt_sample`: the smoothed OWD in 1/8, new samples weigh 1/8.
const SOWD_SHIFT: u32 = 3;
/// `tcp_lp_pkts_acked`: inference time = 3 × RTT; early congestion above
/// min + 15/100 of (max − min).
const INFERENCE_RTTS: u32 = 3;
const THRESHOLD_PERCENT: u32 = 15;
/// `tcp_lp_init`: no OWD seen yet.
const OWD_MIN_INIT: u32 = 0xffff_ffff;

/// `tcp_time_stamp`: ms of the stack's clock, without the connection's TSval offset.
fn tcp_time_stamp(c: &ConnInfo) -> u32 {
    (c.now.ns() / 1_000_000) as u32
}

/// `struct lp`.
#[derive(Clone, Debug)]
pub struct Lp {
    /// `LP_*` bits.
    flag: u32,
    /// Smoothed OWD in 1/8 of 1/LP_RESOL s.
    sowd: u32,
    /// OWD min and max, and the max held back (`owd_max_rsv`).
    owd_min: u32,
    owd_max: u32,
    owd_max_rsv: u32,
    /// The peer's TSval clock rate, Hz.
    remote_hz: u32,
    /// TSval and TSecr of the previous ACK.
    remote_ref_time: u32,
    local_ref_time: u32,
    /// `tcp_time_stamp` of the last early-congestion cut; 0 = none.
    last_drop: u32,
    /// Inference time, ms.
    inference: u32,
    /// The TSval offsets (`tp->tsoffset`) of this end and of the peer.
    ts_offset: u32,
    peer_ts_offset: u32,
}

impl Lp {
    /// LP on a connection whose ends drew their TSval offsets from `rng`.
    pub fn new(mut rng: crate::base::rng::Rng) -> Self {
        use rand::RngCore;
        let ours = rng.next_u32();
        Lp::with_ts_offsets(ours, rng.next_u32())
    }

    /// `tcp_lp_init`, with these TSval offsets (this end's and the peer's).
    pub fn with_ts_offsets(ts_offset: u32, peer_ts_offset: u32) -> Self {
        Lp {
            flag: 0,
            sowd: 0,
            owd_min: OWD_MIN_INIT,
            owd_max: 0,
            owd_max_rsv: 0,
            remote_hz: 0,
            remote_ref_time: 0,
            local_ref_time: 0,
            last_drop: 0,
            inference: 0,
            ts_offset,
            peer_ts_offset,
        }
    }

    /// The ACK's `rcv_tsval` and `rcv_tsecr` as the kernel's socket holds them.
    fn rcv_ts(&self, c: &ConnInfo) -> (u32, u32) {
        (c.rcv_tsval.wrapping_add(self.peer_ts_offset), c.rcv_tsecr.wrapping_add(self.ts_offset))
    }

    fn set_flag(&mut self, bit: u32, on: bool) {
        if on {
            self.flag |= bit;
        } else {
            self.flag &= !bit;
        }
    }

    /// `tcp_lp_remote_hz_estimator`: TCP_TS_HZ × ΔTSval / ΔTSecr between consecutive
    /// ACKs, smoothed by 1/64. Both differences and the product are u32 in the kernel.
    fn remote_hz_estimator(&mut self, c: &ConnInfo) -> u32 {
        let (tsval, tsecr) = self.rcv_ts(c);
        let mut rhz = (self.remote_hz << RHZ_SHIFT) as i64;
        let have_refs = self.remote_ref_time != 0 && self.local_ref_time != 0;
        if have_refs && tsval != self.remote_ref_time && tsecr != self.local_ref_time {
            let dval = tsval.wrapping_sub(self.remote_ref_time);
            let decr = tsecr.wrapping_sub(self.local_ref_time);
            let m = (TCP_TS_HZ.wrapping_mul(dval) / decr) as i64;
            if rhz > 0 {
                rhz += m - (rhz >> RHZ_SHIFT);
            } else {
                rhz = m << RHZ_SHIFT;
            }
        }
        self.set_flag(LP_VALID_RHZ, (rhz >> RHZ_SHIFT) > 0);
        (self.remote_ref_time, self.local_ref_time) = (tsval, tsecr);
        (rhz >> RHZ_SHIFT) as u32
    }

    /// `tcp_lp_owd_calculator`: TSval in 1/LP_RESOL s minus TSecr likewise, in u32.
    fn owd_calculator(&mut self, c: &ConnInfo) -> u32 {
        self.remote_hz = self.remote_hz_estimator(c);
        let mut owd = 0u32;
        if self.flag & LP_VALID_RHZ != 0 {
            // remote_hz > 0 here; the kernel divides unguarded.
            let remote_scale = LP_RESOL.checked_div(self.remote_hz).unwrap_or(0);
            let local_scale = LP_RESOL / TCP_TS_HZ;
            let (tsval, tsecr) = self.rcv_ts(c);
            owd = tsval.wrapping_mul(remote_scale).wrapping_sub(tsecr.wrapping_mul(local_scale));
        }
        self.set_flag(LP_VALID_OWD, owd > 0);
        owd
    }

    /// `tcp_lp_rtt_sample`: OWD min, max (one below the largest seen), and the smoothed
    /// OWD (7/8 old + 1/8 new).
    fn rtt_sample(&mut self, c: &ConnInfo) {
        let mowd = self.owd_calculator(c);
        if self.flag & LP_VALID_RHZ == 0 || self.flag & LP_VALID_OWD == 0 {
            return;
        }
        self.owd_min = self.owd_min.min(mowd);
        if mowd > self.owd_max {
            if mowd > self.owd_max_rsv {
                self.owd_max = if self.owd_max_rsv == 0 { mowd } else { self.owd_max_rsv };
                self.owd_max_rsv = mowd;
            } else {
                self.owd_max = mowd;
            }
        }
        // s64 arithmetic stored back into the u32 `sowd`.
        self.sowd = if self.sowd != 0 {
            (self.sowd as i64 + mowd as i64 - (self.sowd >> SOWD_SHIFT) as i64) as u32
        } else {
            ((mowd as i64) << SOWD_SHIFT) as u32
        };
    }

    /// The early-congestion threshold, min + 15% of (max − min), in u32.
    fn threshold(&self) -> u32 {
        let spread = self.owd_max.wrapping_sub(self.owd_min);
        self.owd_min.wrapping_add(THRESHOLD_PERCENT.wrapping_mul(spread) / 100)
    }
}

impl CongestionControl for Lp {
    fn name(&self) -> &'static str {
        "lp"
    }

    fn init(&mut self, _c: &ConnInfo, _w: &mut Window) {
        *self = Lp::with_ts_offsets(self.ts_offset, self.peer_ts_offset);
    }

    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        Reno.ssthresh(c, w)
    }

    /// `tcp_lp_cong_avoid`: Reno, except within inference.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if self.flag & LP_WITHIN_INF == 0 {
            Reno.cong_avoid(c, w, acked);
        }
    }

    /// `tcp_lp_pkts_acked`: update the delays, then on an early congestion indication
    /// halve cwnd, or drop it to 1 within inference.
    fn pkts_acked(&mut self, c: &ConnInfo, w: &mut Window, s: &AckSample) {
        let now = tcp_time_stamp(c);
        if s.rtt_us > 0 {
            self.rtt_sample(c);
        }
        let delta = now.wrapping_sub(self.rcv_ts(c).1);
        if delta as i32 > 0 {
            self.inference = INFERENCE_RTTS.wrapping_mul(delta);
        }
        let within_inference = self.last_drop != 0 && now.wrapping_sub(self.last_drop) < self.inference;
        self.set_flag(LP_WITHIN_INF, within_inference);
        self.set_flag(LP_WITHIN_THR, self.sowd >> SOWD_SHIFT < self.threshold());
        if self.flag & LP_WITHIN_THR != 0 {
            return;
        }
        // Restart min and max around the smoothed OWD.
        self.owd_min = self.sowd >> SOWD_SHIFT;
        self.owd_max = self.sowd >> (SOWD_SHIFT - 1);
        self.owd_max_rsv = self.owd_max;
        w.cwnd = if within_inference { 1 } else { (w.cwnd >> 1).max(1) };
        self.last_drop = now;
    }

    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn internals(&self) -> Internals {
        Internals::from([
            ("remote_hz", self.remote_hz as f64),
            ("sowd_ms", (self.sowd >> SOWD_SHIFT) as f64),
            ("owd_min_ms", self.owd_min as f64),
            ("owd_max_ms", self.owd_max as f64),
            ("threshold_ms", self.threshold() as f64),
            ("inference_ms", self.inference as f64),
            ("within_inference", (self.flag & LP_WITHIN_INF != 0) as u8 as f64),
            ("within_threshold", (self.flag & LP_WITHIN_THR != 0) as u8 as f64),
        ])
    }
}

#[cfg(test)]
mod tests;
