//! The write queue: what the application has written (`write_seq`), where each segment
//! of the stream starts, and what holds a short segment back: Nagle's algorithm with
//! Minshall's variant, TCP_CORK and MSG_MORE (`tcp_push`, `tcp_nagle_test`,
//! `tcp_nagle_check`, `tcp_mss_split_point`, `tcp_minshall_update` in tcp.c and
//! tcp_output.c; TCP_NODELAY and TCP_CORK as `__tcp_sock_set_nodelay` and
//! `__tcp_sock_set_cork`).
//!
//! Segments are numbered; each is one MSS long except those in `short_segs`. A short
//! segment is a write's end: a sized flow's last one, or, with small writes, one that
//! left before a later write could fill it (Linux appends a write to the queue's tail
//! skb only while that skb has not been sent). A short segment always ends an skb, as
//! does the last segment of a write with MSG_EOR (`TCP_SKB_CB(skb)->eor`, which
//! `tcp_skb_can_collapse_to` keeps later writes out of).
//!
//! A FIN the application queues (`close()`, `shutdown(SHUT_WR)`) takes one sequence
//! number after the data, as `tcp_send_fin` places it: on the unsent tail segment if
//! there is one, else in a segment of its own with no payload (a zero-length short
//! segment). Either way it rides the queue like data and Nagle never holds it.

use std::collections::{BTreeMap, BTreeSet};

/// `TCP_NAGLE_OFF`: TCP_NODELAY is set.
pub const NAGLE_OFF: u8 = 1;
/// `TCP_NAGLE_CORK`: TCP_CORK is set, or this push is a write with MSG_MORE.
pub const NAGLE_CORK: u8 = 2;
/// `TCP_NAGLE_PUSH`: push what is queued whatever Nagle says; set by TCP_NODELAY and by
/// uncorking a TCP_NODELAY socket, cleared when a write starts a new skb (`skb_entail`).
pub const NAGLE_PUSH: u8 = 4;

/// The stream as written, in segments, and the socket's Nagle setting.
#[derive(Clone, Debug)]
pub struct WriteQueue {
    mss: u32,
    /// A sized flow's last data carries the FIN, which Nagle never holds.
    fin: bool,
    /// Segments the application has written (`write_seq` in segments).
    total_segs: u64,
    /// The segments shorter than the MSS, by number, and their lengths.
    short_segs: BTreeMap<u64, u32>,
    /// The last segments of writes sent with MSG_EOR.
    eor_segs: BTreeSet<u64>,
    /// `tp->nonagle`: TCP_NODELAY, TCP_CORK and a pending push (`NAGLE_*`).
    nonagle: u8,
    /// `snd_sml`: the end (a segment number) of the last short segment sent.
    snd_sml: u64,
    /// The segment whose end carries the FIN the application queued, if it did.
    fin_seg: Option<u64>,
}

impl WriteQueue {
    /// An empty queue; `fin`: the stream ends (a sized flow), so its last data carries
    /// the FIN.
    pub fn new(mss: u32, fin: bool) -> WriteQueue {
        WriteQueue {
            mss,
            fin,
            total_segs: 0,
            short_segs: BTreeMap::new(),
            eor_segs: BTreeSet::new(),
            nonagle: 0,
            snd_sml: 0,
            fin_seg: None,
        }
    }

    /// `tcp_send_fin`: the FIN goes on the unsent tail segment, or, with nothing unsent
    /// (`snd_nxt` the next segment to send), in a new segment of no payload. Returns the
    /// segment that carries it.
    pub fn queue_fin(&mut self, snd_nxt: u64) -> u64 {
        if !self.has_unsent(snd_nxt) {
            self.short_segs.insert(self.total_segs, 0);
            self.total_segs += 1;
        }
        let seg = self.total_segs - 1;
        self.fin_seg = Some(seg);
        seg
    }

    /// The segment that carries the queued FIN, if any.
    pub fn fin_seg(&self) -> Option<u64> {
        self.fin_seg
    }

    /// Segment `seq` carries the FIN.
    #[inline]
    pub fn carries_fin(&self, seq: u64) -> bool {
        self.fin_seg == Some(seq)
    }

    /// The bytes written so far.
    pub fn written_bytes(&self) -> u64 {
        self.seg_start(self.total_segs)
    }

