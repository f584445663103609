//! The TCP endpoints, modelled on the Linux stack (reference §1).

pub mod minmax;
mod output;
pub mod rate;
pub mod rcvbuf;
mod recovery;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

pub use receiver::Receiver;
pub use sender::{Sender, SenderParams};
