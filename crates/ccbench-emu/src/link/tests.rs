use super::*;
use crate::wire::build_tcp;
use ccbench_sim::observe::recorder::{column_names, LinkRow, LINK_COLUMNS};
use ccbench_sim::units::BitRate;

const MS: u64 = 1_000_000;
const PORT: u16 = 20000;

fn config(rate: &str, buffer: &str, loss: f64, flows: &str) -> EmuConfig {
    let json = format!(
        r#"{{"scenario": {{"seed": 1, "duration_ns": 1000000000, "sample_interval_ns": 100000000,
            "link": {{"rate_bps": {rate}, "rtt_ns": 20000000, "buffer": {buffer}, "loss": {loss},
                      "nic_rate_bps": 10000000000}},
            "flows": {flows}}},
           "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": {PORT}, "max_runtime_ns": 1}}"#
    );
    EmuConfig::from_json(&json).unwrap()
}

fn one_flow(rate: &str, buffer: &str, loss: f64) -> Link {
    Link::new(&config(rate, buffer, loss, r#"[{"cca": "cubic"}]"#))
}

fn data(seq: u32) -> Vec<u8> {
    build_tcp(40000, PORT, seq, 1, TCP_ACK, 1448)
}

/// One column of the report's link samples.
fn series(r: &Report, get: fn(&LinkRow) -> f64) -> Vec<f64> {
    r.series.link.iter().map(get).collect()
}

/// Run the link until `until`, collecting (side, due time) of deliveries.
fn drain(link: &mut Link, until: Time) -> Vec<(Side, Time, bool)> {
    let mut out = Vec::new();
    while let Some(d) = link.poll(until) {
        out.push((d.to, d.due, d.chained));
        link.on_written(&d, d.due, true);
    }
    out
}

#[test]
fn a_burst_leaves_at_the_link_rate_after_the_one_way_delay() {
    // 12 Mbit/s: a 1500-byte packet takes exactly 1 ms.
    let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0);
    link.begin(Time(0), Time(1000 * MS));
    for k in 0..5 {
        link.arrive(Time(0), Side::Sender, data(k * 1448));
    }
    let out = drain(&mut link, Time(100 * MS));
    assert_eq!(out.len(), 5);
    let nic = BitRate(10_000_000_000).tx_time(1500).ns();
    for (k, (side, due, chained)) in out.iter().enumerate() {
        assert_eq!(*side, Side::Receiver);
        assert_eq!(due.ns(), nic + (k as u64 + 1) * MS + 10 * MS);
        assert_eq!(*chained, k > 0);
    }
    let r = link.finish(Time(100 * MS));
    assert_eq!(r.link.packets_forwarded, 5);
    assert_eq!(r.check.busy_bytes, 4 * 1500);
    assert!((r.check.delivered_rate_ratio.unwrap() - 1.0).abs() < 1e-9);
    assert!(!r.check.flag_short);
}

#[test]
fn late_writes_show_up_as_short_capacity() {
    let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0);
    link.begin(Time(0), Time(1000 * MS));
    for k in 0..11 {
        link.arrive(Time(0), Side::Sender, data(k * 1448));
    }
    // The writer only manages one packet every 1.1 ms.
    let mut wall = Time(0);
    while let Some(d) = link.poll(Time(100 * MS)) {
        wall = wall.max(d.due);
        link.on_written(&d, wall, true);
        wall += Dur(1_100_000);
    }
    let r = link.finish(Time(100 * MS));
    let ratio = r.check.delivered_rate_ratio.unwrap();
    assert!((ratio - 1.0 / 1.1).abs() < 1e-6, "ratio {ratio}");
    assert!(r.check.flag_short);
}

#[test]
fn drop_tail_counts_packets_behind_the_one_on_the_wire() {
    let mut link = one_flow("12000000", r#"{"packets": 3}"#, 0.0);
    link.begin(Time(0), Time(1000 * MS));
    // 1 on the wire + 3 queued fit; the NIC spaces arrivals by 1.2 µs only.
    for k in 0..6 {
        link.arrive(Time(0), Side::Sender, data(k * 1448));
    }
    assert_eq!(drain(&mut link, Time(100 * MS)).len(), 4);
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.link.drops_overflow, r.flows[0].dropped), (2, 2));
    assert_eq!(link.packets_held(), 0);
}

