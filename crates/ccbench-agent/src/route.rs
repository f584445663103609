//! Route metrics in the guest, through rtnetlink: what `ip route replace DST/32 via GW
//! initcwnd N rto_min Tms features ecn` does on the kernel engine's sender, which
//! busybox's `ip` cannot say. A route to the receiver's address, via the guest's default
//! gateway, carries the scenario's initial window and minimum RTO (`tcp_init_cwnd` and
//! `tcp_rto_min` read them from the socket's route), and the ECN feature that makes a
//! connection ask for ECN (`tcp_ecn_send_syn`, `RTAX_FEATURE_ECN`).

use std::io;
use std::mem::size_of;
use std::net::Ipv4Addr;

/// `include/uapi/linux/rtnetlink.h`: route attributes and metrics.
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_METRICS: u16 = 8;
const RTAX_LOCK: u16 = 1;
const RTAX_INITCWND: u16 = 11;
const RTAX_FEATURES: u16 = 12;
const RTAX_RTO_MIN: u16 = 13;
const RTAX_FEATURE_ECN: u32 = 1;
const RT_TABLE_MAIN: u8 = 254;
const RTPROT_BOOT: u8 = 3;
const RTN_UNICAST: u8 = 1;

/// The metrics to set; `None` leaves the kernel's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteMetrics {
    pub initcwnd: Option<u32>,
    /// Milliseconds, locked, as iproute2 sets `rto_min` (`tcp_rto_min` honours only a
    /// locked metric).
    pub rto_min_ms: Option<u32>,
    /// Connections to the destination ask for classic ECN.
    pub ecn: bool,
}

/// The default route's gateway and interface, from /proc/net/route's text.
pub fn default_gateway(proc_net_route: &str) -> Option<(Ipv4Addr, String)> {
    proc_net_route.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            [iface, "00000000", gw, ..] => {
                let gw = u32::from_str_radix(gw, 16).ok()?;
                // The file prints the address as a host-order word of network-order bytes.
                Some((Ipv4Addr::from(gw.to_le_bytes()), (*iface).to_owned()))
            }
            _ => None,
        }
    })
}

fn attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(buf.len().next_multiple_of(4), 0);
}

/// An `RTM_NEWROUTE` request (create or replace) for `dst/32 via gw dev oif` with
/// `metrics`, sequence number `seq`.
pub fn new_route_request(dst: Ipv4Addr, gw: Ipv4Addr, oif: u32, metrics: &RouteMetrics, seq: u32) -> Vec<u8> {
    let mut nested = Vec::new();
    if let Some(n) = metrics.initcwnd {
        attr(&mut nested, RTAX_INITCWND, &n.to_ne_bytes());
    }
    if let Some(ms) = metrics.rto_min_ms {
        attr(&mut nested, RTAX_LOCK, &(1u32 << RTAX_RTO_MIN).to_ne_bytes());
        attr(&mut nested, RTAX_RTO_MIN, &ms.to_ne_bytes());
    }
    if metrics.ecn {
        attr(&mut nested, RTAX_FEATURES, &RTAX_FEATURE_ECN.to_ne_bytes());
    }
    let mut body = vec![libc::AF_INET as u8, 32, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, 0, RTN_UNICAST];
    body.extend_from_slice(&0u32.to_ne_bytes()); // rtm_flags
    attr(&mut body, RTA_DST, &dst.octets());
    attr(&mut body, RTA_GATEWAY, &gw.octets());
    attr(&mut body, RTA_OIF, &oif.to_ne_bytes());
    if !nested.is_empty() {
        attr(&mut body, RTA_METRICS, &nested);
    }
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_REPLACE) as u16;
    let mut msg = Vec::with_capacity(16 + body.len());
    msg.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&libc::RTM_NEWROUTE.to_ne_bytes());
    msg.extend_from_slice(&flags.to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend(body);
    msg
}

