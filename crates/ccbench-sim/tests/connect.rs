//! Connections opened when their data is due, with and without TCP Fast Open, against
//! closed forms on an idle path. Opened by the sender (`connect = "sender"`), the
//! handshake adds one round trip (and the SYN's serialisation) to a download; Fast Open
//! takes it back for data that fits in the SYN, from the second connection on; a lost
//! SYN costs `TCP_TIMEOUT_INIT`. Opened by the receiver (`connect = "receiver"`, a
//! request the sender answers), it adds one and a half; Fast Open, with the request in
//! the SYN, takes one of them back.

mod common;

use ccbench_sim::config::{BufferLimit, Connect};
use ccbench_sim::summary::DownloadSummary;
use ccbench_sim::{run, Scenario};
use common::*;

const RATE: u64 = 20 * MBIT;
const RTT: u64 = 40 * MS;

fn downloads(cca: &str, size: u64, repeat: u32, connect: Connect, fastopen: bool) -> Scenario {
    let mut f = flow(cca);
    f.size_bytes = Some(size);
    f.repeat = repeat;
    f.pause_ns = 100 * MS;
    f.connect = connect;
    f.fastopen = fastopen;
    let mut s = dumbbell(RATE, RTT, BufferLimit::Bdp(1.0), vec![f]);
    s.duration_ns = 60 * SEC;
    s
}

fn completions(s: &Scenario) -> Vec<f64> {
    let out = run(s).unwrap_or_else(|e| panic!("scenario rejected: {e}"));
    let ds: &Vec<DownloadSummary> = out.summary.flows[0].downloads.as_ref().expect("downloads listed");
    ds.iter().map(|d| d.completion_s.expect("every download completes")).collect()
}

/// The serialisation time of `bytes` on the wire at the link's rate.
fn tx_s(bytes: u64) -> f64 {
    bytes as f64 * 8.0 / RATE as f64
}

#[test]
fn a_handshake_made_when_due_adds_a_round_trip_and_its_two_packets() {
    for cca in ["cubic", "bbr"] {
        let ahead = completions(&downloads(cca, 20_000, 5, Connect::Ahead, false));
        let due = completions(&downloads(cca, 20_000, 5, Connect::Sender, false));
        for (a, d) in ahead.iter().zip(&due) {
            // The SYN and SYN-ACK are 60 bytes each; the SYN-ACK crosses the ACK path,
            // which has no rate of its own here.
            let extra = RTT as f64 / 1e9 + tx_s(60);
            // BBR paces its first flight by the SRTT, here the SYN's RTT, 24 us longer.
            assert!((d - a - extra).abs() < 200e-6, "{cca}: {d} s with the handshake, {a} s ahead");
        }
    }
}

#[test]
fn fast_open_saves_the_round_trip_for_data_that_fits_in_the_syn_from_the_second_connection() {
    let plain = completions(&downloads("cubic", 1_000, 6, Connect::Sender, false));
    let tfo = completions(&downloads("cubic", 1_000, 6, Connect::Sender, true));
    // The first connection asks for a cookie (its SYN 4 bytes longer) and sends no data in it.
    assert!((tfo[0] - plain[0] - tx_s(4)).abs() < 10e-6, "first: {} s vs {} s", tfo[0], plain[0]);
    let rtt = RTT as f64 / 1e9;
    for (k, (t, p)) in tfo.iter().zip(&plain).enumerate().skip(1) {
        // Half a round trip: the SYN with its data (and cookie) against the data segment
        // sent one round trip after a plain SYN.
        let expect = p - rtt + tx_s(60 + 12 + 1_000) - tx_s(60) - tx_s(1_052);
        assert!((t - expect).abs() < 20e-6, "download {k}: {t} s with Fast Open, {p} s without");
    }
}

#[test]
fn fast_open_data_beyond_the_syn_follows_as_the_initial_window() {
    // 20 KB: 1420 bytes in the SYN and 13 segments after it, two flights either way; the
    // data that left early shortens only the last flight by one segment's serialisation.
    let plain = completions(&downloads("cubic", 20_000, 4, Connect::Sender, false));
    let tfo = completions(&downloads("cubic", 20_000, 4, Connect::Sender, true));
    for k in 1..4 {
        assert!(tfo[k] < plain[k] && plain[k] - tfo[k] < 2e-3, "download {k}: {} s vs {} s", tfo[k], plain[k]);
    }
}

#[test]
fn a_lost_syn_with_data_costs_the_initial_timeout_and_is_sent_again_without_it() {
    // Random loss spares SYNs without data (as the kernel engine's emulator spares every
    // packet without payload), so only SYNs that carry data are lost.
    let mut s = downloads("cubic", 1_000, 40, Connect::Sender, true);
    s.link.loss = 0.3;
    s.duration_ns = 120 * SEC;
    let c = completions(&s);
    let rtt = RTT as f64 / 1e9;
    let slow: Vec<f64> = c.iter().copied().filter(|&x| x > 0.5).collect();
    assert!(!slow.is_empty(), "some SYN with data was lost: {c:?}");
    for x in &slow {
        // The SYN goes again after 1 s (a little more on the timer wheel), then the data
        // one RTT later (or again later if that is lost too).
        assert!(*x >= 1.0 + 1.5 * rtt, "{x} s");
    }
}

#[test]
fn a_download_the_receiver_opens_waits_a_round_trip_and_a_half_and_fast_open_takes_one_back() {
    let rtt = RTT as f64 / 1e9;
    for cca in ["cubic", "bbr"] {
        let ahead = completions(&downloads(cca, 20_000, 4, Connect::Ahead, false));
        let plain = completions(&downloads(cca, 20_000, 4, Connect::Receiver, false));
        let tfo = completions(&downloads(cca, 20_000, 4, Connect::Receiver, true));
        for k in 0..4 {
            // SYN and SYN-ACK, then the ACK with the 100-byte request (152 bytes on the
            // wire), whose path back has no rate of its own here; the SYN-ACK's 60 bytes
            // go ahead of the response on the bottleneck.
            let opened = ahead[k] + 1.5 * rtt + tx_s(60);
            assert!((plain[k] - opened).abs() < 200e-6, "{cca} download {k}: {} s, ahead {} s", plain[k], ahead[k]);
            // With Fast Open the request goes in the SYN from the second connection on:
            // the response follows the SYN-ACK.
            let expect = if k == 0 { opened } else { ahead[k] + 0.5 * rtt + tx_s(60) };
            assert!((tfo[k] - expect).abs() < 200e-6, "{cca} download {k} with Fast Open: {} s", tfo[k]);
        }
    }
}
