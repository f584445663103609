//! A log-linear histogram (HDR-style) for RTT, sojourn-time and queue-length samples.
//! Memory is bounded whatever the run length (its buckets grow only up to the largest
//! value recorded, at most 58 KB); relative error below 1/128.

const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
const GROUPS: usize = 64 - SUB_BITS as usize + 1;

#[derive(Clone, Debug)]
pub struct Histogram {
    /// Counts of the buckets up to the largest recorded (none before the first sample:
    /// a connection that lives a few RTTs costs no more than what it records).
    counts: Vec<u64>,
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: Vec::new(), n: 0, sum: 0, min: u64::MAX, max: 0 }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let group = (msb - SUB_BITS + 1) as usize;
    let sub = (v >> (msb - SUB_BITS)) as usize & (SUB - 1);
    group * SUB + sub
}

/// Midpoint of a bucket's value range.
fn value_of(bucket: usize) -> u64 {
    let (group, sub) = (bucket / SUB, (bucket % SUB) as u64);
    if group == 0 {
        return sub;
    }
    let shift = group as u32 - 1;
    let lo = (sub | SUB as u64) << shift;
    lo + ((1u64 << shift) >> 1)
}

impl Histogram {
    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.n += other.n;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = bucket_of(v);
        if b >= self.counts.len() {
            self.grow(b);
        }
        self.counts[b] += 1;
        self.n += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
    /// Room up to bucket `b` (and some beyond, so that a slowly rising maximum does not
    /// grow it sample by sample).
    #[cold]
    fn grow(&mut self, b: usize) {
        let to = (b + SUB).min(GROUPS * SUB);
        self.counts.resize(to.max(b + 1), 0);
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    pub fn min(&self) -> u64 {
        if self.n == 0 {
            0
        } else {
            self.min
        }
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    /// The value at quantile `q` in [0, 1], clamped to the observed min and max.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return value_of(b).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_relative_error() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for q in [0.5, 0.95, 0.99] {
            let exact = (q * 100_000.0) * 1000.0;
            let got = h.quantile(q) as f64;
            assert!((got - exact).abs() / exact < 0.01, "q={q} got={got} exact={exact}");
        }
        assert_eq!(h.min(), 1000);
        assert_eq!(h.max(), 100_000_000);
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::default();
        for v in [0, 1, 5, 127] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.0), 0);
        assert_eq!(h.quantile(1.0), 127);
    }
}
