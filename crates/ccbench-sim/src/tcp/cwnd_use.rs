//! Congestion window validation (RFC 7661 as Linux applies it): whether the connection
//! used its cwnd in the last window (`tcp_cwnd_validate`) and so may grow it
//! (`tcp_is_cwnd_limited`), in net/ipv4/tcp_output.c and include/net/tcp.h.

/// How fully the sender used its cwnd.
#[derive(Clone, Debug, Default)]
pub struct CwndUse {
    /// `is_cwnd_limited`: the last window was limited by cwnd.
    is_cwnd_limited: bool,
    /// `max_packets_out`: the most segments out in that window.
    max_packets_out: u32,
    /// `cwnd_usage_seq`: `snd_nxt` when that window began; its end starts the next.
    cwnd_usage_seq: u64,
}

impl CwndUse {
    /// Segment numbers moved.
    pub fn remap(&mut self, r: &super::write::Remap) {
        self.cwnd_usage_seq = r.map(self.cwnd_usage_seq);
    }

    /// `tcp_cwnd_validate`, after sending with `packets_out` segments out: a new window
    /// (`snd_una` past its start), a cwnd-limited send, or more out than before records
    /// this one.
    pub fn validate(&mut self, is_cwnd_limited: bool, packets_out: u32, snd_una: u64, snd_nxt: u64) {
        if snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!self.is_cwnd_limited && packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = snd_nxt;
        }
    }

    pub fn max_packets_out(&self) -> u32 {
        self.max_packets_out
    }

    /// The `tp->is_cwnd_limited` bit itself.
    pub fn flag(&self) -> bool {
        self.is_cwnd_limited
    }

    /// `tcp_is_cwnd_limited`: cwnd limited the last window, or, in slow start, it is less
    /// than twice what was out (so that slow start keeps doubling).
    pub fn is_limited(&self, in_slow_start: bool, cwnd: u32) -> bool {
        self.is_cwnd_limited || (in_slow_start && cwnd < 2 * self.max_packets_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cwnd_limited_window_counts_until_the_next_one_starts() {
        let mut u = CwndUse::default();
        u.validate(true, 10, 0, 10);
        assert!(u.is_limited(false, 10));
        // Within that window an application-limited send changes nothing...
        u.validate(false, 4, 5, 12);
        assert!(u.is_limited(false, 10));
        // ...until snd_una passes its start's snd_nxt.
        u.validate(false, 4, 10, 14);
        assert!(!u.is_limited(false, 10));
        // In slow start, cwnd below twice the most out still counts as limited.
        assert!(u.is_limited(true, 7) && !u.is_limited(true, 8));
    }

    #[test]
    fn more_out_than_before_is_recorded_within_a_window() {
        let mut u = CwndUse::default();
        u.validate(false, 4, 0, 4);
        u.validate(false, 6, 1, 7);
        assert!(u.is_limited(true, 11) && !u.is_limited(true, 12));
    }
}
