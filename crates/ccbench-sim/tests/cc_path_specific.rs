//! Algorithms built for one kind of path, each run whole on the dumbbell: Hybla on a
//! long-RTT (satellite) path, Westwood+ on a lossy link, LP (meant as a background
//! transfer) beside a Cubic flow. Each fills an ordinary link (20 Mbit/s, 40 ms, 1 BDP buffer)
//! deterministically, and shows the property it is known for, with the tolerance stated.
//! Run in release: `cargo test --release -p ccbench-sim --test cc_path_specific`.

mod common;

use ccbench_sim::config::BufferLimit;
use ccbench_sim::{run, RunOutput, Scenario};
use common::*;

const RATE: u64 = 20 * MBIT;
const RTT: u64 = 40 * MS;

fn run_ok(s: &Scenario) -> RunOutput {
    run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"))
}

/// One bulk flow of `cca` alone on the link for `secs`.
fn alone(cca: &str, rtt_ns: u64, secs: u64) -> Scenario {
    let mut s = dumbbell(RATE, rtt_ns, BufferLimit::Bdp(1.0), vec![flow(cca)]);
    s.duration_ns = secs * SEC;
    s
}

/// The common check: 20 Mbit/s, 40 ms, 1 BDP, 20 s. Goodput at least 85% of the payload
/// rate; retransmissions at most 2% of the segments delivered (a 1-BDP drop-tail buffer
/// loses about one window's overshoot per sawtooth); the same output twice.
fn fills_an_ordinary_link(cca: &str) -> RunOutput {
    let s = alone(cca, RTT, 20);
    let out = run_ok(&s);
    let f = &out.summary.flows[0];
    let payload = payload_share_bps(RATE);
    let delivered_segs = f.delivered_bytes / MSS;
    println!(
        "{cca}: goodput {:.2} Mbit/s ({:.1}% of payload), {} retransmits of {delivered_segs} segments, \
         queue delay mean {:.1} ms",
        f.goodput_bps / 1e6,
        100.0 * f.goodput_bps / payload,
        f.retransmits,
        out.summary.link.queue_delay_ms.mean
    );
    assert!(f.goodput_bps >= 0.85 * payload, "{cca}: goodput {:.0} below 85% of {payload:.0}", f.goodput_bps);
    assert!(f.retransmits * 50 <= delivered_segs, "{cca}: {} retransmits of {delivered_segs}", f.retransmits);
    let again = run_ok(&s);
    assert_eq!(
        serde_json::to_string(&out.summary).unwrap(),
        serde_json::to_string(&again.summary).unwrap(),
        "{cca}: two runs differ"
    );
    out
}

#[test]
fn hybla_fills_an_ordinary_link() {
    fills_an_ordinary_link("hybla");
}

/// A satellite path: 600 ms RTT, a buffer of a quarter BDP. Hybla's rho = 600/25 = 24
/// makes it grow per second as a 25 ms Reno flow would: rho² = 576 segments per RTT in
/// congestion avoidance, where Reno adds one. The BDP is 1036 segments: Reno, halved to
/// (1036 + 259)/2 = 648 after a loss, needs ~390 RTTs (234 s) to refill the pipe, Hybla
/// one. Over 30 s Hybla's goodput is at least 1.3 times Reno's (measured 1.6) and at
/// least 70% of the payload rate (measured 85%); it pays with losses (each sawtooth
/// overshoots by up to rho² segments), bounded here at 40% of what it delivers.
#[test]
fn hybla_outgrows_reno_on_a_satellite_path() {
    let satellite = |cca: &str| {
        let mut s = alone(cca, 600 * MS, 30);
        s.link.buffer = BufferLimit::Bdp(0.25);
        // A satellite host raises tcp_wmem: with the 4 MB default the send buffer, not
        // the algorithm, would bound Hybla's first flights (about 2,850 segments).
        s.tcp.wmem[2] = 64 << 20;
        run_ok(&s)
    };
    let (hybla, reno) = (satellite("hybla"), satellite("reno"));
    let (h, r) = (&hybla.summary.flows[0], &reno.summary.flows[0]);
    let payload = payload_share_bps(RATE);
    println!(
        "600 ms: hybla {:.2} Mbit/s ({} retransmits), reno {:.2} Mbit/s ({} retransmits)",
        h.goodput_bps / 1e6,
        h.retransmits,
        r.goodput_bps / 1e6,
        r.retransmits
    );
    assert!(h.goodput_bps >= 1.3 * r.goodput_bps, "hybla {:.0} vs reno {:.0}", h.goodput_bps, r.goodput_bps);
    assert!(h.goodput_bps >= 0.7 * payload, "hybla {:.0} of {payload:.0}", h.goodput_bps);
    assert!(h.retransmits * 5 <= h.delivered_bytes / MSS * 2, "hybla: {} retransmits", h.retransmits);
}

