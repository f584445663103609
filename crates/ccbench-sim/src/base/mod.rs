//! Base types every layer uses: seeded random streams, histograms, windowed min/max.

pub mod histogram;
pub mod minmax;
pub mod rng;
