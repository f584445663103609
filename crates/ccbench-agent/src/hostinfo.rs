//! What `info` reports: the guest kernel and what it offers.

use std::ffi::CStr;

use crate::protocol::{Info, PROTOCOL_VERSION};

pub const AVAILABLE_CC: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// The kernel release, as `uname -r` prints it.
pub fn kernel_release() -> String {
    // SAFETY: utsname is plain data; uname(2) fills it with NUL-terminated strings.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut uts) } != 0 {
        return String::new();
    }
    // SAFETY: `release` is NUL-terminated after a successful uname(2).
    unsafe { CStr::from_ptr(uts.release.as_ptr()) }.to_string_lossy().into_owned()
}

pub fn online_cpus() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

pub fn info() -> Result<Info, String> {
    let available =
        std::fs::read_to_string(AVAILABLE_CC).map_err(|e| format!("info: cannot read {AVAILABLE_CC}: {e}"))?;
    Ok(Info {
        kernel: kernel_release(),
        available_congestion_control: available.split_whitespace().map(str::to_owned).collect(),
        cpus: online_cpus(),
        version: env!("CARGO_PKG_VERSION"),
        protocol: PROTOCOL_VERSION,
        is_static: cfg!(target_feature = "crt-static"),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn reports_this_kernel() {
        let info = super::info().unwrap();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(info.kernel, release.trim());
        assert!(info.available_congestion_control.iter().any(|c| c == "cubic" || c == "reno"));
        assert!(info.cpus >= 1);
    }
}