    /// The segments written so far.
    pub fn written_segs(&self) -> u64 {
        self.total_segs
    }

    /// Written and not sent yet (`!tcp_write_queue_empty`), with `snd_nxt` the next
    /// segment to send.
    pub fn has_unsent(&self, snd_nxt: u64) -> bool {
        snd_nxt < self.total_segs
    }

    /// The socket's Nagle setting, for a push that keeps it (`tcp_push_pending_frames`).
    pub fn nonagle(&self) -> u8 {
        self.nonagle
    }

    /// `tcp_sendmsg_locked`'s copy of `bytes`: they fill the queue's unsent short tail up
    /// to the MSS, then go into new segments. A write that starts a new skb clears
    /// `NAGLE_PUSH`: the tail had left (or there was none), or without GSO every segment
    /// is an skb of its own; with GSO a write grows the unsent tail skb up to
    /// `size_goal` (tens of segments), taken here to hold what is written.
    pub fn append(&mut self, bytes: u64, snd_nxt: u64, gso: bool) {
        let mss = self.mss;
        let nothing_unsent = snd_nxt == self.total_segs;
        let mut left = bytes;
        if let Some(tail) = self.total_segs.checked_sub(1).filter(|&t| t >= snd_nxt && !self.eor_segs.contains(&t)) {
            if let Some(len) = self.short_segs.get_mut(&tail) {
                let add = left.min((mss - *len) as u64) as u32;
                *len += add;
                left -= add as u64;
                if *len == mss {
                    self.short_segs.remove(&tail);
                }
            }
        }
        if left == 0 {
            return;
        }
        if nothing_unsent || !gso {
            self.nonagle &= !NAGLE_PUSH;
        }
        self.total_segs += left.div_ceil(mss as u64);
        if !left.is_multiple_of(mss as u64) {
            self.short_segs.insert(self.total_segs - 1, (left % mss as u64) as u32);
        }
    }

    /// The write just appended was sent with MSG_EOR: its last segment ends its skb.
    pub fn mark_eor(&mut self) {
        if let Some(last) = self.total_segs.checked_sub(1) {
            self.eor_segs.insert(last);
        }
    }

    /// The unsent tail may take more of a write (`tcp_skb_can_collapse_to`).
    pub fn tail_open(&self) -> bool {
        self.total_segs.checked_sub(1).is_none_or(|t| !self.eor_segs.contains(&t))
    }

    /// TCP_NODELAY on or off (`__tcp_sock_set_nodelay`). Returns whether to push what
    /// waits (on pushes).
    pub fn set_nodelay(&mut self, on: bool) -> bool {
        if on {
            self.nonagle |= NAGLE_OFF | NAGLE_PUSH;
        } else {
            self.nonagle &= !NAGLE_OFF;
        }
        on
    }

    /// TCP_CORK on or off (`__tcp_sock_set_cork`). Returns whether to push what waits
    /// (off pushes, at once if TCP_NODELAY is set too).
    pub fn set_cork(&mut self, on: bool) -> bool {
        if on {
            self.nonagle |= NAGLE_CORK;
            return false;
        }
        self.nonagle &= !NAGLE_CORK;
        if self.nonagle & NAGLE_OFF != 0 {
            self.nonagle |= NAGLE_PUSH;
        }
        true
    }

    /// Payload bytes of segment `seq`.
    pub fn seg_len(&self, seq: u64) -> u32 {
        self.short_segs.get(&seq).copied().unwrap_or(self.mss)
    }

    /// The stream offset of segment `seq`'s first byte (`seq == written_segs()`: the end
    /// of what was written).
    pub fn seg_start(&self, seq: u64) -> u64 {
        let mss = self.mss as u64;
        if self.short_segs.is_empty() {
            return seq * mss; // a bulk flow's: on the per-skb path
        }
        let shortfall: u64 = self.short_segs.range(..seq).map(|(_, &len)| mss - len as u64).sum();
        seq * mss - shortfall
    }

    /// The last segment that starts at or before stream offset `byte` (the end of what
    /// was written counting as segment `written_segs()`), and where it starts.
    pub fn seg_floor(&self, byte: u64) -> (u64, u64) {
        let mss = self.mss as u64;
        let mut shortfall = 0;
        for (&seq, &len) in &self.short_segs {
            if seq * mss - shortfall + len as u64 > byte {
                break;
            }
            shortfall += mss - len as u64;
        }
        let seq = ((byte + shortfall) / mss).min(self.total_segs);
        (seq, self.seg_start(seq))
    }

