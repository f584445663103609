//! TCP Hybla as Linux implements it (`net/ipv4/tcp_hybla.c`, Linux 6.1), after Caini and
//! Firrincieli, "TCP Hybla: a TCP enhancement for heterogeneous networks" (2004).
//!
//! Hybla makes a long-RTT flow grow as fast, in segments per second, as a flow with the
//! reference RTT `rtt0` (25 ms): with rho = srtt / rtt0 (at least 1), each ACK adds
//! 2^rho − 1 segments in slow start and rho²/cwnd in congestion avoidance. The kernel
//! keeps rho in 1/8 (`rho_3ls`), rho² in 1/128 (`rho2_7ls`) and the fractions of a
//! segment in 1/128 (`snd_cwnd_cents`); 2^(fraction of rho) comes from an 8-entry table.
//! Outside the Open state, and for reductions and undo, it is Reno.

use super::params::{apply, Kind, Param, ParamError};
use super::reno::Reno;
use super::*;
use serde::Serialize;

/// `hybla_recalc_param`: rho is kept in 1/8 (`rho_3ls`) and never below 1 (8/8).
const RHO_SHIFT: u32 = 3;
const RHO_3LS_MIN: u32 = 1 << RHO_SHIFT;
/// Increments and the accumulated fractions are in 1/128 of a segment.
const CENTS: u32 = 128;
const CENTS_SHIFT: u32 = 7;
/// `hybla_cong_avoid`: 2^rho is computed with rho capped at 16 (no shift past 31 bits).
const RHO_SHIFT_MAX: u32 = 16;
/// `hybla_fraction`: 2^(k/8) in 1/128 for k = 0..7 (128·2^(k/8), rounded).
const FRACTIONS: [u32; 8] = [128, 139, 152, 165, 181, 197, 215, 234];
/// `hybla_init`: the window starts at 2 and is clamped at 65535 segments.
const INIT_CWND: u32 = 2;
const CWND_CLAMP: u32 = 65_535;
const USEC_PER_MSEC: u64 = 1_000;

/// Hybla's module parameter (`/sys/module/tcp_hybla/parameters/rtt0`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HyblaParams {
    /// `rtt0`: the reference RTT in ms.
    pub rtt0: u32,
}

impl Default for HyblaParams {
    fn default() -> Self {
        HyblaParams {
            rtt0: 25, // tcp_hybla.c: rtt0
        }
    }
}

impl HyblaParams {
    /// 6.1 takes any int (0 divides by zero); later kernels bound it to
    /// [1, U32_MAX / USEC_PER_MSEC] (`rtt0_set`), so that rtt0 in µs fits 32 bits.
    pub const TABLE: &'static [Param<HyblaParams>] = &[Param {
        name: "rtt0",
        kernel: "tcp_hybla.c: rtt0",
        meaning: "reference RTT in ms: a flow grows per second as a Reno flow with this RTT would",
        kind: Kind::Integer,
        min: 1.0,
        max: (u32::MAX as u64 / USEC_PER_MSEC) as f64,
        field: |p| &mut p.rtt0,
    }];

    /// The defaults with named overrides applied (see `cc::params::apply`).
    pub fn from_overrides(overrides: &BTreeMap<String, f64>) -> Result<Self, ParamError> {
        apply("hybla", Self::TABLE, HyblaParams::default(), overrides)
    }
}

/// `struct hybla`.
#[derive(Clone, Debug)]
pub struct Hybla {
    p: HyblaParams,
    /// `hybla_en`: Hybla's growth applies (state Open); otherwise Reno's.
    enabled: bool,
    /// Fractions of a segment still to add, in 1/128 (`snd_cwnd_cents`).
    cwnd_cents: u32,
    /// rho's integer part, rho², rho in 1/8 and rho² in 1/128.
    rho: u32,
    rho2: u32,
    rho_3ls: u32,
    rho2_7ls: u32,
    /// The smallest `srtt_us` (8 × srtt in µs, as `tp->srtt_us`) seen.
    minrtt_us8: u64,
}

impl Hybla {
    pub fn new(p: HyblaParams) -> Self {
        Hybla { p, enabled: true, cwnd_cents: 0, rho: 0, rho2: 0, rho_3ls: 0, rho2_7ls: 0, minrtt_us8: 0 }
    }

    pub fn params(&self) -> &HyblaParams {
        &self.p
    }

    /// `tp->srtt_us` (srtt << 3). The view holds srtt itself, so the kernel's three
    /// fractional bits are lost (under 8 µs).
    fn srtt_us8(c: &ConnInfo) -> u64 {
        c.srtt_us << 3
    }

