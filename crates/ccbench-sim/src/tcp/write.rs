//! The write queue: what the application has written (`write_seq`), where each segment
//! of the stream starts, and what holds a short segment back: Nagle's algorithm with
//! Minshall's variant, TCP_CORK and MSG_MORE (`tcp_push`, `tcp_nagle_test`,
//! `tcp_nagle_check`, `tcp_mss_split_point`, `tcp_minshall_update` in tcp.c and
//! tcp_output.c; TCP_NODELAY and TCP_CORK as `__tcp_sock_set_nodelay` and
//! `__tcp_sock_set_cork`).
//!
//! Segments are numbered. They are cut at the MSS of their era: the MSS can change
//! during a connection (`tcp_sync_mss`: an ICMP "fragmentation needed", MTU probing),
//! and from then on new segments are cut at the new one; each is its era's MSS long
//! except those in `odd`. [`WriteQueue::resegment`] re-cuts the unsent data at a new MSS
//! and splits sent segments that must go again in smaller pieces (`tcp_fragment`). A
//! short segment is a write's end: a sized flow's last one, or, with small writes, one that
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
use std::ops::Range;

/// What [`WriteQueue::resegment`] is told of a sent segment: whether it may be cut again
/// (it is to go again: lost, not SACKed), and whether its skb ends with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recut {
    pub recut: bool,
    pub skb_end: bool,
}

/// `bytes` cut into segments of `mss`, the last one shorter.
fn cut(bytes: u64, mss: u32) -> Vec<u32> {
    let mss64 = mss as u64;
    let mut v = vec![mss; (bytes / mss64) as usize];
    if !bytes.is_multiple_of(mss64) {
        v.push((bytes % mss64) as u32);
    }
    v
}

/// How sent segment numbers moved when runs of them were cut again: a segment (or the
/// boundary before it) numbered `s` past a run is now `s` plus what the runs before it
/// added; a boundary inside a run goes to the piece at the same place, or the run's end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remap {
    /// Each run cut again: its first old number, its old and its new count, in order.
    runs: Vec<(u64, u64, u64)>,
}

impl Remap {
    /// Nothing moved.
    pub fn is_identity(&self) -> bool {
        self.runs.is_empty()
    }

    /// The new number of segment (or segment boundary) `s`.
    pub fn map(&self, s: u64) -> u64 {
        let mut shift = 0i64;
        for &(first, old, new) in &self.runs {
            if s >= first + old {
                shift += new as i64 - old as i64;
            } else {
                let inside = s.saturating_sub(first).min(new);
                return ((first.min(s) + inside) as i64 + shift) as u64;
            }
        }
        (s as i64 + shift) as u64
    }

    /// The runs cut again: first old number, old count, new count.
    pub fn runs(&self) -> &[(u64, u64, u64)] {
        &self.runs
    }
}

/// `TCP_NAGLE_OFF`: TCP_NODELAY is set.
pub const NAGLE_OFF: u8 = 1;
/// `TCP_NAGLE_CORK`: TCP_CORK is set, or this push is a write with MSG_MORE.
pub const NAGLE_CORK: u8 = 2;
/// `TCP_NAGLE_PUSH`: push what is queued whatever Nagle says; set by TCP_NODELAY and by
/// uncorking a TCP_NODELAY socket, cleared when a write starts a new skb (`skb_entail`).
pub const NAGLE_PUSH: u8 = 4;

/// A run of segments cut at one MSS: from segment `first`, whose first byte is at
/// stream offset `start`, each is `mss` long unless `odd` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Era {
    first: u64,
    start: u64,
    mss: u32,
}

