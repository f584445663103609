//! The connection's end: the socket states from ESTABLISHED to CLOSED and what moves
//! between them (RFC 9293 3.3.2, as net/ipv4/tcp.c, tcp_input.c and tcp_minisocks.c
//! do it): the application's `close()` and `shutdown(SHUT_WR)` (`tcp_close_state`), the
//! peer's FIN (`tcp_fin`), the ACK of our FIN (`tcp_rcv_state_process`), the peer's RST
//! (`tcp_reset`) and TIME_WAIT (`tcp_time_wait`). The socket error a reset leaves is
//! here too, as the next system call reads it.
//!
//! This is state only, sans-IO: the sender queues and sends the FIN (`tcp_send_fin`
//! puts it in the write queue, see `tcp/write.rs`), the caller sends the ACKs and RSTs
//! that the answers below ask for.

use crate::time::{Dur, Time};

/// `TCP_TIMEWAIT_LEN`: how long a socket stays in TIME_WAIT (60 s).
pub const TIMEWAIT_LEN: Dur = Dur::from_secs(60);
/// `net.ipv4.tcp_fin_timeout`'s default: how long a closed socket waits in FIN_WAIT2 for
/// the peer's FIN (`tcp_fin_time`, which is at least 3.5 RTOs).
pub const FIN_TIMEOUT: Dur = Dur::from_secs(60);

/// The socket's state (`sk_state`), from the established connection on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    Established,
    /// Our FIN is queued or sent, not yet acknowledged.
    FinWait1,
    /// Our FIN is acknowledged; the peer's has not come.
    FinWait2,
    /// Both FINs sent, ours not yet acknowledged (a simultaneous close).
    Closing,
    /// Both FINs acknowledged: the socket waits out old duplicates.
    TimeWait,
    /// The peer's FIN came; ours has not been queued.
    CloseWait,
    /// The peer's FIN came and ours is queued or sent, not yet acknowledged.
    LastAck,
    Closed,
}

impl TcpState {
    /// `tcpi_state` of the application's socket (`TCP_ESTABLISHED` = 1, ...). In
    /// TIME_WAIT that socket is closed: `tcp_time_wait` hands the connection to a
    /// timewait socket and ends its own (`tcp_done`).
    pub fn tcpi_state(self) -> u8 {
        match self {
            TcpState::Established => 1,
            TcpState::FinWait1 => 4,
            TcpState::FinWait2 => 5,
            TcpState::TimeWait | TcpState::Closed => 7,
            TcpState::CloseWait => 8,
            TcpState::LastAck => 9,
            TcpState::Closing => 11,
        }
    }

    /// The kernel's name of the state, as `ss` shows it.
    pub fn name(self) -> &'static str {
        match self {
            TcpState::Established => "ESTABLISHED",
            TcpState::FinWait1 => "FIN_WAIT1",
            TcpState::FinWait2 => "FIN_WAIT2",
            TcpState::Closing => "CLOSING",
            TcpState::TimeWait => "TIME_WAIT",
            TcpState::CloseWait => "CLOSE_WAIT",
            TcpState::LastAck => "LAST_ACK",
            TcpState::Closed => "CLOSED",
        }
    }
}

/// An error a system call returns (its errno).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    /// The peer reset the connection (`sk_err` after `tcp_reset`).
    ConnReset,
    /// Writing where no more may be written (`SEND_SHUTDOWN`).
    Pipe,
}

impl Errno {
    pub fn name(self) -> &'static str {
        match self {
            Errno::ConnReset => "ECONNRESET",
            Errno::Pipe => "EPIPE",
        }
    }
}

/// What `close()` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseAction {
    /// A FIN was queued (`tcp_send_fin`).
    Fin,
    /// Data the application never read: the connection is aborted with a RST
    /// (`tcp_send_active_reset`).
    Reset,
    /// Nothing to send (our FIN already queued, or the socket closed).
    Nothing,
}

/// The socket's state and what its system calls read of it.
#[derive(Clone, Debug)]
pub struct Close {
    state: TcpState,
    /// `sk_shutdown & SEND_SHUTDOWN`: no more data may be written.
    send_shutdown: bool,
    /// `sk_shutdown & RCV_SHUTDOWN`: the peer's FIN came, or the socket was reset.
    rcv_shutdown: bool,
    /// `SOCK_DONE`: the peer's FIN came (a read at the end returns 0 before any error).
    fin_in: bool,
    /// `sk_err`: the error a reset left, which the next system call returns once.
    err: Option<Errno>,
    /// The application closed the socket (`SOCK_DEAD`: an orphan from then on).
    orphan: bool,
    /// When TIME_WAIT, or an orphan's FIN_WAIT2, ends (`inet_twsk_schedule`).
    ends_at: Option<Time>,
}

impl Default for Close {
    fn default() -> Self {
        Close::new()
    }
}

impl Close {
    pub fn new() -> Close {
        Close {
            state: TcpState::Established,
            send_shutdown: false,
            rcv_shutdown: false,
            fin_in: false,
            err: None,
            orphan: false,
            ends_at: None,
        }
    }

