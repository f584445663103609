//! What the stack keeps to undo a cwnd reduction that proves spurious, as
//! net/ipv4/tcp_input.c keeps it: saved when the reduction starts (`tcp_init_undo`),
//! counted as retransmissions leave (`tcp_retransmit_skb`) and as DSACKs report them
//! duplicate (`tcp_check_dsack`, `tcp_dsack_seen`, `tcp_sacktag_one`), and the tests
//! that may prove it spurious (`tcp_packet_delayed`, `tcp_may_undo`). The undo paths
//! themselves (`tcp_try_undo_*`), which change cwnd and the state, are the sender's.

use super::tsopt::{ts_ms, Timestamps};
use crate::time::Time;

/// What the stack remembers to undo a reduction that proves spurious.
#[derive(Clone, Debug, Default)]
pub struct Undo {
    /// `undo_marker`: `snd_una` when the reduction began; None = nothing to undo.
    marker: Option<u64>,
    /// `undo_retrans`: retransmissions not yet proven spurious by a DSACK; -1 = none sent
    /// yet (0 means "may undo now").
    retrans: i32,
    /// `retrans_stamp`: TSval (ms) of the episode's first retransmission; 0 = none.
    retrans_stamp: u32,
    /// `prior_ssthresh`: ssthresh to restore; 0 = the reduction cannot be undone (ECN).
    prior_ssthresh: u32,
    /// `tp->frto`: this Loss episode may still be found spurious by F-RTO.
    frto: bool,
    /// `dsack_dups`: segments reported duplicate so far.
    dsack_dups: u64,
    /// `max_window`: the largest window the peer advertised, in bytes.
    max_window: u64,
}

impl Undo {
    /// `tcp_init_undo` at `snd_una` with `retrans_out` retransmissions in flight, and a
    /// loss probe's retransmission if `probe_resent` (it holds no R bit,
    /// `__tcp_retransmit_skb`, but may still be DSACKed).
    pub fn init(&mut self, snd_una: u64, retrans_out: u32, probe_resent: bool) {
        self.marker = Some(snd_una);
        self.retrans = retrans_out as i32 + probe_resent as i32;
        if self.retrans == 0 {
            self.retrans = -1;
        }
    }

    /// The bookkeeping of `tcp_retransmit_skb` for `n` segments sent again at `tx_time`
    /// (not for loss probes, which go through `__tcp_retransmit_skb`).
    pub fn on_retransmit(&mut self, n: u32, tx_time: Time) {
        if self.retrans_stamp == 0 {
            self.retrans_stamp = ts_ms(tx_time);
        }
        self.retrans = self.retrans.max(0) + n as i32;
    }

    /// Forget the first retransmission's stamp (`retrans_stamp = 0`: none out, or Open).
    pub fn clear_stamp(&mut self) {
        self.retrans_stamp = 0;
    }

    /// `tcp_packet_delayed`: the ACK echoes a timestamp older than the first
    /// retransmission, so the original was delivered (SACK peer: no retransmission at all
    /// also counts; without SACK, `reno`, the stamp is also cleared when Recovery is held
    /// at `high_seq`, so it proves nothing).
    pub fn packet_delayed(&self, ts: &Timestamps, reno: bool) -> bool {
        if self.retrans_stamp == 0 {
            return !reno;
        }
        ts.echoes_before(self.retrans_stamp)
    }

    /// `tcp_may_undo`: a reduction to undo, and every retransmission DSACKed or the
    /// originals shown delivered.
    pub fn may_undo(&self, ts: &Timestamps, reno: bool) -> bool {
        self.marker.is_some() && (self.retrans == 0 || self.packet_delayed(ts, reno))
    }

    /// `tcp_try_undo_dsack`'s test: every retransmission was reported duplicate.
    pub fn all_dsacked(&self) -> bool {
        self.marker.is_some() && self.retrans == 0
    }

    /// A reduction may still be undone (`tp->undo_marker`).
    pub fn is_open(&self) -> bool {
        self.marker.is_some()
    }

    /// `undo_marker`, for tests.
    #[cfg(test)]
    pub fn marker(&self) -> Option<u64> {
        self.marker
    }

    /// `undo_retrans`, for tests.
    #[cfg(test)]
    pub fn retrans(&self) -> i32 {
        self.retrans
    }

    /// `retrans_stamp`: TSval (ms) of the first retransmission since progress; 0 = none.
    pub fn retrans_stamp(&self) -> u32 {
        self.retrans_stamp
    }

