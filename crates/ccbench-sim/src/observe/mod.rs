//! Observation: statistics and time series fed by the simulation.

pub mod histogram;
pub mod recorder;
pub mod series;
