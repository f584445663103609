//! Transfer sizes: a fixed size, or an empirical CDF sampled with linear interpolation
//! between its points (as ns-3's `EmpiricalRandomVariable` and the generators of the
//! pFabric and HPCC studies do).

use crate::base::rng::Rng;
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// Where sizes come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Sizes {
    /// Every transfer this many bytes.
    Fixed(u64),
    /// `(bytes, cumulative probability)` points, both non-decreasing, the last at 1.
    Cdf(Vec<(u64, f64)>),
    /// A CDF from the literature, by name (`BUILTIN`).
    Builtin(String),
}

/// The packet size the published CDFs count in (1460-byte segments).
const PACKET: u64 = 1460;

/// The web-search workload of DCTCP (Alizadeh et al., SIGCOMM 2010), as pFabric's
/// simulations give it: sizes in 1460-byte packets.
const WEB_SEARCH: [(u64, f64); 12] = [
    (6, 0.0),
    (6, 0.15),
    (13, 0.2),
    (19, 0.3),
    (33, 0.4),
    (53, 0.53),
    (133, 0.6),
    (667, 0.7),
    (1333, 0.8),
    (3333, 0.9),
    (6667, 0.97),
    (20000, 1.0),
];

/// The data-mining workload of VL2 (Greenberg et al., SIGCOMM 2009), as pFabric's
/// simulations give it: sizes in 1460-byte packets.
const DATA_MINING: [(u64, f64); 9] =
    [(1, 0.0), (1, 0.5), (2, 0.6), (3, 0.7), (7, 0.8), (267, 0.9), (2107, 0.95), (66667, 0.99), (666667, 1.0)];

/// The built-in CDFs' names.
pub const BUILTIN: [&str; 2] = ["web-search", "data-mining"];

impl Sizes {
    /// The CDF's points in bytes (one point for a fixed size); an unknown name gives none.
    pub fn points(&self) -> Vec<(u64, f64)> {
        let packets = |t: &[(u64, f64)]| t.iter().map(|&(n, p)| (n * PACKET, p)).collect();
        match self {
            Sizes::Fixed(b) => vec![(*b, 1.0)],
            Sizes::Cdf(points) => points.clone(),
            Sizes::Builtin(name) => match name.as_str() {
                "web-search" => packets(&WEB_SEARCH),
                "data-mining" => packets(&DATA_MINING),
                _ => Vec::new(),
            },
        }
    }

    /// Why the sizes cannot be sampled, if they cannot.
    pub fn problem(&self) -> Option<String> {
        let points = self.points();
        if let Sizes::Builtin(name) = self {
            if points.is_empty() {
                return Some(format!("unknown distribution '{name}'; built in: {}", BUILTIN.join(", ")));
            }
        }
        let Some(&(last, p_last)) = points.last() else { return Some("the CDF is empty".into()) };
        if points.windows(2).any(|w| w[1].0 < w[0].0 || w[1].1 < w[0].1) {
            return Some("the CDF must not decrease: sizes and probabilities in non-decreasing order".into());
        }
        if points.iter().any(|&(_, p)| !(0.0..=1.0).contains(&p)) {
            return Some("probabilities must be from 0 to 1".into());
        }
        if p_last != 1.0 {
            return Some(format!("the CDF must end at probability 1 (it ends at {p_last})"));
        }
        if last == 0 {
            return Some("sizes must be positive".into());
        }
        None
    }

    /// A sampler of these (checked) sizes.
    pub fn sampler(&self) -> SizeSampler {
        SizeSampler { points: self.points() }
    }
}

/// Draws sizes by inverting the CDF, interpolating linearly between its points.
#[derive(Clone, Debug)]
pub struct SizeSampler {
    points: Vec<(u64, f64)>,
}

impl SizeSampler {
    /// The size at cumulative probability `u` (at least 1 byte).
    pub fn at(&self, u: f64) -> u64 {
        let p = &self.points;
        let k = p.partition_point(|&(_, q)| q < u);
        let size = match k {
            0 => p[0].0 as f64,
            k if k == p.len() => p[k - 1].0 as f64,
            k => {
                let ((s0, q0), (s1, q1)) = (p[k - 1], p[k]);
                match q1 > q0 {
                    true => s0 as f64 + (s1 as f64 - s0 as f64) * (u - q0) / (q1 - q0),
                    false => s1 as f64,
                }
            }
        };
        (size.round() as u64).max(1)
    }

    pub fn draw(&self, rng: &mut Rng) -> u64 {
        self.at(rng.gen::<f64>())
    }

    /// The distribution's mean: each linear piece's midpoint, weighted by its probability.
    pub fn mean(&self) -> f64 {
        let p = &self.points;
        let first = p[0].0 as f64 * p[0].1;
        first + p.windows(2).map(|w| (w[0].0 + w[1].0) as f64 / 2.0 * (w[1].1 - w[0].1)).sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_inverts_the_cdf_between_its_points() {
        let s = Sizes::Cdf(vec![(1000, 0.0), (1000, 0.5), (3000, 1.0)]).sampler();
        assert_eq!([s.at(0.0), s.at(0.3), s.at(0.5), s.at(0.75), s.at(1.0)], [1000, 1000, 1000, 2000, 3000]);
        assert_eq!(s.mean(), 0.5 * 1000.0 + 0.5 * 2000.0);
        assert_eq!(Sizes::Fixed(7).sampler().at(0.3), 7);
    }

    #[test]
    fn the_built_in_means_are_those_of_their_pieces() {
        // By hand, piece by piece (midpoint x probability), in 1460-byte packets: web
        // search 1,140.98 (1.67 MB; the studies quote "about 1.6 MB"), data mining
        // 5,116.6 (7.47 MB).
        let web = Sizes::Builtin("web-search".into()).sampler().mean() / 1460.0;
        let mining = Sizes::Builtin("data-mining".into()).sampler().mean() / 1460.0;
        assert!((web - 1140.98).abs() < 0.01, "{web}");
        assert!((mining - 5116.6).abs() < 0.01, "{mining}");
    }

    #[test]
    fn a_bad_cdf_is_named() {
        let problem = |points: Vec<(u64, f64)>| Sizes::Cdf(points).problem().unwrap_or_default();
        assert!(problem(vec![]).contains("empty"));
        assert!(problem(vec![(10, 0.5), (5, 1.0)]).contains("not decrease"));
        assert!(problem(vec![(10, 0.6), (20, 0.5), (30, 1.0)]).contains("not decrease"));
        assert!(problem(vec![(10, 0.5), (20, 0.9)]).contains("end at probability 1"));
        assert!(Sizes::Builtin("web".into()).problem().unwrap().contains("web-search, data-mining"));
        assert_eq!(Sizes::Builtin("data-mining".into()).problem(), None);
    }
}
