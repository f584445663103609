//! The sender: what `send` in `python/ccbench/kernel/agent.py` does, step for step.
//!
//! [`prepare`] sets the sysctls and connects every flow with its congestion control;
//! [`Prepared::run`] then sends from the epoch t0: bulk flows until the end, sized flows
//! until their bytes are written and acknowledged, with `TCP_INFO` (and BBR's
//! `TCP_CC_INFO`) sampled at t0 + k x interval and once more when the run ends. A flow
//! that repeats downloads sends each on a connection of its own, the next one `pause_ns`
//! after the receiver reports the last one complete ([`Notices`]).

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;

use serde::{Deserialize, Serialize};

use crate::clock::{monotonic_ns, Schedule};
use crate::config::{FlowConfig, SendConfig};
use crate::cpucount::CpuCounters;
use crate::kprofile::{self, KernelProfile};
use crate::socket::{FlowSocket, PACING_ANY_RATE};
use crate::sysctl;
use crate::tcpinfo::FlowSample;
use crate::txtrace::{self, TxCompletions};

/// Bytes offered to `send` at a time (`SEND_CHUNK` in `agent.py`).
pub const SEND_CHUNK: usize = 1 << 20;
/// The handshake of each flow must finish within this (`CONNECT_TIMEOUT_S`).
pub const CONNECT_TIMEOUT_MS: i32 = 10_000;
/// While a sized flow waits for its last ACKs, `TCP_INFO` is checked at least this often,
/// so its completion time is known to a millisecond (as in `agent.py`).
const DRAIN_CHECK_NS: i64 = 1_000_000;

/// One sample row: [sample time, time taken, one sample per flow], times after t0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleRow(pub i64, pub i64, pub Vec<FlowSample>);

/// The sender's report, in the schema of the Python sender's out file, which
/// `python/ccbench/kernel/results.py` assembles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SenderResult {
    pub samples: Vec<SampleRow>,
    #[serde(rename = "final")]
    pub final_samples: Vec<FlowSample>,
    /// When each sized flow had everything acknowledged; null for bulk flows and for
    /// sized flows that did not finish.
    pub done_ns: Vec<Option<i64>>,
    pub end_ns: i64,
    /// The guest's TcpExt counters that TCP_INFO has no per-socket equivalent of (the
    /// undo of spurious reductions), as the Python sender reports its namespace's.
    pub tcp_ext: BTreeMap<String, i64>,
    /// Per flow that repeats downloads, each download's connection as it ended: its
    /// local `port`, `start_ns` and `final` TCP_INFO (empty for the other flows).
    pub downloads: Vec<Vec<serde_json::Value>>,
    /// With `trace_tx`: how long the device held each skb sent during the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_completions: Option<TxCompletions>,
    /// The kernel's account of its CPUs from `ready` (the flows connected) to the run's
    /// end (`cpucount`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_counters: Option<CpuCounters>,
    /// The kernel's tick profile from `ready` to the run's end, when it keeps one
    /// (`kprofile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_profile: Option<KernelProfile>,
}

/// `TcpExt` counters read from /proc/net/netstat (pairs of header and value lines).
pub const UNDO_COUNTERS: [&str; 5] =
    ["TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo", "TCPLossUndo", "TCPSpuriousRTOs"];

/// The counters of `UNDO_COUNTERS` in a /proc/net/netstat text (empty if absent).
pub fn tcp_ext(netstat: &str) -> BTreeMap<String, i64> {
    let lines: Vec<&str> = netstat.lines().collect();
    for pair in lines.chunks(2) {
        if let [names, values] = pair {
            if names.starts_with("TcpExt:") {
                let table: BTreeMap<&str, &str> =
                    names.split_whitespace().zip(values.split_whitespace()).skip(1).collect();
                return UNDO_COUNTERS
                    .iter()
                    .filter_map(|k| table.get(k).and_then(|v| v.parse().ok()).map(|v| (k.to_string(), v)))
                    .collect();
            }
        }
    }
    BTreeMap::new()
}

/// A download of a flow that repeats them is complete at the receiver: all of download
/// `download` of flow `flow` arrived `at_ns` after t0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Done {
    pub flow: usize,
    pub download: u32,
    pub at_ns: i64,
}

/// Where the receiver's notices of completed downloads come from during a run: the
/// control channel (`serve`) or the kernel engine's datagram socket (`send`).
pub trait Notices {
    /// A descriptor to poll for input, if any.
    fn fd(&self) -> Option<RawFd>;
    /// Input already read but not yet taken.
    fn pending(&self) -> bool {
        false
    }
    /// The notices that have arrived (called when the descriptor is readable).
    fn take(&mut self) -> io::Result<Vec<Done>>;
}

