//! The event core: time-ordered events, timers, seeded random streams, and the run loop.

pub mod events;
pub mod rng;
pub mod world;

pub use events::{Event, EventQueue, Timer, TimerFire};
