//! A connection that opens in time (`tcp_connect`, `tcp_rcv_synsent_state_process`,
//! `tcp_conn_request`). The SYN and SYN-ACK cross the path. A lost SYN goes again when
//! the retransmit timer, armed at `TCP_TIMEOUT_INIT` and doubled each time, expires; the
//! client gives up after `tcp_syn_retries`. How the handshake went sets the connection's
//! first RTT sample, its initial cwnd and ssthresh (`tcp_init_transfer`).
//!
//! TCP Fast Open (RFC 7413; tcp_fastopen.c): a client with no cookie for the server asks
//! for one in its SYN; the server's SYN-ACK carries it and the client keeps it
//! (`tcp_fastopen_cache_set`). A later connection's SYN carries the cookie and the first
//! data (`tcp_send_syn_data`); the server, finding the cookie valid, takes the data and
//! its SYN-ACK acknowledges it, one round trip before a regular handshake would let the
//! data go. A retransmitted SYN carries neither cookie nor data; if the SYN-ACK then
//! acknowledges no data, the client sends it as regular data after the handshake, and
//! the cache counts a SYN loss, which turns data in the SYN off for a while.
//!
//! On the SYN and SYN-ACK, `seq` and `ack` count bytes of the SYN's data, outside the
//! segment numbers of the data that follows.

use super::rtt::RttEstimator;
use crate::net::packet::Control;
use crate::net::Packet;
use crate::time::{Dur, Time};
use crate::units::wire;

/// `TCP_TIMEOUT_INIT`: the SYN's first retransmission timeout.
pub const SYN_TIMEOUT: Dur = Dur::from_secs(1);
/// `net.ipv4.tcp_syn_retries`: SYN retransmissions before `connect()` fails.
pub const SYN_RETRIES: u32 = 6;
/// `TCP_INIT_CWND`: cwnd from `tcp_init_sock` until the connection is established; what
/// the algorithm's ssthresh sees at a SYN timeout.
pub const INIT_CWND_AT_SYN: u32 = 10;
/// The data in a SYN goes in one page fragment at most (`skb_page_frag_refill`).
const PAGE_SIZE: u64 = 4096;
/// A SYN's or SYN-ACK's options without Fast Open: MSS (4), SACK-permitted and
/// timestamps (12), NOP and window scale (4).
const SYN_OPTIONS: u32 = 20;
/// The Fast Open option (kind 34), padded to 4 bytes: empty (a cookie request) or with
/// an 8-byte cookie.
const FASTOPEN_REQUEST: u32 = 4;
const FASTOPEN_COOKIE: u32 = 12;
/// Fast Open's SYN-loss back-off: data goes in the SYN again `60 s << losses` after the
/// last one (`tcp_fastopen_cache_get` in `tcp_send_syn_data`).
const SYN_LOSS_BACKOFF: Dur = Dur::from_secs(60);

/// What a client keeps of a server for Fast Open (the `tcpm_fastopen` part of the
/// destination's TCP metrics entry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastOpenCache {
    pub cookie: bool,
    /// SYNs with data lost in a row, and when the last one was found lost.
    pub syn_loss: u32,
    pub last_syn_loss: Time,
}

impl FastOpenCache {
    /// `tcp_send_syn_data`: the SYN carries data if there is a cookie, and not while
    /// more than one SYN with data has been lost recently.
    pub fn may_send_data(&self, now: Time) -> bool {
        let backoff = Dur(match self.syn_loss {
            0..=31 => SYN_LOSS_BACKOFF.ns().saturating_mul(1 << self.syn_loss),
            _ => u64::MAX,
        });
        let backing_off = self.syn_loss > 1 && now.ns() < self.last_syn_loss.ns().saturating_add(backoff.ns());
        self.cookie && !backing_off
    }

    /// `tcp_fastopen_cache_set`: a cookie received replaces the one kept; a SYN with data
    /// lost counts, anything else clears the count.
    pub fn learn(&mut self, now: Time, cookie: bool, syn_lost: bool) {
        self.cookie |= cookie;
        if syn_lost {
            self.syn_loss += 1;
            self.last_syn_loss = now;
        } else {
            self.syn_loss = 0;
        }
    }
}

/// The bytes of a write that go in the SYN (`tcp_send_syn_data`): the MSS the path's
/// MTU gives, without the timestamp option's room taken (`__tcp_mtu_to_mss`), less the
/// full option space, and at most a page.
pub fn syn_data_bytes(mss: u32, pending: u64) -> u32 {
    let space = (mss + wire::TCP_TS_OPTION).saturating_sub(wire::MAX_TCP_OPTION_SPACE) as u64;
    space.min(PAGE_SIZE).min(pending) as u32
}

