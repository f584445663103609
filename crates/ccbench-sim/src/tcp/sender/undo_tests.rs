//! Scripted tests of undo and F-RTO: a Reno sender driven by hand-built ACKs at explicit
//! times, checked against what tcp_input.c does with the same sequence, and the
//! receiver's DSACK of an out-of-order duplicate.

use super::{Sender, SenderParams};
use crate::cc::{reno::Reno, CaState, INFINITE_SSTHRESH};
use crate::net::Packet;
use crate::tcp::config::{FlowConfig, TcpConfig};
use crate::tcp::io::Loopback;
use crate::tcp::wake::SenderTimer;
use crate::tcp::xmit_timer::XmitTimer;
use crate::time::{Dur, Time, NS_PER_SEC};

const T0: Time = Time(1_000 * NS_PER_SEC);
const MSS: u32 = 1448;
const RWND: u64 = 6 << 20;

fn sender(frto: u8) -> (Sender, Loopback) {
    let p = SenderParams {
        id: 0,
        tcp: TcpConfig { mss: MSS, slow_start_after_idle: false, frto, ..TcpConfig::default() },
        flow: FlowConfig { pacing: Some(false), ..FlowConfig::bulk("reno") },
        handshake_rtt: Dur::from_ms(40),
        conn: 0,
        gso: true,
    };
    let mut q = Loopback::default();
    let mut s = Sender::new(p, Box::new(Reno));
    s.start(T0, &mut q);
    // TCP Small Queues holds the second skb until the NIC has sent the first.
    s.on_timer_expired(T0 + Dur::from_us(100), SenderTimer::TxCompletion, &mut q);
    assert_eq!(s.snd_nxt(), 10, "the initial window leaves at once");
    (s, q)
}

fn ms(t: Time) -> u32 {
    (t.ns() / 1_000_000) as u32
}

/// An ACK of everything below `ack`, echoing TSval `ts_ecr`, with SACK blocks (a DSACK
/// first if `dsack`).
fn ack(ack: u64, ts_ecr: u32, sacks: &[(u64, u64)], dsack: bool) -> Packet {
    let mut p = Packet { ack, rwnd: RWND, ts_ecr, dsack, n_sacks: sacks.len() as u8, ..Default::default() };
    p.sacks[..sacks.len()].copy_from_slice(sacks);
    p
}

/// Segment 0 is held up (reordered); 1..4 arrive and are SACKed 40 ms later, so RACK
/// marks 0 lost and fast recovery retransmits it. Returns the time of that ACK.
fn spurious_fast_retransmit(s: &mut Sender, q: &mut Loopback) -> Time {
    let t = T0 + Dur::from_ms(40);
    s.on_ack(t, &ack(0, ms(T0), &[(1, 4)], false), q);
    assert_eq!(s.ca_state, CaState::Recovery);
    assert_eq!(s.stats.retransmits, 1, "the fast retransmit of segment 0");
    assert_eq!(s.undo.marker(), Some(0), "tcp_init_undo: undo_marker = snd_una");
    assert_eq!(s.undo.retrans(), 1, "one retransmission not yet proven spurious");
    assert_eq!(s.undo.prior_ssthresh(), INFINITE_SSTHRESH, "tcp_current_ssthresh: max(ssthresh, 3/4 cwnd)");
    assert_eq!(s.w.ssthresh, 5, "Reno halves");
    t
}

