//! The path MTU as one connection knows it, and the search of MTU probing (RFC 4821 as
//! Linux does it): the MTU `tcp_sync_mss` last saw (`icsk_pmtu_cookie`), the route's MTU
//! and its lock (`__ip_rt_update_pmtu`), the MSS an MTU allows (`tcp_mtu_to_mss`,
//! `tcp_mss_to_mtu`), and `icsk_mtup`'s binary search between `search_low` and
//! `search_high` (`tcp_mtup_init`, `tcp_mtu_probe`'s sizing, `tcp_mtup_probe_success`,
//! `tcp_mtup_probe_failed`, `tcp_mtu_check_reprobe`, and the black-hole step of
//! `tcp_mtu_probing`). What these do to the sender's segments is the sender's
//! (`tcp/sender/mtu.rs`).

use super::config::TcpConfig;
use crate::units::wire;

/// IPv4 and TCP headers without options (`net_header_len + sizeof(struct tcphdr)`).
const HEADERS: u32 = wire::IP_HEADER + wire::TCP_HEADER;
/// `tcp_min_snd_mss`'s default: the smallest MSS the stack sends.
const MIN_SND_MSS: u32 = 48;
/// `ip_rt_min_pmtu`: an ICMP's smaller MTU is taken as this, with the route locked.
pub const MIN_PMTU: u32 = crate::config::MIN_PMTU;

/// The connection's view of the path MTU, and the probing search.
#[derive(Clone, Debug)]
pub struct PathMtu {
    /// `rx_opt.mss_clamp`: the largest MSS the handshake allows, options not counted.
    clamp: u32,
    /// TCP option bytes on every data segment (`tcp_header_len - sizeof(tcphdr)`).
    opts: u32,
    /// `icsk_pmtu_cookie`: the MTU `tcp_sync_mss` last saw.
    pub cookie: u32,
    /// The route's MTU (a route exception after an ICMP), and whether it is locked
    /// (`mtu lock`), which keeps ICMPs from lowering it.
    route: u32,
    locked: bool,
    /// A route changed since the socket last sent: it sees the new one once a packet has
    /// left (`__sk_dst_check` in `ip_queue_xmit`), until then the one it had.
    pending_route: Option<u32>,
    /// `icsk_mtup.enabled`, `search_low`, `search_high`, `probe_size` (0: none out) and
    /// `probe_timestamp` (jiffies).
    pub enabled: bool,
    pub search_low: u32,
    pub search_high: u32,
    pub probe_size: u32,
    probe_timestamp: u32,
    /// `mtu_probe.probe_seq_start`, `probe_seq_end`: the probe's stream offsets.
    pub probe_seq: (u64, u64),
}

impl PathMtu {
    /// A connection whose segments carry `mss` bytes and `opts` option bytes on a path of
    /// `mtu` (the device's, a route's).
    pub fn new(mss: u32, opts: u32, mtu: u32) -> PathMtu {
        PathMtu {
            clamp: mss + opts,
            opts,
            cookie: mtu,
            route: mtu,
            locked: false,
            pending_route: None,
            enabled: false,
            search_low: 0,
            search_high: 0,
            probe_size: 0,
            probe_timestamp: 0,
            probe_seq: (0, 0),
        }
    }

    /// The handshake's `mss_clamp` (the peer's MSS option, within `TCP_MAXSEG`) is
    /// `clamp`, not the MSS the route left.
    pub fn with_clamp(mut self, clamp: u32) -> PathMtu {
        self.clamp = clamp;
        self
    }

    /// A simulated host's: the timestamp option on every segment, and an MTU that just
    /// holds a full segment.
    pub fn of_host(tcp: &TcpConfig) -> PathMtu {
        PathMtu::new(tcp.mss, wire::TCP_TS_OPTION, tcp.mss + wire::DATA_OVERHEAD)
    }

    /// `tcp_mtu_to_mss`.
    pub fn mtu_to_mss(&self, pmtu: u32) -> u32 {
        (pmtu.saturating_sub(HEADERS).min(self.clamp)).max(MIN_SND_MSS).saturating_sub(self.opts)
    }

