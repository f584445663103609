//! TCP Veno as Linux implements it (`net/ipv4/tcp_veno.c`, Linux 6.1; unchanged in
//! mainline since but for the `tcp_snd_cwnd` accessors).
//!
//! Veno estimates the backlog N = cwnd·(rtt − baseRTT)/rtt with Vegas's RTT filters
//! (here `diff` = 2N, fixed point with one fractional bit) and uses it to tell
//! congestion losses from random ones. Below `beta` = 3 segments the path is
//! "non-congestive": cwnd grows as Reno's and a loss cuts it by 1/5; at or above, cwnd
//! grows by one every other RTT and a loss halves it. Unlike Vegas, the per-"round"
//! minimum RTT is cleared on every ACK (`cong_avoid`), and the sample count is never
//! cleared, so once three samples have been seen every ACK is judged on its own RTT.
//! Veno has no module parameters.

use super::reno::{cong_avoid_ai, slow_start, Reno};
use super::vegas::{MIN_RTT_SAMPLES, RTT_UNSET};
use super::*;

/// `V_PARAM_SHIFT`: `diff` and `beta` carry one fractional bit.
const V_PARAM_SHIFT: u32 = 1;
/// `beta`: the backlog (3 segments, ×2) from which the path counts as congested.
const BETA: u32 = 3 << V_PARAM_SHIFT;
/// `tcp_veno_cong_avoid`, `tcp_veno_ssthresh`: the window floor.
const MIN_CWND: u32 = 2;
/// `tcp_veno_ssthresh`: a non-congestive loss keeps 4/5 of cwnd.
const NON_CONGESTIVE_KEEP_NUM: u32 = 4;
const NON_CONGESTIVE_KEEP_DEN: u32 = 5;

/// `struct veno`. RTTs are µs + 1, as Vegas keeps them.
#[derive(Clone, Debug, Default)]
pub struct Veno {
    /// `doing_veno_now`: on in the Open state.
    doing_veno_now: bool,
    /// `cntrtt`: RTT samples seen (a `u16`; the kernel never clears it).
    cnt_rtt: u16,
    /// `minrtt`: the smallest sample since the last `cong_avoid`.
    min_rtt: u32,
    /// `basertt`: the smallest sample since the last (re)start.
    base_rtt: u32,
    /// `inc`: in the congestive state, whether the next full window ACKed adds one.
    inc: bool,
    /// `diff`: twice the backlog N, from the last Veno calculation.
    diff: u32,
}

impl Veno {
    pub fn new() -> Self {
        Veno::default()
    }

    /// `veno_enable`.
    fn enable(&mut self) {
        self.doing_veno_now = true;
        self.min_rtt = RTT_UNSET;
    }

    /// `tcp_veno_init`.
    fn start(&mut self) {
        self.base_rtt = RTT_UNSET;
        self.inc = true;
        self.enable();
    }

    /// The Veno part of `tcp_veno_cong_avoid`: the backlog, then growth by state.
    fn grow(&mut self, w: &mut Window, acked: u32) {
        let rtt = self.min_rtt;
        // target = cwnd·baseRTT/rtt with one fractional bit; diff = 2·cwnd − target.
        let target_cwnd = ((w.cwnd as u64 * self.base_rtt as u64) << V_PARAM_SHIFT) / rtt as u64;
        self.diff = (w.cwnd << V_PARAM_SHIFT).wrapping_sub(target_cwnd as u32);

        let mut acked = acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked);
        }
        if acked != 0 {
            if self.diff < BETA {
                // Non-congestive: Reno's +1 per window.
                let ai_w = w.cwnd;
                cong_avoid_ai(w, ai_w, acked);
            } else {
                self.congestive_increase(w, acked);
            }
        }
        if w.cwnd < MIN_CWND {
            w.cwnd = MIN_CWND;
        } else if w.cwnd > w.cwnd_clamp {
            w.cwnd = w.cwnd_clamp;
        }
    }

    /// Congestive state: +1 on every other full window ACKed.
    fn congestive_increase(&mut self, w: &mut Window, acked: u32) {
        if w.cwnd_cnt >= w.cwnd {
            if self.inc && w.cwnd < w.cwnd_clamp {
                w.cwnd += 1;
                self.inc = false;
            } else {
                self.inc = true;
            }
            w.cwnd_cnt = 0;
        } else {
            w.cwnd_cnt = w.cwnd_cnt.wrapping_add(acked);
        }
    }
}