/// No notices: a run whose flows download once.
pub struct NoNotices;

impl Notices for NoNotices {
    fn fd(&self) -> Option<RawFd> {
        None
    }
    fn take(&mut self) -> io::Result<Vec<Done>> {
        Ok(Vec::new())
    }
}

/// The kernel engine's receiver writes `"<flow> <download> <at_ns>"` datagrams to the
/// sender's socket at `done_path` (`receive` in `agent.py`).
pub struct DoneSocket(UnixDatagram);

impl DoneSocket {
    pub fn bind(path: &str) -> io::Result<DoneSocket> {
        let sock = UnixDatagram::bind(path)?;
        sock.set_nonblocking(true)?;
        Ok(DoneSocket(sock))
    }
}

impl Notices for DoneSocket {
    fn fd(&self) -> Option<RawFd> {
        Some(self.0.as_raw_fd())
    }
    fn take(&mut self) -> io::Result<Vec<Done>> {
        let mut out = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            match self.0.recv(&mut buf) {
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if let [flow, download, at_ns] = text.split_whitespace().collect::<Vec<_>>()[..] {
                        if let (Ok(flow), Ok(download), Ok(at_ns)) = (flow.parse(), download.parse(), at_ns.parse()) {
                            out.push(Done { flow, download, at_ns });
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(out),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Connected flows, waiting for the epoch. A flow that repeats downloads has one
/// connection per download, in order, and keeps the next one connected ahead (a spare),
/// so that, as in the simulator, each download starts with its handshake done.
pub struct Prepared {
    flows: Vec<FlowConfig>,
    conns: Vec<Vec<FlowSocket>>,
    base_port: u16,
    interval_ns: i64,
    duration_ns: i64,
    trace_tx: Option<String>,
    /// The CPU counters when the flows were ready, and whether the kernel's tick profile
    /// was cleared then: both before the run, not in it, since a TCG guest takes about
    /// 2 ms for the /proc reads, which a vCPU held to a few ms per period would spend out
    /// of its first periods instead of starting its flows.
    counters_at_ready: CpuCounters,
    profiling: bool,
}

fn cca_error(i: usize, cca: &str, err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::ENOENT) => {
            let available =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
            format!("flows[{i}].cca: {cca:?} is not available in this kernel (available: {})", available.trim())
        }
        Some(libc::EPERM) => {
            format!("flows[{i}].cca: {cca:?} is not allowed (net.ipv4.tcp_allowed_congestion_control)")
        }
        _ => format!("flows[{i}].cca: cannot set {cca:?}: {err}"),
    }
}

/// A connection of flow `i` to `addr:port` with its congestion control, its handshake
/// waited for (`wait`) or only started.
fn open(i: usize, flow: &FlowConfig, port: u16, wait: bool) -> Result<FlowSocket, String> {
    let addr = flow.ipv4().map_err(|what| format!("flows[{i}].addr: {what}"))?;
    let sock = FlowSocket::new().map_err(|e| format!("flows[{i}]: socket: {e}"))?;
    sock.set_congestion(&flow.cca).map_err(|e| cca_error(i, &flow.cca, &e))?;
    if flow.paced() {
        sock.set_max_pacing_rate(PACING_ANY_RATE)
            .map_err(|e| format!("flows[{i}].force_pacing: SO_MAX_PACING_RATE: {e}"))?;
    }
    let connected =
        if wait { sock.connect(addr, port, CONNECT_TIMEOUT_MS) } else { sock.start_connect(addr, port).map(drop) };
    connected.map_err(|e| format!("flows[{i}]: cannot connect to {addr}:{port}: {e}"))?;
    Ok(sock)
}

/// Sets the sysctls, then connects each flow to `addr:base_port+i` (twice for a flow
/// that repeats downloads).
pub fn prepare(cfg: &SendConfig) -> Result<Prepared, String> {
    sysctl::set_all(&cfg.sysctls)?;
    let mut conns = Vec::with_capacity(cfg.flows.len());
    for (i, flow) in cfg.flows.iter().enumerate() {
        let port = cfg.base_port + i as u16;
        let ahead = if flow.repeat > 1 { 2 } else { 1 };
        conns.push((0..ahead).map(|_| open(i, flow, port, true)).collect::<Result<Vec<_>, _>>()?);
    }
    Ok(Prepared {
        flows: cfg.flows.clone(),
        conns,
        base_port: cfg.base_port,
        interval_ns: cfg.interval_ns,
        duration_ns: cfg.duration_ns,
        trace_tx: cfg.trace_tx.clone(),
        counters_at_ready: CpuCounters::read(),
        profiling: kprofile::reset(),
    })
}

pub(crate) fn sample_flow(sock: &FlowSocket, flow: &FlowConfig) -> io::Result<FlowSample> {
    let info = sock.tcp_info()?;
    let cc = flow.cc_info.as_ref().map(|kind| (kind.clone(), sock.cc_info(kind)));
    Ok(FlowSample { info, cc })
}

/// What one flow is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before its (next) download's start time.
    Waiting,
    /// Writing whenever the send buffer has room.
    Writing,
    /// A sized flow with every byte written, waiting for the last ACK.
    Draining,
    /// Finished, or given up by the receiver (reset): nothing more to do.
    Idle,
}

/// Waits until a descriptor in `fds` is ready or `timeout_ns` passes; `fds[i].revents`
/// tells which.
fn wait(fds: &mut [libc::pollfd], timeout_ns: i64) -> io::Result<()> {
    let ns = timeout_ns.max(0);
    let ts =
        libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long };
    // SAFETY: `fds` is a valid array of pollfd of the length given; no signal mask.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    Ok(())
}

/// A flow's downloads: which connection is live, when each began, and when the next
/// one starts.
struct Downloads {
    current: usize,
    began: Vec<i64>,
    next_start: Option<i64>,
}

/// What a run keeps from its epoch to its end, besides the connections.
struct Progress {
    t0: i64,
    dl: Vec<Downloads>,
    /// The bytes a sized flow's download has yet to write (None: a bulk flow).
    remaining: Vec<Option<u64>>,
    all_sized: bool,
    /// Some flow repeats downloads: the receiver's notices are listened for.
    repeats: bool,
    phase: Vec<Phase>,
    /// When each sized flow's last download was all acknowledged (ns after t0).
    done: Vec<Option<i64>>,
    samples: Vec<SampleRow>,
    schedule: Schedule,
}

impl Progress {
    fn new(flows: &[FlowConfig], t0: i64, interval_ns: i64, duration_ns: i64) -> Progress {
        let remaining: Vec<Option<u64>> = flows.iter().map(|f| f.size).collect();
        Progress {
            t0,
            dl: flows
                .iter()
                .map(|f| Downloads { current: 0, began: Vec::new(), next_start: Some(t0 + f.start_ns) })
                .collect(),
            all_sized: remaining.iter().all(Option::is_some),
            remaining,
            repeats: flows.iter().any(|f| f.repeat > 1),
            phase: vec![Phase::Waiting; flows.len()],
            done: vec![None; flows.len()],
            samples: Vec::new(),
            schedule: Schedule::new(t0, interval_ns, duration_ns),
        }
    }

