//! Observation: statistics and time series fed by the simulation.

pub mod capture;
pub mod pcap;
pub mod recorder;
pub mod series;