impl CongestionControl for Veno {
    fn name(&self) -> &'static str {
        "veno"
    }

    /// `tcp_veno_init`.
    fn init(&mut self, _c: &ConnInfo, _w: &mut Window) {
        self.start();
    }

    /// `tcp_veno_ssthresh`: cut by 1/5 when the backlog was small, by 1/2 otherwise.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        if self.diff < BETA {
            (w.cwnd.wrapping_mul(NON_CONGESTIVE_KEEP_NUM) / NON_CONGESTIVE_KEEP_DEN).max(MIN_CWND)
        } else {
            (w.cwnd >> 1).max(MIN_CWND)
        }
    }

    /// `tcp_veno_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if !self.doing_veno_now {
            return Reno.cong_avoid(c, w, acked);
        }
        if !c.is_cwnd_limited {
            return;
        }
        if self.cnt_rtt <= MIN_RTT_SAMPLES {
            Reno.cong_avoid(c, w, acked);
        } else {
            self.grow(w, acked);
        }
        self.min_rtt = RTT_UNSET;
    }

    /// `tcp_veno_pkts_acked`: Vegas's filters (+1 µs so that no RTT is 0).
    fn pkts_acked(&mut self, _c: &ConnInfo, _w: &mut Window, s: &AckSample) {
        if s.rtt_us < 0 {
            return;
        }
        let vrtt = (s.rtt_us as u32).wrapping_add(1);
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
    }

    /// `tcp_veno_state`.
    fn set_state(&mut self, _c: &ConnInfo, _w: &mut Window, new: CaState) {
        if new == CaState::Open {
            self.enable();
        } else {
            self.doing_veno_now = false;
        }
    }

    /// `tcp_veno_cwnd_event`: a restart after idle starts over.
    fn cwnd_event(&mut self, _c: &ConnInfo, _w: &mut Window, ev: CaEvent) {
        if matches!(ev, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.start();
        }
    }

    /// `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        super::reno::undo_cwnd(c, w)
    }

    fn internals(&self) -> Internals {
        let rtt = |x: u32| if x == RTT_UNSET { 0.0 } else { x as f64 };
        Internals::from([
            ("backlog", self.diff as f64 / (1u32 << V_PARAM_SHIFT) as f64),
            ("congestive", (self.diff >= BETA) as u8 as f64),
            ("base_rtt_us", rtt(self.base_rtt)),
            ("cnt_rtt", self.cnt_rtt as f64),
            ("inc", self.inc as u8 as f64),
            ("doing_veno_now", self.doing_veno_now as u8 as f64),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(cwnd: u32, ssthresh: u32) -> (Veno, ConnInfo, Window) {
        let c = ConnInfo { is_cwnd_limited: true, ..ConnInfo::default() };
        let mut w = Window::new(cwnd);
        w.ssthresh = ssthresh;
        let mut cc = Veno::new();
        cc.init(&c, &mut w);
        (cc, c, w)
    }

    fn sample(cc: &mut Veno, c: &ConnInfo, w: &mut Window, rtt_us: i64) {
        cc.pkts_acked(c, w, &AckSample { pkts_acked: 1, rtt_us, in_flight: w.cwnd });
    }

    /// A flow whose baseRTT is 40 000 (samples of 39 999 µs + 1), with three samples.
    fn with_base(cwnd: u32, ssthresh: u32) -> (Veno, ConnInfo, Window) {
        let (mut cc, c, mut w) = flow(cwnd, ssthresh);
        for _ in 0..3 {
            sample(&mut cc, &c, &mut w, 39_999);
        }
        // As the last ACK's `cong_avoid` leaves it.
        cc.min_rtt = RTT_UNSET;
        (cc, c, w)
    }

    /// One ACK of one segment with an RTT of `rtt_us` + 1.
    fn ack(cc: &mut Veno, c: &ConnInfo, w: &mut Window, rtt_us: i64) {
        sample(cc, c, w, rtt_us);
        cc.cong_avoid(c, w, 1);
    }

    #[test]
    fn small_backlog_grows_as_reno() {
        let (mut cc, c, mut w) = with_base(30, 30);
        // rtt 42 000: target = 2·30·40000/42000 = 57 (57.14), diff = 60 − 57 = 3 < 6.
        for _ in 0..29 {
            ack(&mut cc, &c, &mut w, 41_999);
        }
        assert_eq!((w.cwnd, cc.diff), (30, 3));
        ack(&mut cc, &c, &mut w, 41_999);
        assert_eq!(w.cwnd, 31, "+1 after a full window of 30 ACKs");
    }

    #[test]
    fn large_backlog_grows_every_other_window() {
        let (mut cc, c, mut w) = with_base(30, 30);
        // rtt 50 000: target = 2·30·40000/50000 = 48, diff = 60 − 48 = 12 ≥ 6 (N = 6).
        // cwnd_cnt reaches 30 after 30 ACKs, the 31st adds one (inc was 1); then 31 ACKs
        // count to 31, the 63rd only flips inc, 31 more count, the 95th adds one.
        let mut grew_at = Vec::new();
        for n in 1..=95 {
            let before = w.cwnd;
            ack(&mut cc, &c, &mut w, 49_999);
            if w.cwnd > before {
                grew_at.push(n);
            }
        }
        assert_eq!(grew_at, [31, 95]);
        // The 95th ACK judged cwnd 31: 62 − 2·31·40000/50000 = 62 − 49 = 13.
        assert_eq!((w.cwnd, cc.diff), (32, 13));
    }

    #[test]
    fn the_loss_cut_depends_on_the_backlog() {
        let (mut cc, c, mut w) = with_base(30, 30);
        ack(&mut cc, &c, &mut w, 41_999); // diff 3
        assert_eq!(cc.ssthresh(&c, &w), 24, "non-congestive: 30·4/5");
        ack(&mut cc, &c, &mut w, 49_999); // diff 12
        assert_eq!(cc.ssthresh(&c, &w), 15, "congestive: 30/2");
        // Floors: 2·4/5 = 1 → 2, and 3/2 = 1 → 2.
        assert_eq!(cc.ssthresh(&c, &Window::new(3)), 2);
        cc.diff = 0;
        assert_eq!(cc.ssthresh(&c, &Window::new(2)), 2);
        // Before any Veno calculation diff is 0: a 1/5 cut.
        let (mut fresh, c, w) = flow(100, 100);
        assert_eq!(fresh.ssthresh(&c, &w), 80);
    }

    #[test]
    fn slow_start_spends_the_rest_on_avoidance() {
        let (mut cc, c, mut w) = with_base(10, 12);
        sample(&mut cc, &c, &mut w, 39_999);
        cc.cong_avoid(&c, &mut w, 5);
        // 10 + 5 capped at 12, 3 left for the non-congestive AI (diff = 20 − 2·10·40000/40000 = 0).
        assert_eq!((w.cwnd, w.cwnd_cnt, cc.diff), (12, 3, 0));
        sample(&mut cc, &c, &mut w, 39_999);
        w.ssthresh = 100;
        cc.cong_avoid(&c, &mut w, 4);
        assert_eq!((w.cwnd, w.cwnd_cnt), (16, 3), "all 4 spent in slow start");
    }

    #[test]
    fn every_ack_is_judged_on_its_own_rtt() {
        let (mut cc, c, mut w) = with_base(30, 30);
        ack(&mut cc, &c, &mut w, 49_999);
        assert_eq!(cc.diff, 12);
        assert_eq!(cc.min_rtt, RTT_UNSET, "cleared by cong_avoid");
        ack(&mut cc, &c, &mut w, 39_999);
        assert_eq!(cc.diff, 0);
        // An ACK without a sample: rtt = 0x7fffffff, target 0, diff = 2·cwnd.
        cc.cong_avoid(&c, &mut w, 1);
        assert_eq!(cc.diff, 60);
        // The sample count is never cleared, not even by a fresh Open.
        cc.set_state(&c, &mut w, CaState::Recovery);
        cc.set_state(&c, &mut w, CaState::Open);
        assert_eq!(cc.cnt_rtt, 5);
    }

    #[test]
    fn too_few_samples_or_not_open_behave_as_reno() {
        let (mut cc, c, mut w) = flow(20, 20);
        sample(&mut cc, &c, &mut w, 99_999);
        sample(&mut cc, &c, &mut w, 99_999);
        w.cwnd_cnt = 19;
        cc.cong_avoid(&c, &mut w, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt, cc.diff), (21, 0, 0));

        let (mut cc, c, mut w) = with_base(20, 20);
        cc.set_state(&c, &mut w, CaState::Loss);
        w.cwnd_cnt = 19;
        sample(&mut cc, &c, &mut w, 99_999);
        cc.cong_avoid(&c, &mut w, 1);
        assert_eq!((w.cwnd, cc.diff), (21, 0));
    }

    #[test]
    fn not_cwnd_limited_keeps_the_window_and_the_sample() {
        let (mut cc, mut c, mut w) = with_base(30, 30);
        c.is_cwnd_limited = false;
        sample(&mut cc, &c, &mut w, 49_999);
        cc.cong_avoid(&c, &mut w, 10);
        assert_eq!((w.cwnd, w.cwnd_cnt, cc.min_rtt), (30, 0, 50_000));
    }

    #[test]
    fn a_restart_forgets_base_rtt_and_rearms_inc() {
        let (mut cc, c, mut w) = with_base(30, 30);
        cc.inc = false;
        cc.cwnd_event(&c, &mut w, CaEvent::TxStart);
        assert_eq!((cc.base_rtt, cc.min_rtt, cc.inc, cc.cnt_rtt), (RTT_UNSET, RTT_UNSET, true, 3));
    }

    #[test]
    fn undo_restores_the_prior_window_and_there_are_no_parameters() {
        let (mut cc, c, w) = flow(10, 10);
        assert_eq!(cc.undo_cwnd(&ConnInfo { prior_cwnd: 40, ..c }, &w), 40);
        let over = BTreeMap::from([("beta".to_string(), 3.0)]);
        let e = Algorithm::Veno.instance(&over, crate::base::rng::stream(1, "cc", 0)).err().unwrap();
        assert_eq!(e.to_string(), "beta: veno takes no parameters");
    }
}
