//! How the timing of ACKs moves BBR's window-limited time (`tcpi_rwnd_limited`) under a
//! small receive window: the mechanism behind the validation cell `bbr rwnd 64KB 50Mbit
//! 40ms` (docs/validation.md, "BBR held back by a 64 KB window"). The sender is the
//! simulator's own, driven through the scripted endpoint; the path is a closed loop of
//! 20 ms each way, a 50 Mbit/s bottleneck and a receiver that acknowledges every second
//! segment. Only the ACKs' arrival times differ between the runs compared.

use ccbench_sim::tcp::scripted::{PeerAck, ScriptedParams, ScriptedSender};
use ccbench_sim::time::{Dur, Time};
use ccbench_sim::units::BitRate;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

const MSS: u32 = 1448;
const WINDOW: u64 = 64 * 1024;

/// (share of the run the window held the sender back, goodput in Mbit/s) over `secs` of a
/// bulk BBR flow whose ACKs are each delayed by up to `jitter` more, in order.
fn window_limited(jitter: Dur, secs: u64, seed: u64) -> (f64, f64) {
    let mut p = ScriptedParams {
        cca: "bbr".into(),
        paced: true,
        snd_wnd: WINDOW,
        handshake_rtt: Dur::from_ms(40),
        ..Default::default()
    };
    p.tcp.mss = MSS;
    let mut h = ScriptedSender::new(&p).unwrap();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let one_way = Dur::from_ms(20);
    let serialization = BitRate(50_000_000).tx_time(MSS + 52);
    let end = Time::ZERO + Dur::from_secs(secs);
    let (mut link_free, mut last_ack_at, mut received) = (Time::ZERO, Time::ZERO, 0u64);
    let mut acks: VecDeque<(Time, u64)> = VecDeque::new();
    h.write(Time::ZERO, MSS as u64 * 10_000_000).unwrap();
    loop {
        for skb in h.take_sent() {
            for _ in 0..skb.segs {
                // Through the bottleneck, then to the receiver, which ACKs every second
                // segment; the ACK comes back in order, `jitter` late at most.
                link_free = link_free.max(skb.time + Dur::from_us(1)) + serialization;
                received += 1;
                if received % 2 == 0 {
                    let late = Dur(rng.gen_range(0..=jitter.ns()));
                    let at = (link_free + one_way + one_way + late).max(last_ack_at);
                    last_ack_at = at;
                    acks.push_back((at, received));
                }
            }
        }
        let timer = h.next_event().unwrap_or(end);
        match acks.front() {
            Some(&(at, ack)) if at <= timer && at < end => {
                acks.pop_front();
                h.receive(at, &PeerAck { ack, rwnd: WINDOW, ..Default::default() });
            }
            _ if timer < end => h.advance(timer),
            _ => break,
        }
    }
    h.advance(end);
    let info = h.tcp_info();
    let share = info["tcpi_rwnd_limited"] as f64 / (secs as f64 * 1e6);
    let goodput = info["tcpi_bytes_acked"] as f64 * 8.0 / secs as f64 / 1e6;
    (share, goodput)
}

#[test]
fn irregular_acks_leave_bbr_less_window_limited_at_the_same_goodput() {
    // Evenly spaced ACKs: the pacing timer sends into a shut window and the sender waits
    // for the next ACK, window-limited (the simulator's 58% in the cell).
    let (even, even_goodput) = window_limited(Dur::ZERO, 10, 1);
    // ACKs bunched as the kernel host's were (1 to 3 ms apart at the same mean): an ACK
    // finds the pacing timer pending more often, and the sender spends that time
    // pacing-limited instead (the kernel's 30% in the cell).
    let (bunched, bunched_goodput) = window_limited(Dur::from_ms(2), 10, 1);
    eprintln!(
        "window-limited {even:.3} even, {bunched:.3} bunched; goodput {even_goodput:.2} / {bunched_goodput:.2} Mbit/s"
    );
    assert!(even > 0.45, "{even}");
    assert!(bunched < even - 0.12, "{bunched} vs {even}");
    assert!((even_goodput / bunched_goodput - 1.0).abs() < 0.05, "{even_goodput} vs {bunched_goodput}");
}
