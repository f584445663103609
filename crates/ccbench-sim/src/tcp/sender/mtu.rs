//! The MSS as the path allows it: an ICMP "fragmentation needed" (`tcp_v4_err`,
//! `tcp_v4_mtu_reduced`, `tcp_simple_retransmit`), a route that changed
//! (`tcp_current_mss`), black-hole detection on the retransmit timer (`tcp_write_timeout`,
//! `tcp_mtu_probing`) and MTU probing (`tcp_mtu_probe`, `tcp_mtup_probe_success`,
//! `tcp_mtup_probe_failed`), on `tcp/mtu.rs`'s search. A smaller MSS cuts what is
//! unsent again, and what must go again in pieces as `tcp_fragment` would
//! (`tcp/write.rs`'s `resegment`); segment numbers move, and so does every part that
//! holds one.

use super::output::TxKind;
use super::*;
use crate::tcp::io::Io;
use crate::tcp::mtu::PathMtu;
use crate::tcp::scoreboard::{LOST, RETRANS, SACKED, SKB_END};
use crate::tcp::tsopt::ts_ms;
use crate::tcp::write::{Recut, Remap};

/// `TCP_RTO_MIN` and `tcp_retries1`'s default: black-hole detection starts once the
/// retransmissions have gone on for `((2 << 3) - 1) * TCP_RTO_MIN` (`retransmits_timed_out`
/// with `tcp_model_timeout`), 3 s.
const BLACK_HOLE_AFTER_MS: u32 = 15 * 200;

/// What `tcp_mtu_probe` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Probe {
    /// A probe left.
    Sent,
    /// Not now: wait for room before sending anything (`return 0`).
    Wait,
    /// No probe; send as usual (`return -1`).
    No,
}

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
            let sent = self.sb.snd_una..self.snd_nxt();
            let moved = self.write.resegment(mss, sent, &|_| Recut::default(), None);
            debug_assert!(moved.is_identity());
        }
    }

    /// An ICMP "fragmentation needed" with next-hop `mtu` quoting the segment at stream
    /// offset `quoted` (`tcp_v4_err`: one outside `snd_una..=snd_nxt` is ignored), then
    /// `tcp_v4_mtu_reduced`: the route takes the MTU, and a path now narrower than the
    /// MSS's resends at once what was too large.
    pub fn icmp_frag_needed(&mut self, now: Time, mtu: u32, quoted: u64, q: &mut impl Io) {
        if self.connecting.is_some() || self.accepting.is_some_and(|a| !a.established()) {
            return;
        }
        let window = self.wire_seq(self.sb.snd_una)..=self.wire_seq(self.snd_nxt());
        if !window.contains(&quoted) {
            return;
        }
        let mtu = self.pmtu.icmp_update(mtu);
        if self.pmtu.cookie > mtu {
            self.sync_mss(mtu);
            self.simple_retransmit(now, q);
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

    /// The path as the handshake left it, for a connection set up elsewhere (a script's):
    /// `tcp_mtup_init` runs again on it.
    pub fn set_path(&mut self, now: Time, pmtu: PathMtu) {
        self.pmtu = pmtu;
        self.pmtu.mtup_init(&self.p.tcp, now.jiffies(self.p.tcp.hz));
    }

    /// `tcp_simple_retransmit`: every skb whose segments are longer than the MSS is lost;
    /// the Loss state starts without touching cwnd ("the units changed"), and the lost
    /// data goes again, cut to the MSS.
    pub(super) fn simple_retransmit(&mut self, now: Time, q: &mut impl Io) {
        let mss = self.current_mss();
        let mut skb_start = self.sb.snd_una;
        let mut seglen = 0;
        for seq in self.sb.snd_una..self.snd_nxt() {
            let seg = *self.sb.get(seq);
            seglen = seglen.max(seg.len);
            if seg.has(SKB_END) || seq + 1 == self.snd_nxt() {
                if seglen > mss {
                    (skb_start..=seq).for_each(|s| self.mark_lost(now, s));
                }
                (skb_start, seglen) = (seq + 1, 0);
            }
        }
        if self.sb.lost_out == 0 {
            return;
        }
        if self.is_reno() {
            self.limit_reno_sacked();
        }
        if self.ca_state != CaState::Loss {
            self.high_seq = self.snd_nxt();
            self.w.ssthresh = self.current_ssthresh();
            self.undo.set_prior_ssthresh(0);
            self.undo.close();
            self.set_ca_state(now, CaState::Loss);
        }
        self.xmit_retransmit_queue(now, q);
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

    /// `tcp_mtu_probe`: with probing on and the connection in Open with room, send one
    /// segment of the search's middle size made of the unsent data, and count it as two
    /// packets (cwnd less one).
    pub(super) fn mtu_probe(&mut self, now: Time, q: &mut impl Io) -> Probe {
        let m = &self.pmtu;
        if !m.enabled || m.probe_size != 0 || self.ca_state != CaState::Open || self.w.cwnd < 11 {
            return Probe::No;
        }
        let mss_now = self.current_mss();
        let Some(size) = self.pmtu.next_probe(&self.p.tcp) else {
            self.pmtu.check_reprobe(&self.p.tcp, now.jiffies(self.p.tcp.hz), mss_now);
            return Probe::No;
        };
        let needed = size as u64 + (self.reordering.degree() as u64 + 1) * mss_now as u64;
        let start = self.write.seg_start(self.snd_nxt());
        if self.write.written_bytes() - start < needed || self.snd_wnd < needed {
            return Probe::No;
        }
        if start + needed > self.wnd_end() {
            return Probe::Wait;
        }
        if self.inflight() + 2 > self.w.cwnd {
            return if self.inflight() == 0 { Probe::No } else { Probe::Wait };
        }
        if self.write.coalescable(self.snd_nxt()) < size as u64 {
            return Probe::No; // `tcp_can_coalesce_send_queue_head`: MSG_EOR in the way
        }
        let seq = self.snd_nxt();
        let sent = self.sb.snd_una..seq;
        self.write.resegment(mss_now, sent, &|_| Recut::default(), Some(size));
        if !self.send_skb(now, seq..seq + 1, TxKind::New, q) {
            return Probe::No;
        }
        self.w.cwnd -= 1;
        self.pmtu.probe_sent(size, (start, start + size as u64));
        Probe::Sent
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

    /// `tcp_fastretrans_alert`'s MTU probe failure: loss found with the probe at the
    /// head; the search's top comes down, cwnd gets back the packet the probe took, and
    /// what is too large goes again (`tcp_simple_retransmit`), no reduction.
    pub(super) fn probe_lost(&mut self, now: Time, q: &mut impl Io) -> bool {
        let head = self.wire_seq(self.sb.snd_una);
        if self.ca_state >= CaState::Cwr || self.pmtu.probe_size == 0 || head != self.pmtu.probe_seq.0 {
            return false;
        }
        self.pmtu.probe_failed(now.jiffies(self.p.tcp.hz));
        self.w.cwnd += 1;
        self.simple_retransmit(now, q);
        true
    }
}