/// A client connection in `SYN_SENT`.
#[derive(Clone, Debug)]
pub struct Connecting {
    /// When the first SYN and the latest one left.
    first_sent: Time,
    last_sent: Time,
    /// SYN retransmissions so far (`total_retrans` while connecting).
    pub retransmits: u32,
    /// Bytes of data the first SYN carried.
    pub syn_data: u32,
    /// The first SYN carried the Fast Open option (a cookie request, or a cookie).
    syn_fastopen: bool,
}

/// How the handshake went, for `tcp_init_transfer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Established {
    /// The SYN-ACK's RTT sample.
    pub rtt: Dur,
    pub syn_retransmits: u32,
    /// Bytes of the SYN's data the SYN-ACK acknowledged; the rest goes as regular data.
    pub data_acked: u32,
}

impl Connecting {
    /// `tcp_connect` at `now`: the first SYN, with `syn_data` bytes and the Fast Open
    /// option if `fastopen`.
    pub fn new(now: Time, syn_data: u32, fastopen: bool) -> Connecting {
        Connecting { first_sent: now, last_sent: now, retransmits: 0, syn_data, syn_fastopen: fastopen }
    }

    /// The SYN as it leaves at `now` (the first one, or a retransmission without the
    /// Fast Open option and data: `fastopen_req` is gone after the first).
    pub fn syn(&self, now: Time, flow: u32, conn: u16) -> Packet {
        let first = self.retransmits == 0;
        let fastopen = first && self.syn_fastopen;
        let payload = if first { self.syn_data } else { 0 };
        let option = match (fastopen, payload > 0) {
            (false, _) => 0,
            (true, false) => FASTOPEN_REQUEST,
            (true, true) => FASTOPEN_COOKIE,
        };
        Packet {
            flow,
            conn,
            ctl: Control::Syn,
            fastopen,
            payload,
            ts_val: super::tsopt::ts_ms(now),
            wire_bytes: wire::IP_HEADER + wire::TCP_HEADER + SYN_OPTIONS + option + payload,
            ..Default::default()
        }
    }

    /// The retransmit timer expired at `now`: the next SYN, or None when the client gives
    /// up (`tcp_write_timeout`). Its timeout is `TCP_TIMEOUT_INIT << retransmits`.
    pub fn retransmit(&mut self, now: Time) -> Option<Dur> {
        if self.retransmits >= SYN_RETRIES {
            return None;
        }
        self.retransmits += 1;
        self.last_sent = now;
        Some(self.timeout())
    }

    /// The retransmit timer's timeout for the SYN in flight.
    pub fn timeout(&self) -> Dur {
        Dur(SYN_TIMEOUT.ns() << self.retransmits)
    }

    /// The SYN-ACK arrives at `now`. Returns how the handshake went and what the cache
    /// learns (`tcp_rcv_fastopen_synack`): a cookie it carried, and whether a SYN with
    /// data was lost (SYNs retransmitted, and the SYN-ACK neither has a cookie nor
    /// acknowledges the data).
    pub fn established(&self, now: Time, synack: &Packet, cache: &mut FastOpenCache) -> Established {
        // The first SYN's RTT from its send time; after a retransmission, Karn's rule
        // leaves the echoed timestamp (`tcp_rtt_tsopt_us`: ms, at least 1 us).
        let rtt = if self.retransmits == 0 {
            now.since(self.first_sent)
        } else {
            let ms = super::tsopt::ts_ms(now).wrapping_sub(synack.ts_ecr) as u64;
            Dur::from_us((ms * 1000).max(1))
        };
        let data_acked = (synack.ack as u32).min(self.syn_data);
        if self.syn_fastopen {
            let data_lost = data_acked < self.syn_data;
            let syn_lost = self.retransmits > 0 && !synack.fastopen && data_lost;
            cache.learn(now, synack.fastopen, syn_lost);
        }
        Established { rtt, syn_retransmits: self.retransmits, data_acked }
    }

    /// When the latest SYN left.
    pub fn last_sent(&self) -> Time {
        self.last_sent
    }
}

/// The request a client sends when it opens a connection for a download (an HTTP GET
/// of a few headers); with Fast Open it goes in the SYN.
pub const REQUEST_BYTES: u32 = 100;

