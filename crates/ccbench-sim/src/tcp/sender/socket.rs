//! What the application does to the socket: it writes (`tcp_sendmsg_locked`,
//! net/ipv4/tcp.c) and sets TCP_NODELAY or TCP_CORK (`__tcp_sock_set_nodelay`,
//! `__tcp_sock_set_cork`). The write queue (`tcp/write.rs`) keeps what was written and
//! the Nagle setting; this is where a write meets the rest of the sender.

use super::Sender;
use crate::tcp::chrono::Chrono;
use crate::tcp::io::Io;
use crate::tcp::write::{NAGLE_CORK, NAGLE_PUSH};
use crate::time::Time;

/// A write's flags (`MSG_MORE`, `MSG_EOR`).
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteFlags {
    /// More data follows: this push stays corked.
    pub more: bool,
    /// The write ends a record: its last skb takes no later write.
    pub eor: bool,
}

impl Sender {
    /// The application starts its write (at flow start): a sized flow's whole size, or
    /// without end for a bulk flow. `tcp_sendmsg` checks whether the socket was
    /// app-limited, copies what the send buffer takes, then pushes.
    pub fn start(&mut self, now: Time, q: &mut impl Io) {
        // The (unmodelled) SYN-ACK's timestamp, as a capture's synthetic handshake shows it.
        self.ts.start(now);
        self.start_write(now, self.p.flow.size_bytes.unwrap_or(u64::MAX), q);
    }

    /// The application's write of `bytes` (`u64::MAX`: without end) starts at `now`, on
    /// a connection just established.
    pub(super) fn start_write(&mut self, now: Time, bytes: u64, q: &mut impl Io) {
        self.started = true;
        self.pacing.start(now);
        // The check runs before the write is queued, when nothing is unsent: a flow's
        // first flight is app-limited, and BBR's TX_START sees `idle_restart`.
        self.check_app_limited(false);
        self.app_pending = bytes;
        self.copy_from_app(now, q);
        self.push_written(now, false, q);
    }

    /// The application writes `bytes` at `now` (`tcp_sendmsg_locked`): what the send
    /// buffer takes goes into the write queue, then `tcp_push` sends what may go, corked
    /// for this push if MSG_MORE. What does not fit waits (a blocking write) for the
    /// ACKs that make room: [`Sender::write_pending`]. With MSG_EOR the write's last
    /// skb takes no later write.
    pub fn app_write(&mut self, now: Time, bytes: u64, flags: WriteFlags, q: &mut impl Io) {
        if bytes == 0 {
            return;
        }
        // `tcp_rate_check_app_limited`, before the data is queued.
        self.check_app_limited(self.has_unsent());
        if !self.started {
            self.started = true;
            self.pacing.start(now);
        }
        self.app_pending = bytes;
        self.app_eor = flags.eor;
        self.copy_from_app(now, q);
        self.push_written(now, flags.more, q);
    }

    /// Bytes of the application's write still waiting for room in the send buffer.
    pub fn write_pending(&self) -> u64 {
        self.app_pending
    }

    /// A non-blocking write returns with what the buffer took (`sk_stream_wait_memory`
    /// gives EAGAIN at once); the rest is the application's again. `SOCK_NOSPACE` stays
    /// set, as `wait_for_space` left it.
    pub fn return_short(&mut self) {
        self.app_pending = 0;
    }

    /// Data that Linux sends outside `tcp_write_xmit` (a Fast Open SYN's data sent again
    /// after a SYN-ACK that did not take it, `tcp_rcv_fastopen_synack`) leaves `snd_sml`
    /// alone: no short segment of it holds a later one (`tcp_minshall_check`).
    pub fn forget_short_sent(&mut self) {
        self.write.forget_short_sent();
    }

    /// SO_SNDBUF: the send buffer is `bytes` (as the kernel keeps it), not autotuned.
    pub fn set_sndbuf(&mut self, bytes: u64) {
        self.sndbuf.set(bytes);
    }

    /// `sk_wmem_queued`: what the write and retransmit queues charge the send buffer.
    fn wmem_queued(&self) -> u64 {
        let goal = self.sndbuf.size_goal(self.write.mss());
        self.wmem_queued_at(goal)
    }

    fn wmem_queued_at(&self, goal: u64) -> u64 {
        let written = self.write.written_bytes();
        let unacked = written - self.write.seg_start(self.sb.snd_una);
        let unsent = written - self.write.seg_start(self.snd_nxt());
        self.sndbuf.queued(unacked, unsent, goal)
    }

