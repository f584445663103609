//! Network elements: packets, delay lines, and the bottleneck.

pub mod bottleneck;
pub mod packet;
pub mod pipe;

pub use bottleneck::Bottleneck;
pub use packet::Packet;
pub use pipe::Pipe;
