//! ccbench-emu: a real-time link emulator between two TUN devices.
//!
//! It applies a scenario's bottleneck (rate, drop-tail buffer, random loss) and delays
//! to real packets, with the simulator's own [`Path`](ccbench_sim::net::Path) driven by
//! the monotonic clock and measured by its [`LinkMeter`](ccbench_sim::meter::LinkMeter),
//! so that the kernel engine and the simulator share one description of the link and
//! one way of measuring it. The model of
//! the path ([`link`]) is sans-IO and tested with explicit times; [`realtime`] owns
//! the clock, the devices and the control channel.

pub mod capture;
pub mod config;
pub mod link;
pub mod realtime;
pub mod report;
pub mod rtt;
pub mod tun;
pub mod wire;

pub use config::EmuConfig;
pub use realtime::serve;
pub use report::Report;