    /// Segments from `seq` that one skb may hold, at most `nsegs`: a short segment ends
    /// its skb.
    pub fn skb_segs(&self, seq: u64, nsegs: u32) -> u32 {
        if self.short_segs.is_empty() && self.eor_segs.is_empty() {
            return nsegs; // a bulk flow's: on the per-skb path
        }
        let end = seq + nsegs as u64;
        let short = self.short_segs.range(seq..end).next().map(|(&s, _)| s);
        let eor = self.eor_segs.range(seq..end).next().copied();
        match short.into_iter().chain(eor).min() {
            Some(last) => (last - seq + 1) as u32,
            None => nsegs,
        }
    }

    /// How much of a burst of `nsegs` from `seq` may go under `nonagle`, with segments
    /// `snd_una..snd_nxt` in flight: when the burst ends with the queue's short tail, a
    /// one-segment skb is held whole (`tcp_nagle_test`, 0) and a longer one is split
    /// before the tail (`tcp_mss_split_point`).
    pub fn nagle_segs(&self, seq: u64, nsegs: u32, nonagle: u8, snd_una: u64, snd_nxt: u64) -> u32 {
        let last = seq + nsegs as u64 - 1;
        if last + 1 != self.total_segs || !self.short_segs.contains_key(&last) {
            return nsegs;
        }
        let held = self.nagle_check(nonagle, snd_una, snd_nxt);
        if nsegs == 1 {
            // tcp_nagle_test for the short tail: a push or a FIN sends it.
            return (nonagle & NAGLE_PUSH != 0 || self.fin || self.carries_fin(last) || !held) as u32;
        }
        nsegs - held as u32
    }

    /// `tcp_nagle_check` for a short segment: held while corked, or, with Nagle on, while
    /// an earlier short segment is unacknowledged (`tcp_minshall_check`).
    fn nagle_check(&self, nonagle: u8, snd_una: u64, snd_nxt: u64) -> bool {
        let minshall = self.snd_sml > snd_una && self.snd_sml <= snd_nxt;
        nonagle & NAGLE_CORK != 0 || (nonagle == 0 && snd_nxt > snd_una && minshall)
    }

    /// No short segment sent counts for `tcp_minshall_check` (`snd_sml` back at the
    /// start, as `tcp_connect_init` leaves it).
    pub fn forget_short_sent(&mut self) {
        self.snd_sml = 0;
    }