    /// Every flow is sized and its last download acknowledged: the run may end early.
    fn all_done(&self) -> bool {
        self.all_sized && self.done.iter().all(Option::is_some)
    }

    /// How long to wait from `now`: until the next sample, download start or the end;
    /// at most DRAIN_CHECK_NS while a flow drains (no event says its data was
    /// acknowledged); not at all when notices are already waiting.
    fn timeout(&self, now: i64, notices: &dyn Notices) -> i64 {
        let mut wake = self.schedule.wake();
        for d in &self.dl {
            wake = d.next_start.map_or(wake, |s| wake.min(s));
        }
        let mut timeout = wake - now;
        if self.phase.contains(&Phase::Draining) {
            timeout = timeout.min(DRAIN_CHECK_NS);
        }
        if self.repeats && notices.pending() {
            timeout = 0;
        }
        timeout
    }
}

/// The descriptors polled in one turn: the sockets of the flows writing, then the
/// notices' when some flow repeats downloads. Kept from turn to turn (no allocation).
struct PollSet {
    fds: Vec<libc::pollfd>,
    /// The flow of each socket in `fds`.
    polled: Vec<usize>,
}

impl PollSet {
    fn with_capacity(n: usize) -> PollSet {
        PollSet { fds: Vec::with_capacity(n + 1), polled: Vec::with_capacity(n) }
    }