/// The opener's ACK of `synack` at `now`, carrying `request` bytes (0: none, or the SYN
/// carried it). Linux sends the request as a segment of its own just after the ACK, when
/// the application writes it; here they are one.
pub fn handshake_ack(now: Time, synack: &Packet, request: u32) -> Packet {
    Packet {
        flow: synack.flow,
        conn: synack.conn,
        ctl: Control::Ack,
        payload: request,
        ts_val: super::tsopt::ts_ms(now),
        ts_ecr: synack.ts_val,
        wire_bytes: wire::DATA_OVERHEAD + request,
        ..Default::default()
    }
}

/// A server's connection from the SYN to its establishment (`TCP_SYN_RECV`) and, after
/// a Fast Open one (established at the SYN), until the opener's ACK gives the first RTT
/// sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct Accepting {
    /// When the first SYN-ACK left, and whether another followed it.
    synack_sent: Option<Time>,
    synack_again: bool,
    /// Bytes of a Fast Open SYN's request the server took, which established it.
    pub taken: u32,
}

impl Accepting {
    /// Established already, by a Fast Open SYN.
    pub fn established(&self) -> bool {
        self.taken > 0
    }

    /// A SYN-ACK leaves at `now` (one answers each SYN, `tcp_check_req`).
    pub fn synack_sent(&mut self, now: Time) {
        match self.synack_sent {
            Some(_) => self.synack_again = true,
            None => self.synack_sent = Some(now),
        }
    }

    /// `tcp_synack_rtt_meas`: the SYN-ACK's RTT, to the opener's ACK at `now`; none if
    /// the SYN-ACK went more than once (Karn).
    pub fn rtt(&self, now: Time) -> Option<Dur> {
        match self.synack_again {
            true => None,
            false => self.synack_sent.map(|t| now.since(t)),
        }
    }
}

/// A client's connection opened for a download: its SYN until the SYN-ACK, then its
/// request until the response's first data shows that the server has it.
#[derive(Clone, Debug)]
pub struct Client {
    pub syn: Connecting,
    /// Once established: the SYN-ACK (its TSval, for the echo), and the RTO its RTT
    /// sample gives, backed off by each retransmission of the request.
    pub synack: Option<(Packet, RttEstimator)>,
    /// The request waits for the response (it went with the handshake's ACK).
    pub request_pending: bool,
}

impl Client {
    pub fn new(syn: Connecting) -> Client {
        Client { syn, synack: None, request_pending: false }
    }
}

/// The server's SYN-ACK to `syn` at `now` (`tcp_conn_request`, `tcp_make_synack`):
/// `data_taken` bytes of the SYN's data acknowledged; a cookie if the SYN asked for one.
pub fn syn_ack(now: Time, syn: &Packet, rwnd: u64, fastopen_server: bool, data_taken: u32) -> Packet {
    let cookie = fastopen_server && syn.fastopen && syn.payload == 0;
    Packet {
        flow: syn.flow,
        conn: syn.conn,
        ctl: Control::SynAck,
        fastopen: cookie,
        ack: data_taken as u64,
        // The window of a SYN-ACK is never scaled (RFC 7323 2.2).
        rwnd: rwnd.min(65_535),
        ts_val: super::tsopt::ts_ms(now),
        ts_ecr: syn.ts_val,
        wire_bytes: wire::IP_HEADER + wire::TCP_HEADER + SYN_OPTIONS + if cookie { FASTOPEN_COOKIE } else { 0 },
        ..Default::default()
    }
}

