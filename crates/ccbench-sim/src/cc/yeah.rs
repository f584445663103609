//! YeAH-TCP as Linux implements it (`net/ipv4/tcp_yeah.c`, Linux 6.1; unchanged in
//! mainline since but for the `tcp_snd_cwnd` accessors and `WRITE_ONCE`).
//!
//! YeAH runs on Vegas's RTT bookkeeping ([`VegasState`], `struct vegas` first in
//! `struct yeah`) and shares Vegas's `init`, `pkts_acked`, `set_state` and `cwnd_event`.
//! Each round trip it estimates the segments queued, Q = cwnd·(rtt − baseRTT)/rtt. While
//! Q ≤ 80 and the queueing delay is at most baseRTT/8 it is in "fast" mode and grows as
//! Scalable TCP (+1 per min(cwnd, 100) segments ACKed); otherwise it is in "slow" mode,
//! grows as Reno, and when Q > 80 drains the queue at once (cwnd −= min(Q, cwnd/2), not
//! below `reno_count`, an estimate of a competing Reno flow's window). On a loss it
//! removes only the queue (Q, between cwnd/8 and cwnd/2) unless it has been in slow
//! mode for 16 rounds, when it halves as Reno. Its constants are not module parameters.

use super::reno::{cong_avoid_ai, slow_start, undo_cwnd};
use super::vegas::{VegasState, MIN_RTT_SAMPLES};
use super::*;

/// `TCP_YEAH_ALPHA`: segments queued at the bottleneck above which YeAH decongests.
const ALPHA: u32 = 80;
/// `TCP_YEAH_GAMMA`: fraction (1/GAMMA) of the queue removed per RTT.
const GAMMA: u32 = 1;
/// `TCP_YEAH_DELTA`: a loss removes at least cwnd >> DELTA.
const DELTA: u32 = 3;
/// `TCP_YEAH_EPSILON`: decongestion removes at most cwnd >> EPSILON.
const EPSILON: u32 = 1;
/// `TCP_YEAH_PHY`: queueing delay above baseRTT/PHY means slow mode.
const PHY: u32 = 8;
/// `TCP_YEAH_RHO`: slow rounds in a row after which a loss halves cwnd as Reno.
const RHO: u32 = 16;
/// `TCP_YEAH_ZETA`: fast rounds after which `reno_count` is reset.
const ZETA: u32 = 50;
/// `TCP_SCALABLE_AI_CNT`: fast mode adds 1 per this many segments (at most).
const SCALABLE_AI_CNT: u32 = 100;
/// `tcp_yeah_cong_avoid`: the cap of `doing_reno_now`.
const DOING_RENO_MAX: u32 = 0xff_ffff;
/// `tcp_yeah_init`: cwnd_clamp so that the arithmetic cannot overflow.
const CWND_CLAMP_MAX: u32 = u32::MAX / 128;
/// `reno_count`'s floor and initial value; also the ssthresh floor.
const MIN_RENO_COUNT: u32 = 2;

/// `struct yeah`.
#[derive(Clone, Debug, Default)]
pub struct Yeah {
    v: VegasState,
    /// `lastQ`: the queue estimated at the last round's end (segments).
    last_q: u32,
    /// `doing_reno_now`: slow-mode rounds in a row (0 = fast mode).
    doing_reno_now: u32,
    /// `reno_count`: estimated window of a competing Reno flow.
    reno_count: u32,
    /// `fast_count`: fast-mode rounds since the last loss or reset.
    fast_count: u32,
}

impl Yeah {
    pub fn new() -> Self {
        Yeah::default()
    }

    /// The per-round part of `tcp_yeah_cong_avoid`, with enough RTT samples.
    fn judge_round(&mut self, w: &mut Window) {
        let rtt = self.v.min_rtt;
        let base = self.v.base_rtt;
        let queue_delay = rtt.wrapping_sub(base);
        let queue = (w.cwnd as u64 * queue_delay as u64 / rtt as u64) as u32;

        if queue > ALPHA || queue_delay > base / PHY {
            if queue > ALPHA && w.cwnd > self.reno_count {
                // Decongest: drop the queue at once, not below the Reno estimate.
                let reduction = (queue / GAMMA).min(w.cwnd >> EPSILON);
                w.cwnd = (w.cwnd - reduction).max(self.reno_count);
                w.ssthresh = w.cwnd;
            }
            if self.reno_count <= MIN_RENO_COUNT {
                self.reno_count = (w.cwnd >> 1).max(MIN_RENO_COUNT);
            } else {
                self.reno_count += 1;
            }
            self.doing_reno_now = (self.doing_reno_now + 1).min(DOING_RENO_MAX);
        } else {
            self.fast_count += 1;
            if self.fast_count > ZETA {
                self.reno_count = MIN_RENO_COUNT;
                self.fast_count = 0;
            }
            self.doing_reno_now = 0;
        }
        self.last_q = queue;
    }

