//! min_rtt tracking and PROBE_RTT (v1): when the 10-s min_rtt has not been refreshed,
//! hold inflight at 4 segments for max(200 ms, one round) to see the empty-queue RTT.

use super::{Bbr, Mode};
use crate::cc::{ConnInfo, RateSample, Window};

impl Bbr {
    /// `bbr_update_min_rtt`. A sample refreshes min_rtt only if strictly lower (Linux
    /// 5.10+), or when the estimate expired and the ACK was not possibly delayed.
    pub(super) fn update_min_rtt(&mut self, c: &ConnInfo, w: &mut Window, rs: &RateSample) {
        let win = self.p.min_rtt_win_sec * c.hz;
        let expired = (c.jiffies.wrapping_sub(self.min_rtt_stamp.wrapping_add(win)) as i32) > 0;
        if rs.rtt_us >= 0 && ((rs.rtt_us as u64) < self.min_rtt_us || (expired && !rs.is_ack_delayed)) {
            self.min_rtt_us = rs.rtt_us as u64;
            self.min_rtt_stamp = c.jiffies;
        }
        if self.p.probe_rtt_mode_ms > 0 && expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.transition_to(c.now, Mode::ProbeRtt);
            self.save_cwnd(w);
            self.probe_rtt.done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // Ignore low-rate samples while the pipe is deliberately drained.
            w.mark_app_limited = true;
            if self.probe_rtt.on_ack(
                c,
                self.p.cwnd_min_target,
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

    /// `bbr_check_probe_rtt_done`: after the 200 ms, restore cwnd and leave.
    pub(super) fn check_probe_rtt_done(&mut self, c: &ConnInfo, w: &mut Window) {
        if !self.probe_rtt.expired(c) {
            return;
        }
        self.min_rtt_stamp = c.jiffies;
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.reset_mode(c);
    }
}