/// The data a server takes from `syn`: all of it, if the server runs Fast Open and the
/// SYN carries a cookie (the simulated client only ever has this server's valid one).
pub fn server_takes(syn: &Packet, fastopen_server: bool) -> u32 {
    if fastopen_server && syn.fastopen {
        syn.payload
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_syn_carries_the_mss_of_a_1500_byte_mtu_less_the_option_space() {
        // __tcp_mtu_to_mss(1500) = 1460; less MAX_TCP_OPTION_SPACE: 1420.
        assert_eq!(syn_data_bytes(1448, 20_000), 1420);
        assert_eq!(syn_data_bytes(1448, 500), 500);
        assert_eq!(syn_data_bytes(8948, 1 << 20), 4096, "one page at most");
    }

    #[test]
    fn syn_timeouts_double_and_the_client_gives_up_after_six_retransmissions() {
        let mut c = Connecting::new(Time::ZERO, 0, false);
        let mut waited = c.timeout();
        let mut t = Time::ZERO + waited;
        while let Some(next) = c.retransmit(t) {
            waited = waited + next;
            t += next;
        }
        // 1 + 2 + 4 + ... + 64 s: connect() fails after 127 s.
        assert_eq!((c.retransmits, waited), (6, Dur::from_secs(127)));
    }

    #[test]
    fn only_the_first_syn_carries_the_option_and_the_data() {
        let mut c = Connecting::new(Time::ZERO, 1420, true);
        let first = c.syn(Time::ZERO, 0, 0);
        assert_eq!((first.payload, first.fastopen, first.wire_bytes), (1420, true, 60 + 12 + 1420));
        c.retransmit(Time(S));
        let again = c.syn(Time(S), 0, 0);
        assert_eq!((again.payload, again.fastopen, again.wire_bytes), (0, false, 60));
        let request = Connecting::new(Time::ZERO, 0, true).syn(Time::ZERO, 0, 0);
        assert_eq!(request.wire_bytes, 64);
    }

    #[test]
    fn the_rtt_sample_is_the_first_syns_or_after_a_retransmission_the_echoed_timestamp() {
        let mut cache = FastOpenCache::default();
        let c = Connecting::new(Time(5 * S), 0, false);
        let synack = syn_ack(Time(5 * S + 20_000_000), &c.syn(Time(5 * S), 0, 0), 1 << 20, false, 0);
        let e = c.established(Time(5 * S + 40_123_000), &synack, &mut cache);
        assert_eq!(e.rtt, Dur::from_us(40_123));
        let mut c = Connecting::new(Time(5 * S), 0, false);
        c.retransmit(Time(6 * S));
        let synack = syn_ack(Time(6 * S + 20_000_000), &c.syn(Time(6 * S), 0, 0), 1 << 20, false, 0);
        let e = c.established(Time(6 * S + 40_900_000), &synack, &mut cache);
        assert_eq!((e.rtt, e.syn_retransmits), (Dur::from_ms(40), 1), "whole ms of the TSval clock");
    }

    #[test]
    fn a_cookie_is_asked_for_granted_kept_and_used() {
        let mut cache = FastOpenCache::default();
        let c = Connecting::new(Time::ZERO, 0, true);
        let syn = c.syn(Time::ZERO, 0, 0);
        let synack = syn_ack(Time(S / 10), &syn, 1 << 20, true, server_takes(&syn, true));
        assert!(synack.fastopen, "a cookie for the request");
        c.established(Time(S / 5), &synack, &mut cache);
        assert!(cache.cookie && cache.may_send_data(Time(S)));
        // The next SYN carries data, which the server takes and acknowledges.
        let c = Connecting::new(Time(S), 1420, true);
        let syn = c.syn(Time(S), 0, 0);
        let synack = syn_ack(Time(S), &syn, 1 << 20, true, server_takes(&syn, true));
        assert!(!synack.fastopen, "no new cookie when the SYN had one");
        let e = c.established(Time(S), &synack, &mut cache);
        assert_eq!(e.data_acked, 1420);
        assert!(cache.cookie);
        // A server without Fast Open grants nothing and takes nothing.
        let synack = syn_ack(Time(S), &syn, 1 << 20, false, server_takes(&syn, false));
        assert_eq!((synack.fastopen, synack.ack), (false, 0));
    }

    #[test]
    fn lost_syns_with_data_turn_data_in_the_syn_off_for_sixty_seconds_shifted_by_the_losses() {
        let mut cache = FastOpenCache { cookie: true, ..Default::default() };
        let lose_one = |at: Time, cache: &mut FastOpenCache| {
            let mut c = Connecting::new(at, 1420, true);
            c.retransmit(at + SYN_TIMEOUT);
            let synack = syn_ack(at + SYN_TIMEOUT, &c.syn(at + SYN_TIMEOUT, 0, 0), 1 << 20, true, 0);
            c.established(at + SYN_TIMEOUT, &synack, cache)
        };
        assert_eq!(lose_one(Time::ZERO, &mut cache).data_acked, 0);
        assert!(cache.may_send_data(Time(2 * S)), "one loss does not back off");
        lose_one(Time(2 * S), &mut cache);
        assert_eq!(cache.syn_loss, 2);
        assert!(!cache.may_send_data(Time(3 * S + 239 * S)));
        assert!(cache.may_send_data(Time(3 * S + 240 * S)), "60 s << 2 after the last loss");
    }
}
