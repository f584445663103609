//! Network elements: packets, delay lines, and the bottleneck with its capacity models
//! (rate, rate steps, delivery-opportunity traces), loss models and queueing disciplines.

pub mod aqm;
pub mod bottleneck;
pub mod capacity;
pub mod loss;
pub mod packet;
pub mod pipe;
pub mod trace;

pub use bottleneck::Bottleneck;
pub use packet::{Ecn, Packet};
pub use pipe::Pipe;
