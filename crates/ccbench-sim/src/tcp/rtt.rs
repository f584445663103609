//! RTT estimation as `tcp_rtt_estimator`, `tcp_set_rto` and `tcp_update_rtt_min`.
//! SRTT is kept scaled by 8 and the mean deviation by 4, in µs, as the kernel does.

use crate::base::minmax::MinMax;
use crate::time::{Dur, NS_PER_SEC};

/// `TCP_RTO_MAX`.
pub const RTO_MAX: Dur = Dur::from_secs(120);
/// `sysctl_tcp_min_rtt_wlen`: seconds over which `tcp_min_rtt` is a windowed min.
pub const MIN_RTT_WLEN_SECS: u32 = 300;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    hz: u32,
    rto_min_us: u64,
    /// `srtt_us` (<< 3); 0 before the first sample.
    pub srtt_us8: u64,
    mdev_us4: u64,
    mdev_max_us: u64,
    pub rttvar_us: u64,
    /// Segment number that ends the current RTT (`rtt_seq`).
    rtt_seq: u64,
    /// The RTO (`icsk_rto`): whole jiffies, doubled by each timeout until the next RTT
    /// sample sets it again.
    pub rto: Dur,
    /// `icsk_backoff`: backoff steps, shared by the RTO and the zero-window probe timer.
    pub backoff: u32,
    min_rtt: MinMax,
    has_min: bool,
}

impl RttEstimator {
    pub fn new(hz: u32, rto_min: Dur, rto_init: Dur) -> Self {
        RttEstimator {
            hz,
            rto_min_us: rto_min.us(),
            srtt_us8: 0,
            mdev_us4: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: 0,
            rto: rto_init,
            backoff: 0,
            min_rtt: MinMax::default(),
            has_min: false,
        }
    }

    pub fn srtt_us(&self) -> u64 {
        self.srtt_us8 >> 3
    }

    /// `tp->mdev_us` unscaled, as `tcpi_rttvar` reports it.
    pub fn mdev_us(&self) -> u64 {
        self.mdev_us4 >> 2
    }

    /// `tcp_min_rtt`; u64::MAX before any sample (the kernel's ~0U).
    pub fn min_rtt_us(&self) -> u64 {
        if self.has_min {
            self.min_rtt.get()
        } else {
            u64::MAX
        }
    }

    /// A retransmission timeout backs off (`tcp_retransmit_timer`'s `out:` label): one
    /// more backoff step and the RTO doubled, at most `TCP_RTO_MAX`.
    pub fn on_timeout(&mut self) {
        self.backoff += 1;
        self.rto = Dur(self.rto.ns().saturating_mul(2).min(RTO_MAX.ns()));
    }

    /// `inet_csk_rto_backoff`: `base` doubled once per backoff step, at most `max`.
    pub fn backed_off(&self, base: Dur, max: Dur) -> Dur {
        Dur(base.ns().saturating_mul(1u64 << self.backoff.min(20)).min(max.ns()))
    }

    fn usecs_to_jiffies(&self, us: u64) -> u64 {
        let us_per_jiffy = 1_000_000 / self.hz as u64;
        us.div_ceil(us_per_jiffy)
    }

    /// `tcp_update_rtt_min`: a possibly-delayed ACK may not raise the estimate.
    pub fn update_min(&mut self, jiffies: u32, ca_rtt_us: u64, maybe_delayed: bool) {
        if maybe_delayed && ca_rtt_us > self.min_rtt_us() {
            return;
        }
        let v = if ca_rtt_us == 0 { 1_000_000 / self.hz as u64 } else { ca_rtt_us };
        let win = MIN_RTT_WLEN_SECS * self.hz;
        if self.has_min {
            self.min_rtt.running_min(win, jiffies, v);
        } else {
            self.min_rtt.reset(jiffies, v);
            self.has_min = true;
        }
    }

    /// `tcp_rtt_estimator` followed by `tcp_set_rto`; resets the backoff (RFC 6298).
    pub fn sample(&mut self, m_us: u64, snd_una: u64, snd_nxt: u64) {
        let m = m_us as i64;
        let mut srtt = self.srtt_us8 as i64;
        if srtt != 0 {
            let mut err = m - (srtt >> 3);
            srtt += err;
            if err < 0 {
                err = -err - (self.mdev_us4 as i64 >> 2);
                if err > 0 {
                    err >>= 3; // slow growth of mdev when RTT falls
                }
            } else {
                err -= self.mdev_us4 as i64 >> 2;
            }
            self.mdev_us4 = (self.mdev_us4 as i64 + err) as u64;
            if self.mdev_us4 > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us4;
                self.rttvar_us = self.rttvar_us.max(self.mdev_max_us);
            }
            if snd_una > self.rtt_seq {
                // Once per RTT: decay rttvar toward this RTT's maximum deviation.
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = self.rto_min_us;
            }
        } else {
            srtt = m << 3;
            self.mdev_us4 = (m as u64) << 1;
            self.rttvar_us = self.mdev_us4.max(self.rto_min_us);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
        self.srtt_us8 = (srtt as u64).max(1);
        // __tcp_set_rto: srtt + rttvar, in whole jiffies; tcp_bound_rto caps it.
        let jiffies = self.usecs_to_jiffies(self.srtt_us() + self.rttvar_us);
        self.rto = Dur((jiffies * (NS_PER_SEC / self.hz as u64)).min(RTO_MAX.ns()));
        self.backoff = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_gives_srtt_plus_rto_min_floor() {
        let mut r = RttEstimator::new(1000, Dur::from_ms(200), Dur::from_secs(1));
        r.sample(40_000, 0, 10);
        assert_eq!(r.srtt_us(), 40_000);
        // rttvar = max(2m, 200 ms) = 200 ms: RTO = 240 ms.
        assert_eq!(r.rto, Dur::from_ms(240));
    }

    #[test]
    fn steady_samples_converge_and_keep_200ms_floor() {
        let mut r = RttEstimator::new(1000, Dur::from_ms(200), Dur::from_secs(1));
        for i in 0..200 {
            r.sample(10_000, i * 10, i * 10 + 10);
        }
        assert_eq!(r.srtt_us(), 10_000);
        assert_eq!(r.rto, Dur::from_ms(210));
    }

    #[test]
    fn timeouts_double_the_rto_up_to_the_cap_and_a_sample_resets_it() {
        let mut r = RttEstimator::new(1000, Dur::from_ms(200), Dur::from_secs(1));
        for _ in 0..3 {
            r.on_timeout();
        }
        assert_eq!((r.rto, r.backoff), (Dur::from_secs(8), 3));
        assert_eq!(r.backed_off(Dur::from_ms(200), RTO_MAX), Dur::from_ms(1600));
        for _ in 0..7 {
            r.on_timeout();
        }
        assert_eq!(r.rto, RTO_MAX);
        assert_eq!(r.backed_off(Dur::from_ms(200), RTO_MAX), RTO_MAX);
        r.sample(40_000, 0, 10);
        assert_eq!((r.rto, r.backoff), (Dur::from_ms(240), 0));
    }
}
