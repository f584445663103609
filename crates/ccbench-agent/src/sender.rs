//! The sender: what `send` in `python/ccbench/kernel/agent.py` does, step for step.
//!
//! [`prepare`] sets the sysctls and connects every flow with its congestion control;
//! [`Prepared::run`] then sends from the epoch t0: bulk flows until the end, sized flows
//! until their bytes are written and acknowledged, with `TCP_INFO` (and BBR's
//! `TCP_CC_INFO`) sampled at t0 + k x interval and once more when the run ends.

use std::io;

use serde::Serialize;
use std::collections::BTreeMap;

use crate::clock::{monotonic_ns, Schedule};
use crate::config::{FlowConfig, SendConfig};
use crate::socket::{FlowSocket, PACING_ANY_RATE};
use crate::sysctl;
use crate::tcpinfo::FlowSample;

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
    /// Per flow, its downloads' connections as they ended: always empty here, since this
    /// agent opens one connection per flow (the VM engine refuses `repeat`).
    pub downloads: Vec<Vec<serde_json::Value>>,
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

/// Connected flows, waiting for the epoch.
pub struct Prepared {
    flows: Vec<FlowConfig>,
    socks: Vec<FlowSocket>,
    interval_ns: i64,
    duration_ns: i64,
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

/// Sets the sysctls, then opens and connects one socket per flow to `addr:base_port+i`.
pub fn prepare(cfg: &SendConfig) -> Result<Prepared, String> {
    sysctl::set_all(&cfg.sysctls)?;
    let mut socks = Vec::with_capacity(cfg.flows.len());
    for (i, flow) in cfg.flows.iter().enumerate() {
        let addr = flow.ipv4().map_err(|what| format!("flows[{i}].addr: {what}"))?;
        let port = cfg.base_port + i as u16;
        let sock = FlowSocket::new().map_err(|e| format!("flows[{i}]: socket: {e}"))?;
        sock.set_congestion(&flow.cca).map_err(|e| cca_error(i, &flow.cca, &e))?;
        if flow.paced() {
            sock.set_max_pacing_rate(PACING_ANY_RATE)
                .map_err(|e| format!("flows[{i}].force_pacing: SO_MAX_PACING_RATE: {e}"))?;
        }
        sock.connect(addr, port, CONNECT_TIMEOUT_MS)
            .map_err(|e| format!("flows[{i}]: cannot connect to {addr}:{port}: {e}"))?;
        socks.push(sock);
    }
    Ok(Prepared { flows: cfg.flows.clone(), socks, interval_ns: cfg.interval_ns, duration_ns: cfg.duration_ns })
}

fn sample_flow(sock: &FlowSocket, flow: &FlowConfig) -> io::Result<FlowSample> {
    let info = sock.tcp_info()?;
    let bbr = flow.is_bbr().then(|| sock.bbr_info());
    Ok(FlowSample { info, bbr })
}

/// What one flow is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before its start time.
    Waiting,
    /// Writing whenever the send buffer has room.
    Writing,
    /// A sized flow with every byte written, waiting for the last ACK.
    Draining,
    /// Finished, or given up by the receiver (reset): nothing more to do.
    Idle,
}

/// Waits until a socket in `fds` is writable or `timeout_ns` passes; `fds[i].revents`
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

impl Prepared {
    /// Runs from the epoch `t0` (CLOCK_MONOTONIC ns) and returns the report; the sockets
    /// are reset at the end.
    pub fn run(self, t0: i64) -> Result<SenderResult, String> {
        self.run_inner(t0).map_err(|e| format!("sender: {e}"))
    }

    fn sample_all(&self) -> io::Result<Vec<FlowSample>> {
        self.socks.iter().zip(&self.flows).map(|(s, f)| sample_flow(s, f)).collect()
    }

    fn run_inner(self, t0: i64) -> io::Result<SenderResult> {
        let n = self.flows.len();
        let starts: Vec<i64> = self.flows.iter().map(|f| t0 + f.start_ns).collect();
        let mut remaining: Vec<Option<u64>> = self.flows.iter().map(|f| f.size).collect();
        let all_sized = remaining.iter().all(Option::is_some);
        let mut phase = vec![Phase::Waiting; n];
        let mut done: Vec<Option<i64>> = vec![None; n];
        let payload = vec![0u8; SEND_CHUNK];
        let mut samples = Vec::new();
        let mut schedule = Schedule::new(t0, self.interval_ns, self.duration_ns);
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(n);
        let mut polled: Vec<usize> = Vec::with_capacity(n);

        loop {
            let now = monotonic_ns();
            for i in 0..n {
                if phase[i] == Phase::Waiting && now >= starts[i] {
                    phase[i] = Phase::Writing;
                }
            }
            for at in schedule.due(now) {
                samples.push(SampleRow(at, now - t0, self.sample_all()?));
            }
            for i in 0..n {
                if phase[i] == Phase::Draining && self.socks[i].tcp_info()?.all_acked() {
                    phase[i] = Phase::Idle;
                    done[i] = Some(now - t0);
                }
            }
            if schedule.ended(now) || (all_sized && done.iter().all(Option::is_some)) {
                break;
            }
            let mut wake = schedule.wake();
            for i in 0..n {
                if phase[i] == Phase::Waiting {
                    wake = wake.min(starts[i]);
                }
            }
            let mut timeout = wake - now;
            if phase.contains(&Phase::Draining) {
                timeout = timeout.min(DRAIN_CHECK_NS);
            }
            fds.clear();
            polled.clear();
            for i in (0..n).filter(|&i| phase[i] == Phase::Writing) {
                fds.push(libc::pollfd { fd: self.socks[i].raw_fd(), events: libc::POLLOUT, revents: 0 });
                polled.push(i);
            }
            wait(&mut fds, timeout)?;
            for (pfd, &i) in fds.iter().zip(&polled) {
                if pfd.revents == 0 {
                    continue;
                }
                let chunk = match remaining[i] {
                    None => &payload[..],
                    Some(rest) => &payload[..rest.min(SEND_CHUNK as u64) as usize],
                };
                match self.socks[i].send(chunk) {
                    Ok(sent) => {
                        if let Some(rest) = remaining[i].as_mut() {
                            *rest -= sent as u64;
                            if *rest == 0 {
                                phase[i] = Phase::Draining;
                            }
                        }
                    }
                    Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                    // The receiver gave up on the flow (reset or closed).
                    Err(_) => phase[i] = Phase::Idle,
                }
            }
        }

        let final_samples = self.sample_all()?;
        let end_ns = monotonic_ns() - t0;
        let closing = if all_sized && done.iter().all(Option::is_some) {
            done.iter().flatten().copied().max().unwrap_or(self.duration_ns)
        } else {
            self.duration_ns
        };
        samples.push(SampleRow(closing, end_ns, final_samples.clone()));
        drop(self); // resets every connection
        let tcp_ext = tcp_ext(&std::fs::read_to_string("/proc/net/netstat").unwrap_or_default());
        let downloads = vec![Vec::new(); done.len()];
        Ok(SenderResult { samples, final_samples, done_ns: done, end_ns, tcp_ext, downloads })
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
