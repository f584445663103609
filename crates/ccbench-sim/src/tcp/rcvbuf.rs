//! Receive-buffer autotuning and the window it allows: dynamic right-sizing
//! (`tcp_rcv_space_adjust`), window growth (`tcp_grow_window`) and the advertised window
//! (`__tcp_select_window` over `tcp_win_from_space`). The application reads every
//! in-order byte at once, so only out-of-order data occupies the buffer.
//!
//! Two sizings. Without `tcp.rmem` in the scenario, the model this simulator had before
//! that key: the buffer starts at 128 KiB, the first window is 10 segments, and DRS may
//! grow the buffer to room for `rwnd` (the kernel engine raises `tcp_rmem[2]` to match).
//! With it, Linux's: the buffer starts at `tcp_rmem[1]` (`tcp_init_sock`), the first
//! window is what that buffer holds (`tcp_select_initial_window`), and DRS stops at
//! `tcp_rmem[2]` (`tcp_rcv_space_adjust`). Either way `rwnd` is `TCP_WINDOW_CLAMP`.

use super::config::{FlowConfig, TcpConfig};
use crate::time::{Dur, Time};

/// `tcp_rmem[1]`: the receive buffer a connection starts with.
pub const RMEM_DEFAULT: u64 = 131_072;
/// `TCP_INIT_CWND` segments: the first measured space (`tcp_init_buffer_space`), and
/// without `tcp.rmem` the first advertised window too.
const INIT_WINDOW_SEGS: u64 = 10;
/// A SYN's window is never scaled (RFC 7323 2.2), so `tcp_select_initial_window` offers
/// at most this much.
const SYN_WINDOW_MAX: u64 = 65_535;
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

/// The window a connection made ahead of the run (whose SYN-ACK is not simulated) was
/// offered, when `tcp.rmem` sizes an autotuned buffer: `tcp_select_initial_window`'s.
/// None: the 65,535 bytes the sender has always assumed.
pub fn syn_ack_window(flow: &FlowConfig, tcp: &TcpConfig) -> Option<u64> {
    let rmem = tcp.rmem.filter(|_| flow.rwnd_autotune)?;
    Some(RcvBuf::new(flow.rwnd_bytes, Some(rmem), tcp.mss).rcv_ssthresh)
}

