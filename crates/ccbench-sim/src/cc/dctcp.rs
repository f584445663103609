//! DCTCP as Linux implements it (`net/ipv4/tcp_dctcp.c`, Linux 6.1): Reno's growth,
//! and a reduction by the fraction of ECN-marked data instead of by half.
//!
//! Once per window of data (`next_seq`) the sender folds the fraction F of segments
//! delivered with ECN-Echo into α = (1 − g)·α + g·F, with g = 2^−`dctcp_shift_g` and α
//! in 1/1024 (`DCTCP_MAX_ALPHA`); on an echo the stack enters CWR and takes ssthresh =
//! cwnd·(1 − α/2). A loss halves the window, as Reno's does. The receiver echoes CE per
//! segment (`dctcp_ece_ack_update`, the receiver's ECN-low mode), and the algorithm
//! asks for ECN whatever the flow's `ecn` says (`TCP_CONG_NEEDS_ECN`).

use super::params::{apply, Kind, Param, ParamError};
use super::reno::Reno;
use super::*;
use serde::Serialize;

/// `DCTCP_MAX_ALPHA`: α is held in 1/1024.
const MAX_ALPHA: u32 = 1024;
/// `dctcp_ssthresh` shifts cwnd·α by 11: α/1024 halved.
const ALPHA_REDUCTION_SHIFT: u32 = 11;
/// `dctcp_shift_g_set`: `param_set_uint_minmax(val, kp, 0, 10)`.
const MAX_SHIFT_G: u32 = 10;

/// DCTCP's module parameters (`/sys/module/tcp_dctcp/parameters/*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DctcpParams {
    /// `dctcp_shift_g`: the gain g of α's moving average is 2^−shift_g.
    pub dctcp_shift_g: u32,
    /// `dctcp_alpha_on_init`: α at the start, in 1/1024.
    pub dctcp_alpha_on_init: u32,
}

impl Default for DctcpParams {
    /// The kernel's module defaults.
    fn default() -> Self {
        DctcpParams {
            dctcp_shift_g: 4,               // tcp_dctcp.c: dctcp_shift_g (g = 1/16)
            dctcp_alpha_on_init: MAX_ALPHA, // tcp_dctcp.c: dctcp_alpha_on_init
        }
    }
}

impl DctcpParams {
    pub const TABLE: &'static [Param<DctcpParams>] = &[
        Param {
            name: "dctcp_shift_g",
            kernel: "tcp_dctcp.c: dctcp_shift_g",
            meaning: "alpha's moving-average gain g = 2^-dctcp_shift_g (4: 1/16); the module takes 0 to 10",
            kind: Kind::Integer,
            min: 0.0,
            max: MAX_SHIFT_G as f64,
            field: |p| &mut p.dctcp_shift_g,
        },
        Param {
            name: "dctcp_alpha_on_init",
            kernel: "tcp_dctcp.c: dctcp_alpha_on_init",
            meaning:
                "alpha at the start in 1/1024 (1024: the first mark halves the window); dctcp_init caps it at 1024",
            kind: Kind::Integer,
            min: 0.0,
            max: MAX_ALPHA as f64,
            field: |p| &mut p.dctcp_alpha_on_init,
        },
    ];

    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("dctcp", Self::TABLE, Self::default(), overrides)
    }
}

/// `struct dctcp` (the sender's part: the receiver keeps `ce_state` and `prior_rcv_nxt`).
#[derive(Clone, Debug)]
pub struct Dctcp {
    p: DctcpParams,
    /// `dctcp_alpha`, in 1/1024.
    alpha: u32,
    /// `next_seq`: α is updated when `snd_una` reaches it (in segments).
    next_seq: u64,
    /// `old_delivered`, `old_delivered_ce`: the counts when the window began (u32, as
    /// the kernel's `tp->delivered`).
    old_delivered: u32,
    old_delivered_ce: u32,
    /// `loss_cwnd`: cwnd before the last reduction, which an undo restores.
    loss_cwnd: u32,
}

impl Dctcp {
    pub fn new(p: DctcpParams) -> Self {
        let alpha = p.dctcp_alpha_on_init.min(MAX_ALPHA);
        Dctcp { p, alpha, next_seq: 0, old_delivered: 0, old_delivered_ce: 0, loss_cwnd: 0 }
    }

    /// `dctcp_reset`: a new observation window starts at `snd_nxt`.
    fn reset(&mut self, c: &ConnInfo) {
        self.next_seq = c.snd_nxt;
        self.old_delivered = c.delivered as u32;
        self.old_delivered_ce = c.delivered_ce as u32;
    }

