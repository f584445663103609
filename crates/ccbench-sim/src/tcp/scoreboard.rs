//! The retransmission queue and SACK scoreboard (the S/R/L bits of tcp_input.c), kept
//! per segment in a ring indexed by sequence number, plus the send-time-ordered list
//! RACK walks and the set of lost segments awaiting retransmission.

use super::rate::TxSnapshot;
use crate::time::Time;
use std::collections::{BTreeSet, VecDeque};

/// `TCPCB_SACKED_ACKED`.
pub const SACKED: u8 = 1;
/// `TCPCB_SACKED_RETRANS`: a retransmission of this segment is in flight.
pub const RETRANS: u8 = 2;
/// `TCPCB_LOST`.
pub const LOST: u8 = 4;
/// `TCPCB_EVER_RETRANS`.
pub const EVER_RETRANS: u8 = 8;
/// The skb this segment left in ends with it: the last segment of a transmission, or
/// the one before a retransmission that started a new skb (`tcp_fragment`).
pub const SKB_END: u8 = 16;

#[derive(Clone, Copy, Debug, Default)]
pub struct Seg {
    /// Departure time of the latest transmission (`skb_mstamp_ns`).
    pub tx_time: Time,
    pub len: u32,
    pub flags: u8,
    pub xmits: u16,
    pub tx: TxSnapshot,
}

impl Seg {
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

#[derive(Default)]
pub struct Scoreboard {
    /// Segments `snd_una .. snd_una + len`.
    segs: VecDeque<Seg>,
    pub snd_una: u64,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// Outstanding segments in send order, `(seq, xmits)`; entries whose segment has been
    /// retransmitted since, acknowledged or marked lost are stale and skipped.
    tsorted: VecDeque<(u64, u16)>,
    /// Lost segments not yet retransmitted, in sequence order.
    pub to_retransmit: BTreeSet<u64>,
}

impl Scoreboard {
    pub fn packets_out(&self) -> u32 {
        self.segs.len() as u32
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_una + self.segs.len() as u64
    }
    /// `tcp_packets_in_flight`.
    pub fn in_flight(&self) -> u32 {
        self.packets_out() - (self.sacked_out + self.lost_out) + self.retrans_out
    }
    pub fn get(&self, seq: u64) -> &Seg {
        &self.segs[(seq - self.snd_una) as usize]
    }
    pub fn get_mut(&mut self, seq: u64) -> &mut Seg {
        &mut self.segs[(seq - self.snd_una) as usize]
    }
    pub fn head(&self) -> Option<&Seg> {
        self.segs.front()
    }
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// A new segment leaves (`tcp_event_new_data_sent`).
    pub fn push_new(&mut self, seg: Seg) {
        let seq = self.snd_nxt();
        self.tsorted.push_back((seq, seg.xmits));
        self.segs.push_back(seg);
    }

    /// A segment is retransmitted (a lost one, or the tail as a loss probe): R and
    /// EVER_RETRANS set, moved to the tail of the send-time order.
    pub fn on_retransmit(&mut self, seq: u64, tx_time: Time, tx: TxSnapshot) {
        let s = self.get_mut(seq);
        debug_assert!(!s.has(RETRANS) && !s.has(SACKED));
        s.flags |= RETRANS | EVER_RETRANS;
        s.xmits += 1;
        s.tx_time = tx_time;
        s.tx = tx;
        let xmits = s.xmits;
        self.retrans_out += 1;
        self.to_retransmit.remove(&seq);
        self.tsorted.push_back((seq, xmits));
    }

    /// A tail loss probe resends segment `seq` (`tcp_send_loss_probe` ->
    /// `__tcp_retransmit_skb`): EVER_RETRANS only, no R bit and no `retrans_out`, moved to
    /// the tail of the send-time order. The segment stays in flight as before.
    pub fn on_probe(&mut self, seq: u64, tx_time: Time, tx: TxSnapshot) {
        let s = self.get_mut(seq);
        debug_assert!(!s.has(SACKED));
        s.flags |= EVER_RETRANS;
        s.xmits += 1;
        s.tx_time = tx_time;
        s.tx = tx;
        let xmits = s.xmits;
        self.tsorted.push_back((seq, xmits));
    }

    /// `tcp_mark_skb_lost`. Returns true if `tp->lost` must count it.
    pub fn mark_lost(&mut self, seq: u64) -> bool {
        let f = self.get(seq).flags;
        if f & SACKED != 0 || (f & LOST != 0 && f & RETRANS == 0) {
            return false;
        }
        if f & LOST != 0 {
            // A retransmission lost again.
            self.get_mut(seq).flags &= !RETRANS;
            self.retrans_out -= 1;
            self.to_retransmit.insert(seq);
        } else {
            self.get_mut(seq).flags |= LOST;
            self.lost_out += 1;
            if f & RETRANS == 0 {
                self.to_retransmit.insert(seq);
            }
        }
        true
    }