/// The stream as written, in segments, and the socket's Nagle setting.
#[derive(Clone, Debug)]
pub struct WriteQueue {
    /// The MSS new data is cut at (the last era's).
    mss: u32,
    /// The MSS eras in order; the first starts at segment 0.
    eras: Vec<Era>,
    /// A sized flow's last data carries the FIN, which Nagle never holds.
    fin: bool,
    /// Segments the application has written (`write_seq` in segments).
    total_segs: u64,
    /// The segments whose length is not their era's MSS, by number, and their lengths:
    /// short ones, and after an MSS drop, longer ones that were not cut again.
    odd: BTreeMap<u64, u32>,
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
            eras: vec![Era { first: 0, start: 0, mss }],
            fin,
            total_segs: 0,
            odd: BTreeMap::new(),
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
            self.odd.insert(self.total_segs, 0);
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
            if let Some(len) = self.odd.get_mut(&tail).filter(|len| **len < mss) {
                let add = left.min((mss - *len) as u64) as u32;
                *len += add;
                left -= add as u64;
                if *len == mss {
                    self.odd.remove(&tail);
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
            self.odd.insert(self.total_segs - 1, (left % mss as u64) as u32);
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
        match self.odd.get(&seq) {
            Some(&len) => len,
            None => self.era_of(seq).mss,
        }
    }

    /// The MSS new data is cut at.
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// The era segment `seq` belongs to.
    fn era_of(&self, seq: u64) -> Era {
        *self.eras.iter().rev().find(|e| e.first <= seq).expect("the first era starts at 0")
    }

    /// The stream offset of segment `seq`'s first byte (`seq == written_segs()`: the end
    /// of what was written).
    #[inline]
    pub fn seg_start(&self, seq: u64) -> u64 {
        if self.odd.is_empty() && self.eras.len() == 1 {
            return seq * self.mss as u64; // a bulk flow's: on the per-packet path
        }
        self.seg_start_cut(seq)
    }

    /// [`Self::seg_start`] where segments differ in length.
    fn seg_start_cut(&self, seq: u64) -> u64 {
        let e = self.era_of(seq);
        let nominal = e.start + (seq - e.first) * e.mss as u64;
        let delta: i64 = self.odd.range(e.first..seq).map(|(_, &len)| len as i64 - e.mss as i64).sum();
        (nominal as i64 + delta) as u64
    }

    /// The last segment that starts at or before stream offset `byte` (the end of what
    /// was written counting as segment `written_segs()`), and where it starts.
    #[inline]
    pub fn seg_floor(&self, byte: u64) -> (u64, u64) {
        if self.odd.is_empty() && self.eras.len() == 1 {
            // A bulk flow's: on the per-ACK path.
            let seq = (byte / self.mss as u64).min(self.total_segs);
            return (seq, seq * self.mss as u64);
        }
        self.seg_floor_cut(byte)
    }

    /// [`Self::seg_floor`] where segments differ in length.
    fn seg_floor_cut(&self, byte: u64) -> (u64, u64) {
        let e = *self.eras.iter().rev().find(|e| e.start <= byte && e.first <= self.total_segs).expect("era 0");
        let mss = e.mss as i64;
        let mut delta = 0i64;
        for (&seq, &len) in self.odd.range(e.first..self.total_segs) {
            let start = e.start as i64 + (seq - e.first) as i64 * mss + delta;
            if start > byte as i64 {
                break;
            }
            if (byte as i64) < start + len as i64 {
                return (seq, start as u64);
            }
            delta += len as i64 - mss;
        }
        let seq = (e.first + ((byte as i64 - e.start as i64 - delta) / mss) as u64).min(self.total_segs);
        (seq, self.seg_start(seq))
    }

    /// Cut again at `mss`: each run of sent segments that `recut` names (`snd_una..snd_nxt`
    /// in `sent`) and that holds one longer than `mss` goes in pieces of `mss` (as
    /// `tcp_fragment` and the retransmission's GSO leave an skb whose segments are too
    /// long: a run ends where `recut` says its skb ends), and what is unsent is cut at
    /// `mss`, keeping where writes end (short segments, MSG_EOR, the FIN). A `probe` of
    /// that many bytes takes the first unsent segment's place, from data across write ends
    /// short of MSG_EOR (`tcp_mtu_probe`). Returns how sent segment numbers moved.
    pub fn resegment(&mut self, mss: u32, sent: Range<u64>, recut: &dyn Fn(u64) -> Recut, probe: Option<u32>) -> Remap {
        let snd_nxt = sent.end;
        let runs = self.sent_runs(mss, sent, recut);
        let from = runs.first().map_or(snd_nxt, |r| r.start);
        let from_start = self.seg_start(from);
        let mut remap = Remap::default();
        // New lengths from `from`, and which end a write with MSG_EOR or carry the FIN.
        let mut lens: Vec<u32> = Vec::new();
        let (mut eor, mut fin) = (BTreeSet::new(), None);
        let mut s = from;
        while s < snd_nxt {
            match runs.iter().find(|r| r.start == s) {
                Some(run) => {
                    let bytes = self.seg_start(run.end) - self.seg_start(run.start);
                    let pieces = cut(bytes, mss);
                    remap.runs.push((run.start, run.end - run.start, pieces.len() as u64));
                    lens.extend(pieces);
                    self.mark_end(run.end - 1, from + lens.len() as u64 - 1, &mut eor, &mut fin);
                    s = run.end;
                }
                None => {
                    lens.push(self.seg_len(s));
                    self.mark_end(s, from + lens.len() as u64 - 1, &mut eor, &mut fin);
                    s += 1;
                }
            }
        }
        let mut chunk = 0u64;
        let mut probe = probe.map(|p| p as u64);
        for s in snd_nxt..self.total_segs {
            chunk += self.seg_len(s) as u64;
            let ends = self.is_short(s) || self.eor_segs.contains(&s) || s + 1 == self.total_segs;
            let hard = self.eor_segs.contains(&s) || self.fin_seg == Some(s) || s + 1 == self.total_segs;
            if let Some(p) = probe.filter(|&p| chunk >= p || hard) {
                if chunk >= p {
                    lens.push(p as u32);
                    chunk -= p;
                }
                probe = None;
            }
            if ends && probe.is_none() {
                lens.extend(if chunk == 0 && self.seg_len(s) == 0 { vec![0] } else { cut(chunk, mss) });
                chunk = 0;
                self.mark_end(s, from + lens.len() as u64 - 1, &mut eor, &mut fin);
            }
        }
        self.eras.retain(|e| e.first < from);
        self.eras.push(Era { first: from, start: from_start, mss });
        self.mss = mss;
        self.odd.retain(|&s, _| s < from);
        for (i, &len) in lens.iter().enumerate() {
            if len != mss {
                self.odd.insert(from + i as u64, len);
            }
        }
        self.eor_segs.retain(|&s| s < from);
        self.eor_segs.extend(eor);
        if self.fin_seg.is_some_and(|f| f >= from) {
            self.fin_seg = fin;
        }
        self.total_segs = from + lens.len() as u64;
        self.snd_sml = remap.map(self.snd_sml);
        remap
    }

    /// Cut what is unsent (from `snd_nxt`) at `mss`, the sent segments as they are; a
    /// `probe` takes the first unsent segment's place, as [`Self::resegment`] says.
    pub fn cut_unsent(&mut self, mss: u32, snd_nxt: u64, probe: Option<u32>) {
        self.resegment(mss, snd_nxt..snd_nxt, &|_| Recut::default(), probe);
    }

    /// The runs of sent segments to cut again: those `recut` names, up to their skb's end,
    /// that hold a segment longer than `mss`.
    fn sent_runs(&self, mss: u32, sent: Range<u64>, recut: &dyn Fn(u64) -> Recut) -> Vec<Range<u64>> {
        let mut runs = Vec::new();
        let mut s = sent.start;
        while s < sent.end {
            let start = s;
            let mut long = false;
            while s < sent.end {
                let r = recut(s);
                if !r.recut {
                    break;
                }
                long |= self.seg_len(s) > mss;
                s += 1;
                if r.skb_end {
                    break;
                }
            }
            if s == start {
                s += 1;
            } else if long {
                runs.push(start..s);
            }
        }
        runs
    }

    /// Unsent bytes from segment `seq` that one skb may take (`tcp_can_coalesce_send_queue_head`):
    /// up to the end of a write with MSG_EOR or the FIN.
    pub fn coalescable(&self, seq: u64) -> u64 {
        let end = (seq..self.total_segs)
            .find(|s| self.eor_segs.contains(s) || self.fin_seg == Some(*s))
            .map_or(self.total_segs, |s| s + 1);
        self.seg_start(end) - self.seg_start(seq)
    }

    /// Segment `old` ended a write with MSG_EOR or carried the FIN: so does `new`.
    fn mark_end(&self, old: u64, new: u64, eor: &mut BTreeSet<u64>, fin: &mut Option<u64>) {
        if self.eor_segs.contains(&old) {
            eor.insert(new);
        }
        if self.fin_seg == Some(old) {
            *fin = Some(new);
        }
    }

    /// Segments from `seq` that one skb may hold, at most `nsegs`: a short segment ends
    /// its skb.
    pub fn skb_segs(&self, seq: u64, nsegs: u32) -> u32 {
        if self.odd.is_empty() && self.eor_segs.is_empty() {
            return nsegs; // a bulk flow's: on the per-skb path
        }
        let end = seq + nsegs as u64;
        let short = self.odd.range(seq..end).find(|&(&s, &len)| len < self.era_of(s).mss).map(|(&s, _)| s);
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
        if last + 1 != self.total_segs || !self.is_short(last) {
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
        if self.is_short(end - 1) {
            self.snd_sml = end;
        }
    }

    /// Segment `seq` is shorter than its era's MSS (a write's end).
    fn is_short(&self, seq: u64) -> bool {
        self.odd.get(&seq).is_some_and(|&len| len < self.era_of(seq).mss)
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

    /// Sent segments 0..snd_nxt, each its own skb unless `skb_ends` says where they end.
    fn lost(skb_ends: &'static [u64]) -> impl Fn(u64) -> Recut {
        move |s| Recut { recut: true, skb_end: skb_ends.contains(&s) }
    }

    #[test]
    fn a_smaller_mss_cuts_what_is_unsent_again_and_keeps_where_writes_end() {
        let mut w = WriteQueue::new(MSS, false);
        w.append(2_500, 0, true);
        w.mark_eor();
        w.append(700, 0, true);
        // 1000, 1000, 500 (EOR), 700: nothing sent, cut at 600.
        w.cut_unsent(600, 0, None);
        let lens: Vec<u32> = (0..w.written_segs()).map(|s| w.seg_len(s)).collect();
        assert_eq!(lens, [600, 600, 600, 600, 100, 600, 100]);
        assert_eq!(w.written_bytes(), 3_200);
        assert_eq!(w.skb_segs(0, 10), 5, "the EOR write still ends its skb");
        assert_eq!(w.seg_floor(2_500), (5, 2_500));
    }

    #[test]
    fn lost_skbs_longer_than_the_mss_go_in_pieces_and_numbers_move() {
        let mut w = WriteQueue::new(MSS, false);
        w.append(6_000, 0, true);
        // Segments 0-3 sent as two skbs of 2000 bytes, 4-5 unsent; the MSS falls to 600.
        let moved = w.resegment(600, 0..4, &lost(&[1, 3]), None);
        let lens: Vec<u32> = (0..w.written_segs()).map(|s| w.seg_len(s)).collect();
        // Each skb: 600, 600, 600, 200 (`tcp_fragment` at 2 x 600, the rest at GSO).
        assert_eq!(lens, [600, 600, 600, 200, 600, 600, 600, 200, 600, 600, 600, 200]);
        assert_eq!(moved.runs(), &[(0, 2, 4), (2, 2, 4)]);
        assert_eq!((moved.map(2), moved.map(4)), (4, 8), "skb boundaries and snd_nxt move");
        assert_eq!(moved.map(1), 1, "a boundary inside a run stays where its bytes are cut");
        assert_eq!((w.seg_start(4), w.seg_start(8)), (2_000, 4_000));
    }

    #[test]
    fn an_mtu_probe_takes_the_first_unsent_segment_and_the_rest_stays_at_the_mss() {
        // mtu_probe/basic-v4: 4000 bytes at MSS 600, a probe of 986.
        let mut w = WriteQueue::new(600, false);
        w.append(4_000, 0, true);
        w.cut_unsent(600, 0, Some(986));
        let lens: Vec<u32> = (0..w.written_segs()).map(|s| w.seg_len(s)).collect();
        assert_eq!(lens, [986, 600, 600, 600, 600, 600, 14]);
        assert_eq!(w.coalescable(0), 4_000);
    }
}
