//! Receive-buffer autotuning and the window it allows: dynamic right-sizing
//! (`tcp_rcv_space_adjust`), window growth (`tcp_grow_window`) and the advertised window
//! (`__tcp_select_window` over `tcp_win_from_space`). The application reads every
//! in-order byte at once, so only out-of-order data occupies the buffer.

use crate::time::{Dur, Time};

/// `tcp_rmem[1]`: the receive buffer a connection starts with.
pub const RMEM_DEFAULT: u64 = 131_072;
/// `TCP_INIT_CWND` segments: the first advertised window and the first measured space.
const INIT_WINDOW_SEGS: u64 = 10;
/// Segments of cushion DRS adds (`16 * advmss`).
const DRS_CUSHION_SEGS: u64 = 16;

/// Half of the buffer may be advertised: `tcp_adv_win_scale = 1`, the 50% that Linux
/// 6.x's `scaling_ratio` starts from (it then tracks payload/truesize per skb).
fn win_from_space(space: u64) -> u64 {
    space / 2
}

fn space_from_win(win: u64) -> u64 {
    win * 2
}

#[derive(Clone, Debug)]
pub struct RcvBuf {
    /// `sk_rcvbuf`, grown by DRS up to `max` (`tcp_rmem[2]`: room for the flow's `rwnd`).
    pub rcvbuf: u64,
    max: u64,
    mss: u64,
    /// `rcv_ssthresh`: how far the window may have grown so far.
    rcv_ssthresh: u64,
    /// `rcvq_space`: bytes read in the last measured round, and where that round began.
    space: u64,
    seq: u64,
    time: Time,
    /// The right edge last advertised: the window never shrinks below it.
    right_edge: u64,
}

impl RcvBuf {
    /// A buffer that can grow until it advertises `max_window`.
    pub fn new(max_window: u64, mss: u32) -> RcvBuf {
        let mss = mss as u64;
        let init = INIT_WINDOW_SEGS * mss;
        let max = space_from_win(max_window);
        RcvBuf {
            rcvbuf: RMEM_DEFAULT.min(max),
            max,
            mss,
            rcv_ssthresh: init,
            space: init,
            seq: 0,
            time: Time::ZERO,
            right_edge: 0,
        }
    }

    /// An in-order segment arrived: let the window grow by two segments
    /// (`tcp_grow_window` when the skb's truesize is in proportion). Returns whether it
    /// grew: Linux then ACKs this segment at once (`icsk_ack.quick |= 1`), so while
    /// autotuning opens the window every segment is ACKed, not every second one.
    #[must_use]
    pub fn on_in_order(&mut self) -> bool {
        let before = self.rcv_ssthresh;
        self.rcv_ssthresh = (self.rcv_ssthresh + 2 * self.mss).min(win_from_space(self.rcvbuf));
        self.rcv_ssthresh > before
    }

    /// `tcp_rcv_space_adjust`, run as the application reads: once a round trip (`rtt`)
    /// has passed, if more was read in it than in the last, grow the buffer to twice
    /// that plus a cushion, more if the rate is climbing.
    pub fn adjust(&mut self, now: Time, read: u64, rtt: Dur) {
        if now.since(self.time) < rtt {
            return;
        }
        let copied = read - self.seq;
        if copied > self.space {
            let mut rcvwin = 2 * copied + DRS_CUSHION_SEGS * self.mss;
            let grow = rcvwin * (copied - self.space) / self.space.max(1);
            rcvwin += 2 * grow;
            self.rcvbuf = self.rcvbuf.max(space_from_win(rcvwin).min(self.max));
            self.space = copied;
        }
        self.seq = read;
        self.time = now;
    }

    /// The window to advertise with `acked` bytes acknowledged and `ooo` bytes held out
    /// of order, in whole segments, never pulling the right edge back.
    pub fn window(&mut self, acked: u64, ooo: u64) -> u64 {
        let free = win_from_space(self.rcvbuf.saturating_sub(space_from_win(ooo)));
        let win = free.min(self.rcv_ssthresh) / self.mss * self.mss;
        let win = win.max(self.right_edge.saturating_sub(acked));
        self.right_edge = acked + win;
        win
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    #[test]
    fn starts_at_ten_segments_and_grows_two_per_segment_up_to_half_the_buffer() {
        let mut b = RcvBuf::new(6 << 20, MSS);
        assert_eq!(b.window(0, 0), 10_000);
        for _ in 0..5 {
            assert!(b.on_in_order());
        }
        assert_eq!(b.window(5_000, 0), 20_000);
        for _ in 0..100 {
            let _ = b.on_in_order();
        }
        assert_eq!(b.window(105_000, 0), 65_000, "half of tcp_rmem[1], rounded to segments");
        assert!(!b.on_in_order(), "no room left to grow: no quick ACK");
    }

    #[test]
    fn drs_doubles_what_was_read_per_round_plus_a_cushion() {
        let rtt = Dur::from_ms(10);
        let mut b = RcvBuf::new(6 << 20, MSS);
        // 100 KB read in the first round: rcvwin = 2*100000 + 16000 = 216000, grown by
        // 216000 * (100000 - 10000) / 10000 = 1944000 twice: 4104000; buffer twice that,
        // capped at room for a 6 MiB window.
        b.adjust(Time::ZERO + rtt, 100_000, rtt);
        assert_eq!(b.rcvbuf, 2 * 4_104_000);
        let mut small = RcvBuf::new(1 << 20, MSS);
        small.adjust(Time::ZERO + rtt, 100_000, rtt);
        assert_eq!(small.rcvbuf, 2 << 20);
        // Less than a round later nothing changes; less read than before changes nothing.
        let mut c = RcvBuf::new(1 << 30, MSS);
        c.adjust(Time::ZERO + rtt, 20_000, rtt);
        assert_eq!(c.rcvbuf, 2 * (2 * 20_000 + 16_000 + 2 * ((2 * 20_000 + 16_000) * 10_000 / 10_000)));
        let before = c.rcvbuf;
        c.adjust(Time::ZERO + rtt + Dur::from_ms(5), 60_000, rtt);
        c.adjust(Time::ZERO + rtt + rtt, 30_000, rtt);
        assert_eq!(c.rcvbuf, before);
    }

    #[test]
    fn out_of_order_data_uses_the_buffer_but_the_edge_never_moves_back() {
        let mut b = RcvBuf::new(6 << 20, MSS);
        b.rcvbuf = 40_000;
        for _ in 0..100 {
            let _ = b.on_in_order();
        }
        assert_eq!(b.window(0, 0), 20_000);
        // 8 KB held out of order take 16 KB of buffer: 12 KB free to advertise, but the
        // edge advertised at 20 KB stands.
        assert_eq!(b.window(2_000, 8_000), 18_000);
        assert_eq!(b.window(20_000, 8_000), 12_000);
    }
}