    /// `tcp_mss_to_mtu`.
    pub fn mss_to_mtu(&self, mss: u32) -> u32 {
        mss + self.opts + HEADERS
    }

    /// The MTU the socket's route has now.
    pub fn route_mtu(&self) -> u32 {
        self.route
    }

    /// `tcp_mtup_init`, as the connection is established (`tcp_init_transfer`).
    pub fn mtup_init(&mut self, tcp: &TcpConfig, jiffies: u32) {
        self.enabled = tcp.mtu_probing > 1;
        self.search_high = self.clamp + HEADERS;
        self.search_low = self.mss_to_mtu(tcp.base_mss);
        self.probe_size = 0;
        if self.enabled {
            self.probe_timestamp = jiffies;
        }
    }

    /// `tcp_sync_mss` for `pmtu`: the MSS it allows, within the search's low end while
    /// probing. (`tcp_bound_to_half_wnd` is left out: a window under two MSS.)
    pub fn sync(&mut self, pmtu: u32) -> u32 {
        self.search_high = self.search_high.min(pmtu);
        let mss = self.mtu_to_mss(pmtu);
        self.cookie = pmtu;
        match self.enabled {
            true => mss.min(self.mtu_to_mss(self.search_low)),
            false => mss,
        }
    }

    /// `__ip_rt_update_pmtu` for an ICMP's `mtu`: a locked route, or a larger MTU, changes
    /// nothing; one below `ip_rt_min_pmtu` is taken as that. Returns the route's MTU.
    pub fn icmp_update(&mut self, mtu: u32) -> u32 {
        if !self.locked && mtu < self.route {
            self.route = mtu.max(MIN_PMTU).min(self.route);
        }
        self.route
    }

    /// A route change (`ip route change ... mtu [lock] N`): seen once a packet has left.
    pub fn route_change(&mut self, mtu: u32, locked: bool) {
        self.locked = locked;
        self.pending_route = Some(mtu);
    }

    /// A packet left: the socket re-checks its route (`__sk_dst_check`).
    pub fn on_transmit(&mut self) {
        if let Some(mtu) = self.pending_route.take() {
            self.route = mtu;
        }
    }

    /// The route is set as the connection opens (no packet needed).
    pub fn set_route(&mut self, mtu: u32, locked: bool) {
        (self.route, self.locked, self.pending_route) = (mtu, locked, None);
    }

    /// The next probe's MSS (`tcp_mtu_probe`): the middle of the search, or None when
    /// the search is done (narrower than `probe_threshold`, or past its top).
    pub fn next_probe(&self, tcp: &TcpConfig) -> Option<u32> {
        let size = self.mtu_to_mss((self.search_high + self.search_low) >> 1);
        let interval = self.search_high.saturating_sub(self.search_low);
        let done = size > self.mtu_to_mss(self.search_high) || interval < tcp.probe_threshold;
        (!done).then_some(size)
    }

    /// `tcp_mtu_check_reprobe`: after `tcp_probe_interval`, search again from the top
    /// down to the MSS in use.
    pub fn check_reprobe(&mut self, tcp: &TcpConfig, jiffies: u32, mss_now: u32) {
        let interval = tcp.probe_interval_ns / (1_000_000_000 / tcp.hz as u64);
        if jiffies.wrapping_sub(self.probe_timestamp) as u64 >= interval {
            self.probe_size = 0;
            self.search_high = self.clamp + HEADERS;
            self.search_low = self.mss_to_mtu(mss_now);
            self.probe_timestamp = jiffies;
        }
    }

    /// A probe of `len` bytes left, covering stream offsets `seq`.
    pub fn probe_sent(&mut self, len: u32, seq: (u64, u64)) {
        self.probe_size = self.mss_to_mtu(len);
        self.probe_seq = seq;
    }

    /// `tcp_mtup_probe_success`'s search step: the probe's size is the new low end.
    pub fn probe_succeeded(&mut self) {
        self.search_low = self.probe_size;
        self.probe_size = 0;
    }

