//! Delivery-rate sampling as `net/ipv4/tcp_rate.c`, with the google/bbr v3 tree's
//! extra snapshots (`tx.in_flight`, `tx.lost`). All stamps are µs, like `tcp_mstamp`.

use crate::cc::RateSample;

/// State snapshotted into each segment when it is (re)transmitted (`tcp_rate_skb_sent`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TxSnapshot {
    pub first_tx_us: u64,
    /// 0 once the segment has been counted by a SACK (so the cumulative ACK skips it).
    pub delivered_us: u64,
    pub delivered: u64,
    pub delivered_ce: u64,
    pub lost: u64,
    pub in_flight: u32,
    pub app_limited: bool,
}

/// The connection's rate-sampling state.
#[derive(Clone, Debug, Default)]
pub struct RateState {
    pub first_tx_us: u64,
    pub delivered_us: u64,
    /// `tp->app_limited`: 0, or the delivered count that ends the app-limited phase.
    pub app_limited: u64,
    /// Last non-app-limited (or highest app-limited) sample, for `tcpi_delivery_rate`.
    pub rate_delivered: u64,
    pub rate_interval_us: u64,
    pub rate_app_limited: bool,
}

/// The "newest" delivered segment of one ACK, from which the sample is taken.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pick {
    prior_delivered: u64,
    prior_delivered_ce: u64,
    prior_us: u64,
    is_app_limited: bool,
    is_retrans: bool,
    last_end_seq: u64,
    send_phase_us: u64,
    tx_in_flight: u32,
    lost: u64,
}

impl Pick {
    /// `rs->prior_delivered`: `tp->delivered` when the newest delivered segment was sent
    /// (0 when the ACK delivered none).
    pub fn prior_delivered(&self) -> u64 {
        self.prior_delivered
    }
}

/// `tcp_skb_sent_after`: later send time, ties broken by higher end sequence.
fn sent_after(t1: u64, t2: u64, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl RateState {
    /// `tcp_rate_skb_sent`. `packets_out` is the count before this transmission.
    pub fn on_send(&mut self, tx_us: u64, packets_out: u32, conn: &TxSnapshot) -> TxSnapshot {
        if packets_out == 0 {
            self.first_tx_us = tx_us;
            self.delivered_us = tx_us;
        }
        TxSnapshot {
            first_tx_us: self.first_tx_us,
            delivered_us: self.delivered_us,
            app_limited: self.app_limited != 0,
            ..*conn
        }
    }

    /// `tcp_rate_skb_delivered` for one newly (S)ACKed segment.
    pub fn on_delivered(
        &mut self,
        pick: &mut Pick,
        tx_us: u64,
        end_seq: u64,
        snap: &mut TxSnapshot,
        sacked: bool,
        ever_retrans: bool,
    ) {
        if snap.delivered_us == 0 {
            return;
        }
        if pick.prior_delivered == 0 || sent_after(tx_us, self.first_tx_us, end_seq, pick.last_end_seq) {
            *pick = Pick {
                prior_delivered: snap.delivered,
                prior_delivered_ce: snap.delivered_ce,
                prior_us: snap.delivered_us,
                is_app_limited: snap.app_limited,
                is_retrans: ever_retrans,
                last_end_seq: end_seq,
                send_phase_us: tx_us.saturating_sub(snap.first_tx_us),
                tx_in_flight: snap.in_flight,
                lost: snap.lost,
            };
            self.first_tx_us = tx_us;
        }
        if sacked {
            snap.delivered_us = 0;
        }
    }

    /// `tcp_rate_gen`: finalise the sample of one ACK into `rs`.
    // The kernel's own arguments of `tcp_rate_gen`, kept one for one so the two read alike.
    #[allow(clippy::too_many_arguments)]
    pub fn generate(
        &mut self,
        pick: &Pick,
        now_us: u64,
        delivered: u64,
        delivered_ce: u64,
        lost: u64,
        newly_delivered: u32,
        newly_lost: u32,
        min_rtt_us: u64,
        rs: &mut RateSample,
    ) {
        if self.app_limited != 0 && delivered > self.app_limited {
            self.app_limited = 0;
        }
        if newly_delivered > 0 {
            self.delivered_us = now_us;
        }
        rs.acked_sacked = newly_delivered;
        rs.losses = newly_lost;
        rs.prior_delivered = pick.prior_delivered;
        rs.prior_delivered_ce = pick.prior_delivered_ce;
        rs.is_app_limited = pick.is_app_limited;
        rs.is_retrans = pick.is_retrans;
        rs.tx_in_flight = pick.tx_in_flight;
        rs.lost = lost - pick.lost;
        if pick.prior_us == 0 {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        rs.delivered = (delivered - pick.prior_delivered) as i64;
        rs.delivered_ce = (delivered_ce - pick.prior_delivered_ce) as i64;
        let ack_phase = now_us.saturating_sub(pick.prior_us);
        let interval = pick.send_phase_us.max(ack_phase);
        if interval < min_rtt_us {
            rs.interval_us = -1;
            return;
        }
        rs.interval_us = interval as i64;
        if !rs.is_app_limited || (rs.delivered as u64) * self.rate_interval_us >= self.rate_delivered * interval {
            self.rate_delivered = rs.delivered as u64;
            self.rate_interval_us = interval;
            self.rate_app_limited = rs.is_app_limited;
        }
    }

    /// `tcpi_delivery_rate` in segments per second.
    pub fn delivery_rate_segs(&self) -> f64 {
        if self.rate_interval_us == 0 {
            0.0
        } else {
            self.rate_delivered as f64 * 1e6 / self.rate_interval_us as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two segments sent 1 ms apart from t = 1 ms, both acknowledged at 101 ms.
    fn two_acked(min_rtt_us: u64) -> (RateState, RateSample) {
        let mut r = RateState::default();
        let conn = TxSnapshot::default();
        let mut a = r.on_send(1_000, 0, &conn);
        let mut b = r.on_send(2_000, 1, &conn);
        let mut pick = Pick::default();
        r.on_delivered(&mut pick, 1_000, 1, &mut a, false, false);
        r.on_delivered(&mut pick, 2_000, 2, &mut b, false, false);
        let mut rs = RateSample::default();
        r.generate(&pick, 101_000, 2, 0, 0, 2, 0, min_rtt_us, &mut rs);
        (r, rs)
    }

    #[test]
    fn the_sample_spans_the_longer_of_the_send_and_ack_phases() {
        let (r, rs) = two_acked(50_000);
        // Send phase 1 ms (first to last transmission), ack phase 100 ms (since the
        // delivery before the first transmission): 2 segments in 100 ms.
        assert_eq!((rs.delivered, rs.interval_us, rs.acked_sacked), (2, 100_000, 2));
        assert_eq!(r.delivery_rate_segs(), 20.0);
    }

    #[test]
    fn a_sample_shorter_than_the_min_rtt_is_rejected() {
        let (r, rs) = two_acked(150_000);
        assert_eq!(rs.interval_us, -1);
        assert_eq!(r.delivery_rate_segs(), 0.0);
    }

    #[test]
    fn the_app_limited_phase_ends_once_its_data_is_delivered() {
        let mut r = RateState { app_limited: 5, ..Default::default() };
        let mut rs = RateSample::default();
        r.generate(&Pick::default(), 10_000, 5, 0, 0, 1, 0, 0, &mut rs);
        assert_eq!((r.app_limited, rs.delivered), (5, -1), "no pick: no sample");
        r.generate(&Pick::default(), 20_000, 6, 0, 0, 1, 0, 0, &mut rs);
        assert_eq!(r.app_limited, 0);
    }
}
