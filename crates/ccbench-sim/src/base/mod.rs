//! Base types every layer uses: seeded random streams, histograms, windowed min/max,
//! integer ranges.

pub mod histogram;
pub mod minmax;
pub mod range;
pub mod rng;