    /// `tcp_sendmsg_locked`'s copy loop over what the application's write has left: the
    /// unsent tail skb fills up to the size goal whatever the buffer holds; a new skb
    /// needs room (`sk_stream_memory_free`), else the write waits (`SOCK_NOSPACE`). A
    /// filled skb that is all that waits goes at once, one skb's worth (`tcp_push_one`),
    /// or, past half the largest window since the last push, everything does
    /// (`forced_push`); what that sends leaves the tail short, and the copy fills it
    /// again, so a write runs past the buffer while cwnd takes what it copies. A new skb
    /// clears a pending push and checks for a restart after idle (`tcp_skb_entail`); the
    /// first unsent data starts the busy chronograph (`tcp_add_write_queue_tail`).
    fn copy_from_app(&mut self, now: Time, q: &mut impl Io) {
        let goal = self.sndbuf.size_goal(self.write.mss());
        while self.app_pending > 0 {
            let written = self.write.written_bytes();
            let unsent = written - self.write.seg_start(self.snd_nxt());
            let tail_room = if self.write.tail_open() { (goal - unsent % goal) % goal } else { 0 };
            let room = if tail_room > 0 {
                tail_room
            } else if self.sndbuf.has_room(self.wmem_queued_at(goal)) {
                goal
            } else {
                self.sndbuf.set_nospace(true);
                return;
            };
            if unsent == 0 {
                self.chronos.start(now, Chrono::Busy);
            }
            let n = room.min(self.app_pending);
            self.write.append(n, self.snd_nxt(), self.p.gso);
            if self.app_pending != u64::MAX {
                self.app_pending -= n;
                if self.app_pending == 0 && self.app_eor {
                    self.write.mark_eor();
                }
            }
            if tail_room == 0 {
                self.slow_start_after_idle_check(now);
            }
            if self.app_pending == 0 || n < room {
                continue; // the write is done, or its skb is not full
            }
            let written = self.write.written_bytes();
            if written > self.pushed_seq + self.sndbuf.max_window() / 2 {
                self.pushed_seq = written; // `tcp_mark_push`
                self.push_frames(now, NAGLE_PUSH, q);
            } else if unsent + n == goal {
                self.write_xmit(now, 1, NAGLE_PUSH, q);
            }
        }
    }

    /// `tcp_push` after a write's copy: a write that waits for room pushes everything
    /// (`TCP_NAGLE_PUSH`, at `wait_for_space`); one that finished pushes with the
    /// socket's Nagle setting, corked if `more`.
    fn push_written(&mut self, now: Time, more: bool, q: &mut impl Io) {
        if !more {
            self.pushed_seq = self.write.written_bytes(); // `tcp_mark_push`
        }
        let nonagle = if self.app_pending > 0 {
            NAGLE_PUSH
        } else if more {
            NAGLE_CORK
        } else {
            self.write.nonagle()
        };
        self.push_frames(now, nonagle, q);
    }

    /// `tcp_check_space` after an ACK freed room: with a writer waiting, `tcp_new_space`
    /// lets autotuning grow the buffer (`tcp_sndbuf_expand`) and wakes the writer once
    /// half of what is queued fits in what is free (`sk_stream_write_space`); it then
    /// copies more, as a new write (`tcp_rate_check_app_limited`), and pushes.
    pub(super) fn check_space(&mut self, now: Time, q: &mut impl Io) {
        if !self.sndbuf.nospace() {
            return;
        }
        if self.sndbuf.may_expand(self.w.cwnd, self.inflight()) {
            let factor = self.cc.sndbuf_expand(&self.info(now));
            self.sndbuf.expand(self.w.cwnd, self.inflight(), self.reordering.degree(), self.write.mss(), factor);
        }
        if !self.sndbuf.writeable(self.wmem_queued()) {
            return;
        }
        self.sndbuf.set_nospace(false);
        let empty = self.sb.is_empty() && !self.has_unsent();
        self.chronos.stop(now, Chrono::SndbufLimited, empty);
        if self.app_pending == u64::MAX {
            // A bulk writer's next write() (`tcp_rate_check_app_limited`); a sized
            // flow's single write goes on where it stopped.
            self.check_app_limited(self.has_unsent());
        }
        self.copy_from_app(now, q);
        self.push_written(now, false, q);
    }

    /// `tcp_cwnd_validate` on a send that left cwnd unused: with nothing left to send
    /// and a writer waiting for room, the send buffer is what starves the connection.
    pub(super) fn note_sndbuf_limited(&mut self, now: Time) {
        if !self.has_unsent() && self.sndbuf.nospace() {
            self.chronos.start(now, Chrono::SndbufLimited);
        }
    }

    /// TCP_NODELAY on or off (`__tcp_sock_set_nodelay`): on pushes what waits.
    pub fn set_nodelay(&mut self, now: Time, on: bool, q: &mut impl Io) {
        if self.write.set_nodelay(on) {
            self.push_pending_frames(now, q);
        }
    }

    /// TCP_CORK on or off (`__tcp_sock_set_cork`): off pushes what waits, at once if
    /// TCP_NODELAY is set too.
    pub fn set_cork(&mut self, now: Time, on: bool, q: &mut impl Io) {
        if self.write.set_cork(on) {
            self.push_pending_frames(now, q);
        }
    }

    /// The local qdisc refused a segment sent outside this model (a pure ACK, FIN or
    /// RST): `__tcp_transmit_skb` -> `tcp_enter_cwr`.
    pub fn on_refused_segment(&mut self, now: Time) {
        self.enter_cwr(now);
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
