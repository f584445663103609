//! Reno (`tcp_reno_*` in net/ipv4/tcp_cong.c), and the stack's window-growth helpers
//! that other classic algorithms share (`tcp_slow_start`, `tcp_cong_avoid_ai`).
//!
//! Reno has no parameters and no state of its own: slow start adds one segment per
//! segment ACKed up to ssthresh, congestion avoidance adds one segment per cwnd ACKed,
//! a loss halves the window (the stack then runs PRR down to the new ssthresh).

use super::*;

/// `tcp_slow_start`: grow cwnd by the number of segments ACKed, but not past ssthresh
/// (and never past the clamp). A stretch ACK of N segments counts as N single ACKs.
/// Returns the ACKed segments left over once cwnd reached ssthresh, which the caller
/// spends in congestion avoidance on the same ACK.
pub fn slow_start(w: &mut Window, acked: u32) -> u32 {
    let grown = w.cwnd.saturating_add(acked).min(w.ssthresh);
    // `grown` is below `cwnd` only if cwnd already exceeds ssthresh, which callers
    // rule out by testing `in_slow_start` first; the kernel's u32 arithmetic wraps.
    let used = grown.wrapping_sub(w.cwnd);
    w.cwnd = grown.min(w.cwnd_clamp);
    acked.wrapping_sub(used)
}

/// `tcp_cong_avoid_ai`: additive increase of one segment per `w` segments ACKed,
/// counted in `Window::cwnd_cnt` (`snd_cwnd_cnt`).
///
/// Two kernel details matter: a count accumulated while `w` was larger is spent as a
/// single +1 (not several) when `w` has since shrunk; and an ACK covering many
/// segments may add several segments at once.
pub fn cong_avoid_ai(w: &mut Window, ai_w: u32, acked: u32) {
    // The kernel divides by `w` unguarded; no caller passes 0 (Reno's cwnd ≥ 1,
    // Cubic's cnt ≥ 2).
    let ai_w = ai_w.max(1);
    if w.cwnd_cnt >= ai_w {
        w.cwnd_cnt = 0;
        w.cwnd = w.cwnd.saturating_add(1);
    }
    w.cwnd_cnt = w.cwnd_cnt.wrapping_add(acked);
    if w.cwnd_cnt >= ai_w {
        let increments = w.cwnd_cnt / ai_w;
        w.cwnd_cnt -= increments * ai_w;
        w.cwnd = w.cwnd.saturating_add(increments);
    }
    w.cwnd = w.cwnd.min(w.cwnd_clamp);
}

/// `tcp_reno_undo_cwnd`: after a spurious reduction, go back to the window held before
/// it began (the stack restores ssthresh itself).
pub fn undo_cwnd(c: &ConnInfo, w: &Window) -> u32 {
    w.cwnd.max(c.prior_cwnd)
}

/// `struct tcp_congestion_ops tcp_reno`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reno;

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    /// `tcp_reno_ssthresh`: half the current window, at least two segments.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        (w.cwnd >> 1).max(MIN_SSTHRESH)
    }

    /// `tcp_reno_cong_avoid`.
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
        let ai_w = w.cwnd;
        cong_avoid_ai(w, ai_w, acked);
    }

    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        undo_cwnd(c, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> ConnInfo {
        ConnInfo { is_cwnd_limited: true, ..ConnInfo::default() }
    }

    /// Deliver one round trip's worth of ACKs: one ACK per `per_ack` segments until
    /// every segment of the window in flight at the start of the round is ACKed.
    fn one_round(cc: &mut Reno, c: &ConnInfo, w: &mut Window, per_ack: u32) {
        let mut left = w.cwnd;
        while left > 0 {
            let acked = per_ack.min(left);
            cc.cong_avoid(c, w, acked);
            left -= acked;
        }
    }

    #[test]
    fn slow_start_doubles_cwnd_each_round_trip() {
        for per_ack in [1, 2, 3] {
            let (mut cc, c) = (Reno, conn());
            let mut w = Window::new(10);
            let mut expected = 10;
            for _ in 0..6 {
                one_round(&mut cc, &c, &mut w, per_ack);
                expected *= 2;
                assert_eq!(w.cwnd, expected, "stretch ACKs of {per_ack}");
            }
        }
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_spends_the_rest_in_avoidance() {
        let mut w = Window::new(8);
        w.ssthresh = 10;
        let left = slow_start(&mut w, 5);
        assert_eq!((w.cwnd, left), (10, 3));

        // Through the hook: the 3 leftover segments count toward the next +1.
        let (mut cc, c) = (Reno, conn());
        let mut w = Window::new(8);
        w.ssthresh = 10;
        cc.cong_avoid(&c, &mut w, 5);
        assert_eq!((w.cwnd, w.cwnd_cnt), (10, 3));
        cc.cong_avoid(&c, &mut w, 7);
        assert_eq!((w.cwnd, w.cwnd_cnt), (11, 0));
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window_acked() {
        let (mut cc, c) = (Reno, conn());
        let mut w = Window::new(20);
        w.ssthresh = 20;
        for round in 1..=30 {
            let before = w.cwnd;
            one_round(&mut cc, &c, &mut w, 1);
            assert_eq!(w.cwnd, before + 1, "round {round}");
            assert_eq!(w.cwnd_cnt, 0);
        }
    }

    #[test]
    fn stretch_ack_adds_several_segments_at_once() {
        let mut w = Window::new(10);
        w.ssthresh = 10;
        cong_avoid_ai(&mut w, 10, 25);
        assert_eq!((w.cwnd, w.cwnd_cnt), (12, 5));
    }

    #[test]
    fn credit_from_a_larger_window_is_spent_as_a_single_increment() {
        // 15 segments counted toward +1 at w = 20, then the window shrank to 10.
        let mut w = Window::new(10);
        w.ssthresh = 10;
        w.cwnd_cnt = 15;
        cong_avoid_ai(&mut w, 10, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt), (11, 1));
    }

    #[test]
    fn growth_respects_the_clamp() {
        let (mut cc, c) = (Reno, conn());
        let mut w = Window::new(10);
        w.cwnd_clamp = 15;
        cc.cong_avoid(&c, &mut w, 8);
        assert_eq!(w.cwnd, 15);
        w.ssthresh = 15;
        cc.cong_avoid(&c, &mut w, 100);
        assert_eq!(w.cwnd, 15);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut cc = Reno;
        let c = ConnInfo { is_cwnd_limited: false, ..ConnInfo::default() };
        let mut w = Window::new(10);
        cc.cong_avoid(&c, &mut w, 5);
        w.ssthresh = 10;
        cc.cong_avoid(&c, &mut w, 50);
        assert_eq!((w.cwnd, w.cwnd_cnt), (10, 0));
    }

    #[test]
    fn ssthresh_halves_the_window_with_a_floor_of_two() {
        let (mut cc, c) = (Reno, conn());
        for (cwnd, expected) in [(100, 50), (101, 50), (7, 3), (4, 2), (3, 2), (1, 2)] {
            assert_eq!(cc.ssthresh(&c, &Window::new(cwnd)), expected, "cwnd {cwnd}");
        }
    }

    #[test]
    fn undo_restores_the_window_held_before_the_reduction() {
        let mut cc = Reno;
        let c = ConnInfo { prior_cwnd: 80, ..ConnInfo::default() };
        assert_eq!(cc.undo_cwnd(&c, &Window::new(40)), 80);
        assert_eq!(cc.undo_cwnd(&c, &Window::new(90)), 90);
    }
}
