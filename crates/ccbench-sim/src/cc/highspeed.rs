//! HighSpeed TCP (RFC 3649) as Linux v6.1 implements it (`net/ipv4/tcp_highspeed.c`).
//!
//! Above 38 segments the window grows by a(w) segments per RTT and a loss cuts it by
//! b(w)·w, both read from RFC 3649's appendix B table (b in 1/256) at the row that
//! brackets the current window. Below 38 segments it is Reno (a = 1, b = 0.5). The
//! kernel counts one ACK as one step of a(w)/w whatever it acknowledges, and its slow
//! start drops the ACKed segments left over at ssthresh. The stack does the reductions
//! themselves (PRR in Recovery/CWR, cwnd = 1 on RTO). No module parameters.

use super::reno::slow_start;
use super::*;

/// One row of `hstcp_aimd_vals`: up to `cwnd` segments, grow by (row index + 1) per RTT
/// and cut by `md`/256 of the window on a loss.
#[derive(Clone, Copy, Debug)]
pub struct AimdRow {
    pub cwnd: u32,
    pub md: u32,
}

const fn row(cwnd: u32, md: u32) -> AimdRow {
    AimdRow { cwnd, md }
}

/// `hstcp_aimd_vals`: RFC 3649 appendix B, b(w) in 1/256.
#[rustfmt::skip]
pub const AIMD: [AimdRow; 72] = [
    row(38, 128), row(118, 112), row(221, 104), row(347, 98), row(495, 93),
    row(663, 89), row(851, 86), row(1058, 83), row(1284, 81), row(1529, 78),
    row(1793, 76), row(2076, 74), row(2378, 72), row(2699, 71), row(3039, 69),
    row(3399, 68), row(3778, 66), row(4177, 65), row(4596, 64), row(5036, 62),
    row(5497, 61), row(5979, 60), row(6483, 59), row(7009, 58), row(7558, 57),
    row(8130, 56), row(8726, 55), row(9346, 54), row(9991, 53), row(10661, 52),
    row(11358, 52), row(12082, 51), row(12834, 50), row(13614, 49), row(14424, 48),
    row(15265, 48), row(16137, 47), row(17042, 46), row(17981, 45), row(18955, 45),
    row(19965, 44), row(21013, 43), row(22101, 43), row(23230, 42), row(24402, 41),
    row(25618, 41), row(26881, 40), row(28193, 39), row(29557, 39), row(30975, 38),
    row(32450, 38), row(33986, 37), row(35586, 36), row(37253, 36), row(38992, 35),
    row(40808, 35), row(42707, 34), row(44694, 33), row(46776, 33), row(48961, 32),
    row(51258, 32), row(53677, 31), row(56230, 30), row(58932, 30), row(61799, 29),
    row(64851, 28), row(68113, 28), row(71617, 27), row(75401, 26), row(79517, 26),
    row(84035, 25), row(89053, 24),
];

/// `hstcp_init`: cwnd·md must fit in 32 bits (md ≤ 128), so cwnd ≤ 2^32/128.
const MAX_CLAMP: u32 = u32::MAX / 128;

/// `struct hstcp`.
#[derive(Clone, Debug, Default)]
pub struct HighSpeed {
    /// Index of the table row bracketing cwnd: a(w) = ai + 1.
    ai: u32,
}

impl HighSpeed {
    pub fn new() -> Self {
        HighSpeed::default()
    }

    /// `hstcp_cong_avoid`'s row update: move `ai` until row ai−1 < cwnd ≤ row ai (or the
    /// last row).
    fn update_row(&mut self, cwnd: u32) {
        let last = AIMD.len() as u32 - 1;
        while cwnd > AIMD[self.ai as usize].cwnd && self.ai < last {
            self.ai += 1;
        }
        while self.ai > 0 && cwnd <= AIMD[self.ai as usize - 1].cwnd {
            self.ai -= 1;
        }
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    /// `hstcp_init`.
    fn init(&mut self, _c: &ConnInfo, w: &mut Window) {
        self.ai = 0;
        w.cwnd_clamp = w.cwnd_clamp.min(MAX_CLAMP);
    }

    /// `hstcp_ssthresh`: cwnd − b(w)·cwnd at the row of the last growth step, floor 2.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        let md = AIMD[self.ai as usize].md;
        w.cwnd.wrapping_sub(w.cwnd.wrapping_mul(md) >> 8).max(MIN_SSTHRESH)
    }

    /// `hstcp_cong_avoid`: slow start, or cwnd += a(w)/cwnd per ACK.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if !c.is_cwnd_limited {
            return;
        }
        if w.in_slow_start() {
            // The segments left over at ssthresh are dropped, as in the kernel.
            slow_start(w, acked);
            return;
        }
        self.update_row(w.cwnd);
        if w.cwnd < w.cwnd_clamp {
            w.cwnd_cnt = w.cwnd_cnt.wrapping_add(self.ai + 1);
            if w.cwnd_cnt >= w.cwnd {
                w.cwnd_cnt -= w.cwnd;
                w.cwnd += 1;
            }
        }
    }

    /// `tcp_reno_undo_cwnd`, as tcp_highspeed.c's ops name it.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn internals(&self) -> Internals {
        let row = AIMD[self.ai as usize];
        Internals::from([("ai", (self.ai + 1) as f64), ("md", row.md as f64 / 256.0)])
    }
}

#[cfg(test)]
mod tests;