#[test]
fn bdp_buffer_resolves_like_the_simulator() {
    let cfg = config("12000000", r#"{"bdp": 2.0}"#, 0.0, r#"[{"cca": "cubic"}]"#);
    match cfg.queue_limit() {
        ccbench_sim::net::bottleneck::QueueLimit::Bytes(b) => assert_eq!(b, 60_000),
        other => panic!("{other:?}"),
    }
}

#[test]
fn random_loss_spares_packets_without_payload() {
    let mut link = one_flow("100000000", r#"{"packets": 100000}"#, 0.5);
    link.begin(Time(0), Time(10_000 * MS));
    for k in 0..1000u32 {
        link.arrive(Time(k as u64 * MS), Side::Sender, build_tcp(40000, PORT, k, 1, TCP_ACK, 0));
        link.arrive(Time(k as u64 * MS), Side::Sender, data(k * 1448));
        drain(&mut link, Time(k as u64 * MS));
    }
    drain(&mut link, Time(2000 * MS));
    let r = link.finish(Time(2000 * MS));
    assert_eq!(r.link.packets_forwarded + r.link.drops_random, 2000);
    assert!((400..600).contains(&r.link.drops_random), "{}", r.link.drops_random);
    assert_eq!(r.check.packets_to_receiver, 2000 - r.link.drops_random);
}

#[test]
fn acks_return_after_the_flows_own_delay_and_give_rtt_samples() {
    let cfg = config(
        "12000000",
        r#"{"packets": 100}"#,
        0.0,
        r#"[{"cca": "cubic"}, {"cca": "cubic", "access_delay_ns": 5000000}]"#,
    );
    let mut link = Link::new(&cfg);
    link.begin(Time(0), Time(1000 * MS));
    link.arrive(Time(0), Side::Sender, build_tcp(40001, PORT + 1, 1000, 1, TCP_ACK, 1448));
    let fwd = drain(&mut link, Time(50 * MS));
    // NIC exit at 5 ms + 1.2 µs, 1 ms on the wire, 10 ms one way.
    assert_eq!(fwd[0].1.ns(), 16 * MS + 1200);
    link.arrive(Time(17 * MS), Side::Receiver, build_tcp(PORT + 1, 40001, 1, 2448, TCP_ACK, 0));
    let back = drain(&mut link, Time(100 * MS));
    assert_eq!(back, vec![(Side::Sender, Time(32 * MS), false)]);
    let r = link.finish(Time(100 * MS));
    assert_eq!(r.flows[1].rtt_samples, 1);
    assert!((r.flows[1].rtt_ms.mean - 32.0).abs() < 0.3);
    assert_eq!(r.flows[0].rtt_samples, 0);
}

#[test]
fn ecn_capable_packets_are_marked_above_the_threshold() {
    let json = r#"{"scenario": {"seed": 1, "duration_ns": 1000000000,
            "link": {"rate_bps": 12000000, "rtt_ns": 20000000, "buffer": {"packets": 100},
                     "ecn_threshold": {"packets": 2}},
            "flows": [{"cca": "cubic"}]},
           "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": 20000, "max_runtime_ns": 1}"#;
    let mut link = Link::new(&EmuConfig::from_json(json).unwrap());
    link.begin(Time(0), Time(1000 * MS));
    for k in 0..5 {
        let mut p = data(k * 1448);
        p[1] = 0x02; // ECT(0)
        link.arrive(Time(0), Side::Sender, p);
    }
    link.arrive(Time(0), Side::Sender, data(5 * 1448)); // not ECN-capable
    let mut marks = Vec::new();
    while let Some(d) = link.poll(Time(100 * MS)) {
        marks.push(wire::ecn(&d.bytes));
    }
    // Backlogs seen on arrival: 0 (starts on the wire), 0, 1, 2, 3, 4.
    assert_eq!(marks, vec![2, 2, 2, 3, 3, 0]);
    assert_eq!(link.finish(Time(100 * MS)).link.ecn_marks, 2);
}