    /// Set S on a segment; returns false if it was already SACKed.
    pub fn mark_sacked(&mut self, seq: u64) -> bool {
        let f = self.get(seq).flags;
        if f & SACKED != 0 {
            return false;
        }
        self.get_mut(seq).flags = (f | SACKED) & !(RETRANS | LOST);
        if f & RETRANS != 0 {
            self.retrans_out -= 1;
        }
        if f & LOST != 0 {
            self.lost_out -= 1;
            self.to_retransmit.remove(&seq);
        }
        self.sacked_out += 1;
        true
    }

    /// Clear L on every segment (`tcp_undo_cwnd_reduction` with `unmark_loss`): what was
    /// presumed lost is in flight again, so it rejoins the send order RACK walks.
    pub fn unmark_all_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.flags &= !LOST;
        }
        self.lost_out = 0;
        self.to_retransmit.clear();
        let mut live: Vec<(Time, u64, u16)> = (self.segs.iter().zip(self.snd_una..))
            .filter(|(s, _)| !s.has(SACKED))
            .map(|(s, seq)| (s.tx_time, seq, s.xmits))
            .collect();
        live.sort_unstable();
        self.tsorted = live.into_iter().map(|(_, seq, x)| (seq, x)).collect();
    }

    /// Remove the head segment (cumulatively acknowledged).
    pub fn pop_acked(&mut self) -> Seg {
        let s = self.segs.pop_front().expect("ack beyond snd_nxt");
        if s.has(SACKED) {
            self.sacked_out -= 1;
        }
        if s.has(RETRANS) {
            self.retrans_out -= 1;
        }
        if s.has(LOST) {
            self.lost_out -= 1;
            self.to_retransmit.remove(&self.snd_una);
        }
        self.snd_una += 1;
        s
    }

    /// Whether a send-order entry still refers to a live, unSACKed, unlost transmission.
    fn entry_live(&self, seq: u64, xmits: u16) -> bool {
        seq >= self.snd_una && {
            let s = self.get(seq);
            s.xmits == xmits && !s.has(SACKED) && (s.has(RETRANS) || !s.has(LOST))
        }
    }

    /// Drop stale entries at the front of the send order, so that walks stay
    /// proportional to live transmissions.
    pub fn prune_send_order(&mut self) {
        while let Some(&(seq, x)) = self.tsorted.front() {
            if self.entry_live(seq, x) {
                break;
            }
            self.tsorted.pop_front();
        }
    }

    /// Outstanding transmissions in send order (oldest first), for RACK.
    pub fn send_order(&self) -> impl Iterator<Item = u64> + '_ {
        self.tsorted.iter().filter(|&&(seq, x)| self.entry_live(seq, x)).map(|&(seq, _)| seq)
    }

    /// Mark where a transmission of `segs` began and ended its skb.
    pub fn mark_skb(&mut self, segs: std::ops::Range<u64>) {
        if segs.start > self.snd_una {
            self.get_mut(segs.start - 1).flags |= SKB_END;
        }
        self.get_mut(segs.end - 1).flags |= SKB_END;
    }

    /// The runs that `remap` cut again take their pieces' places (`tcp_fragment`): each
    /// piece inherits its run's first segment (bits, send time, delivery snapshot), with
    /// lengths from `len`, and the last ends the skb. Segments moved along.
    pub fn recut(&mut self, remap: &super::write::Remap, len: impl Fn(u64) -> u32) {
        if remap.is_identity() {
            return;
        }
        let mut old = std::mem::take(&mut self.segs).into_iter();
        let mut seq = self.snd_una;
        while let Some(seg) = old.next() {
            let Some(&(first, n_old, n_new)) = remap.runs().iter().find(|r| r.0 == seq) else {
                self.segs.push_back(seg);
                seq += 1;
                continue;
            };
            let (mut flags, mut xmits) = (seg.flags, seg.xmits);
            for s in old.by_ref().take(n_old as usize - 1) {
                flags |= s.flags & EVER_RETRANS;
                xmits = xmits.max(s.xmits);
            }
            let new_first = remap.map(first);
            for k in 0..n_new {
                let end = if k + 1 == n_new { SKB_END } else { 0 };
                let piece = Seg { len: len(new_first + k), flags: (flags & !SKB_END) | end, xmits, ..seg };
                self.segs.push_back(piece);
            }
            seq += n_old;
        }
        self.lost_out = self.segs.iter().filter(|s| s.has(LOST)).count() as u32;
        self.retrans_out = self.segs.iter().filter(|s| s.has(RETRANS)).count() as u32;
        self.to_retransmit =
            (self.snd_una..).zip(&self.segs).filter(|(_, s)| s.has(LOST) && !s.has(RETRANS)).map(|(q, _)| q).collect();
        let runs = remap.runs();
        let old_order = std::mem::take(&mut self.tsorted);
        for (s, x) in old_order {
            match runs.iter().find(|r| r.0 <= s && s < r.0 + r.1) {
                Some(&(first, _, n_new)) if s == first => {
                    let new_first = remap.map(first);
                    let xmits = self.get(new_first).xmits;
                    self.tsorted.extend((new_first..new_first + n_new).map(|p| (p, xmits)));
                }
                Some(_) => {}
                None => self.tsorted.push_back((remap.map(s), x)),
            }
        }
    }

    /// Recount the S/R/L counters from the per-segment bits (tests and audits). Without
    /// SACK (`reno`) `sacked_out` counts duplicate ACKs, not bits: no segment is SACKed,
    /// and what is counted SACKed or lost never exceeds what is out (`tcp_verify_left_out`).
    pub fn audit(&self, reno: bool) -> Result<(), String> {
        let (mut s, mut r, mut l) = (0, 0, 0);
        for (i, seg) in self.segs.iter().enumerate() {
            s += seg.has(SACKED) as u32;
            r += seg.has(RETRANS) as u32;
            l += seg.has(LOST) as u32;
            let seq = self.snd_una + i as u64;
            let queued = self.to_retransmit.contains(&seq);
            if queued != (seg.has(LOST) && !seg.has(RETRANS)) {
                return Err(format!("segment {seq}: flags {:#x} but queued for retransmission = {queued}", seg.flags));
            }
            if seg.has(SACKED) && seg.flags & (RETRANS | LOST) != 0 {
                return Err(format!("segment {seq}: SACKed with flags {:#x}", seg.flags));
            }
        }
        if reno {
            if s != 0 || self.sacked_out + self.lost_out > self.packets_out() {
                return Err(format!(
                    "without SACK: {s} segments SACKed, sacked {} + lost {} of {} out",
                    self.sacked_out,
                    self.lost_out,
                    self.packets_out()
                ));
            }
            s = self.sacked_out;
        }
        if (s, r, l) != (self.sacked_out, self.retrans_out, self.lost_out) {
            return Err(format!(
                "counters sacked/retrans/lost = {}/{}/{} but scoreboard has {s}/{r}/{l}",
                self.sacked_out, self.retrans_out, self.lost_out
            ));
        }
        if self.to_retransmit.first().is_some_and(|&q| q < self.snd_una) {
            return Err("retransmission queue holds acknowledged segments".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::default();
        for seq in 0..n {
            sb.push_new(Seg { tx_time: Time(seq), len: 1000, xmits: 1, ..Default::default() });
        }
        sb
    }

    #[test]
    fn in_flight_is_out_less_sacked_and_lost_plus_retransmitted() {
        let mut sb = sent(10);
        assert!(sb.mark_sacked(5) && !sb.mark_sacked(5));
        assert!(sb.mark_lost(0) && sb.mark_lost(1));
        assert!(!sb.mark_lost(5), "a SACKed segment is not lost");
        assert_eq!(sb.to_retransmit.iter().copied().collect::<Vec<_>>(), [0, 1]);
        sb.on_retransmit(0, Time(100), TxSnapshot::default());
        // 10 out - (1 SACKed + 2 lost) + 1 retransmitted.
        assert_eq!((sb.packets_out(), sb.in_flight()), (10, 8));
        // The retransmission is lost too: queued again, no longer in flight.
        assert!(sb.mark_lost(0));
        assert_eq!((sb.in_flight(), sb.retrans_out), (7, 0));
        sb.audit(false).unwrap();
    }

    #[test]
    fn the_send_order_follows_retransmissions_and_skips_what_left_the_network() {
        let mut sb = sent(4);
        sb.mark_lost(1);
        sb.on_retransmit(1, Time(10), TxSnapshot::default());
        sb.mark_sacked(2);
        assert_eq!(sb.send_order().collect::<Vec<_>>(), [0, 3, 1]);
        let head = sb.pop_acked();
        assert_eq!((head.xmits, sb.snd_una), (1, 1));
        sb.prune_send_order();
        assert_eq!(sb.send_order().collect::<Vec<_>>(), [3, 1]);
        sb.unmark_all_lost();
        assert_eq!((sb.lost_out, sb.retrans_out), (0, 1));
        sb.audit(false).unwrap();
    }
}