    /// `hybla_recalc_param`: rho = srtt / rtt0, in 1/8 and at least 1.
    fn recalc_param(&mut self, c: &ConnInfo) {
        let rtt0_us = self.p.rtt0 as u64 * USEC_PER_MSEC;
        // The kernel divides the u32 srtt_us; max_t(u32, ...) truncates the quotient.
        let quotient = (Self::srtt_us8(c) as u32 as u64 / rtt0_us) as u32;
        self.rho_3ls = quotient.max(RHO_3LS_MIN);
        self.rho = self.rho_3ls >> RHO_SHIFT;
        self.rho2_7ls = self.rho_3ls.wrapping_mul(self.rho_3ls) << 1;
        self.rho2 = self.rho2_7ls >> CENTS_SHIFT;
    }

    /// The increment of this ACK in 1/128 segment: 2^rho − 1 in slow start (from 2^int
    /// and the table's 2^(fraction)), rho²/cwnd in congestion avoidance.
    fn increment(&self, w: &mut Window) -> u32 {
        if w.in_slow_start() {
            let fraction = self.rho_3ls - (self.rho << RHO_SHIFT);
            let two_pow_fraction = FRACTIONS.get(fraction as usize).copied().unwrap_or(CENTS);
            (1u32 << self.rho.min(RHO_SHIFT_MAX)).wrapping_mul(two_pow_fraction).wrapping_sub(CENTS)
        } else {
            let inc = self.rho2_7ls / w.cwnd.max(1);
            if inc < CENTS {
                w.cwnd_cnt = w.cwnd_cnt.wrapping_add(1);
            }
            inc
        }
    }

    /// `hybla_cong_avoid` with Hybla enabled: whole segments now, fractions into
    /// `snd_cwnd_cents`, and at least +1 per cwnd ACKs when the increment rounds to zero.
    fn grow(&mut self, w: &mut Window) {
        let slow_start = w.in_slow_start();
        let increment = self.increment(w);
        let odd = increment % CENTS;
        w.cwnd = w.cwnd.wrapping_add(increment >> CENTS_SHIFT);
        self.cwnd_cents += odd;
        if self.cwnd_cents >= CENTS {
            // The kernel's loop "while cents >= 128: cwnd++, cents -= 128", in closed form.
            w.cwnd = w.cwnd.wrapping_add(self.cwnd_cents / CENTS);
            self.cwnd_cents %= CENTS;
            w.cwnd_cnt = 0;
        }
        if increment == 0 && odd == 0 && w.cwnd_cnt >= w.cwnd {
            w.cwnd += 1;
            w.cwnd_cnt = 0;
        }
        if slow_start {
            w.cwnd = w.cwnd.min(w.ssthresh);
        }
        w.cwnd = w.cwnd.min(w.cwnd_clamp);
    }
}

impl CongestionControl for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }

    /// `hybla_init`: rho from the handshake's srtt; the window starts at rho segments,
    /// clamped at 65535.
    fn init(&mut self, c: &ConnInfo, w: &mut Window) {
        *self = Hybla::new(self.p.clone());
        w.cwnd = INIT_CWND;
        w.cwnd_clamp = CWND_CLAMP;
        self.recalc_param(c);
        self.minrtt_us8 = Self::srtt_us8(c);
        w.cwnd = self.rho;
    }

    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        Reno.ssthresh(c, w)
    }

    /// `hybla_cong_avoid`: rho follows the smallest srtt; Reno outside Open.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        let srtt_us8 = Self::srtt_us8(c);
        if srtt_us8 < self.minrtt_us8 {
            self.recalc_param(c);
            self.minrtt_us8 = srtt_us8;
        }
        if !c.is_cwnd_limited {
            return;
        }
        if !self.enabled {
            return Reno.cong_avoid(c, w, acked);
        }
        if self.rho == 0 {
            self.recalc_param(c);
        }
        self.grow(w);
    }

    /// `hybla_state`.
    fn set_state(&mut self, _c: &ConnInfo, _w: &mut Window, new: CaState) {
        self.enabled = new == CaState::Open;
    }

    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(&self.p).unwrap_or_default()
    }

    fn internals(&self) -> Internals {
        Internals::from([
            ("rho", self.rho_3ls as f64 / RHO_3LS_MIN as f64),
            ("rho2", self.rho2_7ls as f64 / CENTS as f64),
            ("minrtt_us", (self.minrtt_us8 >> RHO_SHIFT) as f64),
            ("cwnd_cents", self.cwnd_cents as f64),
            ("hybla_en", self.enabled as u8 as f64),
        ])
    }
}

#[cfg(test)]
mod tests;
