//! Network elements: packets, delay lines, the bottleneck with its capacity models
//! (rate, rate steps, delivery-opportunity traces), loss models and queueing
//! disciplines, and the path they make up.

pub mod aqm;
pub mod bottleneck;
pub mod capacity;
pub mod loss;
pub mod packet;
pub mod path;
pub mod pipe;
pub mod trace;

pub use bottleneck::Bottleneck;
pub use packet::{Ecn, Packet};
pub use path::{Arrival, Dir, End, Path, PathObserver, PathShape, PathWake};
pub use pipe::Pipe;
