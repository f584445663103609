//! Scalable TCP (Kelly, 2003) as Linux v6.1 implements it (`net/ipv4/tcp_scalable.c`).
//!
//! Multiplicative increase and decrease: past slow start cwnd grows by one segment per
//! 100 segments ACKed (1% per RTT), or per cwnd ACKed below 100 segments (Reno), and a
//! loss cuts it by 1/8. Recovery from a loss thus takes a fixed number of RTTs whatever
//! the window. The stack does the reductions themselves (PRR in Recovery/CWR, cwnd = 1
//! on RTO). No module parameters and no state.

use super::reno::{cong_avoid_ai, slow_start};
use super::*;

/// `TCP_SCALABLE_AI_CNT`: +1 segment per this many ACKed (a = 0.01).
const AI_CNT: u32 = 100;
/// `TCP_SCALABLE_MD_SCALE`: a loss removes cwnd >> 3 (b = 1/8).
const MD_SCALE: u32 = 3;

/// `struct tcp_congestion_ops tcp_scalable`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalable;

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    /// `tcp_scalable_ssthresh`: cwnd − cwnd/8, at least 2.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        (w.cwnd - (w.cwnd >> MD_SCALE)).max(MIN_SSTHRESH)
    }

    /// `tcp_scalable_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if !c.is_cwnd_limited {
            return;
        }
        let mut acked = acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked);
            if acked == 0 {
                return;
            }
        }
        let ai_w = w.cwnd.min(AI_CNT);
        cong_avoid_ai(w, ai_w, acked);
    }

    /// `tcp_reno_undo_cwnd`, as tcp_scalable.c's ops name it.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }
}

#[cfg(test)]
mod tests;