#[test]
fn a_window_cut_short_ends_with_a_partial_sample() {
    let mut link = one_flow("12000000", r#"{"packets": 1000}"#, 0.0);
    link.begin(Time(0), Time(1000 * MS));
    for k in 0..150u32 {
        link.arrive(Time(k as u64 * MS), Side::Sender, data(k * 1448));
        drain(&mut link, Time(k as u64 * MS));
    }
    let r = link.finish(Time(150 * MS));
    assert_eq!(series(&r, |s| s.time_s), vec![0.1, 0.15]);
    // The link was busy all along: full utilisation over the partial interval too.
    let utilization = series(&r, |s| s.down.utilization);
    assert!((utilization[1] - 1.0).abs() < 0.03, "{utilization:?}");
}

#[test]
fn unknown_traffic_takes_the_base_delays() {
    let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0);
    link.arrive(Time(0), Side::Receiver, vec![0x60; 60]);
    assert_eq!(drain(&mut link, Time(50 * MS)), vec![(Side::Sender, Time(10 * MS), false)]);
}

#[test]
fn the_series_is_sampled_from_the_epoch() {
    let mut link = one_flow("12000000", r#"{"packets": 1000}"#, 0.0);
    link.begin(Time(500 * MS), Time(800 * MS));
    for k in 0..200u32 {
        link.arrive(Time(400 * MS + k as u64 * 1_000_000), Side::Sender, data(k * 1448));
        drain(&mut link, Time(400 * MS + k as u64 * 1_000_000));
    }
    drain(&mut link, Time(1000 * MS));
    let r = link.finish(Time(1000 * MS));
    // Samples at 0.1 and 0.2 s and at the end of the window, 0.3 s.
    let time_s = series(&r, |s| s.time_s);
    assert_eq!(time_s.len(), 3);
    assert!((time_s[2] - 0.3).abs() < 1e-9);
    // Packets arrive at 12 Mbit/s, exactly the link's rate: fully used.
    let utilization = series(&r, |s| s.down.utilization);
    assert!((utilization[0] - 1.0).abs() < 0.02, "{utilization:?}");
    assert!((r.measured_s - 0.3).abs() < 1e-9);
    // Departures at 401 ms + k ms + 1.2 µs: k = 99..=199 fall in the window.
    assert_eq!(r.flows[0].bottleneck_bytes, 101 * 1448);
    assert_eq!(r.link.packets_forwarded, 101);
    // A constant rate: the summary takes its rate over the run, not a window's capacity.
    assert!(r.link.offered.is_none());
}

#[test]
fn captures_each_point_in_time_order_with_headers_only() {
    use ccbench_sim::observe::capture::CaptureSpec;
    let dir = std::env::temp_dir().join(format!("ccbench-emu-capture-{}", std::process::id()));
    let spec = CaptureSpec { points: Point::ALL.to_vec(), flows: None, dir: dir.clone() };
    let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0).with_capture(EmuCapture::open(&spec, 0).unwrap());
    link.begin(Time(0), Time(1000 * MS));
    for k in 0..3 {
        link.arrive(Time(0), Side::Sender, data(k * 1448));
    }
    drain(&mut link, Time(20 * MS));
    link.arrive(Time(20 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 3 * 1448, TCP_ACK, 0));
    drain(&mut link, Time(100 * MS));
    assert_eq!(link.finish_capture(), None);
    let read = |p: Point| {
        let b = std::fs::read(p.file_in(&dir)).unwrap();
        let mut out = Vec::new();
        let mut at = 24;
        while at < b.len() {
            let word = |o: usize| u32::from_le_bytes(b[at + o..at + o + 4].try_into().unwrap()) as u64;
            out.push((word(0) * 1_000_000_000 + word(4), word(8), word(12)));
            at += 16 + word(8) as usize;
        }
        out
    };
    for p in Point::ALL {
        let recs = read(p);
        assert_eq!(recs.len(), 4, "{p:?}");
        assert!(recs.windows(2).all(|w| w[0].0 <= w[1].0), "{p:?} {recs:?}");
        assert_eq!((recs[0].1, recs[0].2), (52, 1500));
    }
    // The ACK passes the router one way (10 ms) after the receiver sent it; with no
    // access delay it reaches the sender then too.
    assert_eq!(read(Point::Receiver)[3].0, 20 * MS);
    assert_eq!(read(Point::BottleneckIn)[3].0, 30 * MS);
    assert_eq!(read(Point::Sender)[3].0, 30 * MS);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn trace_ms(name: &str) -> Vec<u64> {
    let path = format!("{}/../../traces/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect()
}

/// One Cubic flow's scenario with extra link fields (JSON), for the link models.
fn with_link(extra: &str, buffer: &str) -> Link {
    let json = format!(
        r#"{{"scenario": {{"seed": 1, "duration_ns": 10000000000, "sample_interval_ns": 100000000,
            "link": {{"rate_bps": 12000000, "rtt_ns": 20000000, "buffer": {buffer} {extra}}},
            "flows": [{{"cca": "cubic"}}]}},
           "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": {PORT}, "max_runtime_ns": 1}}"#
    );
    Link::new(&EmuConfig::from_json(&json).unwrap())
}