    /// The state at `now` (TIME_WAIT and an orphan's FIN_WAIT2 end on their own).
    pub fn state(&self, now: Time) -> TcpState {
        match self.ends_at {
            Some(t) if now >= t => TcpState::Closed,
            _ => self.state,
        }
    }

    /// The application closed the socket.
    pub fn orphan(&self) -> bool {
        self.orphan
    }

    /// The peer's FIN came (`RCV_SHUTDOWN`): a read with nothing left returns 0.
    pub fn rcv_shutdown(&self) -> bool {
        self.rcv_shutdown
    }

    /// `tcp_close_state`: the state a close moves to, and whether it sends a FIN
    /// (`TCP_ACTION_FIN`). ESTABLISHED and CLOSE_WAIT send one; states past it do not.
    fn close_state(&mut self) -> bool {
        let (next, fin) = match self.state {
            TcpState::Established => (TcpState::FinWait1, true),
            TcpState::CloseWait => (TcpState::LastAck, true),
            other => (other, false),
        };
        self.state = next;
        fin
    }

    /// `shutdown(SHUT_WR)` (`tcp_shutdown`): no more writes; a FIN if the state sends one.
    pub fn shutdown_wr(&mut self) -> bool {
        self.send_shutdown = true;
        self.close_state()
    }

    /// `close()` at `now` (`tcp_close`), with `unread` bytes received and never read: those abort
    /// the connection (RFC 2525 2.17) with a RST and the socket goes to CLOSED;
    /// otherwise as `tcp_close_state`.
    pub fn close(&mut self, now: Time, unread: bool) -> CloseAction {
        self.orphan = true;
        self.send_shutdown = true;
        self.rcv_shutdown = true;
        if self.state(now) == TcpState::Closed {
            return CloseAction::Nothing;
        }
        if unread {
            self.done();
            return CloseAction::Reset;
        }
        match self.close_state() {
            true => CloseAction::Fin,
            false => CloseAction::Nothing,
        }
    }

    /// `tcp_fin`: the peer's FIN at `now`, in order. Returns whether it is acknowledged
    /// at once (`tcp_send_ack`); in ESTABLISHED the ACK is only scheduled
    /// (`inet_csk_schedule_ack`) and the socket enters pingpong mode.
    pub fn on_fin(&mut self, now: Time) -> bool {
        if self.state(now) != TcpState::Closed {
            self.rcv_shutdown = true;
            self.fin_in = true;
        }
        match self.state(now) {
            TcpState::Established => {
                self.state = TcpState::CloseWait;
                false
            }
            // A retransmitted FIN: acknowledged again (`tcp_send_dupack`).
            TcpState::CloseWait | TcpState::Closing | TcpState::LastAck => true,
            TcpState::FinWait1 => {
                // Both sides closed at once: acknowledge and wait for the ACK of ours.
                self.state = TcpState::Closing;
                true
            }
            TcpState::FinWait2 => {
                self.time_wait(now);
                true
            }
            // `tcp_timewait_state_process`: a FIN again is acknowledged again, and the
            // timer starts over.
            TcpState::TimeWait => {
                self.time_wait(now);
                true
            }
            TcpState::Closed => false,
        }
    }

    /// `tcp_rcv_state_process`: the peer acknowledged our FIN at `now`. A closed
    /// socket's FIN_WAIT2 lasts `tcp_fin_timeout` (a timewait socket in its FIN_WAIT2
    /// substate, `tcp_time_wait(sk, TCP_FIN_WAIT2, tmo)`); one only shut for writing
    /// waits for the peer's FIN as long as it takes.
    pub fn on_fin_acked(&mut self, now: Time) {
        match self.state(now) {
            TcpState::FinWait1 => {
                self.state = TcpState::FinWait2;
                if self.orphan {
                    self.ends_at = Some(now + FIN_TIMEOUT);
                }
            }
            TcpState::Closing => self.time_wait(now),
            TcpState::LastAck => self.done(),
            _ => {}
        }
    }

    /// `tcp_reset`: the peer's RST. The error is what the application reads next: the
    /// connection refused or reset, or EPIPE after the peer's FIN (CLOSE_WAIT); a socket
    /// in TIME_WAIT just goes (`tcp_timewait_state_process`, RFC 1337 off).
    pub fn on_reset(&mut self, now: Time) {
        let err = match self.state(now) {
            TcpState::Closed => return,
            TcpState::TimeWait => {
                self.done();
                return;
            }
            TcpState::CloseWait => Errno::Pipe,
            _ => Errno::ConnReset,
        };
        if !self.orphan {
            self.err = Some(err);
        }
        self.done();
    }

    /// `tcp_time_wait`: TIME_WAIT for `TCP_TIMEWAIT_LEN` from `now`.
    fn time_wait(&mut self, now: Time) {
        self.state = TcpState::TimeWait;
        self.ends_at = Some(now + TIMEWAIT_LEN);
    }

