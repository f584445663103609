//! The scripted endpoint's end of the connection: the system calls that close it
//! (`close()`, `shutdown(SHUT_WR)`), the peer's FIN and RST, and what the next system
//! call finds, on the socket states of `tcp/close.rs` and the sender's FIN
//! (`tcp/sender/fin.rs`). The segments that are not data (our ACK of the peer's FIN, our
//! RST) are the caller's to send, as the answers say.

use super::ScriptedSender;
use crate::tcp::close::{CloseAction, Errno, TcpState};
use crate::time::Time;

impl ScriptedSender {
    /// The socket's state now.
    pub fn state(&self) -> TcpState {
        self.close.state(self.now)
    }

    /// `tcp_done` ran (a RST came or went, or the last ACK closed the socket): nothing of
    /// the connection is left to send.
    pub(super) fn aborted(&self) -> bool {
        self.close.state(self.now) == TcpState::Closed
    }

    /// `tcp_rcv_state_process` after `tcp_ack`: an ACK of our FIN moves the state on.
    pub(super) fn on_ack_state(&mut self, now: Time) {
        if self.sender.fin_acked() {
            self.close.on_fin_acked(now);
        }
    }

    /// `close()` at `now` (`tcp_close`): with `unread` data the connection is aborted and
    /// the caller sends the RST (`tcp_send_active_reset`); otherwise the FIN is queued
    /// behind the data if the state sends one (`tcp_close_state`, `tcp_send_fin`).
    pub fn close(&mut self, now: Time, unread: bool) -> CloseAction {
        self.advance(now);
        let now = self.now;
        let action = self.close.close(now, unread);
        if action == CloseAction::Fin {
            self.sender.send_fin(now, &mut self.q);
            self.drain_nic();
        }
        action
    }

    /// `shutdown(SHUT_WR)` at `now` (`tcp_shutdown`): the FIN is queued as by close(),
    /// and the socket still reads.
    pub fn shutdown(&mut self, now: Time) {
        self.advance(now);
        let now = self.now;
        if self.close.shutdown_wr() {
            self.sender.send_fin(now, &mut self.q);
            self.drain_nic();
        }
    }

    /// The peer's FIN at `now`, in order, after the ACK it carries was taken
    /// ([`ScriptedSender::receive`]) (`tcp_fin`). Returns whether it is acknowledged at
    /// once (`tcp_send_ack`); in ESTABLISHED the ACK is scheduled instead.
    pub fn peer_fin(&mut self, now: Time) -> bool {
        self.advance(now);
        self.close.on_fin(self.now)
    }

    /// The peer's RST at `now`, in sequence (`tcp_reset`): the connection is gone, and
    /// the next system call returns the error.
    pub fn peer_reset(&mut self, now: Time) {
        self.advance(now);
        self.close.on_reset(self.now);
    }

    /// What a write finds instead of room: a pending error, or EPIPE once writing is shut.
    pub fn write_error(&mut self) -> Option<Errno> {
        self.close.write_error()
    }

    /// What a read with nothing queued finds: a pending error, `Ok(true)` at the end of
    /// the stream, `Ok(false)` to wait for data.
    pub fn read_error(&mut self) -> Result<bool, Errno> {
        self.close.read_error()
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::close::{CloseAction, Errno, TcpState};
    use crate::tcp::scripted::{PeerAck, ScriptedParams, ScriptedSender};
    use crate::time::Time;

    const MS: u64 = 1_000_000;

    fn ack(h: &mut ScriptedSender, at_ms: u64, seg: u64) {
        h.receive(Time(at_ms * MS), &PeerAck { ack: seg, rwnd: 20_000, ..Default::default() });
    }

    fn harness() -> ScriptedSender {
        ScriptedSender::new(&ScriptedParams { snd_wnd: 20_000, ..Default::default() }).unwrap()
    }

    #[test]
    fn the_ack_of_our_fin_behind_data_moves_fin_wait1_to_fin_wait2_then_time_wait() {
        let mut h = harness();
        h.write(Time(200 * MS), 3_000, false);
        assert_eq!(h.close(Time(200 * MS), false), CloseAction::Fin);
        assert_eq!(h.take_sent().last().map(|r| (r.start, r.bytes, r.fin)), Some((3_000, 0, true)));
        ack(&mut h, 300, 3);
        assert_eq!(h.state(), TcpState::FinWait1, "the data acknowledged, not the FIN");
        ack(&mut h, 310, 4);
        assert_eq!(h.state(), TcpState::FinWait2);
        assert!(h.peer_fin(Time(320 * MS)));
        assert_eq!(h.state(), TcpState::TimeWait);
        h.advance(Time(60_320 * MS));
        assert_eq!(h.state(), TcpState::Closed);
    }

    #[test]
    fn passive_close_then_our_fin_is_acknowledged_in_last_ack() {
        let mut h = harness();
        h.write(Time(200 * MS), 1_000, false);
        ack(&mut h, 300, 1);
        assert!(!h.peer_fin(Time(300 * MS)));
        assert_eq!(h.state(), TcpState::CloseWait);
        h.write(Time(310 * MS), 1_000, false);
        h.close(Time(310 * MS), false);
        assert_eq!(h.state(), TcpState::LastAck);
        ack(&mut h, 400, 3);
        assert_eq!(h.state(), TcpState::Closed);
    }

    #[test]
    fn a_reset_stops_the_retransmissions_and_fails_the_next_write() {
        let mut h = harness();
        h.write(Time(200 * MS), 1_000, false);
        h.take_sent();
        h.peer_reset(Time(250 * MS));
        h.advance(Time(5_000 * MS));
        assert!(h.take_sent().is_empty(), "tcp_write_queue_purge");
        assert_eq!(h.write_error(), Some(Errno::ConnReset));
        assert_eq!(h.write_error(), Some(Errno::Pipe));
    }

    #[test]
    fn shutdown_sends_the_fin_and_writing_fails_after() {
        let mut h = harness();
        h.shutdown(Time(200 * MS));
        assert_eq!(h.take_sent().iter().map(|r| (r.start, r.bytes, r.fin)).collect::<Vec<_>>(), [(0, 0, true)]);
        assert_eq!(h.write_error(), Some(Errno::Pipe));
        assert_eq!(h.read_error(), Ok(false));
    }
}
