//! SACK processing (net/ipv4/tcp_input.c): `tcp_sacktag_write_queue` with its
//! per-segment `tcp_sacktag_one`, and the DSACK it may start with (`tcp_check_dsack`),
//! on what `tcp/sack.rs` keeps across ACKs and `tcp/undo.rs` counts.

use super::*;
use crate::cc::CaState;
use crate::net::packet::SackBlock;
use crate::net::Packet;
use crate::tcp::scoreboard::{EVER_RETRANS, RETRANS, SACKED};
use crate::time::Time;

impl Sender {
    /// `tcp_sacktag_write_queue`: mark newly SACKed segments, skipping ranges already
    /// processed for the previous ACK (the kernel's `recv_sack_cache`).
    pub(super) fn sacktag(&mut self, now: Time, ack: &Packet, scan: &mut AckScan) -> u32 {
        let mut flag = 0;
        if self.sb.sacked_out == 0 {
            self.sack.reset_highest(self.sb.snd_una);
        }
        scan.reord = self.snd_nxt();
        let mut blocks: Vec<SackBlock> = ack.sack_blocks().to_vec();
        if self.check_dsack(ack.ack, &blocks, &mut flag) {
            let (start, end) = blocks.remove(0);
            for seq in start.max(self.sb.snd_una)..end.min(self.snd_nxt()) {
                flag |= self.dsack_one(now, seq, scan);
            }
        }
        let (una, nxt) = (self.sb.snd_una, self.snd_nxt());
        blocks.retain_mut(|b| {
            b.0 = b.0.max(una);
            b.1 = b.1.min(nxt);
            b.0 < b.1
        });
        blocks.sort_unstable();
        for &(start, end) in &blocks {
            let mut seq = start;
            while seq < end {
                let (from, to) = self.sack.uncached_run(seq, end);
                for s in from..to {
                    flag |= self.sack_one(now, s, scan);
                }
                seq = to;
            }
        }
        self.sack.remember(blocks);
        if self.ca_state != CaState::Loss || self.undo.is_open() {
            self.check_sack_reordering(scan.reord);
        }
        flag
    }

    pub(super) fn sack_one(&mut self, now: Time, seq: u64, scan: &mut AckScan) -> u32 {
        let seg = *self.sb.get(seq);
        if seg.has(SACKED) {
            return 0;
        }
        self.rack_advance(now, seg.flags, seq + 1, seg.tx_time);
        let mut flag = FLAG_DATA_SACKED;
        if !seg.has(EVER_RETRANS) {
            // A never-retransmitted segment in a hole below the highest SACKed one.
            if seq < self.highest_sack_seq() && seq < scan.reord {
                scan.reord = seq;
            }
            if seq < self.high_seq {
                flag |= FLAG_ORIG_SACK_ACKED;
            }
            scan.first_sackt.get_or_insert(seg.tx_time);
            scan.last_sackt = Some(seg.tx_time);
        }
        self.sb.mark_sacked(seq);
        self.sack.advance_highest(seq + 1);
        self.delivered += 1;
        let mut tx = seg.tx;
        self.rate.on_delivered(&mut scan.pick, seg.tx_time.us(), seq + 1, &mut tx, true, seg.has(EVER_RETRANS));
        self.sb.get_mut(seq).tx = tx;
        flag
    }

    /// `tcp_check_dsack`: is the first block a DSACK (below the cumulative ACK, or inside
    /// the second block)? Counts it (`tcp_dsack_seen`) and, for data already acknowledged,
    /// takes it off `undo_retrans`.
    pub(super) fn check_dsack(&mut self, ack: u64, blocks: &[(u64, u64)], flag: &mut u32) -> bool {
        let Some(&(start, end)) = blocks.first() else { return false };
        let below = start < ack;
        let inside_next = blocks.len() > 1 && end <= blocks[1].1 && start >= blocks[1].0;
        if !(below || inside_next) {
            return false;
        }
        // tcp_dsack_seen
        if start >= end {
            return false;
        }
        let segs = end - start;
        if !self.undo.dsack_fits_window(segs * self.write.mss() as u64, self.snd_wnd) {
            return false; // dubious: larger than any window
        }
        if self.tlp.is_dsack_of_probe(start, end) {
            *flag |= FLAG_DSACK_TLP;
        }
        if !self.undo.count_dsack(segs, self.stats.retransmits) {
            return false; // nothing was retransmitted to be duplicated
        }
        *flag |= FLAG_DSACKING_ACK;
        self.stats.dsacks += 1;
        // A spurious retransmission is delivered (`sack_delivered`).
        self.delivered += segs;
        self.undo.dsack_below_una(end, segs, self.sb.snd_una);
        true
    }

    /// `tcp_sacktag_one` for a segment still queued that a DSACK block covers.
    pub(super) fn dsack_one(&mut self, now: Time, seq: u64, scan: &mut AckScan) -> u32 {
        let f = self.sb.get(seq).flags;
        if f & (RETRANS | EVER_RETRANS) != 0 {
            self.undo.dsack_queued(seq);
            if f & SACKED != 0 && seq < scan.reord {
                scan.reord = seq;
            }
        }
        if f & SACKED == 0 {
            self.sack_one(now, seq, scan)
        } else {
            0
        }
    }
}
