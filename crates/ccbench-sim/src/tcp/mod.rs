//! The TCP endpoints, modelled on the Linux stack (net/ipv4/tcp_input.c, tcp_output.c,
//! tcp_rate.c, tcp_recovery.c, tcp_timer.c).

pub mod chrono;
pub mod close;
pub mod config;
pub mod cwnd_use;
pub mod handshake;
pub mod io;
pub mod mtu;
pub mod pacing;
pub mod prr;
pub mod rack;
pub mod rate;
pub mod rcvbuf;
pub mod receiver;
pub mod report;
pub mod rtt;
pub mod sack;
pub mod scoreboard;
pub mod scripted;
pub mod sender;
pub mod sndbuf;
pub mod tlp;
pub mod tsopt;
pub mod tsq;
pub mod undo;
pub mod wake;
pub mod write;
pub mod xmit_timer;

pub use config::{FlowConfig, TcpConfig};
pub use io::{Io, Loopback};
pub use receiver::Receiver;
pub use report::{FlowSample, SenderTotals};
pub use sender::{Sender, SenderParams};
pub use wake::{SenderTimer, Wake};