#[test]
fn a_trace_link_delivers_exactly_the_traces_capacity() {
    // The first 10 s of the T-Mobile downlink trace, kept busy by 60 Mbit/s of data
    // (a packet every 0.2 ms) into a deep buffer; the window starts at 2 s, so the
    // trace starts there too.
    let ms = trace_ms("TMobile-LTE-short.down");
    let extra = format!(r#", "trace": {{"opportunities_ms": {ms:?}}}"#);
    let mut link = with_link(&extra, r#"{"packets": 1000000}"#);
    let (t0, end) = (Time(2000 * MS), Time(12_000 * MS));
    link.begin(t0, end);
    let mut delivered = 0u64;
    let mut k = 0u32;
    let mut now = Time(0);
    while now < Time(12_500 * MS) {
        link.arrive(now, Side::Sender, data(k * 1448));
        k += 1;
        while let Some(d) = link.poll(now) {
            if d.to == Side::Receiver && d.due >= t0 + Dur(10 * MS) && d.due < end + Dur(10 * MS) {
                delivered += d.bytes.len() as u64;
            }
            link.on_written(&d, d.due, true);
        }
        now += Dur(MS / 5);
    }
    // Opportunities in [t0, end), counted from the file: the trace restarts at t0.
    let opportunities = ms.iter().filter(|&&m| m < 10_000).count() as u64;
    assert_eq!(delivered, opportunities * 1500, "delivered {delivered} B for {opportunities} opportunities");
    let r = link.finish(end);
    let offered = r.link.offered.unwrap();
    assert!((offered.capacity_bits - (opportunities * 12_000) as f64).abs() < 1e-6, "{offered:?}");
    assert_eq!(offered.window_ns, 10_000 * MS);
    // Backlogged throughout: every opportunity used, every interval fully utilised.
    let utilization = series(&r, |s| s.down.utilization);
    assert!(utilization.iter().all(|u| (u - 1.0).abs() < 1e-9), "{utilization:?}");
    let ratio = r.check.delivered_rate_ratio.unwrap();
    assert!((ratio - 1.0).abs() < 0.01, "ratio {ratio}");
    let capacity_bps = series(&r, |s| s.down.capacity_bps);
    let mean_bps = capacity_bps.iter().sum::<f64>() / capacity_bps.len() as f64;
    assert!((mean_bps - (opportunities * 12_000) as f64 / 10.0).abs() < 1.0, "{mean_bps}");
}

#[test]
fn an_ack_trace_holds_acks_until_an_opportunity() {
    // ACK opportunities every 10 ms: an ACK sent at 3 ms leaves at 10 ms, then 10 ms of
    // one-way delay.
    let mut link = with_link(r#", "ack_trace": {"opportunities_ms": [10]}"#, r#"{"packets": 100}"#);
    link.begin(Time(0), Time(1000 * MS));
    link.arrive(Time(3 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 1449, TCP_ACK, 0));
    link.arrive(Time(4 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 2897, TCP_ACK, 0));
    let back = drain(&mut link, Time(100 * MS));
    assert_eq!(back, vec![(Side::Sender, Time(20 * MS), false), (Side::Sender, Time(20 * MS), false)]);
}

#[test]
fn a_full_reverse_buffer_drops_acks_and_frees_them() {
    // Three ACKs before the first opportunity, room for two: the third is dropped and
    // its bytes freed; the flow's data drops are not touched.
    let extra = r#", "ack_trace": {"opportunities_ms": [10]}, "reverse_buffer": {"packets": 2}"#;
    let mut link = with_link(extra, r#"{"packets": 100}"#);
    link.begin(Time(0), Time(1000 * MS));
    drain(&mut link, Time(0));
    for (k, at) in [3, 4, 5].into_iter().enumerate() {
        link.arrive(Time(at * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 1 + 1448 * k as u32, TCP_ACK, 0));
    }
    assert_eq!(link.packets_held(), 2);
    let back = drain(&mut link, Time(100 * MS));
    assert_eq!(back, vec![(Side::Sender, Time(20 * MS), false), (Side::Sender, Time(20 * MS), false)]);
    assert_eq!(link.packets_held(), 0);
    let r = link.finish(Time(100 * MS));
    assert_eq!(r.flows[0].dropped, 0);
    // The ACK link's figures, as the simulator's summary reports them.
    let ack_link = r.link.ack_link.expect("an ACK link");
    assert_eq!((ack_link.packets_forwarded, ack_link.drops), (2, Some(1)));
}

#[test]
fn the_epoch_restarts_the_ack_links_counts() {
    let mut link = with_link(r#", "ack_trace": {"opportunities_ms": [10]}"#, r#"{"packets": 100}"#);
    link.arrive(Time(3 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 1449, TCP_ACK, 0));
    drain(&mut link, Time(50 * MS));
    link.begin(Time(50 * MS), Time(1000 * MS));
    link.arrive(Time(53 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 2897, TCP_ACK, 0));
    drain(&mut link, Time(100 * MS));
    let ack_link = link.finish(Time(100 * MS)).link.ack_link.expect("an ACK link");
    // One ACK in the window; the unlimited queue reports no drops.
    assert_eq!((ack_link.packets_forwarded, ack_link.drops), (1, None));
}

#[test]
fn the_report_carries_the_simulators_link_table() {
    let mut link = one_flow("12000000", r#"{"packets": 100}"#, 0.0);
    link.begin(Time(0), Time(250 * MS));
    drain(&mut link, Time(300 * MS));
    let json = serde_json::to_string(&link.finish(Time(300 * MS)).series).unwrap();
    assert!(json.starts_with(r#"{"link":{"time_s":[0.1,0.2,0.25],"queue_bytes":"#), "{json}");
    // The columns in the simulator's order.
    let at: Vec<usize> =
        column_names(&LINK_COLUMNS).iter().map(|c| json.find(&format!(r#""{c}":"#)).unwrap()).collect();
    assert!(at.is_sorted(), "{json}");
}

#[test]
fn rtt_steps_change_both_delays_from_the_epoch() {
    // 20 ms, then 60 ms from 100 ms after the epoch at 50 ms.
    let mut link = with_link(r#", "rtt_schedule": [{"at_ns": 100000000, "rtt_ns": 60000000}]"#, r#"{"packets": 100}"#);
    link.begin(Time(50 * MS), Time(1000 * MS));
    let mut back = drain(&mut link, Time(100 * MS));
    link.arrive(Time(100 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 1449, TCP_ACK, 0));
    back.extend(drain(&mut link, Time(200 * MS)));
    link.arrive(Time(200 * MS), Side::Receiver, build_tcp(PORT, 40000, 1, 2897, TCP_ACK, 0));
    back.extend(drain(&mut link, Time(400 * MS)));
    assert_eq!(back, vec![(Side::Sender, Time(110 * MS), false), (Side::Sender, Time(230 * MS), false)]);
}

#[test]
fn fq_codel_in_the_emulator_frees_what_it_drops() {
    let mut link = with_link(r#", "aqm": {"fq_codel": {"limit_packets": 50}}"#, r#"{"packets": 100}"#);
    link.begin(Time(0), Time(1000 * MS));
    for k in 0..200u32 {
        link.arrive(Time(0), Side::Sender, data(k * 1448));
    }
    let out = drain(&mut link, Time(900 * MS));
    let r = link.finish(Time(900 * MS));
    assert_eq!(out.len() as u64 + r.link.drops_overflow + r.link.drops_aqm, 200);
    assert!(r.link.drops_overflow > 0 && r.flows[0].dropped == r.link.drops_overflow + r.link.drops_aqm);
    assert_eq!(link.packets_held(), 0);
}

#[test]
fn rate_steps_and_gilbert_elliott_loss_apply_in_the_emulator() {
    // 12 Mbit/s, then 24 Mbit/s from 100 ms after the epoch (1 ms then 0.5 ms per
    // packet); Gilbert-Elliott loss on data only.
    let extra = r#", "rate_schedule": [{"at_ns": 100000000, "rate_bps": 24000000}],
                   "loss_model": {"gilbert_elliott": {"p": 0.05, "r": 0.5}}"#;
    let mut link = with_link(extra, r#"{"packets": 100000}"#);
    link.begin(Time(50 * MS), Time(1000 * MS));
    for k in 0..400u32 {
        link.arrive(Time(50 * MS), Side::Sender, data(k * 1448));
        link.arrive(Time(50 * MS), Side::Sender, build_tcp(40000, PORT, k, 1, TCP_ACK, 0));
    }
    let out = drain(&mut link, Time(1000 * MS));
    let r = link.finish(Time(1000 * MS));
    // Pure ACKs are never lost; every data packet is delivered or counted lost.
    assert_eq!(out.len() as u64 + r.link.drops_random, 800);
    assert!(r.link.drops_random > 10, "{}", r.link.drops_random);
    // Until 150 ms (100 ms after the epoch) 1 ms per 1500-byte packet, after it half.
    let firsts: Vec<u64> = out.iter().map(|d| d.1.ns()).collect();
    assert!(firsts.windows(2).any(|w| w[1] - w[0] == MS / 2));
}

fn with_mtu(black_hole: bool) -> Link {
    let json = format!(
        r#"{{"scenario": {{"seed": 1, "duration_ns": 1000000000, "sample_interval_ns": 100000000,
            "link": {{"rate_bps": 12000000, "rtt_ns": 20000000, "buffer": {{"packets": 100}}, "loss": 0.0,
                      "nic_rate_bps": 10000000000, "mtu_bytes": 1400, "mtu_black_hole": {black_hole}}},
            "flows": [{{"cca": "cubic", "access_delay_ns": 3000000}}]}},
           "tun_sender": "t-s", "tun_receiver": "t-r", "base_port": {PORT}, "max_runtime_ns": 1}}"#
    );
    Link::new(&EmuConfig::from_json(&json).unwrap())
}

#[test]
fn a_packet_over_the_mtu_is_dropped_and_answered_with_frag_needed() {
    let mut link = with_mtu(false);
    link.begin(Time(0), Time(1000 * MS));
    let big = data(0);
    link.arrive(Time(0), Side::Sender, big.clone());
    // 1400 bytes fit: 20 + 32 + 1348.
    link.arrive(Time(0), Side::Sender, build_tcp(40000, PORT, 1448, 1, TCP_ACK, 1348));
    let mut out = Vec::new();
    while let Some(d) = link.poll(Time(100 * MS)) {
        out.push(d);
    }
    assert_eq!(out.len(), 2);
    // The ICMP first, after the access delay there and back (2 x 3 ms).
    let icmp = &out[0];
    assert_eq!((icmp.to, icmp.due), (Side::Sender, Time(6 * MS)));
    assert_eq!(icmp.bytes, wire::frag_needed(&big, 1400).unwrap());
    assert_eq!(&icmp.bytes[48..56], &big[20..28]);
    assert_eq!((out[1].to, out[1].bytes.len()), (Side::Receiver, 1400));
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.flows[0].mtu_dropped, r.flows[0].icmp_sent), (1, 1));
    assert_eq!((r.flows[0].dropped, r.link.packets_forwarded), (0, 1));
}

#[test]
fn a_black_hole_drops_the_packet_without_a_word() {
    let mut link = with_mtu(true);
    link.begin(Time(0), Time(1000 * MS));
    link.arrive(Time(0), Side::Sender, data(0));
    assert!(link.poll(Time(100 * MS)).is_none());
    assert_eq!(link.packets_held(), 0);
    let r = link.finish(Time(100 * MS));
    assert_eq!((r.flows[0].mtu_dropped, r.flows[0].icmp_sent), (1, 0));
}