#[derive(Clone, Debug)]
pub struct RcvBuf {
    /// `sk_rcvbuf`, grown by DRS up to `max` (`tcp_rmem[2]`, or room for the flow's
    /// `rwnd` without `tcp.rmem`).
    pub rcvbuf: u64,
    max: u64,
    /// `window_clamp`: the flow's `rwnd` (`TCP_WINDOW_CLAMP`).
    clamp: u64,
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
    /// The buffer of a connection whose window is clamped at `clamp` (the flow's `rwnd`),
    /// sized by `rmem` (`tcp.rmem`, when the scenario sets it) or as before that key,
    /// growing until it advertises `clamp`.
    pub fn new(clamp: u64, rmem: Option<[u64; 3]>, mss: u32) -> RcvBuf {
        let mss = mss as u64;
        let segs = INIT_WINDOW_SEGS * mss;
        let (rcvbuf, max, init) = match rmem {
            None => {
                let max = space_from_win(clamp);
                (RMEM_DEFAULT.min(max), max, segs)
            }
            Some([_, default, max]) => {
                // tcp_select_initial_window: the space the buffer offers, no more than
                // the clamp nor a SYN's window, in whole segments.
                let space = win_from_space(default).min(clamp).min(SYN_WINDOW_MAX);
                let init = if space > mss { space / mss * mss } else { space };
                (default, max, init)
            }
        };
        RcvBuf {
            rcvbuf,
            max,
            clamp,
            mss,
            rcv_ssthresh: init,
            // tcp_init_buffer_space: min(rcv_ssthresh, rcv_wnd, TCP_INIT_CWND * advmss).
            space: init.min(segs),
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
        // tcp_grow_window grows rcv_ssthresh only below window_clamp.
        let room = win_from_space(self.rcvbuf).min(self.clamp);
        self.rcv_ssthresh = (self.rcv_ssthresh + 2 * self.mss).min(room);
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
            // Capped at tcp_rmem[2]; the clamp does not cap the buffer (Linux then sets
            // window_clamp from it, which the kernel engine's receiver sets back to rwnd).
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
        let win = free.min(self.rcv_ssthresh).min(self.clamp) / self.mss * self.mss;
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
        let mut b = RcvBuf::new(6 << 20, None, MSS);
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
        let mut b = RcvBuf::new(6 << 20, None, MSS);
        // 100 KB read in the first round: rcvwin = 2*100000 + 16000 = 216000, grown by
        // 216000 * (100000 - 10000) / 10000 = 1944000 twice: 4104000; buffer twice that,
        // capped at room for a 6 MiB window.
        b.adjust(Time::ZERO + rtt, 100_000, rtt);
        assert_eq!(b.rcvbuf, 2 * 4_104_000);
        let mut small = RcvBuf::new(1 << 20, None, MSS);
        small.adjust(Time::ZERO + rtt, 100_000, rtt);
        assert_eq!(small.rcvbuf, 2 << 20);
        // Less than a round later nothing changes; less read than before changes nothing.
        let mut c = RcvBuf::new(1 << 30, None, MSS);
        c.adjust(Time::ZERO + rtt, 20_000, rtt);
        assert_eq!(c.rcvbuf, 2 * (2 * 20_000 + 16_000 + 2 * ((2 * 20_000 + 16_000) * 10_000 / 10_000)));
        let before = c.rcvbuf;
        c.adjust(Time::ZERO + rtt + Dur::from_ms(5), 60_000, rtt);
        c.adjust(Time::ZERO + rtt + rtt, 30_000, rtt);
        assert_eq!(c.rcvbuf, before);
    }

    const LINUX: [u64; 3] = [4096, 131_072, 6_291_456];

    #[test]
    fn with_tcp_rmem_the_first_window_is_what_rmem_1_holds_up_to_a_syn_window() {
        // tcp_select_initial_window: half of 128 KiB is 65,536, past a SYN's 65,535:
        // 65 segments of 1,000. DRS's first measured space stays 10 segments.
        let mut b = RcvBuf::new(6 << 20, Some(LINUX), MSS);
        assert_eq!((b.window(0, 0), b.space), (65_000, 10_000));
        // A smaller tcp_rmem[1] gives a smaller first window (8 KiB: 8 segments), and
        // the measured space follows it below 10 segments.
        let mut small = RcvBuf::new(6 << 20, Some([4096, 16_384, 6 << 20]), MSS);
        assert_eq!((small.window(0, 0), small.space), (8_000, 8_000));
        // A larger one cannot pass the SYN's 65,535 at once, but lets the window grow
        // to half of it before DRS has measured a round.
        let mut big = RcvBuf::new(6 << 20, Some([4096, 1 << 20, 6 << 20]), MSS);
        assert_eq!(big.window(0, 0), 65_000);
        for _ in 0..1000 {
            let _ = big.on_in_order();
        }
        assert_eq!(big.window(0, 0), 524_000);
        // The clamp (rwnd) bounds the first window and its growth.
        let mut clamped = RcvBuf::new(20_500, Some(LINUX), MSS);
        assert_eq!(clamped.window(0, 0), 20_000);
        for _ in 0..100 {
            let _ = clamped.on_in_order();
        }
        assert_eq!(clamped.window(0, 0), 20_000);
    }

    #[test]
    fn with_tcp_rmem_drs_stops_at_rmem_2_whatever_the_clamp() {
        let rtt = Dur::from_ms(10);
        // 256 KiB: the same 100 KB round that asks for 8.2 MB gets 262,144 bytes, a
        // window of half that, 131 segments, though rwnd allows 6 MiB.
        let mut b = RcvBuf::new(6 << 20, Some([4096, 131_072, 262_144]), MSS);
        b.adjust(Time::ZERO + rtt, 100_000, rtt);
        assert_eq!(b.rcvbuf, 262_144);
        for _ in 0..1000 {
            let _ = b.on_in_order();
        }
        assert_eq!(b.window(0, 0), 131_000);
        assert!(!b.on_in_order());
        // The clamp does not cap the buffer, only the window: the buffer goes to
        // tcp_rmem[2], 6 MiB, where without tcp.rmem it stops at room for rwnd.
        let mut c = RcvBuf::new(50_000, Some(LINUX), MSS);
        c.adjust(Time::ZERO + rtt, 100_000, rtt);
        assert_eq!(c.rcvbuf, 6_291_456);
        let mut before = RcvBuf::new(50_000, None, MSS);
        before.adjust(Time::ZERO + rtt, 100_000, rtt);
        assert_eq!(before.rcvbuf, 100_000);
        for _ in 0..1000 {
            let _ = c.on_in_order();
        }
        assert_eq!(c.window(0, 0), 50_000);
    }

    #[test]
    fn out_of_order_data_uses_the_buffer_but_the_edge_never_moves_back() {
        let mut b = RcvBuf::new(6 << 20, None, MSS);
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