    /// Waits until a writing flow's socket has room, a notice arrives, or `timeout_ns`
    /// passes; whether a notice arrived.
    fn wait(&mut self, sender: &Prepared, run: &Progress, notices: &dyn Notices, timeout_ns: i64) -> io::Result<bool> {
        self.fds.clear();
        self.polled.clear();
        for i in (0..run.phase.len()).filter(|&i| run.phase[i] == Phase::Writing) {
            self.fds.push(libc::pollfd { fd: sender.live(&run.dl, i).raw_fd(), events: libc::POLLOUT, revents: 0 });
            self.polled.push(i);
        }
        let notice_fd = notices.fd().filter(|_| run.repeats);
        if let Some(fd) = notice_fd {
            self.fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
        }
        wait(&mut self.fds, timeout_ns)?;
        Ok(notice_fd.is_some() && self.fds.last().is_some_and(|p| p.revents != 0))
    }

    /// The flows whose sockets have room, in flow order.
    fn writable(&self) -> impl Iterator<Item = usize> + '_ {
        self.fds.iter().zip(&self.polled).filter(|(pfd, _)| pfd.revents != 0).map(|(_, &i)| i)
    }
}

impl Prepared {
    /// Runs from the epoch `t0` (CLOCK_MONOTONIC ns), hearing of completed downloads
    /// from `notices`, and returns the report; the connections are reset at the end.
    pub fn run(self, t0: i64, notices: &mut dyn Notices) -> Result<SenderResult, String> {
        let trace = self.trace_tx.clone();
        if let Some(device) = &trace {
            txtrace::start(device)?;
        }
        let mut result = self.run_inner(t0, notices).map_err(|e| format!("sender: {e}"));
        if trace.is_some() {
            let traced = txtrace::finish();
            if let Ok(r) = result.as_mut() {
                r.tx_completions = Some(traced?);
            }
        }
        result
    }

    fn live(&self, dl: &[Downloads], i: usize) -> &FlowSocket {
        &self.conns[i][dl[i].current]
    }

    fn sample_all(&self, dl: &[Downloads]) -> io::Result<Vec<FlowSample>> {
        (0..self.flows.len()).map(|i| sample_flow(self.live(dl, i), &self.flows[i])).collect()
    }

    /// The loop of `Sender.run` in `agent.py`: each turn starts the downloads due,
    /// takes the samples due, notes the sized downloads all acknowledged, then waits
    /// for room in a socket or a notice, and writes.
    fn run_inner(mut self, t0: i64, notices: &mut dyn Notices) -> io::Result<SenderResult> {
        let mut run = Progress::new(&self.flows, t0, self.interval_ns, self.duration_ns);
        let payload = vec![0u8; SEND_CHUNK];
        let mut polls = PollSet::with_capacity(self.flows.len());
        loop {
            let now = monotonic_ns();
            self.start_downloads(&mut run, now)?;
            self.take_samples(&mut run, now)?;
            self.check_drained(&mut run, now)?;
            if run.schedule.ended(now) || run.all_done() {
                break;
            }
            let timeout = run.timeout(now, notices);
            let heard = polls.wait(&self, &run, notices, timeout)?;
            if heard || (run.repeats && notices.pending()) {
                self.hear(&mut run, notices)?;
            }
            self.write(&mut run, &polls, &payload);
        }
        self.finish(run)
    }

    /// The downloads whose start time has come begin writing; after a flow's first,
    /// each on its spare connection.
    fn start_downloads(&mut self, run: &mut Progress, now: i64) -> io::Result<()> {
        for i in 0..self.flows.len() {
            let dl = &mut run.dl[i];
            if dl.next_start.is_none_or(|s| now < s) {
                continue;
            }
            dl.next_start = None;
            if !dl.began.is_empty() {
                // A download after the first: the spare takes over, and the next one
                // is connected ahead if more are to come.
                dl.current += 1;
                run.remaining[i] = self.flows[i].size;
                if dl.current + 1 < self.flows[i].repeat as usize {
                    let port = self.base_port + i as u16;
                    let spare = open(i, &self.flows[i], port, false).map_err(io::Error::other)?;
                    self.conns[i].push(spare);
                }
            }
            dl.began.push(now - run.t0);
            run.phase[i] = Phase::Writing;
        }
        Ok(())
    }

    /// The samples due by `now`: TCP_INFO of every flow's live connection.
    fn take_samples(&self, run: &mut Progress, now: i64) -> io::Result<()> {
        for at in run.schedule.due(now) {
            let row = SampleRow(at, now - run.t0, self.sample_all(&run.dl)?);
            run.samples.push(row);
        }
        Ok(())
    }