#[test]
fn dsack_of_the_only_retransmission_undoes_fast_recovery() {
    let (mut s, mut q) = sender(2);
    let t = spurious_fast_retransmit(&mut s, &mut q);
    let stamp = s.undo.retrans_stamp();
    assert_eq!(stamp, ms(t), "retrans_stamp: TSval of the first retransmission");
    // The original segment 0 arrives after all; the ACK echoes the retransmission's
    // TSval (so the timestamp test cannot tell), and advances snd_una to 4.
    let t1 = t + Dur::from_ms(1);
    s.on_ack(t1, &ack(4, stamp, &[], false), &mut q);
    assert_eq!(s.ca_state, CaState::Recovery, "high_seq = 10 not reached; partial undo needs a delayed packet");
    assert_eq!(s.stats.partial_undo, 0);
    // The retransmission arrives as a duplicate: DSACK (0, 1) below the cumulative ACK.
    s.on_ack(t1 + Dur::from_ms(1), &ack(4, stamp, &[(0, 1)], true), &mut q);
    assert_eq!(s.stats.dsacks, 1);
    assert_eq!(s.undo.retrans(), 0, "tcp_check_dsack took it off undo_retrans");
    assert_eq!(s.stats.dsack_undo, 1, "tcp_try_undo_dsack");
    assert_eq!(s.undo.marker(), None);
    assert_eq!(s.w.ssthresh, INFINITE_SSTHRESH, "ssthresh back to prior_ssthresh: slow start resumes");
    assert!(s.w.cwnd >= 10, "cwnd back to at least prior_cwnd (tcp_reno_undo_cwnd), got {}", s.w.cwnd);
    assert!(s.ca_state <= CaState::Disorder, "tcp_try_to_open after the undo, got {:?}", s.ca_state);
    s.sb.audit(false).unwrap();
}

#[test]
fn ack_echoing_the_original_timestamp_fully_undoes_recovery() {
    let (mut s, mut q) = sender(2);
    let t = spurious_fast_retransmit(&mut s, &mut q);
    // Everything through high_seq is acknowledged by an ACK that echoes the original
    // transmission's TSval, older than retrans_stamp: tcp_packet_delayed.
    s.on_ack(t + Dur::from_ms(2), &ack(10, ms(T0), &[], false), &mut q);
    assert_eq!(s.stats.full_undo, 1, "tcp_try_undo_recovery");
    assert_eq!(s.ca_state, CaState::Open);
    assert_eq!(s.w.ssthresh, INFINITE_SSTHRESH);
    assert!(s.w.cwnd >= 10, "tcp_end_cwnd_reduction leaves an undone cwnd alone, got {}", s.w.cwnd);
}

#[test]
fn real_loss_keeps_the_reduction() {
    let (mut s, mut q) = sender(2);
    let t = spurious_fast_retransmit(&mut s, &mut q);
    // Only the retransmission arrives: the ACK echoes its TSval; no DSACK ever comes.
    s.on_ack(t + Dur::from_ms(40), &ack(10, s.undo.retrans_stamp(), &[], false), &mut q);
    assert_eq!(s.ca_state, CaState::Open);
    assert_eq!(s.stats.full_undo + s.stats.dsack_undo + s.stats.partial_undo, 0);
    assert_eq!(s.w.ssthresh, 5);
    // cwnd = ssthresh at the end of recovery, then one congestion-avoidance step.
    assert_eq!(s.w.cwnd, 6);
}

/// An RTO with nothing acknowledged: all ten segments marked lost, 0 retransmitted.
fn timeout(s: &mut Sender, q: &mut Loopback) -> Time {
    let t = T0 + Dur::from_ms(300);
    s.retransmit_timer(t, q);
    assert_eq!(s.ca_state, CaState::Loss);
    assert_eq!((s.sb.lost_out, s.sb.retrans_out), (10, 1));
    assert_eq!(s.w.cwnd, 1, "tcp_enter_loss: cwnd = inflight + 1");
    assert_eq!(s.undo.prior_ssthresh(), INFINITE_SSTHRESH);
    t
}

#[test]
fn frto_finds_a_timeout_spurious_when_never_retransmitted_data_is_acked() {
    let (mut s, mut q) = sender(2);
    let t = timeout(&mut s, &mut q);
    assert!(s.undo.frto(), "tcp_enter_loss: F-RTO for a new recovery");
    // The retransmission of 0 is acknowledged (timestamps echo it: no Eifel undo).
    let stamp = s.undo.retrans_stamp();
    s.on_ack(t + Dur::from_ms(40), &ack(1, stamp, &[], false), &mut q);
    assert_eq!(s.ca_state, CaState::Loss);
    assert_eq!(s.stats.retransmits, 1, "step 2.b: new data, not retransmissions");
    assert_eq!(s.snd_nxt(), 12, "two new segments (slow start from cwnd 1)");
    assert_eq!(s.high_seq, 10, "high_seq moved to snd_nxt before the new data");
    // Segment 1, sent once before the timeout, is acknowledged: the RTO was spurious.
    // The ACK carries no timestamp echo, so only F-RTO can tell.
    s.on_ack(t + Dur::from_ms(41), &ack(2, 0, &[], false), &mut q);
    assert_eq!(s.stats.spurious_rtos, 1, "tcp_try_undo_loss(sk, true)");
    assert_eq!(s.stats.loss_undo, 1);
    assert_eq!(s.ca_state, CaState::Open);
    assert_eq!(s.sb.lost_out, 0, "every segment unmarked");
    assert_eq!(s.w.ssthresh, INFINITE_SSTHRESH);
    assert!(s.w.cwnd >= 10, "cwnd back to prior_cwnd, got {}", s.w.cwnd);
    assert_eq!(s.stats.retransmits, 1, "nothing else retransmitted");
    s.sb.audit(false).unwrap();
}

