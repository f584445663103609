//! Per-component random streams derived from the run's single seed.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub type Rng = Xoshiro256PlusPlus;

/// SplitMix64 finaliser: a bijective mix of 64 bits.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The stream for component `name` number `index` (e.g. "loss", 0; "flow", 3).
/// Adding a component never perturbs the draws of another.
pub fn stream(seed: u64, name: &str, index: u64) -> Rng {
    let mut h = 0xcbf2_9ce4_8422_2325u64; // FNV-1a of the name
    for b in name.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    Rng::seed_from_u64(mix(mix(seed) ^ h) ^ mix(index))
}