    /// A draining download is done when TCP_INFO shows it all acknowledged; the flow
    /// is done at its last download's.
    fn check_drained(&self, run: &mut Progress, now: i64) -> io::Result<()> {
        for i in 0..self.flows.len() {
            if run.phase[i] == Phase::Draining && self.live(&run.dl, i).tcp_info()?.all_acked() {
                run.phase[i] = Phase::Idle;
                if run.dl[i].current + 1 == self.flows[i].repeat as usize {
                    run.done[i] = Some(now - run.t0);
                }
            }
        }
        Ok(())
    }

    /// The receiver's notices: one for the download under way schedules the next, the
    /// flow's pause after the instant it was complete.
    fn hear(&self, run: &mut Progress, notices: &mut dyn Notices) -> io::Result<()> {
        for d in notices.take()? {
            let Some(flow) = self.flows.get(d.flow) else { continue };
            let dl = &mut run.dl[d.flow];
            if d.download as usize == dl.current && dl.current + 1 < flow.repeat as usize {
                // Saturating: the notice comes over the control channel.
                dl.next_start = Some(run.t0.saturating_add(d.at_ns).saturating_add(flow.pause_ns));
            }
        }
        Ok(())
    }

    /// As much as each writable socket takes, up to what a sized download has left; a
    /// sized download written in full drains, a flow the receiver gave up on idles.
    fn write(&self, run: &mut Progress, polls: &PollSet, payload: &[u8]) {
        for i in polls.writable() {
            let chunk = match run.remaining[i] {
                None => payload,
                Some(rest) => &payload[..rest.min(SEND_CHUNK as u64) as usize],
            };
            match self.live(&run.dl, i).send(chunk) {
                Ok(sent) => {
                    if let Some(rest) = run.remaining[i].as_mut() {
                        *rest -= sent as u64;
                        if *rest == 0 {
                            run.phase[i] = Phase::Draining;
                        }
                    }
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                // The receiver gave up on the flow (reset or closed).
                Err(_) => run.phase[i] = Phase::Idle,
            }
        }
    }

    /// The run's end: the CPU counters and tick profile since `ready`, the last sample,
    /// the downloads' connections, then every connection reset.
    fn finish(self, run: Progress) -> io::Result<SenderResult> {
        let cpu_counters = CpuCounters::read().since(&self.counters_at_ready);
        let kernel_profile = if self.profiling { kprofile::read() } else { None };
        let final_samples = self.sample_all(&run.dl)?;
        let end_ns = monotonic_ns() - run.t0;
        let closing = if run.all_done() {
            run.done.iter().flatten().copied().max().unwrap_or(self.duration_ns)
        } else {
            self.duration_ns
        };
        let mut samples = run.samples;
        samples.push(SampleRow(closing, end_ns, final_samples.clone()));
        let downloads = self.downloads(&run.dl)?;
        drop(self); // resets every connection
        let tcp_ext = tcp_ext(&std::fs::read_to_string("/proc/net/netstat").unwrap_or_default());
        Ok(SenderResult {
            samples,
            final_samples,
            done_ns: run.done,
            end_ns,
            tcp_ext,
            downloads,
            tx_completions: None,
            cpu_counters: Some(cpu_counters),
            kernel_profile,
        })
    }

    /// Each begun download's connection as it ended, for the flows that repeat them.
    fn downloads(&self, dl: &[Downloads]) -> io::Result<Vec<Vec<serde_json::Value>>> {
        let mut out = Vec::with_capacity(dl.len());
        for (i, d) in dl.iter().enumerate() {
            let mut conns = Vec::new();
            if self.flows[i].repeat > 1 {
                for (sock, began) in self.conns[i].iter().zip(&d.began) {
                    let last = FlowSample { info: sock.tcp_info()?, cc: None };
                    conns.push(serde_json::json!({"port": sock.local_port()?, "start_ns": began, "final": last}));
                }
            }
            out.push(conns);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tcp_ext_tests {
    use super::*;

    #[test]
    fn reads_the_undo_counters_of_tcp_ext() {
        let text = "TcpExt: SyncookiesSent TCPFullUndo TCPLossUndo TCPSpuriousRTOs\nTcpExt: 0 2 1 1\n\
                    IpExt: InNoRoutes\nIpExt: 0\n";
        let got = tcp_ext(text);
        assert_eq!(got.get("TCPFullUndo"), Some(&2));
        assert_eq!(got.get("TCPSpuriousRTOs"), Some(&1));
        assert!(!got.contains_key("TCPDSACKUndo") && !got.contains_key("SyncookiesSent"));
        assert!(tcp_ext("").is_empty());
    }
}
