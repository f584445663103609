//! TUN devices (layer 3, no packet-information header). A device lives as long as its
//! file descriptor: when the emulator exits, however it exits, the kernel removes it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub struct Tun {
    fd: OwnedFd,
    pub name: String,
}

impl Tun {
    /// Create device `name` (at most 15 bytes) in the caller's network namespace,
    /// non-blocking.
    pub fn create(name: &str) -> io::Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad device name {name:?}")));
        }
        let path = c"/dev/net/tun";
        // SAFETY: plain open(2) of a constant path.
        let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which IfReq lays out.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut IfReq) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tun { fd, name: name.to_string() })
    }

    /// One packet, or `WouldBlock`.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: reading into a buffer we own, bounded by its length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Hand one packet to the kernel; true if it was taken whole.
    pub fn write(&self, packet: &[u8]) -> bool {
        // SAFETY: writing from a buffer we own, bounded by its length.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        n == packet.len() as isize
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
