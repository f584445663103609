//! The event core: time-ordered events, seeded random streams, and the run loop.

pub mod world;
