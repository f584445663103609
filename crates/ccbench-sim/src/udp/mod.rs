//! Unresponsive traffic: UDP datagrams at a rate that takes no notice of the network
//! (video, gaming, a VPN tunnel), constant, on/off or stepping, in either direction.
//! A source sends one datagram every `size / rate` while on; a sink counts what
//! arrives and how long it took. Datagrams are not TCP: they carry their number in
//! `seq` and the instant they were sent in `ack` (`Control::Datagram`).

pub mod config;
pub mod schedule;
mod sink;
mod source;

pub use config::{OnOff, UdpFlowConfig};
pub use schedule::{send_runs, SendRun};
pub use sink::UdpSink;
pub use source::UdpSource;

/// IPv4 (20) and UDP (8) headers: a datagram's bytes on the wire beyond its payload.
pub const UDP_OVERHEAD: u32 = 28;
