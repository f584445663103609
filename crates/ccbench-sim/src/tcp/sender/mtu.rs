//! The MSS as the path allows it, on `tcp/mtu.rs`'s view of the path: `tcp_sync_mss`
//! and `tcp_current_mss` (a route that changed), black-hole detection on the retransmit
//! timer (`tcp_write_timeout`, `tcp_mtu_probing`), an MTU probe's success
//! (`tcp_mtup_probe_success`), and cutting a lost skb to the MSS as it goes again
//! (`tcp_fragment`, with `tcp/write.rs`'s `resegment`): segment numbers move, and so
//! does every part that holds one. What sends is elsewhere: the probe in `output.rs`
//! (`tcp_mtu_probe`), `tcp_simple_retransmit` and a probe's loss in `recovery.rs`, the
//! ICMP's arrival in `connect.rs`.

use super::*;
use crate::tcp::mtu::PathMtu;
use crate::tcp::scoreboard::{LOST, RETRANS, SACKED, SKB_END};
use crate::tcp::tsopt::ts_ms;
use crate::tcp::write::{Recut, Remap};

/// `TCP_RTO_MIN` and `tcp_retries1`'s default: black-hole detection starts once the
/// retransmissions have gone on for `((2 << 3) - 1) * TCP_RTO_MIN` (`retransmits_timed_out`
/// with `tcp_model_timeout`), 3 s.
const BLACK_HOLE_AFTER_MS: u32 = 15 * 200;

impl Sender {
    /// `mss_cache`: the MSS the sender cuts new data at.
    pub fn mss(&self) -> u32 {
        self.write.mss()
    }

    /// `icsk_pmtu_cookie` (`tcpi_pmtu`): the path MTU the MSS was last synced to.
    pub fn pmtu_cookie(&self) -> u32 {
        self.pmtu.cookie
    }

    /// `tcp_current_mss`: a route whose MTU is not the one `tcp_sync_mss` last saw syncs
    /// the MSS to it.
    pub(super) fn current_mss(&mut self) -> u32 {
        let route = self.pmtu.route_mtu();
        if route != self.pmtu.cookie {
            self.sync_mss(route);
        }
        self.mss()
    }

    /// `tcp_sync_mss`: the MSS `pmtu` allows; a new one cuts what is unsent again.
    pub(super) fn sync_mss(&mut self, pmtu: u32) {
        let mss = self.pmtu.sync(pmtu);
        if mss != self.mss() {
            let snd_nxt = self.snd_nxt();
            self.write.cut_unsent(mss, snd_nxt, None);
        }
    }

    /// A route change (`ip route change ... mtu [lock] N`), which the socket sees once it
    /// next sends; before it has sent, the route it opened on.
    pub fn route_changed(&mut self, mtu: u32, locked: bool) {
        if self.stats.data_segs_out == 0 {
            self.pmtu.set_route(mtu, locked);
            self.pmtu.cookie = mtu;
        } else {
            self.pmtu.route_change(mtu, locked);
        }
    }

    /// The route's MTU (an ICMP's, kept as a route exception: `__ip_rt_update_pmtu`).
    pub fn route_mtu(&self) -> u32 {
        self.pmtu.route_mtu()
    }

    /// A new connection on a route whose MTU an earlier one learned: it opens with the
    /// MSS that MTU allows (`tcp_connect_init` / `tcp_v4_syn_recv_sock` ->
    /// `tcp_sync_mss(dst_mtu)`). What probing found stays the old connection's.
    pub fn learn_route(&mut self, mtu: u32) {
        if mtu < self.pmtu.route_mtu() {
            self.pmtu.set_route(mtu, false);
            self.sync_mss(mtu);
        }
    }

    /// The path as the handshake left it, for a connection set up elsewhere (a script's):
    /// `tcp_mtup_init` runs again on it.
    pub fn set_path(&mut self, now: Time, pmtu: PathMtu) {
        self.pmtu = pmtu;
        self.pmtu.mtup_init(&self.p.tcp, now.jiffies(self.p.tcp.hz));
    }

    /// The lost skb that segment `first` starts, if its segments are longer than the
    /// MSS, is cut to it as it goes again (`__tcp_retransmit_skb`: `tcp_fragment`, then
    /// GSO at the new MSS); every part that holds a segment number follows. Other skbs
    /// keep their segments until they go (`tcp_simple_retransmit` only marks them).
    pub(super) fn recut_skb(&mut self, first: u64) {
        let sb = &self.sb;
        let end = (first..sb.snd_nxt()).find(|&s| sb.get(s).has(SKB_END)).map_or(sb.snd_nxt(), |s| s + 1);
        let recut = |s: u64| {
            let g = sb.get(s);
            let lost = g.has(LOST) && !g.has(SACKED) && !g.has(RETRANS);
            Recut { recut: (first..end).contains(&s) && lost, skb_end: g.has(SKB_END) }
        };
        let mss = self.write.mss();
        let moved = self.write.resegment(mss, sb.snd_una..sb.snd_nxt(), &recut, None);
        if !moved.is_identity() {
            self.renumber(&moved);
        }
    }

    /// Segment numbers moved: the scoreboard and everything that holds one follow.
    fn renumber(&mut self, r: &Remap) {
        let write = &self.write;
        self.sb.recut(r, |s| write.seg_len(s));
        self.high_seq = r.map(self.high_seq);
        self.sack.remap(r);
        self.rack.remap(r);
        self.tlp.remap(r);
        self.cwnd_use.remap(r);
        self.sndbuf.remap(r);
    }

    /// `tcp_write_timeout`'s black-hole detection, as the retransmit timer fires: once
    /// retransmissions have gone on long enough (`retransmits_timed_out` with
    /// `tcp_retries1`), `tcp_mtu_probing` lowers the MSS if `tcp_mtu_probing` is on.
    pub(super) fn write_timeout(&mut self, now: Time) {
        let stamp = self.undo.retrans_stamp();
        let timed_out = self.rto_retransmits > 0 && stamp != 0 && ts_ms(now).wrapping_sub(stamp) >= BLACK_HOLE_AFTER_MS;
        if !timed_out || self.p.tcp.mtu_probing == 0 {
            return;
        }
        self.pmtu.black_hole(&self.p.tcp, now.jiffies(self.p.tcp.hz));
        let cookie = self.pmtu.cookie;
        self.sync_mss(cookie);
    }

    /// `tcp_clean_rtx_queue`'s test: the probe is acknowledged. `tcp_mtup_probe_success`:
    /// cwnd keeps its bytes in the larger packets, ssthresh as `tcp_current_ssthresh`,
    /// and the MSS grows to the probe's.
    pub(super) fn check_probe_acked(&mut self) {
        if self.pmtu.probe_size == 0 || self.wire_seq(self.sb.snd_una) < self.pmtu.probe_seq.1 {
            return;
        }
        self.undo.set_prior_ssthresh(self.current_ssthresh());
        let mtu = self.pmtu.mss_to_mtu(self.mss()) as u64;
        self.w.cwnd = ((self.w.cwnd as u64 * mtu / self.pmtu.probe_size as u64) as u32).max(1);
        self.w.cwnd_cnt = 0;
        self.w.ssthresh = self.current_ssthresh();
        self.pmtu.probe_succeeded();
        let cookie = self.pmtu.cookie;
        self.sync_mss(cookie);
    }
}
