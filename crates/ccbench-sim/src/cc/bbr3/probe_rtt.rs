//! min_rtt and PROBE_RTT (v2/v3): a 5-s probe_rtt_min filter schedules PROBE_RTT, which
//! holds cwnd at half a BDP for max(200 ms, one round); min_rtt is the 10-s minimum.

use super::{AckPhase, Bbr3, Mode, Version};
use crate::cc::bbr::model::*;
use crate::cc::{ConnInfo, RateSample, Window};

impl Bbr3 {
    /// `bbr_probe_rtt_cwnd`: max(4, 0.5 x BDP).
    pub(super) fn probe_rtt_cwnd(&self) -> u32 {
        bdp(self.bw(), self.min_rtt_us, self.p.probe_rtt_cwnd_gain).max(self.p.cwnd_min_target)
    }

    fn ms_to_jiffies(c: &ConnInfo, ms: u32) -> u32 {
        (ms as u64 * c.hz as u64).div_ceil(1000) as u32
    }

    /// `bbr_update_min_rtt`. v3 refreshes probe_rtt_min only on a strictly lower sample;
    /// v2 also on an equal one.
    pub(super) fn update_min_rtt(&mut self, c: &ConnInfo, w: &mut Window, rs: &RateSample) {
        let after = |a: u32, b: u32| (a.wrapping_sub(b) as i32) > 0;
        let probe_rtt_expired =
            after(c.jiffies, self.probe_rtt_min_stamp.wrapping_add(Self::ms_to_jiffies(c, self.p.probe_rtt_win_ms)));
        if rs.rtt_us >= 0 {
            let rtt = rs.rtt_us as u64;
            let lower = match self.v {
                Version::V3 => rtt < self.probe_rtt_min_us,
                Version::V2 => rtt <= self.probe_rtt_min_us,
            };
            if lower || (probe_rtt_expired && !rs.is_ack_delayed) {
                self.probe_rtt_min_us = rtt;
                self.probe_rtt_min_stamp = c.jiffies;
            }
        }
        let min_rtt_expired = after(c.jiffies, self.min_rtt_stamp.wrapping_add(self.p.min_rtt_win_sec * c.hz));
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if self.p.probe_rtt_mode_ms > 0 && probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.transition_to(c.now, Mode::ProbeRtt);
            self.save_cwnd(w);
            self.probe_rtt.done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = c.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            w.mark_app_limited = true;
            let target = self.probe_rtt_cwnd();
            if self.probe_rtt.on_ack(
                c,
                target,
                self.p.probe_rtt_mode_ms,
                self.round_start,
                &mut self.next_rtt_delivered,
            ) {
                self.check_probe_rtt_done(c, w);
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_check_probe_rtt_done` + `bbr_exit_probe_rtt`.
    pub(super) fn check_probe_rtt_done(&mut self, c: &ConnInfo, w: &mut Window) {
        if !self.probe_rtt.expired(c) {
            return;
        }
        self.probe_rtt_min_stamp = c.jiffies;
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.transition_to(c.now, Mode::ProbeBw);
            // Reset the probe clock, then cruise: inflight is below the BDP now.
            self.start_probe_down(c);
            self.start_probe_cruise(c);
        } else {
            self.transition_to(c.now, Mode::Startup);
        }
    }
}
