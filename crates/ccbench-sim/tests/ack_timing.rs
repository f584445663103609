//! How the timing of ACKs moves a BBR flow: the mechanism behind validation cells where
//! the kernel host's timing noise, which the simulator does not model, decides a figure
//! (docs/validation.md, "Why the failing cells fail"). The sender is the simulator's own,
//! driven through the scripted endpoint; the path is a closed loop: a bottleneck with a
//! drop-tail queue (unlimited unless given), a fixed delay each way and a receiver that
//! acknowledges every second segment, at once with SACK blocks when a segment is missing.
//! Only the ACKs' arrival times differ between the runs compared.

use ccbench_sim::tcp::scripted::{PeerAck, ScriptedParams, ScriptedSender};
use ccbench_sim::time::{Dur, Time};
use ccbench_sim::units::BitRate;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeSet, VecDeque};

const MSS: u32 = 1448;

struct Path {
    cca: &'static str,
    rate_bps: u64,
    one_way: Dur,
    /// The peer's window in bytes.
    window: u64,
    /// The bottleneck's drop-tail limit: packets waiting behind the one on the wire
    /// (None: unlimited).
    buffer: Option<usize>,
}

/// The receiver: what has arrived, and the ACK it owes.
#[derive(Default)]
struct Receiver {
    rcv_nxt: u64,
    above: BTreeSet<u64>,
    unacked: u32,
}

impl Receiver {
    /// Segment `seg` arrives: the ACK to send now, if any (every second in-order segment,
    /// at once while data is missing, `tcp_ack_snd_check`).
    fn segment(&mut self, seg: u64, window: u64) -> Option<PeerAck> {
        let out_of_order = seg != self.rcv_nxt || !self.above.is_empty();
        if seg == self.rcv_nxt {
            self.rcv_nxt += 1;
            while self.above.remove(&self.rcv_nxt) {
                self.rcv_nxt += 1;
            }
        } else if seg > self.rcv_nxt {
            self.above.insert(seg);
        }
        self.unacked += 1;
        if !out_of_order && self.unacked < 2 {
            return None;
        }
        self.unacked = 0;
        // SACK blocks, the one holding `seg` first (`tcp_sack_new_ofo_skb`), at most three.
        let mut blocks: Vec<(u64, u64)> = Vec::new();
        for &s in &self.above {
            match blocks.last_mut() {
                Some(b) if b.1 == s => b.1 += 1,
                _ => blocks.push((s, s + 1)),
            }
        }
        if let Some(i) = blocks.iter().position(|b| b.0 <= seg && seg < b.1) {
            let first = blocks.remove(i);
            blocks.insert(0, first);
        }
        blocks.truncate(3);
        Some(PeerAck { ack: self.rcv_nxt, rwnd: window, sacks: blocks, ..Default::default() })
    }
}

struct Outcome {
    /// Share of the run the window held the sender back (`tcpi_rwnd_limited`).
    window_limited: f64,
    goodput_mbps: f64,
    /// Mean over the ACKs of the last `secs - 2` seconds of the newest acknowledged
    /// segment's RTT, ms.
    rtt_ms: f64,
    /// Means over the same ACKs of cwnd and of the segments in flight, and of the pacing
    /// rate (Mbit/s).
    cwnd: f64,
    inflight: f64,
    pacing_mbps: f64,
}

