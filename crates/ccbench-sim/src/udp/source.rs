//! A UDP source: one datagram every `size / rate` while on, at the rate its schedule
//! gives; each on period starts with a datagram.

use super::UdpFlowConfig;
use crate::base::rng::{self, Rng};
use crate::net::packet::Control;
use crate::net::Packet;
use crate::time::Time;
use rand::Rng as _;

pub struct UdpSource {
    cfg: UdpFlowConfig,
    lane: u32,
    stop: Time,
    /// The on/off period it is in: on or off, and when it ends.
    period: Option<(bool, Time)>,
    rng: Rng,
    pub sent_packets: u64,
    /// IP bytes sent.
    pub sent_bytes: u64,
}

impl UdpSource {
    /// Flow `cfg` on lane `lane`, its random periods on stream `index` of `seed`; it
    /// stops at `end` if not before.
    pub fn new(cfg: &UdpFlowConfig, lane: u32, seed: u64, index: u64, end: Time) -> UdpSource {
        let mut source = UdpSource {
            cfg: cfg.clone(),
            lane,
            stop: cfg.stop_ns.map_or(end, Time).min(end),
            period: None,
            rng: rng::stream(seed, "udp-on-off", index),
            sent_packets: 0,
            sent_bytes: 0,
        };
        if let Some(o) = cfg.on_off {
            let on = source.draw(o.on_ns);
            source.period = Some((true, Time(cfg.start_ns) + on));
        }
        source
    }

    /// A period of mean `mean_ns`: itself, or an exponential draw (at least 1 ns).
    fn draw(&mut self, mean_ns: u64) -> crate::time::Dur {
        let exponential = self.cfg.on_off.is_some_and(|o| o.exponential);
        let ns = match exponential {
            true => (-(1.0 - self.rng.gen::<f64>()).ln() * mean_ns as f64).round() as u64,
            false => mean_ns,
        };
        crate::time::Dur(ns.max(1))
    }

    /// Due at `now`: the datagram to send now, if any, and when it is next due.
    pub fn wake(&mut self, now: Time) -> (Option<Packet>, Option<Time>) {
        if now >= self.stop {
            return (None, None);
        }
        if let Some((on, end)) = self.period {
            let (mut on, mut end) = (on, end);
            while now >= end {
                on = !on;
                let o = self.cfg.on_off.expect("periods come from on_off");
                end += self.draw(if on { o.on_ns } else { o.off_ns });
            }
            self.period = Some((on, end));
            if !on {
                return (None, Some(end).filter(|&t| t < self.stop));
            }
        }
        let bits = self.cfg.wire_bytes() as u128 * 8;
        if self.cfg.rate_at(now.ns()) == 0 {
            return (None, self.next_step(now.ns()).map(Time).filter(|&t| t < self.stop));
        }
        let pkt = Packet {
            flow: self.lane,
            wire_bytes: self.cfg.wire_bytes(),
            payload: self.cfg.payload_bytes,
            seq: self.sent_packets,
            ack: now.ns(),
            ctl: Control::Datagram,
            ..Packet::default()
        };
        self.sent_packets += 1;
        self.sent_bytes += self.cfg.wire_bytes() as u64;
        (Some(pkt), self.after_bits(now.ns(), bits).map(Time).filter(|&t| t < self.stop))
    }

    /// The first rate step after `t`.
    fn next_step(&self, t: u64) -> Option<u64> {
        self.cfg.rate_schedule.iter().map(|s| s.at_ns).find(|&at| at > t)
    }

