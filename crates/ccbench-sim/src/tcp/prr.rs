//! Proportional Rate Reduction (RFC 6937) as `tcp_cwnd_reduction` does it
//! (net/ipv4/tcp_input.c): during a reduction (CWR or Recovery) each ACK lets out what
//! was delivered scaled by ssthresh / prior_cwnd while more than ssthresh is in flight,
//! and, below it, what was delivered plus one, up to ssthresh (slow-start reduction
//! bound, PRR-SSRB).

/// One reduction's counts.
#[derive(Clone, Debug, Default)]
pub struct Prr {
    /// `prior_cwnd`: cwnd when the reduction (or the RTO) began.
    prior_cwnd: u32,
    /// `prr_delivered`: segments delivered since.
    delivered: u32,
    /// `prr_out`: segments sent since.
    out: u32,
}

impl Prr {
    /// `tcp_init_cwnd_reduction`: a reduction starts from `cwnd`.
    pub fn start(&mut self, cwnd: u32) {
        self.prior_cwnd = cwnd;
        self.delivered = 0;
        self.out = 0;
    }

    /// `tcp_enter_loss`: an RTO remembers `cwnd` for the algorithm's undo, no reduction.
    pub fn set_prior_cwnd(&mut self, cwnd: u32) {
        self.prior_cwnd = cwnd;
    }

    /// `tp->prior_cwnd`.
    pub fn prior_cwnd(&self) -> u32 {
        self.prior_cwnd
    }

    /// `n` segments left during the reduction.
    pub fn on_sent(&mut self, n: u32) {
        self.out += n;
    }

    /// `tcp_cwnd_reduction`: the cwnd that lets out what this ACK allows, with
    /// `newly_acked_sacked` delivered and `newly_lost` marked lost by it (a cumulative
    /// advance, `snd_una_advanced`, with no new loss earns one more), `inflight` now and
    /// target `ssthresh`. At least one segment goes on the reduction's first ACK (the
    /// fast retransmit). None: nothing delivered, or no reduction started.
    pub fn cwnd(
        &mut self,
        newly_acked_sacked: u32,
        newly_lost: u32,
        snd_una_advanced: bool,
        inflight: u32,
        ssthresh: u32,
    ) -> Option<u32> {
        if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            return None;
        }
        let delta = ssthresh as i64 - inflight as i64;
        self.delivered += newly_acked_sacked;
        let mut sndcnt = if delta < 0 {
            let dividend = ssthresh as u64 * self.delivered as u64 + self.prior_cwnd as u64 - 1;
            (dividend / self.prior_cwnd as u64) as i64 - self.out as i64
        } else {
            let mut n = (self.delivered as i64 - self.out as i64).max(newly_acked_sacked as i64);
            if snd_una_advanced && newly_lost == 0 {
                n += 1;
            }
            n.min(delta)
        };
        sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        Some((inflight as i64 + sndcnt).max(1) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn above_ssthresh_one_segment_goes_per_two_delivered_when_cwnd_halves() {
        // cwnd 20 halved to ssthresh 10 with one segment lost: 19 in flight. Each ACK
        // delivers one; what PRR lets out is sent at once.
        let mut prr = Prr::default();
        prr.start(20);
        let mut inflight = 19;
        let mut sent = Vec::new();
        for _ in 0..8 {
            inflight -= 1;
            let cwnd = prr.cwnd(1, 0, false, inflight, 10).unwrap();
            let n = cwnd - inflight;
            prr.on_sent(n);
            inflight += n;
            sent.push(n);
        }
        // ceil(ssthresh * delivered / prior_cwnd) - out: 1, 0, 1, 0, ...
        assert_eq!(sent, [1, 0, 1, 0, 1, 0, 1, 0]);
        assert_eq!(inflight, 15);
    }

    #[test]
    fn below_ssthresh_delivery_plus_one_goes_up_to_ssthresh() {
        let mut prr = Prr::default();
        prr.start(20);
        prr.on_sent(1);
        // 5 in flight, target 10: 2 delivered by a cumulative ACK, no new loss: 3 go.
        assert_eq!(prr.cwnd(2, 0, true, 5, 10), Some(8));
        // A new loss earns no extra segment; the bound is ssthresh.
        assert_eq!(prr.cwnd(2, 1, true, 9, 10), Some(10));
    }

    #[test]
    fn nothing_delivered_or_no_reduction_leaves_cwnd_alone() {
        let mut prr = Prr::default();
        assert_eq!(prr.cwnd(3, 0, true, 5, 10), None, "no reduction started");
        prr.start(20);
        assert_eq!(prr.cwnd(0, 0, true, 5, 10), None);
        assert_eq!(prr.prior_cwnd(), 20);
    }
}