    /// `dctcp_react_to_loss`: halve, as Reno.
    fn react_to_loss(&mut self, w: &mut Window) {
        self.loss_cwnd = w.cwnd;
        w.ssthresh = (w.cwnd >> 1).max(MIN_SSTHRESH);
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    /// `dctcp_init`, on a connection that negotiated ECN (it always does: see `needs_ecn`).
    fn init(&mut self, c: &ConnInfo, _w: &mut Window) {
        self.alpha = self.p.dctcp_alpha_on_init.min(MAX_ALPHA);
        self.loss_cwnd = 0;
        self.reset(c);
    }

    /// `dctcp_ssthresh`: cwnd·(1 − α/2), at least 2.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        self.loss_cwnd = w.cwnd;
        let cut = ((w.cwnd as u64 * self.alpha as u64) >> ALPHA_REDUCTION_SHIFT) as u32;
        (w.cwnd - cut).max(MIN_SSTHRESH)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        Reno.cong_avoid(c, w, acked);
    }

    /// `dctcp_update_alpha`: once `snd_una` passes the window's end, α moves toward the
    /// window's marked fraction: α −= max(α >> g, 1 if α > 0), then + F·2^(10 − g).
    fn in_ack_event(&mut self, c: &ConnInfo, _w: &mut Window, _flags: u32) {
        if c.snd_una < self.next_seq {
            return;
        }
        let mut delivered_ce = (c.delivered_ce as u32).wrapping_sub(self.old_delivered_ce);
        let mut alpha = self.alpha;
        // `min_not_zero(alpha, alpha >> g)`: a small α still decays, by itself at most.
        let decay = alpha >> self.p.dctcp_shift_g;
        alpha -= if decay == 0 { alpha } else { decay.min(alpha) };
        if delivered_ce != 0 {
            let delivered = (c.delivered as u32).wrapping_sub(self.old_delivered);
            delivered_ce <<= 10 - self.p.dctcp_shift_g;
            delivered_ce /= delivered.max(1);
            alpha = (alpha + delivered_ce).min(MAX_ALPHA);
        }
        self.alpha = alpha;
        self.reset(c);
    }

    fn has_in_ack_event(&self) -> bool {
        true
    }

    /// `dctcp_state`: entering Recovery halves (after `ssthresh`, which the stack called
    /// first, set α's reduction).
    fn set_state(&mut self, c: &ConnInfo, w: &mut Window, new: CaState) {
        if new == CaState::Recovery && new != c.ca_state {
            self.react_to_loss(w);
        }
    }

    /// `dctcp_cwnd_event`: an RTO halves too (the CE events are the receiver's).
    fn cwnd_event(&mut self, _c: &ConnInfo, w: &mut Window, ev: CaEvent) {
        if ev == CaEvent::Loss {
            self.react_to_loss(w);
        }
    }

    /// `dctcp_cwnd_undo`.
    fn undo_cwnd(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        w.cwnd.max(self.loss_cwnd)
    }