/// `secs` of a bulk flow over `path` whose ACKs are each delayed by up to `jitter` more
/// (uniformly, in order). BBR is paced (fq), other algorithms are not.
fn run(path: &Path, jitter: Dur, secs: u64, seed: u64) -> Outcome {
    let mut p = ScriptedParams {
        cca: path.cca.into(),
        paced: path.cca == "bbr",
        snd_wnd: path.window,
        handshake_rtt: path.one_way + path.one_way,
        ..Default::default()
    };
    p.tcp.mss = MSS;
    let mut h = ScriptedSender::new(&p).unwrap();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let serialization = BitRate(path.rate_bps).tx_time(MSS + 52);
    let end = Time::ZERO + Dur::from_secs(secs);
    let settled = Time::ZERO + Dur::from_secs(2);
    let (mut link_free, mut last_ack_at) = (Time::ZERO, Time::ZERO);
    let mut queue: VecDeque<Time> = VecDeque::new(); // departure times of queued packets
    let mut rx = Receiver::default();
    let mut acks: VecDeque<(Time, PeerAck, Time)> = VecDeque::new();
    let (mut rtt_sum, mut cwnd_sum, mut inflight_sum, mut pacing_sum, mut rtt_n) = (0.0, 0.0, 0.0, 0.0, 0u64);
    h.write(Time::ZERO, MSS as u64 * 100_000_000, false);
    loop {
        for skb in h.take_sent() {
            let arrival = skb.time + Dur::from_us(1);
            for seg in skb.seq..skb.seq + skb.segs as u64 {
                // Through the bottleneck's queue (or dropped at its tail), then to the
                // receiver; its ACK comes back in order, `jitter` late at most.
                while queue.front().is_some_and(|&d| d <= arrival) {
                    queue.pop_front();
                }
                if path.buffer.is_some_and(|limit| queue.len() > limit) {
                    continue;
                }
                link_free = link_free.max(arrival) + serialization;
                queue.push_back(link_free);
                if let Some(ack) = rx.segment(seg, path.window) {
                    let late = Dur(rng.gen_range(0..=jitter.ns()));
                    let at = (link_free + path.one_way + path.one_way + late).max(last_ack_at);
                    last_ack_at = at;
                    acks.push_back((at, ack, skb.time));
                }
            }
        }
        let timer = h.next_event().unwrap_or(end);
        match acks.front() {
            Some(&(at, _, sent)) if at <= timer && at < end => {
                let (_, ack, _) = acks.pop_front().unwrap();
                h.receive(at, &ack);
                if at >= settled {
                    let info = h.tcp_info();
                    rtt_sum += at.since(sent).ns() as f64 / 1e6;
                    cwnd_sum += info["tcpi_snd_cwnd"] as f64;
                    inflight_sum += info["tcpi_unacked"] as f64;
                    pacing_sum += info["tcpi_pacing_rate"] as f64 * 8.0 / 1e6;
                    rtt_n += 1;
                }
            }
            _ if timer < end => h.advance(timer),
            _ => break,
        }
    }
    h.advance(end);
    let info = h.tcp_info();
    Outcome {
        window_limited: info["tcpi_rwnd_limited"] as f64 / (secs as f64 * 1e6),
        goodput_mbps: info["tcpi_bytes_acked"] as f64 * 8.0 / secs as f64 / 1e6,
        rtt_ms: rtt_sum / rtt_n.max(1) as f64,
        cwnd: cwnd_sum / rtt_n.max(1) as f64,
        inflight: inflight_sum / rtt_n.max(1) as f64,
        pacing_mbps: pacing_sum / rtt_n.max(1) as f64,
    }
}

#[test]
fn irregular_acks_leave_bbr_less_window_limited_at_the_same_goodput() {
    // The cell `bbr rwnd 64KB 50Mbit 40ms`.
    let path = Path { cca: "bbr", rate_bps: 50_000_000, one_way: Dur::from_ms(20), window: 64 * 1024, buffer: None };
    // Evenly spaced ACKs: the pacing timer sends into a shut window and the sender waits
    // for the next ACK, window-limited (the simulator's 58% in the cell).
    let even = run(&path, Dur::ZERO, 10, 1);
    // ACKs bunched as the kernel host's were (1 to 3 ms apart at the same mean): an ACK
    // finds the pacing timer pending more often, and the sender spends that time
    // pacing-limited instead (the kernel's 30% in the cell).
    let bunched = run(&path, Dur::from_ms(2), 10, 1);
    eprintln!(
        "window-limited {:.3} even, {:.3} bunched; goodput {:.2} / {:.2} Mbit/s",
        even.window_limited, bunched.window_limited, even.goodput_mbps, bunched.goodput_mbps
    );
    assert!(even.window_limited > 0.45, "{}", even.window_limited);
    assert!(
        bunched.window_limited < even.window_limited - 0.12,
        "{} vs {}",
        bunched.window_limited,
        even.window_limited
    );
    assert!((even.goodput_mbps / bunched.goodput_mbps - 1.0).abs() < 0.05);
}