    /// `tcp_mtup_probe_failed`: the probe's size, less one, is the new high end.
    pub fn probe_failed(&mut self, jiffies: u32) {
        self.search_high = self.probe_size - 1;
        self.probe_size = 0;
        self.probe_timestamp = jiffies;
    }

    /// `tcp_mtu_probing`, black-hole detection after retransmissions timed out: turn
    /// probing on, or, already on, halve the low end (within `tcp_base_mss` and the
    /// floors).
    pub fn black_hole(&mut self, tcp: &TcpConfig, jiffies: u32) {
        if !self.enabled {
            self.enabled = true;
            self.probe_timestamp = jiffies;
            return;
        }
        let mss = (self.mtu_to_mss(self.search_low) >> 1).min(tcp.base_mss).max(tcp.mtu_probe_floor).max(MIN_SND_MSS);
        self.search_low = self.mss_to_mtu(mss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> PathMtu {
        let tcp = TcpConfig::default();
        let mut p = PathMtu::of_host(&tcp);
        p.mtup_init(&TcpConfig { mtu_probing: 1, ..tcp }, 0);
        p
    }

    #[test]
    fn mss_and_mtu_convert_with_headers_and_options() {
        let p = path();
        assert_eq!((p.mtu_to_mss(1500), p.mss_to_mtu(1448)), (1448, 1500));
        assert_eq!(p.mtu_to_mss(1400), 1348);
        assert_eq!(p.mtu_to_mss(9000), 1448, "no more than the handshake's clamp");
        assert_eq!(p.mtu_to_mss(60), 48 - 12, "tcp_min_snd_mss, less the options");
    }

    #[test]
    fn black_hole_detection_turns_probing_on_then_halves_from_base_mss() {
        let tcp = TcpConfig { mtu_probing: 1, ..TcpConfig::default() };
        let mut p = path();
        assert!(!p.enabled);
        assert_eq!((p.search_low, p.search_high), (1024 + 52, 1500));
        p.black_hole(&tcp, 7);
        assert!(p.enabled);
        assert_eq!(p.sync(1500), 1024, "tcp_sync_mss: within the search's low end");
        // Again: half of 1024, within base_mss.
        p.black_hole(&tcp, 8);
        assert_eq!(p.sync(1500), 512);
    }

    #[test]
    fn the_search_halves_the_range_until_it_is_narrower_than_the_threshold() {
        let tcp = TcpConfig::default();
        let mut p = path();
        p.enabled = true;
        // (1500 + 1076) / 2 = 1288 -> MSS 1236.
        assert_eq!(p.next_probe(&tcp), Some(1236));
        p.probe_sent(1236, (0, 1236));
        p.probe_succeeded();
        assert_eq!(p.search_low, 1288);
        // (1500 + 1288) / 2 = 1394 -> 1342; a path of 1400 carries it.
        assert_eq!(p.next_probe(&tcp), Some(1342));
        p.probe_sent(1342, (0, 1));
        p.probe_succeeded();
        // 1447 (MSS 1395) is lost on a 1400-byte path: the top comes down to 1446.
        assert_eq!(p.next_probe(&tcp), Some(1395));
        p.probe_sent(1395, (0, 1));
        p.probe_failed(1);
        assert_eq!(p.search_high, 1446);
        let mut steps = 0;
        while let Some(size) = p.next_probe(&tcp) {
            p.probe_sent(size, (0, 1));
            if p.probe_size <= 1400 {
                p.probe_succeeded();
            } else {
                p.probe_failed(1);
            }
            steps += 1;
        }
        assert!(p.search_high - p.search_low < 8 && p.search_low <= 1400, "{p:?} after {steps}");
    }

    #[test]
    fn an_icmp_lowers_an_unlocked_route_only_and_not_below_the_minimum() {
        let mut p = path();
        assert_eq!(p.icmp_update(1600), 1500, "a larger MTU changes nothing");
        assert_eq!(p.icmp_update(1400), 1400);
        assert_eq!(p.icmp_update(300), MIN_PMTU);
        p.set_route(640, true);
        assert_eq!(p.icmp_update(600), 640, "mtu lock");
    }
}