    /// `tcp_minshall_update`, for new data sent as segments up to `end`.
    pub fn minshall_update(&mut self, end: u64) {
        if self.short_segs.contains_key(&(end - 1)) {
            self.snd_sml = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    #[test]
    fn a_sized_flow_ends_with_its_short_segment_and_offsets_follow_the_layout() {
        let mut w = WriteQueue::new(MSS, true);
        w.append(2_500, 0, true);
        assert_eq!((w.written_segs(), w.written_bytes()), (3, 2_500));
        assert_eq!((w.seg_len(1), w.seg_len(2)), (1_000, 500));
        assert_eq!((w.seg_start(2), w.seg_start(3)), (2_000, 2_500));
        assert_eq!(w.seg_floor(2_499), (2, 2_000));
        assert_eq!(w.seg_floor(9_999), (3, 2_500), "past the end: the end of the written data");
        assert_eq!(w.skb_segs(0, 10), 3, "the short segment ends the skb");
    }

    #[test]
    fn a_write_fills_the_unsent_short_tail_before_it_starts_new_segments() {
        let mut w = WriteQueue::new(MSS, false);
        w.append(300, 0, true);
        w.append(900, 0, true);
        // 300 + 700 fill segment 0; the other 200 start segment 1.
        assert_eq!((w.written_segs(), w.seg_len(0), w.seg_len(1)), (2, 1_000, 200));
        // Once segment 1 has left (snd_nxt = 2), it stays short.
        w.append(500, 2, true);
        assert_eq!((w.written_segs(), w.seg_len(1), w.seg_len(2)), (3, 200, 500));
        assert_eq!((w.seg_start(2), w.seg_start(3)), (1_200, 1_700));
        assert_eq!(w.skb_segs(1, 2), 1);
    }

    #[test]
    fn minshall_holds_a_short_tail_only_behind_an_unacknowledged_short_segment() {
        let mut w = WriteQueue::new(MSS, false);
        w.append(1_500, 0, true);
        // Nothing short in flight: the burst of two goes whole.
        assert_eq!(w.nagle_segs(0, 2, 0, 0, 0), 2);
        w.minshall_update(2);
        w.append(300, 2, true);
        assert_eq!(w.nagle_segs(2, 1, 0, 0, 2), 0, "held: the short segment 1 is unacknowledged");
        assert_eq!(w.nagle_segs(2, 1, 0, 2, 2), 1, "sent once it is acknowledged");
        assert_eq!(w.nagle_segs(2, 1, NAGLE_OFF, 0, 2), 1, "TCP_NODELAY: no hold");
    }

    #[test]
    fn cork_splits_a_burst_before_its_short_tail_and_nodelay_uncorked_pushes() {
        let mut w = WriteQueue::new(MSS, false);
        assert!(!w.set_cork(true));
        w.append(2_100, 0, true);
        assert_eq!(w.nagle_segs(0, 3, w.nonagle(), 0, 0), 2, "tcp_mss_split_point");
        assert_eq!(w.nagle_segs(2, 1, w.nonagle(), 2, 2), 0, "a corked tail is held whatever is in flight");
        assert!(w.set_nodelay(true));
        assert!(w.set_cork(false));
        assert_eq!(w.nonagle(), NAGLE_OFF | NAGLE_PUSH);
        // A write that starts a new skb clears the push; TCP_NODELAY stays.
        w.append(100, 3, true);
        assert_eq!(w.nonagle(), NAGLE_OFF);
    }

    #[test]
    fn msg_eor_ends_an_skb_that_no_later_write_fills() {
        let mut w = WriteQueue::new(MSS, false);
        w.append(1_500, 0, true);
        w.mark_eor();
        assert!(!w.tail_open());
        // The next write starts a segment of its own instead of filling segment 1.
        w.append(1_500, 0, true);
        assert_eq!((w.written_segs(), w.seg_len(1), w.seg_len(2), w.seg_len(3)), (4, 500, 1_000, 500));
        assert_eq!(w.skb_segs(0, 10), 2, "the EOR write's skb ends at its short end");
        // A full-sized EOR segment ends its skb too.
        let mut w = WriteQueue::new(MSS, false);
        w.append(2_000, 0, true);
        w.mark_eor();
        w.append(2_000, 0, true);
        assert_eq!(w.skb_segs(0, 10), 2);
        assert_eq!(w.skb_segs(2, 10), 10, "the second write's skb ends where the burst does");
    }

    #[test]
    fn a_fin_rides_the_unsent_tail_or_takes_a_segment_of_no_payload() {
        let mut w = WriteQueue::new(MSS, false);
        w.append(1_500, 0, true);
        // Segment 1 (500 bytes) unsent: the FIN goes on it, and Nagle lets it go corked.
        assert_eq!(w.queue_fin(1), 1);
        assert_eq!((w.written_segs(), w.written_bytes()), (2, 1_500));
        assert_eq!(w.nagle_segs(1, 1, NAGLE_CORK, 0, 1), 1);
        // Everything sent: the FIN is a segment of its own, after the data.
        let mut w = WriteQueue::new(MSS, false);
        w.append(1_500, 0, true);
        assert_eq!(w.queue_fin(2), 2);
        assert_eq!((w.written_segs(), w.written_bytes(), w.seg_len(2)), (3, 1_500, 0));
        assert_eq!((w.seg_start(2), w.seg_start(3)), (1_500, 1_500));
        assert_eq!(w.skb_segs(2, 10), 1);
        assert_eq!(w.nagle_segs(2, 1, 0, 1, 2), 1, "held by no unacknowledged short segment");
    }

    #[test]
    fn a_sized_flows_last_segment_carries_the_fin_and_is_never_held() {
        let mut w = WriteQueue::new(MSS, true);
        w.append(1_500, 0, true);
        assert_eq!(w.nagle_segs(1, 1, NAGLE_CORK, 0, 1), 1);
    }
}
