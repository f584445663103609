//! What SACK processing keeps between ACKs (net/ipv4/tcp_input.c): the end of the highest
//! SACKed segment (`tp->highest_sack`, `tcp_highest_sack_seq`) and the previous ACK's
//! blocks (`recv_sack_cache`), whose ranges `tcp_sacktag_write_queue` need not walk again.

use crate::net::packet::SackBlock;

/// SACK state kept across ACKs.
#[derive(Clone, Debug, Default)]
pub struct SackState {
    /// The end of the highest SACKed segment, while any is SACKed.
    highest: u64,
    /// The blocks of the previous ACK, clamped to what was outstanding.
    cache: Vec<SackBlock>,
}

impl SackState {
    /// Segment numbers moved.
    pub fn remap(&mut self, r: &super::write::Remap) {
        self.highest = r.map(self.highest);
        for b in &mut self.cache {
            *b = (r.map(b.0), r.map(b.1));
        }
    }

    /// `tcp_highest_sack_reset`: nothing SACKed, so the highest SACK is `snd_una`.
    pub fn reset_highest(&mut self, snd_una: u64) {
        self.highest = snd_una;
    }

    /// `tcp_highest_sack_seq` with `sacked_out` segments SACKed: the end of the highest
    /// SACKed segment, or `snd_una`.
    pub fn highest_seq(&self, sacked_out: u32, snd_una: u64) -> u64 {
        if sacked_out == 0 {
            snd_una
        } else {
            self.highest
        }
    }

    /// `tcp_advance_highest_sack`: segment `end - 1` is SACKed.
    pub fn advance_highest(&mut self, end: u64) {
        self.highest = self.highest.max(end);
    }

    /// The next run of a block `seq..end` that no block of the previous ACK covered:
    /// what it covered is skipped, and the run stops where a cached block starts.
    pub fn uncached_run(&self, mut seq: u64, end: u64) -> (u64, u64) {
        while seq < end {
            match self.cache.iter().find(|c| c.0 <= seq && seq < c.1) {
                Some(&(_, c_end)) => seq = c_end.min(end),
                None => break,
            }
        }
        let next_cached = self.cache.iter().map(|c| c.0).filter(|&s| s > seq).min().unwrap_or(end).min(end);
        (seq, next_cached)
    }

    /// This ACK's blocks become the cache.
    pub fn remember(&mut self, blocks: Vec<SackBlock>) {
        self.cache = blocks;
    }

    /// Everything is acknowledged: no block to remember.
    pub fn forget(&mut self) {
        self.cache.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_sack_is_snd_una_until_something_is_sacked() {
        let mut s = SackState::default();
        s.reset_highest(10);
        assert_eq!(s.highest_seq(0, 12), 12);
        s.advance_highest(15);
        s.advance_highest(13);
        assert_eq!(s.highest_seq(2, 12), 15);
    }

    #[test]
    fn a_block_is_walked_only_where_the_previous_ack_did_not_cover_it() {
        let mut s = SackState::default();
        s.remember(vec![(10, 15), (20, 22)]);
        // 5..25 against the cache: 5..10 new, 10..15 cached, 15..20 new, 20..22 cached,
        // 22..25 new.
        let mut runs = Vec::new();
        let (mut seq, end) = (5, 25);
        while seq < end {
            let (from, to) = s.uncached_run(seq, end);
            runs.push((from, to));
            seq = to;
        }
        assert_eq!(runs, [(5, 10), (15, 20), (22, 25)]);
        assert_eq!(s.uncached_run(11, 14), (14, 14), "wholly cached");
        s.forget();
        assert_eq!(s.uncached_run(11, 14), (11, 14));
    }
}