/// Routes `dst/32` via the default gateway with `metrics`; an error says why.
pub fn set_metrics(dst: Ipv4Addr, metrics: &RouteMetrics) -> Result<(), String> {
    let table = std::fs::read_to_string("/proc/net/route").map_err(|e| format!("route: /proc/net/route: {e}"))?;
    let (gw, iface) = default_gateway(&table).ok_or("route: the guest has no default route")?;
    let name = std::ffi::CString::new(iface.clone()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated name.
    let oif = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if oif == 0 {
        return Err(format!("route: no interface {iface}"));
    }
    request(&new_route_request(dst, gw, oif, metrics, 1)).map_err(|e| format!("route: {dst} via {gw}: {e}"))
}

/// Sends one netlink request and reads its acknowledgement.
fn request(msg: &[u8]) -> io::Result<()> {
    // SAFETY: plain socket(2); the descriptor is owned and closed below.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let result = (|| {
        // SAFETY: sockaddr_nl is plain data; zero is the kernel's address.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `msg` and `kernel` are valid for the lengths given.
        let sent = unsafe {
            libc::sendto(
                fd,
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut reply = [0u8; 1024];
        // SAFETY: `reply` is writable for its length.
        let n = unsafe { libc::recv(fd, reply.as_mut_ptr().cast(), reply.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        ack_error(&reply[..n as usize])
    })();
    // SAFETY: closes the descriptor opened above, once.
    unsafe { libc::close(fd) };
    result
}

/// The outcome an `NLMSG_ERROR` acknowledgement carries (0 is success).
fn ack_error(reply: &[u8]) -> io::Result<()> {
    if reply.len() < 20 || u16::from_ne_bytes([reply[4], reply[5]]) != libc::NLMSG_ERROR as u16 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "no netlink acknowledgement"));
    }
    match i32::from_ne_bytes([reply[16], reply[17], reply[18], reply[19]]) {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(-e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_default_routes_gateway() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n\
                     eth0\t0404000A\t00000000\t0001\t0\t0\t0\tFCFFFFFF\n\
                     eth0\t00000000\t0504000A\t0003\t0\t0\t0\t00000000\n";
        assert_eq!(default_gateway(table), Some((Ipv4Addr::new(10, 0, 4, 5), "eth0".to_owned())));
        assert_eq!(default_gateway("Iface\tDestination\n"), None);
    }

    #[test]
    fn the_request_carries_the_route_and_its_locked_metrics() {
        let m = RouteMetrics { initcwnd: Some(20), rto_min_ms: Some(50), ecn: true };
        let msg = new_route_request(Ipv4Addr::new(10, 0, 4, 2), Ipv4Addr::new(10, 0, 4, 5), 2, &m, 7);
        assert_eq!(u32::from_ne_bytes(msg[0..4].try_into().unwrap()) as usize, msg.len());
        assert_eq!(u16::from_ne_bytes([msg[4], msg[5]]), libc::RTM_NEWROUTE);
        // rtmsg: IPv4, a /32, the main table, unicast.
        assert_eq!(&msg[16..24], &[libc::AF_INET as u8, 32, 0, 0, 254, 3, 0, 1]);
        // RTA_DST, RTA_GATEWAY, RTA_OIF, then RTA_METRICS nesting INITCWND, LOCK, RTO_MIN
        // and FEATURES.
        let attrs = &msg[28..];
        assert_eq!(&attrs[0..8], &[8, 0, 1, 0, 10, 0, 4, 2]);
        assert_eq!(&attrs[8..16], &[8, 0, 5, 0, 10, 0, 4, 5]);
        let metrics = &attrs[24..];
        assert_eq!(u16::from_ne_bytes([metrics[2], metrics[3]]), RTA_METRICS);
        let nested: Vec<u32> =
            metrics[4..].chunks(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
        assert_eq!(nested, [8 | 11 << 16, 20, 8 | 1 << 16, 1 << 13, 8 | 13 << 16, 50, 8 | 12 << 16, 1]);
    }

    #[test]
    fn an_acknowledgement_carries_the_errno() {
        let mut ack = [0u8; 36];
        ack[4..6].copy_from_slice(&(libc::NLMSG_ERROR as u16).to_ne_bytes());
        assert!(ack_error(&ack).is_ok());
        ack[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        assert_eq!(ack_error(&ack).unwrap_err().raw_os_error(), Some(libc::EPERM));
    }
}
