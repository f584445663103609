//! The application's side of the send queue: writes (`tcp_sendmsg_locked`, net/ipv4/tcp.c),
//! where each segment of the stream starts, and what holds a short segment back: Nagle's
//! algorithm with Minshall's variant, TCP_CORK and MSG_MORE (`tcp_push`,
//! `tcp_nagle_test`, `tcp_nagle_check`, `tcp_mss_split_point`, `tcp_minshall_update` in
//! tcp.c and tcp_output.c; TCP_NODELAY and TCP_CORK as `__tcp_sock_set_nodelay` and
//! `__tcp_sock_set_cork`).
//!
//! Segments are numbered; each is one MSS long except those in `short_segs`. A short
//! segment is a write's end: a sized flow's last one, or, with small writes, one that
//! left before a later write could fill it (Linux appends a write to the queue's tail
//! skb only while that skb has not been sent). A short segment always ends an skb.

use super::io::Io;
use super::sender::*;
use crate::time::Time;

/// `TCP_NAGLE_OFF`: TCP_NODELAY is set.
pub const NAGLE_OFF: u8 = 1;
/// `TCP_NAGLE_CORK`: TCP_CORK is set, or this push is a write with MSG_MORE.
pub const NAGLE_CORK: u8 = 2;
/// `TCP_NAGLE_PUSH`: push what is queued whatever Nagle says; set by TCP_NODELAY and by
/// uncorking a TCP_NODELAY socket, cleared when a write starts a new skb (`skb_entail`).
pub const NAGLE_PUSH: u8 = 4;

impl Sender {
    /// The application writes `bytes` at `now` (`tcp_sendmsg_locked`): they fill the
    /// queue's unsent short tail up to the MSS, then go into new segments; then `tcp_push`
    /// sends what may go, corked for this push if `more` (MSG_MORE).
    pub fn app_write(&mut self, now: Time, bytes: u64, more: bool, q: &mut impl Io) {
        if bytes == 0 {
            return;
        }
        let mss = self.p.tcp.mss;
        // `tcp_rate_check_app_limited`, before the data is queued.
        self.check_app_limited(self.has_unsent());
        let nothing_unsent = self.snd_nxt() == self.total_segs;
        if nothing_unsent {
            // The first unsent data (`tcp_add_write_queue_tail`).
            self.chronos.start(now, super::chrono::Chrono::Busy);
        }
        let mut left = bytes;
        if let Some(tail) = self.total_segs.checked_sub(1).filter(|&t| t >= self.snd_nxt()) {
            if let Some(len) = self.short_segs.get_mut(&tail) {
                let add = left.min((mss - *len) as u64) as u32;
                *len += add;
                left -= add as u64;
                if *len == mss {
                    self.short_segs.remove(&tail);
                }
            }
        }
        if left > 0 {
            // A new skb: the tail had left (or there was none), or without GSO every
            // segment is an skb of its own. With GSO a write grows the unsent tail skb
            // up to `size_goal` (tens of segments), taken here to hold what is written.
            if nothing_unsent || !self.p.gso {
                self.nonagle &= !NAGLE_PUSH;
            }
            let segs = left.div_ceil(mss as u64);
            self.total_segs += segs;
            if !left.is_multiple_of(mss as u64) {
                self.short_segs.insert(self.total_segs - 1, (left % mss as u64) as u32);
            }
        }
        if !self.started {
            self.started = true;
            self.wstamp = now;
        }
        self.slow_start_after_idle_check(now);
        let nonagle = if more { NAGLE_CORK } else { self.nonagle };
        self.push_frames(now, nonagle, q);
    }

    /// TCP_NODELAY on or off (`__tcp_sock_set_nodelay`): on pushes what waits.
    pub fn set_nodelay(&mut self, now: Time, on: bool, q: &mut impl Io) {
        if on {
            self.nonagle |= NAGLE_OFF | NAGLE_PUSH;
            self.push_pending_frames(now, q);
        } else {
            self.nonagle &= !NAGLE_OFF;
        }
    }

    /// TCP_CORK on or off (`__tcp_sock_set_cork`): off pushes what waits, at once if
    /// TCP_NODELAY is set too.
    pub fn set_cork(&mut self, now: Time, on: bool, q: &mut impl Io) {
        if on {
            self.nonagle |= NAGLE_CORK;
            return;
        }
        self.nonagle &= !NAGLE_CORK;
        if self.nonagle & NAGLE_OFF != 0 {
            self.nonagle |= NAGLE_PUSH;
        }
        self.push_pending_frames(now, q);
    }