    /// Nothing left to undo (the undo is done, or the reduction may not be undone).
    pub fn close(&mut self) {
        self.marker = None;
    }

    /// The ssthresh an undo restores; 0: none.
    pub fn prior_ssthresh(&self) -> u32 {
        self.prior_ssthresh
    }

    pub fn set_prior_ssthresh(&mut self, ssthresh: u32) {
        self.prior_ssthresh = ssthresh;
    }

    /// This Loss episode may still be found spurious by F-RTO (`tp->frto`).
    pub fn frto(&self) -> bool {
        self.frto
    }

    pub fn set_frto(&mut self, on: bool) {
        self.frto = on;
    }

    /// The peer advertised `rwnd` bytes (`max_window`).
    pub fn note_window(&mut self, rwnd: u64) {
        self.max_window = self.max_window.max(rwnd);
    }

    /// `tcp_dsack_seen`'s first test: a DSACK of `bytes` fits in the largest window seen
    /// or the current one, `snd_wnd`.
    pub fn dsack_fits_window(&self, bytes: u64, snd_wnd: u64) -> bool {
        bytes <= self.max_window.max(snd_wnd)
    }

    /// `tcp_dsack_seen`'s second: count `segs` reported duplicate; false once more were
    /// reported than the `retransmits` sent.
    pub fn count_dsack(&mut self, segs: u64, retransmits: u64) -> bool {
        self.dsack_dups += segs;
        self.dsack_dups <= retransmits
    }

    /// `tcp_check_dsack`: `segs` ending at `end`, below `snd_una` and within the
    /// episode, were retransmitted needlessly.
    pub fn dsack_below_una(&mut self, end: u64, segs: u64, snd_una: u64) {
        if self.retrans > 0 && end <= snd_una && self.marker.is_some_and(|m| end > m) {
            self.retrans = (self.retrans - segs as i32).max(0);
        }
    }

    /// `tcp_sacktag_one`: retransmitted segment `seq`, still queued, was DSACKed.
    pub fn dsack_queued(&mut self, seq: u64) {
        if self.retrans > 0 && self.marker.is_some_and(|m| seq + 1 > m) {
            self.retrans -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn echo(ecr: u32) -> Timestamps {
        let mut ts = Timestamps::default();
        ts.on_ack(0, ecr);
        ts
    }

    #[test]
    fn dsacks_of_every_retransmission_allow_the_undo() {
        let mut u = Undo::default();
        u.init(100, 0, false);
        assert_eq!(u.retrans(), -1, "nothing retransmitted yet");
        u.on_retransmit(1, Time(5_000 * MS));
        u.on_retransmit(2, Time(5_010 * MS));
        assert_eq!((u.retrans(), u.retrans_stamp()), (3, 5_000), "the first retransmission's TSval");
        // One DSACK below snd_una inside the episode, one of a segment still queued, one
        // from before the episode (ignored).
        u.dsack_below_una(102, 1, 104);
        u.dsack_queued(105);
        u.dsack_below_una(100, 1, 104);
        assert_eq!(u.retrans(), 1);
        assert!(!u.all_dsacked() && !u.may_undo(&echo(5_000), false));
        u.dsack_queued(106);
        assert!(u.all_dsacked() && u.may_undo(&echo(0), false));
        u.close();
        assert!(!u.may_undo(&echo(0), false));
    }

    #[test]
    fn an_echo_older_than_the_first_retransmission_shows_the_original_arrived() {
        let mut u = Undo::default();
        u.init(0, 1, true);
        assert_eq!(u.retrans(), 2, "a probe's retransmission counts");
        u.on_retransmit(1, Time(5_000 * MS));
        assert!(u.packet_delayed(&echo(4_990), false));
        assert!(!u.packet_delayed(&echo(5_000), false));
        assert!(!u.packet_delayed(&echo(0), false), "no echo proves nothing");
        u.clear_stamp();
        assert!(u.packet_delayed(&echo(0), false), "SACK: nothing retransmitted");
        assert!(!u.packet_delayed(&echo(0), true), "without SACK the stamp proves nothing");
    }

    #[test]
    fn a_dsack_larger_than_any_window_or_than_what_was_retransmitted_is_dubious() {
        let mut u = Undo::default();
        u.note_window(64_000);
        u.note_window(32_000);
        assert!(u.dsack_fits_window(64_000, 10_000) && !u.dsack_fits_window(64_001, 10_000));
        assert!(u.count_dsack(2, 3));
        assert!(!u.count_dsack(2, 3), "4 duplicates of 3 retransmissions");
    }
}
