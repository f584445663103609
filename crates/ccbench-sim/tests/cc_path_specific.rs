//! Algorithms built for one kind of path, each run whole on the dumbbell: Hybla on a
//! long-RTT (satellite) path, Westwood+ on a lossy link, LP as a background transfer
//! beside a Cubic flow. Each fills an ordinary link (20 Mbit/s, 40 ms, 1 BDP buffer)
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

/// LP alone on the ordinary link does not fill it, and that is the kernel's arithmetic:
/// the remote clock rate is estimated from ms timestamps as floor(1000·ΔTSval/ΔTSecr)
/// per ACK pair, which averages above 1000 Hz; whenever the estimate exceeds 1000,
/// `LP_RESOL / remote_hz` is 0 and the OWD becomes 2^32 − TSecr (u32). The smoothed OWD
/// then jumps to a wrapped value, the next sample below it reads as early congestion
/// within inference, cwnd drops to 1, and it takes seconds at one ACK per RTT for the
/// smoothed OWD to decay. Checked: deterministic, retransmissions at most 20% of the
/// segments delivered, goodput at most 20% of the payload rate (measured 3.5%): a model
/// that filled the link here would not be Linux 6.1's LP.
#[test]
fn lp_alone_is_held_down_by_its_own_delay_estimate() {
    let s = alone("lp", RTT, 20);
    let out = run_ok(&s);
    let f = &out.summary.flows[0];
    let payload = payload_share_bps(RATE);
    let delivered_segs = f.delivered_bytes / MSS;
    println!(
        "lp alone: goodput {:.2} Mbit/s ({:.1}% of payload), {} retransmits of {delivered_segs} segments",
        f.goodput_bps / 1e6,
        100.0 * f.goodput_bps / payload,
        f.retransmits
    );
    assert!(f.goodput_bps <= 0.2 * payload, "lp: goodput {:.0} of {payload:.0}", f.goodput_bps);
    assert!(f.retransmits * 5 <= delivered_segs, "lp: {} retransmits of {delivered_segs}", f.retransmits);
    let again = run_ok(&s);
    assert_eq!(serde_json::to_string(&out.summary).unwrap(), serde_json::to_string(&again.summary).unwrap());
}

/// A background transfer: LP beside one Cubic flow on 20 Mbit/s, 40 ms, 1 BDP, 30 s,
/// started together and 5 s after it. Cubic fills the buffer, so LP sees its one-way
/// delay above min + 15% of the spread and halves, and again within 3 RTTs drops to 1
/// segment. Its share is at most 10% of the goodput (measured about 4-5%), where a
/// Reno flow in its place takes over a quarter; Cubic keeps at least 85% of the payload
/// rate.
#[test]
fn lp_yields_to_a_cubic_flow() {
    let payload = payload_share_bps(RATE);
    for start_s in [0, 5] {
        let pair = |bg: &str| {
            let mut background = flow(bg);
            background.start_ns = start_s * SEC;
            let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(1.0), vec![flow("cubic"), background]);
            s.duration_ns = 30 * SEC;
            run_ok(&s)
        };
        let (lp, reno) = (pair("lp"), pair("reno"));
        let share = |o: &RunOutput| {
            let (c, b) = (o.summary.flows[0].goodput_bps, o.summary.flows[1].goodput_bps);
            (c, b, b / (c + b))
        };
        let (cubic, background, lp_share) = share(&lp);
        let reno_share = share(&reno).2;
        println!(
            "start {start_s} s: cubic {:.2} Mbit/s, lp {:.2} Mbit/s ({:.1}%), reno in its place {:.1}%",
            cubic / 1e6,
            background / 1e6,
            100.0 * lp_share,
            100.0 * reno_share
        );
        assert!(lp_share <= 0.10, "start {start_s}: lp share {lp_share:.3}");
        assert!(reno_share >= 0.25, "start {start_s}: reno share {reno_share:.3}");
        assert!(cubic >= 0.85 * payload, "start {start_s}: cubic {cubic:.0} of {payload:.0}");
    }
}
