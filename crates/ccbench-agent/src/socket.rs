//! One sending TCP socket, through `libc`: the options std does not offer
//! (`TCP_CONGESTION`, `SO_MAX_PACING_RATE`, `TCP_INFO`, `TCP_CC_INFO`) must be set or
//! read on the raw descriptor, and `TCP_CONGESTION` before `connect`.

use std::io;
use std::mem::size_of;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::tcpinfo::{
    CcInfo, TcpInfo, CC_INFO_MAX, SO_MAX_PACING_RATE, TCP_CC_INFO, TCP_CONGESTION, TCP_INFO, TCP_INFO_MAX,
};

/// A paced flow of an algorithm that does not pace by itself: any cap at all turns on the
/// kernel's internal pacing (`SK_PACING_NEEDED`, `tcp_needs_internal_pacing`); this one,
/// 2^32 - 2 bytes/s, never binds (as `PACING_ANY_RATE` in `agent.py`).
pub const PACING_ANY_RATE: u32 = 0xFFFF_FFFE;

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to `size_of::<T>()` readable bytes for the call's duration.
    cvt(unsafe { libc::setsockopt(fd, level, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t) })
        .map(drop)
}

/// The bytes the kernel returned for a getsockopt, up to `buf.len()`.
fn getsockopt_bytes(fd: RawFd, level: libc::c_int, name: libc::c_int, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is writable for `len` bytes and `len` is a valid in/out length.
    cvt(unsafe { libc::getsockopt(fd, level, name, buf.as_mut_ptr().cast(), &mut len) })?;
    Ok(len as usize)
}

pub struct FlowSocket {
    fd: OwnedFd,
}

impl FlowSocket {
    /// A non-blocking IPv4 TCP socket.
    pub fn new() -> io::Result<FlowSocket> {
        // SAFETY: plain socket(2) call; the descriptor is owned from here on.
        let fd = cvt(unsafe {
            libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
        })?;
        // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
        Ok(FlowSocket { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// `TCP_CONGESTION`: fails with ENOENT when the kernel has no such algorithm (and no
    /// module to load for it).
    pub fn set_congestion(&self, cca: &str) -> io::Result<()> {
        let name = cca.as_bytes();
        // SAFETY: `name` is readable for its length; the kernel copies at most that.
        cvt(unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::IPPROTO_TCP,
                TCP_CONGESTION,
                name.as_ptr().cast(),
                name.len() as libc::socklen_t,
            )
        })
        .map(drop)
    }

    pub fn set_max_pacing_rate(&self, bytes_per_s: u32) -> io::Result<()> {
        setsockopt(self.fd.as_raw_fd(), libc::SOL_SOCKET, SO_MAX_PACING_RATE, &bytes_per_s)
    }

    /// Connects, waiting at most `timeout_ms` for the handshake.
    pub fn connect(&self, addr: Ipv4Addr, port: u16, timeout_ms: i32) -> io::Result<()> {
        if self.start_connect(addr, port)? {
            return Ok(());
        }
        let fd = self.fd.as_raw_fd();
        let mut pfd = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
        // SAFETY: one valid pollfd.
        if cvt(unsafe { libc::poll(&mut pfd, 1, timeout_ms) })? == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "connection timed out"));
        }
        let mut so_error = [0u8; size_of::<libc::c_int>()];
        getsockopt_bytes(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut so_error)?;
        match libc::c_int::from_ne_bytes(so_error) {
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }

    /// Starts the handshake without waiting for it: true if it is already done. The
    /// socket becomes writable once connected.
    pub fn start_connect(&self, addr: Ipv4Addr, port: u16) -> io::Result<bool> {
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(addr).to_be() },
            sin_zero: [0; 8],
        };
        let fd = self.fd.as_raw_fd();
        // SAFETY: `sin` is a valid sockaddr_in of the length given.
        let rc = unsafe {
            libc::connect(
                fd,
                (&sin as *const libc::sockaddr_in).cast(),
                size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(err);
        }
        Ok(false)
    }

    /// The local port (`getsockname`), by which the emulator tells connections apart.
    pub fn local_port(&self) -> io::Result<u16> {
        // SAFETY: sockaddr_in is plain data; getsockname fills at most `len` bytes.
        let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        cvt(unsafe { libc::getsockname(self.fd.as_raw_fd(), (&mut sin as *mut libc::sockaddr_in).cast(), &mut len) })?;
        Ok(u16::from_be(sin.sin_port))
    }

    /// Writes what the send buffer takes now (`WouldBlock` when it is full).
    pub fn send(&self, data: &[u8]) -> io::Result<usize> {
        // SAFETY: `data` is readable for its length. MSG_NOSIGNAL: a reset peer gives
        // EPIPE, not SIGPIPE.
        let n = unsafe {
            libc::send(self.fd.as_raw_fd(), data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    pub fn tcp_info(&self) -> io::Result<TcpInfo> {
        let mut buf = [0u8; TCP_INFO_MAX];
        let n = getsockopt_bytes(self.fd.as_raw_fd(), libc::IPPROTO_TCP, TCP_INFO, &mut buf)?;
        Ok(TcpInfo::parse(&buf[..n]))
    }

    /// `TCP_CC_INFO` as the structure `kind` names (`CcInfo::parse`); `None` when the
    /// kernel has none to give.
    pub fn cc_info(&self, kind: &str) -> Option<CcInfo> {
        let mut buf = [0u8; CC_INFO_MAX];
        let n = getsockopt_bytes(self.fd.as_raw_fd(), libc::IPPROTO_TCP, TCP_CC_INFO, &mut buf).ok()?;
        CcInfo::parse(kind, &buf[..n])
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Drop for FlowSocket {
    /// Reset rather than close gracefully (`SO_LINGER` with a zero timeout): nothing
    /// lingers after the run, on success or on error.
    fn drop(&mut self) {
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        let _ = setsockopt(self.fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, &linger);
    }
}