#[test]
fn without_frto_the_same_acks_retransmit_the_window() {
    let (mut s, mut q) = sender(0);
    let t = timeout(&mut s, &mut q);
    assert!(!s.undo.frto());
    let stamp = s.undo.retrans_stamp();
    s.on_ack(t + Dur::from_ms(40), &ack(1, stamp, &[], false), &mut q);
    s.on_ack(t + Dur::from_ms(41), &ack(2, 0, &[], false), &mut q);
    assert_eq!(s.ca_state, CaState::Loss);
    assert_eq!(s.stats.spurious_rtos + s.stats.loss_undo, 0);
    assert!(s.stats.retransmits > 2, "go-back-N after the timeout, got {}", s.stats.retransmits);
}

#[test]
fn frto_sees_real_loss_when_the_new_data_is_sacked_but_not_the_old() {
    let (mut s, mut q) = sender(2);
    let t = timeout(&mut s, &mut q);
    let stamp = s.undo.retrans_stamp();
    s.on_ack(t + Dur::from_ms(40), &ack(1, stamp, &[], false), &mut q);
    assert_eq!(s.snd_nxt(), 12);
    // The new segment 10 is SACKed while 1..10 stay missing (step 3.a).
    s.on_ack(t + Dur::from_ms(41), &ack(1, stamp, &[(10, 11)], false), &mut q);
    assert!(!s.undo.frto(), "the loss was real");
    assert_eq!(s.stats.spurious_rtos, 0);
    assert_eq!(s.ca_state, CaState::Loss);
    assert!(s.stats.retransmits > 1, "conventional recovery resumes");
}

#[test]
fn ack_of_the_original_transmission_undoes_a_timeout_by_timestamp() {
    let (mut s, mut q) = sender(0);
    let t = timeout(&mut s, &mut q);
    // The outage ends: the originals arrive, the ACK echoes their TSval (before the
    // retransmission's), so tcp_try_undo_loss undoes even without F-RTO.
    s.on_ack(t + Dur::from_ms(40), &ack(1, ms(T0), &[], false), &mut q);
    assert_eq!(s.stats.loss_undo, 1);
    assert_eq!(s.stats.spurious_rtos, 0);
    assert_eq!(s.w.ssthresh, INFINITE_SSTHRESH);
    assert!(s.w.cwnd >= 10);
    // The ACK was for the original of segment 0, not its retransmission
    // (`tcp_skb_spurious_retrans`), so RACK does not date delivery from the
    // retransmission and mark 1..10 lost again.
    assert_eq!(s.sb.lost_out, 0);
    assert_eq!(s.ca_state, CaState::Open);
    s.sb.audit(false).unwrap();
}

