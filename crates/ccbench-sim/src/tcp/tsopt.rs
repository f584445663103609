//! The timestamp option (RFC 7323) as the sender keeps it: the TSval clock, milliseconds
//! of the departure time (`tcp_skb_timestamp_ts` under EDT), the peer's latest TSval it
//! echoes (`ts_recent`), and the echo of the ACK being processed (`rx_opt.rcv_tsecr`),
//! which tells an ACK of an original from one of its retransmission.

use crate::time::Time;

/// The TSval clock at `t`, in ms.
pub fn ts_ms(t: Time) -> u32 {
    (t.ns() / 1_000_000) as u32
}

/// What the sender holds of the timestamp option.
#[derive(Clone, Debug, Default)]
pub struct Timestamps {
    /// `ts_recent`: the peer's latest TSval, echoed in the segments sent.
    recent: u32,
    /// `rx_opt.rcv_tsecr`: the echo in the ACK being processed; 0: none.
    ecr: u32,
    /// `rx_opt.rcv_tsval`: the TSval of the ACK being processed.
    val: u32,
}

impl Timestamps {
    /// The connection is established at `now`: the (unmodelled) SYN-ACK's TSval, as a
    /// capture's synthetic handshake shows it.
    pub fn start(&mut self, now: Time) {
        self.recent = ts_ms(now);
    }

    /// An ACK with TSval `ts_val` echoing `ts_ecr` arrives (`tcp_replace_ts_recent`
    /// keeps the newer TSval, in wrapping order).
    pub fn on_ack(&mut self, ts_val: u32, ts_ecr: u32) {
        if ts_val.wrapping_sub(self.recent) as i32 >= 0 {
            self.recent = ts_val;
        }
        self.ecr = ts_ecr;
        self.val = ts_val;
    }

    /// The TSecr of the segments sent (`ts_recent`).
    pub fn recent(&self) -> u32 {
        self.recent
    }

    /// The TSval of the ACK being processed (`rx_opt.rcv_tsval`).
    pub fn val(&self) -> u32 {
        self.val
    }

    /// The echo of the ACK being processed (`rx_opt.rcv_tsecr`); 0 if it carries none.
    pub fn ecr(&self) -> u32 {
        self.ecr
    }

    /// The ACK echoes a TSval older than `stamp_ms` (in wrapping order).
    pub fn echoes_before(&self, stamp_ms: u32) -> bool {
        self.ecr != 0 && (self.ecr.wrapping_sub(stamp_ms) as i32) < 0
    }

    /// `tcp_tsopt_ecr_before`: the ACK echoes a TSval older than that of a transmission
    /// at `tx_time`, so it acknowledges an earlier one.
    pub fn ecr_before(&self, tx_time: Time) -> bool {
        self.echoes_before(ts_ms(tx_time))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn ts_recent_only_moves_forward_and_the_echo_dates_what_is_acknowledged() {
        let mut t = Timestamps::default();
        t.start(Time(1_000 * MS));
        assert_eq!(t.recent(), 1_000);
        t.on_ack(990, 500);
        assert_eq!((t.recent(), t.ecr()), (1_000, 500), "an older TSval is not kept");
        t.on_ack(1_010, 0);
        assert_eq!(t.recent(), 1_010);
        assert!(!t.ecr_before(Time(2_000 * MS)), "no echo proves nothing");
        t.on_ack(1_020, 1_500);
        assert!(t.ecr_before(Time(1_501 * MS)) && !t.ecr_before(Time(1_500 * MS)));
        // Wrapping order: u32::MAX - 5 is before 10.
        t.on_ack(1_030, u32::MAX - 5);
        assert!(t.echoes_before(10));
    }
}
