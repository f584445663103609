//! Running the guest's sending paths once before the flows connect.
//!
//! Under TCG, QEMU translates guest code the first time it runs it, so the first pass
//! through a kernel path costs milliseconds that no later pass does. Unwarmed, a fresh
//! guest's first flow took 9.7 ms for its handshake on a 1 ms path (the flows connected
//! after it 1.3 ms), and the run's loop began 10.6 ms after `go` (reading `/proc` for the
//! CPU counters, now read before `ready`). The handshake's RTT is the connection's first
//! `min_rtt` (the SYN-ACK's sample, taken before `tcp_init_transfer` calls `bbr_init`,
//! which copies `tcp_min_rtt`), which a flow that always keeps a queue never undercuts. So
//! before the flows connect, the agent sends over loopback with each flow's congestion
//! control, sampled as the flow will be, and knocks on the gateway (ARP, the NIC's
//! transmit and receive, a reset); the CPU counters are first read by `prepare`, also
//! before `ready`. Nothing of it reaches the emulator.

use std::io::{self, Read};
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsRawFd;

use crate::clock::monotonic_ns;
use crate::config::{FlowConfig, SendConfig};
use crate::route;
use crate::sender::sample_flow;
use crate::socket::{FlowSocket, PACING_ANY_RATE};

/// Bytes sent over loopback per congestion control: through slow start and many ACKs.
const LOOPBACK_BYTES: usize = 2 << 20;
/// A port on the gateway where nothing listens: the SYN is answered with a reset.
const CLOSED_PORT: u16 = 9;
/// On the kernel command line of the VM engine's guest (`python/ccbench/vm/sender.py`).
const GUEST_MODE: &str = "ccbench.mode=agent";
/// Bound on each connection attempt, so that a host that drops instead of resetting
/// delays a run by at most this.
const TIMEOUT_MS: i32 = 1_000;

/// Runs the paths the flows will take; every failure is ignored (the flows' own
/// connections report theirs).
pub fn up(cfg: &SendConfig) {
    let mut warmed: Vec<&FlowConfig> = Vec::new();
    for flow in &cfg.flows {
        if !warmed.iter().any(|w| w.cca == flow.cca && w.paced() == flow.paced()) {
            warmed.push(flow);
            let _ = loopback(flow);
        }
    }
    knock_on_gateway();
}

/// One transfer of `LOOPBACK_BYTES` to this agent's own listener, with the flow's
/// congestion control and pacing, sampled as the flow is.
fn loopback(flow: &FlowConfig) -> io::Result<()> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let port = listener.local_addr()?.port();
    let sock = FlowSocket::new()?;
    sock.set_congestion(&flow.cca)?;
    if flow.paced() {
        sock.set_max_pacing_rate(PACING_ANY_RATE)?;
    }
    sock.connect(Ipv4Addr::LOCALHOST, port, TIMEOUT_MS)?;
    // Established by now: accept takes it from the queue without waiting.
    let (mut peer, _) = listener.accept()?;
    peer.set_nonblocking(true)?;
    let payload = vec![0u8; 1 << 16];
    let mut sink = vec![0u8; 1 << 16];
    let mut left = LOOPBACK_BYTES;
    let deadline = monotonic_ns() + i64::from(TIMEOUT_MS) * 1_000_000;
    while left > 0 && monotonic_ns() < deadline {
        match sock.send(&payload[..left.min(payload.len())]) {
            Ok(n) => left -= n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        let mut fds = [
            libc::pollfd { fd: sock.raw_fd(), events: libc::POLLOUT, revents: 0 },
            libc::pollfd { fd: peer.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: two valid pollfds.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, TIMEOUT_MS) };
        while matches!(peer.read(&mut sink), Ok(n) if n > 0) {}
    }
    sample_flow(&sock, flow).map(drop)
}

/// A connection attempt to the default gateway's closed port: the guest resolves the
/// gateway, and its NIC sends a SYN and takes in the reset. Only in the VM engine's guest
/// (booted with `ccbench.mode=agent`), whose gateway is the engine's own namespace: an
/// agent serving on a host knocks on nothing.
fn knock_on_gateway() {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if !cmdline.split_whitespace().any(|word| word == GUEST_MODE) {
        return;
    }
    let table = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    if let Some((gateway, _)) = route::default_gateway(&table) {
        if let Ok(sock) = FlowSocket::new() {
            let _ = sock.connect(gateway, CLOSED_PORT, TIMEOUT_MS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(cca: &str, paced: bool) -> FlowConfig {
        let text = format!(r#"{{"addr": "127.0.0.1", "cca": "{cca}", "force_pacing": {paced}}}"#);
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn a_loopback_transfer_goes_through_paced_or_not() {
        loopback(&flow("reno", false)).unwrap();
        loopback(&flow("cubic", true)).unwrap();
    }

    #[test]
    fn an_algorithm_the_kernel_lacks_fails_at_once() {
        let err = loopback(&flow("nosuchcc", false)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }
}