    /// `tcp_done`: CLOSED, both directions shut.
    fn done(&mut self) {
        self.state = TcpState::Closed;
        self.ends_at = None;
        self.send_shutdown = true;
        self.rcv_shutdown = true;
    }

    /// What a write returns instead of writing (`tcp_sendmsg_locked` -> `sk_stream_error`):
    /// a pending error once (`sock_error` clears it), then EPIPE once writing is shut.
    pub fn write_error(&mut self) -> Option<Errno> {
        if let Some(e) = self.err.take() {
            return Some(e);
        }
        self.send_shutdown.then_some(Errno::Pipe)
    }

    /// What a read with nothing queued returns (`tcp_recvmsg_locked`): the end of the
    /// stream (`Ok(true)`, 0 bytes) once the peer's FIN came (`SOCK_DONE`, before any
    /// error), else a pending error once, else the end of the stream once the socket is
    /// shut for reading, `Ok(false)` to wait for data.
    pub fn read_error(&mut self) -> Result<bool, Errno> {
        if self.fin_in {
            return Ok(true);
        }
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        Ok(self.rcv_shutdown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Time = Time(1_000_000_000);

    #[test]
    fn active_close_goes_through_fin_wait_to_time_wait_and_closed() {
        let mut c = Close::new();
        assert_eq!(c.close(T, false), CloseAction::Fin);
        assert_eq!(c.state(T), TcpState::FinWait1);
        c.on_fin_acked(T);
        assert_eq!(c.state(T), TcpState::FinWait2);
        assert!(c.on_fin(T), "the FIN in FIN_WAIT2 is acknowledged at once");
        assert_eq!(c.state(T), TcpState::TimeWait);
        assert_eq!(c.state(T + TIMEWAIT_LEN), TcpState::Closed);
        assert_eq!(c.write_error(), Some(Errno::Pipe));
    }

    #[test]
    fn a_closed_socket_waits_in_fin_wait2_for_tcp_fin_timeout_a_shut_one_for_ever() {
        let mut c = Close::new();
        c.close(T, false);
        c.on_fin_acked(T);
        assert_eq!(c.state(T + FIN_TIMEOUT), TcpState::Closed);
        let mut c = Close::new();
        c.shutdown_wr();
        c.on_fin_acked(T);
        assert_eq!(c.state(T + Dur::from_secs(3_600)), TcpState::FinWait2);
    }

    #[test]
    fn passive_close_goes_through_close_wait_and_last_ack() {
        let mut c = Close::new();
        assert!(!c.on_fin(T), "ESTABLISHED schedules the ACK");
        assert_eq!(c.state(T), TcpState::CloseWait);
        assert_eq!(c.read_error(), Ok(true), "a read sees the end of the stream");
        assert_eq!(c.write_error(), None, "writing is still open");
        assert_eq!(c.close(T, false), CloseAction::Fin);
        assert_eq!(c.state(T), TcpState::LastAck);
        c.on_fin_acked(T);
        assert_eq!(c.state(T), TcpState::Closed);
    }

    #[test]
    fn simultaneous_close_goes_through_closing() {
        let mut c = Close::new();
        c.close(T, false);
        assert!(c.on_fin(T));
        assert_eq!(c.state(T), TcpState::Closing);
        c.on_fin_acked(T);
        assert_eq!(c.state(T), TcpState::TimeWait);
    }

    #[test]
    fn shutdown_shuts_writing_only_and_close_after_it_sends_nothing_more() {
        let mut c = Close::new();
        assert!(c.shutdown_wr());
        assert_eq!(c.state(T), TcpState::FinWait1);
        assert_eq!(c.write_error(), Some(Errno::Pipe));
        assert_eq!(c.read_error(), Ok(false), "reading waits for data");
        assert!(!c.shutdown_wr(), "a second shutdown sends no FIN");
        assert_eq!(c.close(T, false), CloseAction::Nothing);
    }

    #[test]
    fn close_with_unread_data_resets() {
        let mut c = Close::new();
        assert_eq!(c.close(T, true), CloseAction::Reset);
        assert_eq!(c.state(T), TcpState::Closed);
    }

    #[test]
    fn a_reset_fails_the_next_call_with_econnreset_then_epipe() {
        let mut c = Close::new();
        c.on_reset(T);
        assert_eq!(c.state(T), TcpState::Closed);
        assert_eq!(c.write_error(), Some(Errno::ConnReset));
        assert_eq!(c.write_error(), Some(Errno::Pipe));
        assert_eq!(c.read_error(), Ok(true), "then reads see the end of the stream");
        // In CLOSE_WAIT the error is EPIPE, which a read does not see: the peer's FIN
        // came first (`SOCK_DONE`).
        let mut c = Close::new();
        c.on_fin(T);
        c.on_reset(T);
        assert_eq!(c.read_error(), Ok(true));
        assert_eq!(c.write_error(), Some(Errno::Pipe));
    }
}
