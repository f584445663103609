//! The send buffer: its size (`sk_sndbuf`), what the write and retransmit queues charge
//! against it (`sk_wmem_queued`), its autotuning (`tcp_sndbuf_expand`,
//! `tcp_should_expand_sndbuf`, tcp_input.c) and the test that wakes a writer it blocked
//! (`sk_stream_write_space`, net/core/stream.c).
//!
//! Each skb charges its payload and [`SKB_OVERHEAD`]. The retransmit queue's skbs are the
//! ones sent, until all their data is acknowledged (a partial ACK trims the payload, not
//! the skb). The write queue's are the application's writes cut at the size goal (64 KB,
//! `tcp_xmit_size_goal`): unsent bytes count as that many skbs, rounded up. The split of a
//! retransmitted skb (`tcp_fragment`) is not charged.

use std::collections::VecDeque;

/// `MAX_TCP_HEADER` on x86-64 (headroom for TCP, IP and link headers).
const MAX_TCP_HEADER: u64 = 256;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` and `(sizeof(struct sk_buff))`.
const SHINFO: u64 = 320;
const SK_BUFF: u64 = 256;
/// `SKB_TRUESIZE(MAX_TCP_HEADER)`: what an skb charges besides its payload
/// (`tcp_stream_alloc_skb`; the payload goes into page fragments). On Linux 6.18, `ss -m`
/// shows a corked 100-byte write queueing 932 bytes.
pub const SKB_OVERHEAD: u64 = MAX_TCP_HEADER + SHINFO + SK_BUFF;
/// `SOCK_MIN_SNDBUF`: twice `TCP_SKB_MIN_TRUESIZE` (2048 + the `sk_buff`).
pub const SOCK_MIN_SNDBUF: u64 = 2 * (2048 + SK_BUFF);
/// `sk_gso_max_size`: `GSO_LEGACY_MAX_SIZE` less `MAX_TCP_HEADER + 1`
/// (`sk_dst_gso_max_size`), the largest skb a write builds.
const GSO_MAX_SIZE: u64 = 65_536 - MAX_TCP_HEADER - 1;
/// The peer's MSS option (`mss_clamp`, which sizes autotuning) exceeds the MSS in use
/// by the timestamp option's 12 bytes.
const MSS_OPTION_SLACK: u32 = 12;
/// `TCP_MSS_DEFAULT`: below it, `tcp_bound_to_half_wnd` takes the whole window.
const TCP_MSS_DEFAULT: u64 = 536;

#[derive(Clone, Debug)]
pub struct SendBuffer {
    /// `sk_sndbuf`.
    size: u64,
    /// `SOCK_SNDBUF_LOCK`: SO_SNDBUF set it, and autotuning leaves it alone.
    locked: bool,
    /// `tcp_wmem[2]`: how far autotuning may take it.
    max: u64,
    /// `SOCK_NOSPACE`: a write found the buffer full and waits for room.
    nospace: bool,
    /// The end (a segment number) of each sent skb not yet wholly acknowledged.
    sent: VecDeque<u64>,
    /// `max_window`: the largest window the peer has offered, which bounds the size goal.
    max_window: u64,
}

impl SendBuffer {
    /// A socket's buffer as created (`tcp_wmem[1]`), autotuned up to `tcp_wmem[2]`.
    pub fn new(wmem: [u64; 3]) -> SendBuffer {
        SendBuffer { size: wmem[1], locked: false, max: wmem[2], nospace: false, sent: VecDeque::new(), max_window: 0 }
    }

    /// `sk_sndbuf`.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// SO_SNDBUF (`sk_setsockopt`): `bytes` as the kernel took it (doubled, capped by
    /// `wmem_max`), locked against autotuning.
    pub fn set(&mut self, bytes: u64) {
        self.size = bytes.max(SOCK_MIN_SNDBUF);
        self.locked = true;
    }

    pub fn nospace(&self) -> bool {
        self.nospace
    }

    /// A write found no room (`set_bit(SOCK_NOSPACE)`) or the wake-up came (cleared).
    pub fn set_nospace(&mut self, on: bool) {
        self.nospace = on;
    }

    /// `max_window`: the largest window the peer has offered.
    pub fn max_window(&self) -> u64 {
        self.max_window
    }

    /// The handshake's window is the largest so far.
    pub fn set_max_window(&mut self, wnd: u64) {
        self.max_window = wnd;
    }

    /// `tcp_ack_update_window`: the peer offers `wnd` bytes.
    pub fn note_window(&mut self, wnd: u64) {
        self.max_window = self.max_window.max(wnd);
    }

    /// `tcp_xmit_size_goal`: the skb a write fills, in whole segments of `mss`: 64 KB, at
    /// most half the largest window (`tcp_bound_to_half_wnd`). A device without GSO
    /// changes nothing here: `sk_setup_caps` gives every TCP socket software GSO, and the
    /// device's layer cuts the skbs (`ethtool -K dev gso off` still leaves TCP's skbs
    /// large; the MTU probe at the start of a write depends on it).
    pub fn size_goal(&self, mss: u32) -> u64 {
        let mss = mss as u64;
        let cutoff = if self.max_window > TCP_MSS_DEFAULT { self.max_window / 2 } else { self.max_window };
        let goal = if cutoff > 0 && GSO_MAX_SIZE > cutoff { cutoff.max(68 - 32) } else { GSO_MAX_SIZE };
        (goal / mss).max(1) * mss
    }

    /// An skb of new data ending at segment `end` left.
    pub fn on_sent(&mut self, end: u64) {
        self.sent.push_back(end);
    }

    /// Segment numbers moved.
    pub fn remap(&mut self, r: &super::write::Remap) {
        for end in &mut self.sent {
            *end = r.map(*end);
        }
    }

    /// `snd_una` reached segment `snd_una`: skbs wholly below it are freed.
    pub fn on_acked(&mut self, snd_una: u64) {
        while self.sent.front().is_some_and(|&end| end <= snd_una) {
            self.sent.pop_front();
        }
    }

    /// `sk_wmem_queued`, with `unacked` payload bytes written and not acknowledged, of
    /// which `unsent` are not sent, cut into skbs of `goal` bytes.
    pub fn queued(&self, unacked: u64, unsent: u64, goal: u64) -> u64 {
        let skbs = self.sent.len() as u64 + unsent.div_ceil(goal);
        unacked + skbs * SKB_OVERHEAD
    }

    /// `sk_stream_memory_free`: a new skb may be queued (`tcp_notsent_lowat` unset).
    pub fn has_room(&self, queued: u64) -> bool {
        queued < self.size
    }

    /// `__sk_stream_is_writeable`: free room of at least half of what is queued
    /// (`sk_stream_min_wspace`), the test that wakes a blocked writer.
    pub fn writeable(&self, queued: u64) -> bool {
        self.size.saturating_sub(queued) >= queued / 2
    }

    /// `tcp_should_expand_sndbuf`: not locked, and `in_flight` below `cwnd` (global memory
    /// pressure is not modelled); false too at `tcp_wmem[2]`, where expanding changes nothing.
    pub fn may_expand(&self, cwnd: u32, in_flight: u32) -> bool {
        !self.locked && in_flight < cwnd && self.size < self.max
    }

    /// `tcp_sndbuf_expand`, if `tcp_should_expand_sndbuf`: room for `factor`
    /// (`ca_ops->sndbuf_expand`, else 2) times the segments of cwnd (at least
    /// `TCP_INIT_CWND`, and `reordering + 1`) at a non-GSO skb's memory each, whose head
    /// holds the peer's MSS option (`mss_clamp`: `mss` and the timestamp option) and
    /// headers, rounded up to a power of two. Never shrinks.
    pub fn expand(&mut self, cwnd: u32, in_flight: u32, reordering: u32, mss: u32, factor: u32) {
        if self.may_expand(cwnd, in_flight) {
            self.grow(cwnd, reordering, mss, factor);
        }
    }

    /// `tcp_init_buffer_space`'s expansion as the connection opens (unless locked).
    pub fn init(&mut self, cwnd: u32, reordering: u32, mss: u32, factor: u32) {
        if !self.locked {
            self.grow(cwnd, reordering, mss, factor);
        }
    }

    fn grow(&mut self, cwnd: u32, reordering: u32, mss: u32, factor: u32) {
        let mss_clamp = (mss + MSS_OPTION_SLACK) as u64;
        let per_mss = (mss_clamp + MAX_TCP_HEADER + SHINFO).next_power_of_two() + SK_BUFF;
        let segs = cwnd.max(10).max(reordering + 1) as u64;
        let want = factor as u64 * segs * per_mss;
        if self.size < want {
            self.size = want.min(self.max);
        }
    }

    /// Skbs in the retransmit queue (for the invariants' audit and tests).
    pub fn sent_skbs(&self) -> usize {
        self.sent.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WMEM: [u64; 3] = [4096, 16_384, 4_194_304];

    #[test]
    fn the_opening_expansion_matches_a_fresh_linux_socket() {
        // `ss -m` on Linux 6.18, MSS 1448 (option 1460): Cubic's tb46080, BBR's tb69120.
        let mut b = SendBuffer::new(WMEM);
        b.init(10, 3, 1448, 2);
        assert_eq!(b.size(), 46_080);
        let mut b = SendBuffer::new(WMEM);
        b.init(10, 3, 1448, 3);
        assert_eq!(b.size(), 69_120);
        // tcp_wmem[2] caps it; SO_SNDBUF locks it.
        let mut b = SendBuffer::new([4096, 16_384, 30_000]);
        b.init(10, 3, 1448, 2);
        assert_eq!(b.size(), 30_000);
        let mut b = SendBuffer::new(WMEM);
        b.set(20_000);
        b.init(10, 3, 1448, 2);
        b.expand(100, 0, 3, 1448, 2);
        assert_eq!(b.size(), 20_000);
    }

    #[test]
    fn autotuning_grows_with_cwnd_only_when_the_window_is_not_full() {
        let mut b = SendBuffer::new(WMEM);
        b.init(10, 3, 1448, 2);
        b.expand(100, 100, 3, 1448, 2);
        assert_eq!(b.size(), 46_080, "in flight fills cwnd: no growth");
        b.expand(100, 60, 3, 1448, 2);
        assert_eq!(b.size(), 2 * 100 * 2304);
        b.expand(50, 10, 3, 1448, 2);
        assert_eq!(b.size(), 2 * 100 * 2304, "never shrinks");
    }

    #[test]
    fn queued_charges_each_skb_and_the_writer_wakes_at_two_thirds() {
        let mut b = SendBuffer::new(WMEM);
        b.on_sent(10);
        b.on_sent(20);
        // 20 segments sent of 1000 bytes, 5000 more unsent in 4000-byte skbs.
        assert_eq!(b.queued(25_000, 5_000, 4_000), 25_000 + 4 * SKB_OVERHEAD);
        b.on_acked(15);
        assert_eq!(b.sent_skbs(), 1, "the second skb is only partly acknowledged");
        assert!(b.writeable(10_923) && !b.writeable(10_924), "16384 - q >= q / 2, rounded down");
        assert!(b.has_room(16_383) && !b.has_room(16_384));
    }

    #[test]
    fn the_size_goal_is_64k_or_half_the_largest_window() {
        let mut b = SendBuffer::new(WMEM);
        b.note_window(1 << 20);
        assert_eq!(b.size_goal(1448), 45 * 1448);
        let mut b = SendBuffer::new(WMEM);
        b.note_window(10_000);
        assert_eq!(b.size_goal(1000), 5_000);
    }
}