    /// The end of a round: judge it, then record the next one's edges.
    fn end_round(&mut self, c: &ConnInfo, w: &mut Window) {
        if self.v.cnt_rtt > MIN_RTT_SAMPLES {
            self.judge_round(w);
        }
        self.v.beg_snd_una = self.v.beg_snd_nxt;
        self.v.beg_snd_nxt = c.snd_nxt;
        self.v.beg_snd_cwnd = w.cwnd;
        self.v.clear_samples();
    }
}

impl CongestionControl for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }

    /// `tcp_yeah_init`.
    fn init(&mut self, c: &ConnInfo, w: &mut Window) {
        self.v.init(c);
        self.doing_reno_now = 0;
        self.last_q = 0;
        self.reno_count = MIN_RENO_COUNT;
        w.cwnd_clamp = w.cwnd_clamp.min(CWND_CLAMP_MAX);
    }

    /// `tcp_yeah_ssthresh`: remove the queue (at least cwnd/8, at most cwnd/2), or half
    /// the window after RHO slow rounds in a row.
    fn ssthresh(&mut self, _c: &ConnInfo, w: &Window) -> u32 {
        let half = (w.cwnd >> 1).max(MIN_RENO_COUNT);
        let reduction = if self.doing_reno_now < RHO { self.last_q.min(half).max(w.cwnd >> DELTA) } else { half };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(MIN_RENO_COUNT);
        // `max_t(int, ...)`: a negative difference gives the floor.
        (w.cwnd.wrapping_sub(reduction) as i32).max(MIN_RENO_COUNT as i32) as u32
    }

    /// `tcp_yeah_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnInfo, w: &mut Window, acked: u32) {
        if !c.is_cwnd_limited {
            return;
        }
        let mut acked = acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked);
        }
        if acked != 0 {
            // Fast mode: Scalable's +1 per min(cwnd, 100); slow mode: Reno's.
            let ai_w = if self.doing_reno_now == 0 { w.cwnd.min(SCALABLE_AI_CNT) } else { w.cwnd };
            cong_avoid_ai(w, ai_w, acked);
        }
        if self.v.round_ended(c) {
            self.end_round(c, w);
        }
    }

    /// `tcp_vegas_pkts_acked`.
    fn pkts_acked(&mut self, _c: &ConnInfo, _w: &mut Window, s: &AckSample) {
        self.v.pkts_acked(s);
    }

    /// `tcp_vegas_state`.
    fn set_state(&mut self, c: &ConnInfo, _w: &mut Window, new: CaState) {
        self.v.set_state(c, new);
    }

    /// `tcp_vegas_cwnd_event`.
    fn cwnd_event(&mut self, c: &ConnInfo, _w: &mut Window, ev: CaEvent) {
        self.v.cwnd_event(c, ev);
    }

    /// `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, c: &ConnInfo, w: &Window) -> u32 {
        undo_cwnd(c, w)
    }

    fn internals(&self) -> Internals {
        let mut out = Internals::from([
            ("queue", self.last_q as f64),
            ("fast_mode", (self.doing_reno_now == 0) as u8 as f64),
            ("doing_reno_now", self.doing_reno_now as f64),
            ("reno_count", self.reno_count as f64),
            ("fast_count", self.fast_count as f64),
        ]);
        self.v.internals(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::vegas::RTT_UNSET;
    use super::*;

    fn flow(cwnd: u32, ssthresh: u32) -> (Yeah, ConnInfo, Window) {
        let c = ConnInfo { is_cwnd_limited: true, ..ConnInfo::default() };
        let mut w = Window::new(cwnd);
        w.ssthresh = ssthresh;
        let mut cc = Yeah::new();
        cc.init(&c, &mut w);
        (cc, c, w)
    }

    /// One round: three samples of `rtt_us` + 1, then an ACK of `acked` segments that
    /// passes the round's right edge.
    fn round(cc: &mut Yeah, c: &mut ConnInfo, w: &mut Window, rtt_us: i64, acked: u32) {
        for _ in 0..3 {
            cc.pkts_acked(c, w, &AckSample { pkts_acked: 1, rtt_us, in_flight: w.cwnd });
        }
        c.snd_una = c.snd_nxt + 1;
        c.snd_nxt = c.snd_una + w.cwnd as u64;
        cc.cong_avoid(c, w, acked);
    }

    /// In avoidance at `cwnd` with baseRTT 40 000 and a fast first round behind it.
    fn settled(cwnd: u32) -> (Yeah, ConnInfo, Window) {
        let (mut cc, mut c, mut w) = flow(cwnd, cwnd);
        round(&mut cc, &mut c, &mut w, 39_999, 0);
        assert_eq!((cc.v.base_rtt, cc.doing_reno_now, cc.fast_count, cc.last_q), (40_000, 0, 1, 0));
        (cc, c, w)
    }

    #[test]
    fn fast_mode_grows_as_scalable_and_slow_mode_as_reno() {
        // cwnd 200, fast: +1 per min(200, 100) = 100 segments, so +2 per window.
        let (mut cc, c, mut w) = settled(200);
        cc.cong_avoid(&c, &mut w, 200);
        assert_eq!(w.cwnd, 202);
        // Slow mode: +1 per cwnd = 202 segments.
        cc.doing_reno_now = 1;
        cc.cong_avoid(&c, &mut w, 201);
        assert_eq!((w.cwnd, w.cwnd_cnt), (202, 201));
        cc.cong_avoid(&c, &mut w, 1);
        assert_eq!((w.cwnd, w.cwnd_cnt), (203, 0));
        // Fast mode below 100 segments is Reno's rate: cwnd 50 needs 50.
        let (mut cc, c, mut w) = settled(50);
        cc.cong_avoid(&c, &mut w, 50);
        assert_eq!(w.cwnd, 51);
    }

    #[test]
    fn a_queue_above_alpha_is_drained_in_one_round() {
        let (mut cc, mut c, mut w) = settled(1000);
        // rtt 44 000: Q = 1000·4000/44000 = 90 (90.9) > 80: cwnd −= min(90, 500) → 910,
        // ssthresh 910; reno_count was 2: max(910/2, 2) = 455; one slow round.
        round(&mut cc, &mut c, &mut w, 43_999, 0);
        assert_eq!((w.cwnd, w.ssthresh, cc.last_q), (910, 910, 90));
        assert_eq!((cc.reno_count, cc.doing_reno_now, cc.fast_count), (455, 1, 1));
        // Still queued: Q = 910·4000/44000 = 82 (82.7): 910 − 82 = 828; reno_count + 1.
        round(&mut cc, &mut c, &mut w, 43_999, 0);
        assert_eq!((w.cwnd, cc.last_q, cc.reno_count, cc.doing_reno_now), (828, 82, 456, 2));
        // The Reno estimate bounds the cut: with reno_count 800, 828 − 75 → 800.
        cc.reno_count = 800;
        round(&mut cc, &mut c, &mut w, 43_999, 0);
        // Q = 828·4000/44000 = 75 (75.3) ≤ 80, but 4000 ≤ 40000/8: fast again.
        assert_eq!((w.cwnd, cc.last_q, cc.doing_reno_now), (828, 75, 0));
        round(&mut cc, &mut c, &mut w, 59_999, 0);
        // rtt 60 000: Q = 828·20000/60000 = 276; cwnd − min(276, 414) = 552 → 800.
        assert_eq!((w.cwnd, w.ssthresh, cc.last_q, cc.reno_count), (800, 800, 276, 801));
    }

    #[test]
    fn queueing_delay_above_an_eighth_of_base_rtt_is_slow_mode_without_a_cut() {
        let (mut cc, mut c, mut w) = settled(100);
        // rtt 46 000: Q = 100·6000/46000 = 13 ≤ 80, but 6000 > 40000/8 = 5000.
        round(&mut cc, &mut c, &mut w, 45_999, 0);
        assert_eq!((w.cwnd, cc.last_q, cc.doing_reno_now, cc.reno_count), (100, 13, 1, 50));
        // rtt 45 000: 5000 is not above 5000: fast, and doing_reno_now back to 0.
        round(&mut cc, &mut c, &mut w, 44_999, 0);
        assert_eq!((cc.doing_reno_now, cc.fast_count), (0, 2));
    }

    #[test]
    fn fifty_one_fast_rounds_forget_the_reno_estimate() {
        let (mut cc, mut c, mut w) = settled(100);
        cc.reno_count = 60;
        // settled() made fast_count 1; 49 more reach 50, the next (51st) resets.
        for _ in 0..49 {
            round(&mut cc, &mut c, &mut w, 39_999, 0);
        }
        assert_eq!((cc.fast_count, cc.reno_count), (50, 60));
        round(&mut cc, &mut c, &mut w, 39_999, 0);
        assert_eq!((cc.fast_count, cc.reno_count), (0, 2));
    }

    #[test]
    fn loss_removes_the_queue_or_halves_after_rho_slow_rounds() {
        let (mut cc, c, _) = settled(100);
        cc.reno_count = 455;
        cc.fast_count = 7;
        // Q = 90 at cwnd 910: max(min(90, 455), 910 >> 3 = 113) = 113: 910 − 113 = 797.
        cc.last_q = 90;
        assert_eq!(cc.ssthresh(&c, &Window::new(910)), 797);
        assert_eq!((cc.fast_count, cc.reno_count), (0, 227));
        // Q = 300: max(min(300, 455), 113) = 300: 610. Q = 600: capped at 455: 455.
        cc.last_q = 300;
        assert_eq!(cc.ssthresh(&c, &Window::new(910)), 610);
        cc.last_q = 600;
        assert_eq!(cc.ssthresh(&c, &Window::new(910)), 455);
        // 15 slow rounds still remove the queue; 16 halve: 910 − 455.
        cc.last_q = 90;
        cc.doing_reno_now = RHO - 1;
        assert_eq!(cc.ssthresh(&c, &Window::new(910)), 797);
        cc.doing_reno_now = RHO;
        assert_eq!(cc.ssthresh(&c, &Window::new(910)), 455);
        // cwnd 1: 1 − max(1 >> 1, 2) = −1 as an int: the floor 2.
        assert_eq!(cc.ssthresh(&c, &Window::new(1)), 2);
    }

    #[test]
    fn slow_start_then_the_round_check() {
        let (mut cc, mut c, mut w) = flow(10, 12);
        // 10 + 5 stops at 12; 3 left for fast-mode AI (min(12, 100) = 12).
        round(&mut cc, &mut c, &mut w, 39_999, 5);
        assert_eq!((w.cwnd, w.cwnd_cnt, cc.fast_count), (12, 3, 1));
        // All spent in slow start: no AI, but the round is still judged.
        w.ssthresh = 100;
        round(&mut cc, &mut c, &mut w, 39_999, 4);
        assert_eq!((w.cwnd, w.cwnd_cnt, cc.fast_count), (16, 3, 2));
    }

    #[test]
    fn not_cwnd_limited_skips_everything() {
        let (mut cc, mut c, mut w) = settled(100);
        c.is_cwnd_limited = false;
        round(&mut cc, &mut c, &mut w, 59_999, 50);
        assert_eq!((w.cwnd, w.cwnd_cnt, cc.doing_reno_now, cc.v.cnt_rtt), (100, 0, 0, 3));
    }

    #[test]
    fn vegas_hooks_run_underneath() {
        let (mut cc, mut c, mut w) = settled(100);
        // Rounds go on outside Open (YeAH ignores doing_vegas_now).
        cc.set_state(&c, &mut w, CaState::Recovery);
        round(&mut cc, &mut c, &mut w, 45_999, 0);
        assert_eq!(cc.doing_reno_now, 1);
        // A restart forgets baseRTT but not YeAH's own state.
        cc.cwnd_event(&c, &mut w, CaEvent::TxStart);
        assert_eq!((cc.v.base_rtt, cc.v.min_rtt, cc.doing_reno_now, cc.reno_count), (RTT_UNSET, RTT_UNSET, 1, 50));
        assert_eq!(cc.v.beg_snd_una, 101, "the previous round's right edge, 1 + cwnd 100");
    }

    #[test]
    fn init_clamps_the_window_and_undo_is_renos() {
        let (mut cc, c, w) = flow(10, 10);
        assert_eq!(w.cwnd_clamp, 33_554_431); // 0xffffffff / 128
        assert_eq!(cc.undo_cwnd(&ConnInfo { prior_cwnd: 30, ..c }, &w), 30);
        let over = BTreeMap::from([("alpha".to_string(), 80.0)]);
        let e = Algorithm::Yeah.instance(&over, crate::base::rng::stream(1, "cc", 0)).err().unwrap();
        assert_eq!(e.to_string(), "alpha: yeah takes no parameters");
    }
}