    /// When `bits` more have been offered from `t` on, at the rates the schedule gives.
    fn after_bits(&self, mut t: u64, bits: u128) -> Option<u64> {
        // In bit-nanoseconds per second: at r bit/s, one ns covers r of them.
        let mut left = bits * 1_000_000_000;
        loop {
            let r = self.cfg.rate_at(t) as u128;
            let step = self.next_step(t);
            if r > 0 {
                let dt = left.div_ceil(r);
                match step {
                    Some(at) if (t as u128 + dt) > at as u128 => left -= r * (at - t) as u128,
                    _ => return u64::try_from(t as u128 + dt).ok(),
                }
            }
            t = step?;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::config::RateStep;
    use crate::udp::OnOff;

    const S: u64 = 1_000_000_000;

    /// Every send instant of `cfg` until `end`, one wake of the source at a time.
    pub(in crate::udp) fn sends(cfg: &UdpFlowConfig, end: u64) -> Vec<u64> {
        let mut src = UdpSource::new(cfg, 0, 1, 0, Time(end));
        let (mut out, mut at) = (Vec::new(), Some(Time(cfg.start_ns)));
        while let Some(t) = at {
            let (pkt, next) = src.wake(t);
            if let Some(p) = pkt {
                assert_eq!(p.ack, t.ns());
                out.push(t.ns());
            }
            at = next;
        }
        out
    }

    #[test]
    fn a_constant_rate_sends_one_packet_per_its_serialization_time() {
        // 1500-byte packets at 12 Mbit/s: one a millisecond.
        let cfg = UdpFlowConfig { start_ns: 5, ..UdpFlowConfig::constant(12_000_000) };
        let t = sends(&cfg, S);
        assert_eq!(t.len(), 1000);
        assert!(t.windows(2).all(|w| w[1] - w[0] == 1_000_000));
        // 7 Mbit/s does not divide: the spacing rounds up, 1,714,286 ns.
        let t = sends(&UdpFlowConfig::constant(7_000_000), S);
        assert_eq!(t[1], 1_714_286);
        assert_eq!(t.len(), 584); // 7e6 / 12,000 bits = 583.3 a second
    }

    #[test]
    fn a_rate_step_takes_effect_between_two_packets() {
        // 12 Mbit/s, then 24 Mbit/s from 10.5 ms: the packet owed at 11 ms comes when the
        // remaining half packet has gone at the new rate, at 10.75 ms.
        let cfg = UdpFlowConfig {
            rate_schedule: vec![
                RateStep { at_ns: 10_500_000, rate_bps: 24_000_000 },
                RateStep { at_ns: 20_000_000, rate_bps: 0 },
                RateStep { at_ns: 30_000_000, rate_bps: 12_000_000 },
            ],
            ..UdpFlowConfig::constant(12_000_000)
        };
        let t = sends(&cfg, 32_000_000);
        assert_eq!(&t[9..13], &[9_000_000, 10_000_000, 10_750_000, 11_250_000]);
        assert!(t.iter().all(|&x| !(20_000_000..30_000_000).contains(&x)), "{t:?}");
        // The packet begun at 19.75 ms had half its bits offered by the pause at 20 ms;
        // the other half takes 0.5 ms at 12 Mbit/s from 30 ms.
        assert_eq!(&t[t.len() - 2..], &[30_500_000, 31_500_000]);
    }

    #[test]
    fn fixed_on_off_periods_send_only_while_on() {
        // 100 ms on, 300 ms off, one packet a millisecond while on.
        let on_off = Some(OnOff { on_ns: 100_000_000, off_ns: 300_000_000, exponential: false });
        let cfg = UdpFlowConfig { on_off, ..UdpFlowConfig::constant(12_000_000) };
        let t = sends(&cfg, S);
        assert_eq!(t.len(), 300); // on at [0, 100), [400, 500), [800, 900) ms
        assert!(t.iter().all(|&x| (x / 1_000_000) % 400 < 100));
        assert_eq!(t[100], 400_000_000, "an on period starts with a packet");
    }

    #[test]
    fn exponential_periods_have_their_means_and_repeat_with_the_seed() {
        let on_off = Some(OnOff { on_ns: 50_000_000, off_ns: 150_000_000, exponential: true });
        let cfg = UdpFlowConfig { on_off, ..UdpFlowConfig::constant(12_000_000) };
        let t = sends(&cfg, 200 * S);
        // On a quarter of the time, one packet a millisecond: 50,000 in 200 s, give or
        // take the spread of 1,000 periods (about 4% at one sigma).
        assert!((t.len() as f64 / 50_000.0 - 1.0).abs() < 0.12, "{}", t.len());
        assert_eq!(t, sends(&cfg, 200 * S));
    }

    #[test]
    fn it_stops_at_its_stop_time() {
        let cfg = UdpFlowConfig { stop_ns: Some(10_000_000), ..UdpFlowConfig::constant(12_000_000) };
        assert_eq!(sends(&cfg, S).len(), 10);
    }
}