    /// `tcp_push_pending_frames`: push with the socket's own Nagle setting.
    pub(super) fn push_pending_frames(&mut self, now: Time, q: &mut impl Io) {
        self.push_frames(now, self.nonagle, q);
    }

    /// Payload bytes of segment `seq`.
    pub(super) fn seg_len(&self, seq: u64) -> u32 {
        self.short_segs.get(&seq).copied().unwrap_or(self.p.tcp.mss)
    }

    /// The stream offset of segment `seq`'s first byte (`seq == total_segs`: the end of
    /// what was written).
    pub fn seg_start(&self, seq: u64) -> u64 {
        let mss = self.p.tcp.mss as u64;
        if self.short_segs.is_empty() {
            return seq * mss; // a bulk flow's: on the per-skb path
        }
        let shortfall: u64 = self.short_segs.range(..seq).map(|(_, &len)| mss - len as u64).sum();
        seq * mss - shortfall
    }

    /// The last segment that starts at or before stream offset `byte` (the end of what
    /// was written counting as segment `total_segs`), and where it starts.
    pub fn seg_floor(&self, byte: u64) -> (u64, u64) {
        let mss = self.p.tcp.mss as u64;
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
    pub(super) fn skb_segs(&self, seq: u64, nsegs: u32) -> u32 {
        if self.short_segs.is_empty() {
            return nsegs;
        }
        match self.short_segs.range(seq..seq + nsegs as u64).next() {
            Some((&short, _)) => (short - seq + 1) as u32,
            None => nsegs,
        }
    }

    /// How much of a burst of `nsegs` from `seq` may go under `nonagle`: when the burst
    /// ends with the queue's short tail, a one-segment skb is held whole
    /// (`tcp_nagle_test`, 0) and a longer one is split before the tail
    /// (`tcp_mss_split_point`).
    pub(super) fn nagle_segs(&self, seq: u64, nsegs: u32, nonagle: u8) -> u32 {
        let last = seq + nsegs as u64 - 1;
        if last + 1 != self.total_segs || !self.short_segs.contains_key(&last) {
            return nsegs;
        }
        if nsegs == 1 {
            return self.nagle_test(nonagle) as u32;
        }
        nsegs - self.nagle_check(nonagle) as u32
    }

    /// `tcp_nagle_test` for the short tail: a push or a FIN (a sized flow's end) sends it.
    fn nagle_test(&self, nonagle: u8) -> bool {
        let fin = self.p.flow.size_bytes.is_some_and(|b| b > 0);
        nonagle & NAGLE_PUSH != 0 || fin || !self.nagle_check(nonagle)
    }

    /// `tcp_nagle_check` for a short segment: held while corked, or, with Nagle on, while
    /// an earlier short segment is unacknowledged (`tcp_minshall_check`).
    fn nagle_check(&self, nonagle: u8) -> bool {
        let minshall = self.snd_sml > self.sb.snd_una && self.snd_sml <= self.snd_nxt();
        nonagle & NAGLE_CORK != 0 || (nonagle == 0 && self.sb.packets_out() > 0 && minshall)
    }

    /// `tcp_minshall_update`, for new data sent as segments `seq..end`.
    pub(super) fn minshall_update(&mut self, end: u64) {
        if self.short_segs.contains_key(&(end - 1)) {
            self.snd_sml = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::scripted::{PeerAck, ScriptedParams, ScriptedSender};
    use crate::time::Time;

    const MS: u64 = 1_000_000;

    fn harness(gso: bool) -> ScriptedSender {
        ScriptedSender::new(&ScriptedParams { snd_wnd: 1 << 20, gso, ..Default::default() }).unwrap()
    }

    fn ack(h: &mut ScriptedSender, at_ms: u64, seg: u64) {
        h.receive(Time(at_ms * MS), &PeerAck { ack: seg, rwnd: 1 << 20, ..Default::default() });
    }

    /// (stream offset, bytes) of each skb sent since the last call.
    fn sent(h: &mut ScriptedSender) -> Vec<(u64, u64)> {
        h.take_sent().iter().map(|r| (r.start, r.bytes)).collect()
    }

    #[test]
    fn nagle_holds_a_short_segment_while_an_earlier_short_one_is_unacknowledged() {
        let mut h = harness(true);
        // A write's short end goes at once: no earlier short segment is in flight
        // (Minshall's variant of Nagle's rule).
        h.write(Time(200 * MS), 1_500, false);
        assert_eq!(sent(&mut h), vec![(0, 1_500)]);
        // The next short write waits for the ACK of the first short segment ...
        h.write(Time(210 * MS), 300, false);
        assert_eq!(sent(&mut h), vec![]);
        // ... and a second one joins it in the unsent segment.
        h.write(Time(220 * MS), 200, false);
        assert_eq!(sent(&mut h), vec![]);
        ack(&mut h, 300, 1);
        assert_eq!(sent(&mut h), vec![], "the short segment 1000:1500 is still unacknowledged");
        ack(&mut h, 310, 2);
        assert_eq!(sent(&mut h), vec![(1_500, 500)]);
        assert_eq!(h.sender.seg_start(3), 2_000);
        assert_eq!(h.sender.seg_floor(1_700), (2, 1_500));
        assert_eq!(h.sender.seg_floor(2_000), (3, 2_000), "the end of the written data");
    }

    #[test]
    fn a_short_write_behind_whole_segments_in_flight_goes_at_once() {
        // Minshall: only an unacknowledged *short* segment holds the next one; classic
        // Nagle (RFC 896) would hold it behind any data in flight.
        let mut h = harness(true);
        h.write(Time(200 * MS), 2_000, false);
        h.write(Time(210 * MS), 300, false);
        assert_eq!(sent(&mut h), vec![(0, 2_000), (2_000, 300)]);
    }

    #[test]
    fn tcp_nodelay_sends_each_short_write_at_once() {
        let mut h = harness(true);
        h.setsockopt(Time(200 * MS), true, true);
        h.write(Time(200 * MS), 1_500, false);
        h.write(Time(210 * MS), 300, false);
        assert_eq!(sent(&mut h), vec![(0, 1_500), (1_500, 300)]);
    }

    #[test]
    fn cork_holds_short_data_until_uncorked_and_a_long_write_leaves_its_whole_segments() {
        let mut h = harness(true);
        h.setsockopt(Time(200 * MS), false, true);
        h.write(Time(200 * MS), 40, false);
        h.write(Time(210 * MS), 2_100, false);
        // Whole segments go; the 140-byte end stays (`tcp_mss_split_point`).
        assert_eq!(sent(&mut h), vec![(0, 2_000)]);
        h.setsockopt(Time(220 * MS), false, false);
        assert_eq!(sent(&mut h), vec![(2_000, 140)]);
    }

    #[test]
    fn msg_more_corks_one_write_and_the_probe_timer_sends_it_when_nothing_is_in_flight() {
        let mut h = harness(true);
        h.setsockopt(Time(200 * MS), true, true);
        h.write(Time(200 * MS), 40, true);
        assert_eq!(sent(&mut h), vec![]);
        // `tcp_check_probe_timer`: max(RTO, 200 ms) later (the timer's jiffy rounds
        // up), `tcp_write_wakeup` sends it.
        let rto = h.tcp_info()["tcpi_rto"] as u64 * 1_000;
        h.advance(Time(200 * MS + rto + 10 * MS));
        let r = h.take_sent();
        assert_eq!((r.len(), r[0].start, r[0].bytes), (1, 0, 40), "{r:?}");
        assert!(r[0].time >= Time(200 * MS + rto) && r[0].time <= Time(200 * MS + rto + 4 * MS), "{r:?}");
        // A write without MSG_MORE on a TCP_NODELAY socket sends what MSG_MORE held.
        ack(&mut h, 700, 1);
        h.write(Time(710 * MS), 100, true);
        h.write(Time(720 * MS), 100, false);
        assert_eq!(sent(&mut h), vec![(40, 200)]);
    }

    #[test]
    fn without_gso_every_skb_is_one_segment() {
        let mut h = harness(false);
        h.write(Time(200 * MS), 2_500, false);
        assert_eq!(sent(&mut h), vec![(0, 1_000), (1_000, 1_000), (2_000, 500)]);
        let mut h = harness(true);
        h.write(Time(200 * MS), 2_500, false);
        assert_eq!(sent(&mut h), vec![(0, 2_000), (2_000, 500)]);
    }
}
