//! Random loss of packets arriving at the bottleneck: none, independent (Bernoulli), or
//! bursty (Gilbert-Elliott). Each model draws from its own random stream.
//!
//! Gilbert-Elliott, per packet, in the classical notation (also netem's `loss gemodel
//! p r 1-h 1-k`): a Good and a Bad state; a packet is lost with probability `1 - k` in
//! Good and `1 - h` in Bad, decided in the state the packet finds; then the chain moves
//! Good -> Bad with probability `p`, Bad -> Good with probability `r`. Stationary:
//! P(Bad) = p / (p + r), mean loss = (1 - k) r / (p + r) + (1 - h) p / (p + r). With the
//! defaults h = 0, k = 1 (Gilbert's model) every loss is in Bad and losses come in runs
//! of geometric length with mean 1 / r.

use crate::base::rng::Rng;
use rand::Rng as _;

/// Gilbert-Elliott parameters (probabilities in [0, 1]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Good -> Bad transition probability per packet.
    pub p: f64,
    /// Bad -> Good transition probability per packet.
    pub r: f64,
    /// Probability that a packet gets through in Bad.
    pub h: f64,
    /// Probability that a packet gets through in Good.
    pub k: f64,
}

impl GilbertElliott {
    /// Long-run fraction of time (packets) in Bad.
    pub fn bad_share(&self) -> f64 {
        self.p / (self.p + self.r)
    }

    /// Long-run loss probability.
    pub fn mean_loss(&self) -> f64 {
        let bad = self.bad_share();
        (1.0 - self.k) * (1.0 - bad) + (1.0 - self.h) * bad
    }

    /// Mean number of consecutive packets in Bad (a loss burst when h = 0, k = 1).
    pub fn mean_bad_run(&self) -> f64 {
        1.0 / self.r
    }
}

pub enum LossModel {
    None,
    Bernoulli { p: f64, rng: Rng },
    GilbertElliott { params: GilbertElliott, bad: bool, rng: Rng },
}

impl LossModel {
    /// Independent loss with probability `p` (none when 0).
    pub fn bernoulli(p: f64, rng: Rng) -> LossModel {
        if p > 0.0 {
            LossModel::Bernoulli { p, rng }
        } else {
            LossModel::None
        }
    }

    /// A Gilbert-Elliott chain starting in Good.
    pub fn gilbert_elliott(params: GilbertElliott, rng: Rng) -> LossModel {
        LossModel::GilbertElliott { params, bad: false, rng }
    }

    /// Whether the next packet is lost.
    #[inline]
    pub fn lose(&mut self) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli { p, rng } => rng.gen::<f64>() < *p,
            LossModel::GilbertElliott { params, bad, rng } => {
                let keep = if *bad { params.h } else { params.k };
                let lost = keep < 1.0 && (keep <= 0.0 || rng.gen::<f64>() >= keep);
                let leave = if *bad { params.r } else { params.p };
                if rng.gen::<f64>() < leave {
                    *bad = !*bad;
                }
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::rng::stream;

    #[test]
    fn gilbert_loss_rate_and_burst_length_match_the_closed_forms() {
        let ge = GilbertElliott { p: 0.01, r: 0.25, h: 0.0, k: 1.0 };
        let mut m = LossModel::gilbert_elliott(ge, stream(7, "loss-ge", 0));
        let n = 2_000_000;
        let (mut lost, mut bursts, mut prev) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = m.lose();
            lost += l as u64;
            bursts += (l && !prev) as u64;
            prev = l;
        }
        let rate = lost as f64 / n as f64;
        let expected = ge.mean_loss();
        assert!((expected - 0.01 / 0.26).abs() < 1e-12);
        assert!((rate - expected).abs() / expected < 0.03, "loss {rate} vs {expected}");
        let burst = lost as f64 / bursts as f64;
        assert!((burst - ge.mean_bad_run()).abs() / ge.mean_bad_run() < 0.03, "burst {burst} vs 4");
    }

    #[test]
    fn elliott_loses_in_both_states() {
        let ge = GilbertElliott { p: 0.05, r: 0.2, h: 0.5, k: 0.99 };
        let mut m = LossModel::gilbert_elliott(ge, stream(3, "loss-ge", 0));
        let n = 2_000_000;
        let lost = (0..n).filter(|_| m.lose()).count() as f64 / n as f64;
        // 0.01 x 0.8 + 0.5 x 0.2 = 0.108
        assert!((ge.mean_loss() - 0.108).abs() < 1e-12);
        assert!((lost - 0.108).abs() < 0.003, "{lost}");
    }
}