#[test]
fn ack_timing_noise_gives_bbr_a_standing_queue_at_the_same_window_and_pacing_rate() {
    // The cells `bbr 10Mbit 5ms 8bdp` and `bbr 500Mbit 20ms 2bdp`: with evenly spaced
    // ACKs, the simulator's mean RTT (14.3 and 23.4 ms in the cells); the kernel's ACKs,
    // which reach the sender a fraction of a millisecond early or late, read 17.6-19.4
    // and 35.3-38.7 ms over three runs each. ACKs up to 0.5 and 1 ms late give the
    // simulator's sender the same cwnd and pacing rate, more data in flight, and the
    // kernel's RTT, at the same goodput. The third path is that of `bbr codel 20Mbit
    // 40ms` without the AQM: the queue that noise builds there is what CoDel drops from.
    for (rate_bps, one_way_us, jitter_us, even_ms, noisy_ms) in [
        (10_000_000, 2_500, 500, (13.0, 15.0), (17.0, 23.0)),
        (500_000_000, 10_000, 1_000, (22.0, 24.0), (35.0, 42.0)),
        (20_000_000, 20_000, 1_000, (43.0, 46.0), (55.0, 70.0)),
    ] {
        let path = Path { cca: "bbr", rate_bps, one_way: Dur::from_us(one_way_us), window: 1 << 30, buffer: None };
        let even = run(&path, Dur::ZERO, 10, 1);
        let noisy = run(&path, Dur::from_us(jitter_us), 10, 1);
        eprintln!(
            "{rate_bps} bit/s, {one_way_us} us each way: RTT {:.2} / {:.2} ms even / noisy; cwnd {:.1} / {:.1}, \
             in flight {:.1} / {:.1}, pacing {:.2} / {:.2} Mbit/s",
            even.rtt_ms,
            noisy.rtt_ms,
            even.cwnd,
            noisy.cwnd,
            even.inflight,
            noisy.inflight,
            even.pacing_mbps,
            noisy.pacing_mbps
        );
        assert!(even.rtt_ms > even_ms.0 && even.rtt_ms < even_ms.1, "{}", even.rtt_ms);
        assert!(noisy.rtt_ms > noisy_ms.0 && noisy.rtt_ms < noisy_ms.1, "{}", noisy.rtt_ms);
        assert!((noisy.cwnd / even.cwnd - 1.0).abs() < 0.1, "{} vs {}", noisy.cwnd, even.cwnd);
        assert!((noisy.pacing_mbps / even.pacing_mbps - 1.0).abs() < 0.02);
        assert!(noisy.inflight > even.inflight * 1.3, "{} vs {}", noisy.inflight, even.inflight);
        assert!((even.goodput_mbps / noisy.goodput_mbps - 1.0).abs() < 0.01);
    }
}

#[test]
fn ack_timing_noise_costs_cubic_goodput_behind_a_two_packet_buffer() {
    // The cell `cubic 10Mbit 5ms 0.5bdp`: two packets of buffer behind the one on the
    // wire. With evenly spaced ACKs the simulator's flow gets 9.21 Mbit/s in the cell, the
    // kernel's 8.27 [8.20-8.33]. Unpaced, Cubic sends what each ACK releases at once; ACKs
    // that bunch release bursts the buffer cannot hold, and each loss costs a reduction.
    let path =
        Path { cca: "cubic", rate_bps: 10_000_000, one_way: Dur::from_us(2_500), window: 1 << 30, buffer: Some(2) };
    let even = run(&path, Dur::ZERO, 10, 1);
    let noisy = run(&path, Dur::from_us(500), 10, 1);
    eprintln!("goodput {:.2} even, {:.2} with ACKs up to 0.5 ms late", even.goodput_mbps, noisy.goodput_mbps);
    assert!(even.goodput_mbps > 9.2, "{}", even.goodput_mbps);
    assert!(noisy.goodput_mbps < 0.9 * even.goodput_mbps && noisy.goodput_mbps > 7.0, "{}", noisy.goodput_mbps);
}