#[test]
fn partial_ack_for_an_original_undoes_then_rack_restarts_recovery_for_the_real_hole() {
    let (mut s, mut q) = sender(2);
    // 2..5 SACKed: RACK marks 0 and 1 lost; PRR lets one retransmission (of 0) go.
    let t = T0 + Dur::from_ms(40);
    s.on_ack(t, &ack(0, ms(T0), &[(2, 5)], false), &mut q);
    assert_eq!(s.ca_state, CaState::Recovery);
    assert_eq!((s.sb.lost_out, s.stats.retransmits), (2, 1));
    assert_eq!((s.reordering.seen(), s.reordering.degree()), (0, 3));
    // The original of 0 was only delayed: a partial ACK echoing its TSval, with no
    // retransmission left in flight, undoes the reduction (`tcp_try_undo_partial`), and
    // the delayed original is reordering: 5 segments below the highest SACK
    // (`tcp_check_sack_reordering`).
    s.on_ack(t + Dur::from_ms(1), &ack(1, ms(T0), &[(2, 5)], false), &mut q);
    assert_eq!(s.stats.partial_undo, 1);
    assert_eq!((s.reordering.seen(), s.reordering.degree()), (1, 5));
    // RACK, run again after the undo, now allows a reordering window (min_rtt / 4)
    // before it calls 1 lost: the REO timer waits for it...
    assert_eq!(s.ca_state, CaState::Disorder);
    assert_eq!(s.sb.lost_out, 0);
    assert_eq!(s.xmit.kind(), XmitTimer::ReoTimeout);
    let due = s.xmit.deadline().expect("the REO timer");
    assert!(due > t + Dur::from_ms(1) + Dur::from_ms(10), "at {due}: the window is 10 ms");
    // ...and when it fires, 1 is still missing: a new recovery episode ("Undo reverts the
    // recovery state. If loss is evident, starts a new recovery").
    s.on_timer_expired(due, SenderTimer::Retransmit, &mut q);
    assert_eq!(s.ca_state, CaState::Recovery);
    assert_eq!(s.sb.lost_out, 1);
    assert_eq!(s.undo.marker(), Some(1), "tcp_init_undo for the new episode");
    s.sb.audit(false).unwrap();
}

#[test]
fn receiver_dsacks_a_held_out_of_order_duplicate_inside_its_sack_block() {
    use crate::tcp::receiver::{Receiver, ReceiverParams};
    let mut r = Receiver::new(ReceiverParams {
        id: 0,
        tcp: TcpConfig { mss: MSS, ..TcpConfig::default() },
        flow: FlowConfig { rwnd_bytes: RWND, ..FlowConfig::bulk("reno") },
        rtt: Dur::from_ms(40),
        conn: 0,
    });
    let mut q = Loopback::default();
    let m = MSS as u64;
    let data = |seq: u64| Packet { seq: seq * m, payload: MSS, ts_val: 1, ..Default::default() };
    // 0 arrives, 1 is missing, 2 and 3 are held, then 6 opens a second block, then 2
    // again (a spurious retransmission).
    for (i, seq) in [0, 2, 3, 6, 2].into_iter().enumerate() {
        r.on_data(T0 + Dur::from_us(10 * i as u64), &data(seq), &mut q);
    }
    let last = q.acks.last().expect("an ACK").1;
    assert!(last.dsack);
    assert_eq!(last.ack, m);
    // `tcp_sack_new_ofo_skb`: the block holding the duplicate comes right after the
    // DSACK, so the sender's `tcp_check_dsack` sees it inside the second block.
    assert_eq!(last.sack_blocks(), &[(2 * m, 3 * m), (2 * m, 4 * m), (6 * m, 7 * m)]);
}

#[test]
fn an_ack_below_snd_una_still_tags_its_sack_blocks() {
    let (mut s, mut q) = sender(2);
    let t = T0 + Dur::from_ms(40);
    // 0..3 acknowledged; then an ACK reordered on the way back: cumulative ACK 2 (below
    // snd_una) SACKing 5..7. `tcp_ack`'s old_ack tags the SACK and runs recovery.
    s.on_ack(t, &ack(3, ms(T0), &[], false), &mut q);
    assert_eq!((s.sb.snd_una, s.sb.sacked_out), (3, 0));
    s.on_ack(t + Dur::from_ms(1), &ack(2, ms(T0), &[(5, 7)], false), &mut q);
    assert_eq!(s.sb.snd_una, 3, "the cumulative ACK stays");
    assert_eq!(s.sb.sacked_out, 2);
    assert_eq!(s.highest_sack_seq(), 7);
    // A later ACK filling 3..5 without retransmission: 3 and 4 were delivered after 5
    // and 6, so the path reorders, by 4 segments (7 - 3) (`tcp_check_sack_reordering`).
    s.on_ack(t + Dur::from_ms(2), &ack(5, ms(T0), &[(5, 7)], false), &mut q);
    assert_eq!((s.reordering.seen(), s.reordering.degree()), (1, 4));
    s.sb.audit(false).unwrap();
}
