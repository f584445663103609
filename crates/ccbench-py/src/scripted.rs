//! `ccbench._core.ScriptedSender`: the simulator's sender driven by a script (see
//! `ccbench_sim::tcp::scripted`). Sequence numbers cross this boundary in segments; the
//! Python driver maps them to and from the script's byte numbers with each skb's stream
//! offset and `seg_floor`.

use ccbench_sim::config::{Ecn, TcpConfig};
use ccbench_sim::tcp::close::CloseAction;
use ccbench_sim::tcp::scripted::{PeerAck, ScriptedParams, ScriptedSender as Harness};
use ccbench_sim::tcp::sender::WriteFlags;
use ccbench_sim::time::{Dur, Time};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::collections::BTreeMap;

/// One skb as it left TCP: (time_ns, first segment, its stream offset, segments, bytes,
/// retransmission, ECT, CWR, PSH, FIN).
type Sent = (u64, u64, u64, u32, u64, bool, bool, bool, bool, bool);

#[pyclass(unsendable)]
pub struct ScriptedSender {
    h: Harness,
}

#[pymethods]
impl ScriptedSender {
    /// Keyword parameters: cca, cc_params, handshake_rtt_ns, snd_wnd (bytes), ecn ("off",
    /// "classic"), paced, gso (the device takes multi-segment skbs), `tcp`: JSON of
    /// stack settings (`ccbench_sim::tcp::TcpConfig` fields) over packetdrill's defaults
    /// (a 1000-byte MSS, no slow start after idle), tcp_options (option bytes on each data
    /// segment: 12 with timestamps) and mss_clamp (the peer's MSS option within
    /// TCP_MAXSEG; None: the MSS and options).
    #[new]
    #[pyo3(signature = (cca="cubic", cc_params=BTreeMap::new(), handshake_rtt_ns=100_000_000,
        snd_wnd=65535, ecn="off", paced=false, gso=true, tcp="{}", tcp_options=0, mss_clamp=None))]
    // Python's keyword arguments, one per parameter: a struct would hide them from Python.
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        cca: &str,
        cc_params: BTreeMap<String, f64>,
        handshake_rtt_ns: u64,
        snd_wnd: u64,
        ecn: &str,
        paced: bool,
        gso: bool,
        tcp: &str,
        tcp_options: u32,
        mss_clamp: Option<u32>,
    ) -> PyResult<Self> {
        let ecn = match ecn {
            "off" => Ecn::Off,
            "classic" => Ecn::Classic,
            other => return Err(PyValueError::new_err(format!("ecn must be off or classic, not {other:?}"))),
        };
        let defaults = ScriptedParams::default();
        let tcp = settings(&defaults.tcp, tcp).map_err(|e| PyValueError::new_err(format!("tcp: {e}")))?;
        if let Some((r, v)) = tcp.out_of_range() {
            return Err(PyValueError::new_err(format!("tcp.{} = {v} is out of range", r.key())));
        }
        if tcp.hz == 0 {
            return Err(PyValueError::new_err("tcp.hz must be positive"));
        }
        let p = ScriptedParams {
            cca: cca.to_string(),
            cc_params,
            handshake_rtt: Dur(handshake_rtt_ns),
            snd_wnd,
            ecn,
            paced,
            gso,
            tcp,
            tcp_options,
            mss_clamp,
        };
        let h = crate::guarded(py, || Harness::new(&p))?.map_err(PyValueError::new_err)?;
        Ok(ScriptedSender { h })
    }

    /// The application writes `bytes` at `now_ns`, with MSG_MORE if `more` and MSG_EOR if
    /// `eor`.
    #[pyo3(signature = (now_ns, bytes, more = false, eor = false))]
    fn write(&mut self, py: Python<'_>, now_ns: u64, bytes: u64, more: bool, eor: bool) -> PyResult<()> {
        crate::guarded(py, || self.h.write_with(Time(now_ns), bytes, WriteFlags { more, eor }))
    }

    /// A Fast Open SYN's data that the SYN-ACK did not acknowledge, sent again at `now_ns`.
    fn resend_syn_data(&mut self, py: Python<'_>, now_ns: u64, bytes: u64) -> PyResult<()> {
        crate::guarded(py, || self.h.resend_syn_data(Time(now_ns), bytes))
    }

    /// Bytes of the last write still waiting for room in the send buffer.
    fn write_pending(&self) -> u64 {
        self.h.write_pending()
    }

    /// A non-blocking write returns short: what waits is the application's again.
    fn return_short(&mut self) {
        self.h.return_short();
    }

    /// SO_SNDBUF as the kernel keeps it (doubled, at least SOCK_MIN_SNDBUF), locked.
    fn set_sndbuf(&mut self, bytes: u64) {
        self.h.set_sndbuf(bytes);
    }

    /// `sk_sndbuf`, as SO_SNDBUF reads it.
    fn sndbuf(&self) -> u64 {
        self.h.sender.sndbuf()
    }

    /// Bytes the send buffer has taken from the application's writes.
    fn written(&self) -> u64 {
        self.h.written()
    }

    /// From now on the local qdisc refuses every packet (`drop`), or takes them again.
    fn set_qdisc_drops(&mut self, drop: bool) {
        self.h.set_qdisc_drops(drop);
    }

    /// The local qdisc refused a segment sent for the stack (an ACK, FIN or RST) at
    /// `now_ns`: a CWR reduction starts, as for any refused segment.
    fn refused_packet(&mut self, py: Python<'_>, now_ns: u64) -> PyResult<()> {
        crate::guarded(py, || self.h.refused_packet(Time(now_ns)))
    }

    /// TCP_NODELAY (`option="nodelay"`) or TCP_CORK (`"cork"`) set on or off at `now_ns`.
    fn setsockopt(&mut self, py: Python<'_>, now_ns: u64, option: &str, on: bool) -> PyResult<()> {
        let nodelay = match option {
            "nodelay" => true,
            "cork" => false,
            other => return Err(PyValueError::new_err(format!("option must be nodelay or cork, not {other:?}"))),
        };
        crate::guarded(py, || self.h.setsockopt(Time(now_ns), nodelay, on))
    }

    /// The bytes of a write of `pending` that a Fast Open SYN carries, for an MSS of
    /// `mss` with the timestamp option's room taken (`tcp_send_syn_data`, see
    /// `ccbench_sim::tcp::handshake::syn_data_bytes`).
    #[staticmethod]
    fn syn_data_bytes(mss: u32, pending: u64) -> u32 {
        ccbench_sim::tcp::handshake::syn_data_bytes(mss, pending)
    }

    /// The last segment that starts at or before stream offset `byte` (the end of what
    /// was written counts as one past the last segment), and its offset.
    fn seg_floor(&self, byte: u64) -> (u64, u64) {
        self.h.sender.seg_floor(byte)
    }

    /// An ACK from the peer at `now_ns`: cumulative ACK and SACK blocks in segments,
    /// window in bytes, and the bytes of data the segment carries.
    #[pyo3(signature = (now_ns, ack, rwnd, sacks=Vec::new(), ece=false, data=0))]
    // Python's keyword arguments, one per parameter: a struct would hide them from Python.
    #[allow(clippy::too_many_arguments)]
    fn receive(
        &mut self,
        py: Python<'_>,
        now_ns: u64,
        ack: u64,
        rwnd: u64,
        sacks: Vec<(u64, u64)>,
        ece: bool,
        data: u32,
    ) -> PyResult<()> {
        let a = PeerAck { ack, rwnd, sacks, ece, data };
        crate::guarded(py, || self.h.receive(Time(now_ns), &a))
    }

    /// An ICMP "fragmentation needed" with next-hop `mtu` arrives at `now_ns`, quoting the
    /// segment at stream offset `quoted_seq` (0: the first data byte).
    fn icmp_frag_needed(&mut self, py: Python<'_>, now_ns: u64, mtu: u32, quoted_seq: u64) -> PyResult<()> {
        crate::guarded(py, || self.h.icmp_frag_needed(Time(now_ns), mtu, quoted_seq))
    }

    /// The route to the peer changed at `now_ns` (`ip route change`): its MTU, locked or
    /// not. (Its advmss is what a SYN-ACK offers; an open connection does not read it.)
    #[pyo3(signature = (now_ns, mtu, mtu_locked, advmss=None))]
    fn route_changed(
        &mut self,
        py: Python<'_>,
        now_ns: u64,
        mtu: u32,
        mtu_locked: bool,
        advmss: Option<u32>,
    ) -> PyResult<()> {
        let _ = advmss;
        crate::guarded(py, || self.h.route_changed(Time(now_ns), mtu, mtu_locked))
    }

    /// Run the timers up to `until_ns`; returns the skbs sent since the last call.
    fn advance(&mut self, py: Python<'_>, until_ns: u64) -> PyResult<Vec<Sent>> {
        crate::guarded(py, || {
            self.h.advance(Time(until_ns));
            self.take()
        })
    }

    /// The skbs sent since the last call (by writes and ACKs), without advancing.
    fn sent(&mut self) -> Vec<Sent> {
        self.take()
    }

    /// Time of the next queued timer entry, if any (it may turn out stale).
    fn next_event_ns(&self) -> Option<u64> {
        self.h.next_event().map(|t| t.ns())
    }

    fn now_ns(&self) -> u64 {
        self.h.now().ns()
    }

    /// Segments the application has written.
    fn written_segs(&self) -> u64 {
        self.h.sender.written_segs()
    }

    /// close() at `now_ns`, with `unread` data received and never read: "fin" (queued
    /// behind the data), "reset" (the connection aborted: the caller sends the RST) or
    /// "nothing".
    fn close(&mut self, py: Python<'_>, now_ns: u64, unread: bool) -> PyResult<&'static str> {
        crate::guarded(py, || match self.h.close(Time(now_ns), unread) {
            CloseAction::Fin => "fin",
            CloseAction::Reset => "reset",
            CloseAction::Nothing => "nothing",
        })
    }

    /// shutdown(SHUT_WR) at `now_ns`: the FIN is queued behind the data.
    fn shutdown(&mut self, py: Python<'_>, now_ns: u64) -> PyResult<()> {
        crate::guarded(py, || self.h.shutdown(Time(now_ns)))
    }

    /// The peer's FIN at `now_ns`, in order (after `receive` took its ACK); returns
    /// whether it is acknowledged at once.
    fn peer_fin(&mut self, py: Python<'_>, now_ns: u64) -> PyResult<bool> {
        crate::guarded(py, || self.h.peer_fin(Time(now_ns)))
    }

    /// The peer's RST at `now_ns`, in sequence: the connection is gone.
    fn peer_reset(&mut self, py: Python<'_>, now_ns: u64) -> PyResult<()> {
        crate::guarded(py, || self.h.peer_reset(Time(now_ns)))
    }

    /// The socket's state by its kernel name ("ESTABLISHED", "FIN_WAIT1", ...).
    fn state(&self) -> &'static str {
        self.h.state().name()
    }

    /// What a write finds instead of room: "ECONNRESET" once after a reset, "EPIPE" once
    /// writing is shut, else None.
    fn write_error(&mut self) -> Option<&'static str> {
        self.h.write_error().map(|e| e.name())
    }

    /// What a read with nothing queued finds: an errno name once after a reset, "EOF"
    /// once the peer's FIN came or the socket closed, else None (it waits).
    fn read_error(&mut self) -> Option<&'static str> {
        match self.h.read_error() {
            Err(e) => Some(e.name()),
            Ok(true) => Some("EOF"),
            Ok(false) => None,
        }
    }

    /// Our FIN once queued: (the segment that carries it, whether that segment is the
    /// FIN's alone, sent, acknowledged).
    fn fin(&self) -> Option<(u64, bool, bool, bool)> {
        let s = &self.h.sender;
        let seg = s.fin_seg()?;
        let alone = s.seg_start(seg) == s.seg_start(seg + 1);
        Some((seg, alone, s.fin_sent(), s.fin_acked()))
    }

    /// `TCP_INFO` fields the model has, by their `tcpi_` names.
    fn tcp_info(&self) -> BTreeMap<&'static str, i64> {
        self.h.tcp_info()
    }
}

/// `overrides` (a JSON object of settings by name) over `base`.
fn settings(base: &TcpConfig, overrides: &str) -> Result<TcpConfig, serde_json::Error> {
    let mut value = serde_json::to_value(base)?;
    let overrides: serde_json::Map<String, serde_json::Value> = serde_json::from_str(overrides)?;
    value.as_object_mut().expect("a struct").extend(overrides);
    serde_json::from_value(value)
}

impl ScriptedSender {
    fn take(&mut self) -> Vec<Sent> {
        self.h
            .take_sent()
            .into_iter()
            .map(|r| (r.time.ns(), r.seq, r.start, r.segs, r.bytes, r.retrans, r.ect, r.cwr, r.psh, r.fin))
            .collect()
    }
}