    fn needs_ecn(&self) -> bool {
        true
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).expect("plain fields serialize")
    }

    /// α as a fraction (`dctcp_get_info`'s `dctcp_alpha` / 1024).
    fn internals(&self) -> Internals {
        Internals::from([("dctcp_alpha", self.alpha as f64 / MAX_ALPHA as f64)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(snd_una: u64, snd_nxt: u64, delivered: u64, delivered_ce: u64) -> ConnInfo {
        ConnInfo { snd_una, snd_nxt, delivered, delivered_ce, is_cwnd_limited: true, ..ConnInfo::default() }
    }

    /// A DCTCP whose first window ends at `snd_nxt` = 100, with α = `alpha`/1024.
    fn dctcp_at(alpha: u32) -> Dctcp {
        let p = DctcpParams { dctcp_alpha_on_init: alpha, ..DctcpParams::default() };
        let mut d = Dctcp::new(p);
        d.init(&conn(0, 100, 0, 0), &mut Window::new(10));
        d
    }

    #[test]
    fn alpha_is_a_moving_average_of_the_marked_fraction_with_gain_one_sixteenth() {
        let mut d = dctcp_at(0);
        let mut w = Window::new(100);
        // A window of 100 delivered, 25 marked: α = 0 − 0 (α 0 decays by itself) +
        // 25·2^6/100 = 16 (= 1/16 · 256: g·F in 1/1024 with F = 1/4).
        d.in_ack_event(&conn(100, 200, 100, 25), &mut w, 0);
        assert_eq!(d.alpha, 16);
        // Next window all marked: 16 − (16 >> 4 = 1) + 100·64/100 = 79.
        d.in_ack_event(&conn(200, 300, 200, 125), &mut w, 0);
        assert_eq!(d.alpha, 79);
        // No marks: 79 − (79 >> 4 = 4) = 75.
        d.in_ack_event(&conn(300, 400, 300, 125), &mut w, 0);
        assert_eq!(d.alpha, 75);
    }

    #[test]
    fn alpha_moves_only_once_a_window_has_been_acknowledged() {
        let mut d = dctcp_at(512);
        let mut w = Window::new(100);
        d.in_ack_event(&conn(99, 150, 99, 99), &mut w, 0);
        assert_eq!(d.alpha, 512, "snd_una 99 < next_seq 100: the window is still open");
        // 512 − 32 + 99·64/99 = 544.
        d.in_ack_event(&conn(100, 150, 99, 99), &mut w, 0);
        assert_eq!(d.alpha, 544);
        assert_eq!(d.next_seq, 150);
    }

    #[test]
    fn a_small_alpha_decays_to_zero_and_a_full_one_stays_at_1024() {
        let mut d = dctcp_at(15);
        let mut w = Window::new(10);
        // 15 >> 4 = 0: min_not_zero takes α itself, so α drops to 0.
        d.in_ack_event(&conn(100, 200, 100, 0), &mut w, 0);
        assert_eq!(d.alpha, 0);
        let mut d = dctcp_at(1024);
        // 1024 − 64 + 64 = 1024 when every segment is marked.
        d.in_ack_event(&conn(100, 200, 100, 100), &mut w, 0);
        assert_eq!(d.alpha, 1024);
    }

    #[test]
    fn ssthresh_cuts_by_half_alpha_and_a_loss_by_half() {
        let c = conn(0, 0, 0, 0);
        let w = Window::new(100);
        // α = 1/4: 100 − (100·256 >> 11 = 12) = 88.
        assert_eq!(dctcp_at(256).ssthresh(&c, &w), 88);
        // α = 1: 100 − 50 = 50; α = 0: no cut.
        assert_eq!(dctcp_at(1024).ssthresh(&c, &w), 50);
        assert_eq!(dctcp_at(0).ssthresh(&c, &w), 100);
        assert_eq!(dctcp_at(1024).ssthresh(&c, &Window::new(3)), 2);
        // Entering Recovery halves after ssthresh, whatever α; an undo restores cwnd.
        let mut d = dctcp_at(0);
        let mut w = Window::new(100);
        w.ssthresh = d.ssthresh(&c, &w);
        d.set_state(&c, &mut w, CaState::Recovery);
        assert_eq!(w.ssthresh, 50);
        w.cwnd = 50;
        assert_eq!(d.undo_cwnd(&c, &w), 100);
        // An RTO halves too; CWR (an echo) keeps α's cut.
        let mut w = Window::new(40);
        d.cwnd_event(&c, &mut w, CaEvent::Loss);
        assert_eq!(w.ssthresh, 20);
        let mut w = Window::new(40);
        w.ssthresh = 35;
        d.set_state(&c, &mut w, CaState::Cwr);
        assert_eq!(w.ssthresh, 35);
    }

    #[test]
    fn growth_is_renos() {
        let mut d = dctcp_at(0);
        let c = conn(0, 0, 0, 0);
        let mut w = Window::new(10);
        d.cong_avoid(&c, &mut w, 5);
        assert_eq!(w.cwnd, 15, "slow start: +1 per segment acknowledged");
        w.ssthresh = 15;
        d.cong_avoid(&c, &mut w, 15);
        assert_eq!(w.cwnd, 16, "congestion avoidance: +1 per window");
    }

    #[test]
    fn parameters_override_by_name_within_the_modules_bounds() {
        let p = DctcpParams::from_overrides(&BTreeMap::from([("dctcp_shift_g".to_string(), 2.0)])).unwrap();
        assert_eq!(p.dctcp_shift_g, 2);
        assert!(DctcpParams::from_overrides(&BTreeMap::from([("dctcp_shift_g".to_string(), 11.0)])).is_err());
        assert!(DctcpParams::from_overrides(&BTreeMap::from([("g".to_string(), 1.0)])).is_err());
    }
}
