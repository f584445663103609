//! A group of arrivals in the summary: how many came and finished, and the median and
//! 99th percentile of FCT and slowdown (FCT over the transfer's alone on the empty path),
//! over all its connections and per size bucket, as the FCT studies report them.

use super::ConnMeasured;
use crate::config::Scenario;
use crate::tcp::config::Direction;
use serde::Serialize;

/// The size buckets: below 100 KB, to 1 MB, to 10 MB, above (bytes, upper bounds).
pub const BUCKETS: [(&str, u64); 4] =
    [("<100KB", 100_000), ("100KB-1MB", 1_000_000), ("1MB-10MB", 10_000_000), (">10MB", u64::MAX)];

#[derive(Clone, Debug, Serialize)]
pub struct ArrivalsSummary {
    pub id: u32,
    pub cca: String,
    pub direction: Direction,
    /// Connections that arrived, finished, and were still open at the end.
    pub arrived: u64,
    pub completed: u64,
    pub unfinished: u64,
    /// Payload of the arrived transfers over the run, a fraction of its direction's link.
    pub offered_load: f64,
    pub all: BucketSummary,
    /// Each non-empty size bucket.
    pub buckets: Vec<BucketSummary>,
}

/// FCT (ms) and slowdown of the finished connections in a bucket.
#[derive(Clone, Debug, Serialize)]
pub struct BucketSummary {
    pub bucket: &'static str,
    pub completed: u64,
    pub fct_p50_ms: f64,
    pub fct_p99_ms: f64,
    pub slowdown_p50: f64,
    pub slowdown_p99: f64,
}

/// Group `k`'s summary from every connection measured.
pub fn summary(s: &Scenario, k: usize, all: &[ConnMeasured]) -> ArrivalsSummary {
    let a = &s.arrivals[k];
    let mine: Vec<&ConnMeasured> = all.iter().filter(|c| c.group == k as u32).collect();
    let done: Vec<&ConnMeasured> = mine.iter().copied().filter(|c| c.fct_ns.is_some()).collect();
    let link_bps = match a.direction {
        Direction::Down => s.link.reference_rate_bps(),
        Direction::Up => s.link.reverse_link().map_or(0, |r| r.reference_rate_bps()),
    };
    let window_s = s.duration_ns as f64 / 1e9;
    let bytes: u64 = mine.iter().map(|c| c.size_bytes).sum();
    let mut lo = 0;
    let buckets = BUCKETS
        .iter()
        .filter_map(|&(name, hi)| {
            let within: Vec<&ConnMeasured> =
                done.iter().copied().filter(|c| c.size_bytes > lo && c.size_bytes <= hi).collect();
            lo = hi;
            (!within.is_empty()).then(|| bucket(name, &within))
        })
        .collect();
    ArrivalsSummary {
        id: k as u32,
        cca: a.cca.clone(),
        direction: a.direction,
        arrived: mine.len() as u64,
        completed: done.len() as u64,
        unfinished: (mine.len() - done.len()) as u64,
        offered_load: bytes as f64 * 8.0 / (link_bps as f64 * window_s),
        all: bucket("all", &done),
        buckets,
    }
}

fn bucket(name: &'static str, done: &[&ConnMeasured]) -> BucketSummary {
    let fct: Vec<f64> = done.iter().map(|c| c.fct_ns.unwrap_or(0) as f64 / 1e6).collect();
    let slowdown: Vec<f64> =
        (done.iter()).filter_map(|c| Some(c.fct_ns? as f64 / c.ideal_fct_ns.filter(|&t| t > 0)? as f64)).collect();
    BucketSummary {
        bucket: name,
        completed: done.len() as u64,
        fct_p50_ms: percentile(fct.clone(), 0.50),
        fct_p99_ms: percentile(fct, 0.99),
        slowdown_p50: percentile(slowdown.clone(), 0.50),
        slowdown_p99: percentile(slowdown, 0.99),
    }
}

/// The nearest-rank percentile `q` of `xs` (NaN when empty).
pub fn percentile(mut xs: Vec<f64>, q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let rank = (q * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        assert_eq!(percentile(xs.clone(), 0.5), 50.0);
        assert_eq!(percentile(xs.clone(), 0.99), 99.0);
        assert_eq!(percentile(vec![3.0], 0.99), 3.0);
        assert!(percentile(Vec::new(), 0.5).is_nan());
    }
}