#[test]
fn westwood_fills_an_ordinary_link() {
    fills_an_ordinary_link("westwood");
}

/// A lossy link: 0.5% random loss on 20 Mbit/s, 40 ms. Reno halves on every loss and
/// holds about the Mathis rate, 1.22·MSS/(RTT·sqrt(p)) = 1.22·11584 bit/(0.04 s·0.0707)
/// = 5.0 Mbit/s; Westwood+ ends each recovery at its bandwidth estimate × min RTT,
/// which a random loss barely lowers. Over 20 s Westwood+'s goodput is at least 1.8
/// times Reno's (measured 2.4), and Reno's is within 30% of the Mathis rate.
#[test]
fn westwood_keeps_its_rate_through_random_loss() {
    let lossy = |cca: &str| {
        let mut s = alone(cca, RTT, 20);
        s.link.loss = 0.005;
        run_ok(&s)
    };
    let (westwood, reno) = (lossy("westwood"), lossy("reno"));
    let (w, r) = (&westwood.summary.flows[0], &reno.summary.flows[0]);
    println!(
        "0.5% loss: westwood {:.2} Mbit/s ({} retransmits), reno {:.2} Mbit/s ({} retransmits)",
        w.goodput_bps / 1e6,
        w.retransmits,
        r.goodput_bps / 1e6,
        r.retransmits
    );
    let mathis = 1.22 * (MSS * 8) as f64 / (RTT as f64 / SEC as f64 * 0.005f64.sqrt());
    assert!((r.goodput_bps / mathis - 1.0).abs() <= 0.3, "reno {:.0} vs Mathis {mathis:.0}", r.goodput_bps);
    assert!(w.goodput_bps >= 1.8 * r.goodput_bps, "westwood {:.0} vs reno {:.0}", w.goodput_bps, r.goodput_bps);
}

/// LP alone on the ordinary link, as 6.1's LP runs on a real connection: each end adds a
/// random offset to its TSvals (`tcp_timestamps = 1`), and LP reads its one-way delay and
/// inference time from the offset values (and the offset-free `tcp_time_stamp`). How its
/// delay estimate then behaves depends on the offsets the connection drew: with most it
/// never reads early congestion and fills the link like Reno (the VM's guest, three runs
/// at 20 Mbit/s, 40 ms, 1 BDP: 19.08 Mbit/s each); with some its wrapped delay estimate
/// reads as early congestion again and again and holds it to a few segments. Over seeds
/// 1 to 6 (the offsets are drawn from the run's seed): at least four fill at least 85%
/// of the payload rate (measured: five), any other stays under 20% (seed 5: 3.6%).
#[test]
fn lp_alone_fills_the_link_unless_its_timestamp_offsets_fool_its_delay_estimate() {
    let payload = payload_share_bps(RATE);
    let mut full = 0;
    for seed in 1..=6 {
        let mut s = alone("lp", RTT, 20);
        s.seed = seed;
        let f = &run_ok(&s).summary.flows[0];
        println!("lp alone, seed {seed}: {:.2} Mbit/s ({:.1}%)", f.goodput_bps / 1e6, 100.0 * f.goodput_bps / payload);
        assert!(f.goodput_bps >= 0.85 * payload || f.goodput_bps <= 0.2 * payload, "seed {seed}");
        full += (f.goodput_bps >= 0.85 * payload) as u32;
    }
    assert!(full >= 4, "{full} of 6 seeds fill the link");
    let s = alone("lp", RTT, 20);
    let (a, b) = (run_ok(&s), run_ok(&s));
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
}

/// LP beside one Cubic flow on 20 Mbit/s, 40 ms, 2 BDP (the algorithms family's cell):
/// with offsets under which it reads no early congestion it does not yield, and takes
/// about what a Reno flow in its place would; the guest's LP took 9.4 to 10.7 of the
/// 19.2 Mbit/s in three runs. Checked: LP's share between 35 and 65% at seed 1
/// (measured 59%).
#[test]
fn lp_beside_cubic_does_not_yield_on_a_real_connection() {
    let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(2.0), vec![flow("lp"), flow("cubic")]);
    s.duration_ns = 10 * SEC;
    let out = run_ok(&s);
    let (lp, cubic) = (out.summary.flows[0].goodput_bps, out.summary.flows[1].goodput_bps);
    let share = lp / (lp + cubic);
    println!("lp {:.2} Mbit/s beside cubic {:.2} Mbit/s: {:.1}%", lp / 1e6, cubic / 1e6, 100.0 * share);
    assert!((0.35..=0.65).contains(&share), "lp share {share:.3}");
}
