//! Every algorithm's parameter table through the one override mechanism: defaults lie
//! inside their ranges, both ends of each range are accepted, and a value outside it, of
//! the wrong kind, or under an unknown name is rejected with the allowed values.

use super::*;
use crate::base::rng;
use crate::cc::Algorithm;

fn one(name: &str, x: f64) -> BTreeMap<String, f64> {
    BTreeMap::from([(name.to_string(), x)])
}

/// The error for `name = x` on `alg`, as the scenario reports it.
fn error(alg: Algorithm, name: &str, x: f64) -> String {
    match alg.instance(&one(name, x), rng::stream(1, "cc", 0)) {
        Ok(_) => panic!("{} accepted {name} = {x}", alg.name()),
        Err(e) => e.to_string(),
    }
}

fn accepts(alg: Algorithm, overrides: &BTreeMap<String, f64>) -> bool {
    alg.instance(overrides, rng::stream(1, "cc", 0)).is_ok()
}

#[test]
fn every_default_lies_in_its_range_and_restates_itself() {
    for &alg in Algorithm::ALL {
        let defaults = alg.instance(&BTreeMap::new(), rng::stream(1, "cc", 0)).unwrap().params();
        for d in alg.parameters() {
            assert!(
                d.min <= d.default && d.default <= d.max,
                "{}.{}: {} outside [{}, {}]",
                alg.name(),
                d.name,
                d.default,
                d.min,
                d.max
            );
            // Overriding a parameter with its own default changes nothing recorded.
            let restated = alg.instance(&one(d.name, d.default), rng::stream(1, "cc", 0)).unwrap().params();
            assert_eq!(restated, defaults, "{}.{}", alg.name(), d.name);
        }
    }
}

#[test]
fn both_ends_of_every_range_are_accepted_and_beyond_them_rejected() {
    for &alg in Algorithm::ALL {
        for d in alg.parameters() {
            assert!(accepts(alg, &one(d.name, d.min)), "{}.{} = {}", alg.name(), d.name, d.min);
            assert!(accepts(alg, &one(d.name, d.max)), "{}.{} = {}", alg.name(), d.name, d.max);
            let step = match d.kind {
                Kind::Gain => MIN_GAIN,
                Kind::Flag | Kind::Integer => 1.0,
            };
            for x in [d.min - step, d.max + step, f64::NAN, f64::INFINITY] {
                let e = error(alg, d.name, x);
                assert!(e.starts_with(&format!("{}: ", d.name)), "{e}");
                let range = format!("[{}, {}]", d.min, d.max);
                assert!(e.contains(&range) || (d.kind == Kind::Flag && e.contains("0 or 1")), "{}: {e}", alg.name());
            }
        }
    }
}

#[test]
fn whole_numbers_and_flags_reject_fractions() {
    for &alg in Algorithm::ALL {
        for d in alg.parameters().iter().filter(|d| d.kind != Kind::Gain) {
            let e = error(alg, d.name, d.min + 0.5);
            let want = match d.kind {
                Kind::Flag => format!("{}: is a flag: must be 0 or 1, got {}", d.name, d.min + 0.5),
                _ => format!("{}: must be a whole number in [{}, {}], got {}", d.name, d.min, d.max, d.min + 0.5),
            };
            assert_eq!(e, want);
        }
    }
}

#[test]
fn unknown_names_are_rejected_listing_every_allowed_name() {
    for &alg in Algorithm::ALL {
        let e = error(alg, "cwnd_gian", 2.0);
        let names: Vec<&str> = alg.parameters().iter().map(|d| d.name).collect();
        if names.is_empty() {
            assert_eq!(e, format!("cwnd_gian: {} takes no parameters", alg.name()));
        } else {
            assert_eq!(e, format!("cwnd_gian: not a parameter of {}; allowed: {}", alg.name(), names.join(", ")));
        }
    }
}

#[test]
fn errors_read_as_the_scenario_reports_them() {
    assert_eq!(error(Algorithm::Bbr, "high_gain", 12.0), "high_gain: must be in [0.00390625, 3.99609375], got 12");
    assert_eq!(error(Algorithm::Bbr, "cycle_rand", 8.0), "cycle_rand: must be in [1, 7], got 8");
    assert_eq!(error(Algorithm::Bbr, "full_bw_cnt", 0.0), "full_bw_cnt: must be in [1, 3], got 0");
    assert_eq!(error(Algorithm::Bbr3, "beta", 1.0), "beta: must be in [0, 0.99609375], got 1");
    assert_eq!(error(Algorithm::Cubic, "beta", 0.5), "beta: must be a whole number in [1, 1023], got 0.5");
    assert_eq!(error(Algorithm::Cubic, "hystart", 2.0), "hystart: is a flag: must be 0 or 1, got 2");
    assert_eq!(error(Algorithm::Reno, "beta", 0.5), "beta: reno takes no parameters");
}

#[test]
fn nothing_is_clamped() {
    // Values the algorithms used to clamp silently are now errors, and a value in range
    // arrives unchanged (gains rounded to the nearest 1/256, as the kernel's constants).
    for (alg, name, x) in [
        (Algorithm::Bbr, "cycle_rand", 0.0),
        (Algorithm::Bbr, "bw_rtts", 0.0),
        (Algorithm::Bbr, "lt_sampling", 2.0),
        (Algorithm::Bbr, "inflight_deficit", 5.0),
        (Algorithm::Bbr3, "cwnd_min_target", 0.0),
        (Algorithm::Bbr3, "min_rtt_win_sec", 0.0),
        (Algorithm::Bbr2, "extra_acked_win_rtts", 0.0),
        (Algorithm::Bbr2, "full_bw_cnt", 0.0),
    ] {
        error(alg, name, x);
    }
    let p = crate::cc::bbr::BbrParams::from_overrides(&BTreeMap::from([
        ("cycle_rand".to_string(), 3.0),
        ("cwnd_gain".to_string(), 2.5),
    ]))
    .unwrap();
    assert_eq!((p.cycle_rand, p.cwnd_gain), (3, 640));
    let p = crate::cc::cubic::CubicParams::from_overrides(&one("fast_convergence", 0.0)).unwrap();
    assert!(!p.fast_convergence);
}

#[test]
fn the_description_lists_every_algorithm() {
    let all = crate::cc::parameters();
    let mut names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
    names.sort_unstable();
    assert_eq!(all.keys().copied().collect::<Vec<_>>(), names);
    for first in ["reno", "cubic", "bbr", "bbr2", "bbr3"] {
        assert!(all.contains_key(first), "{first}");
    }
    let bbr3 = &all["bbr3"];
    let pacing = bbr3.iter().find(|d| d.name == "startup_pacing_gain").unwrap();
    assert_eq!((pacing.default, pacing.kernel), (710.0 / 256.0, "google/bbr v3 tcp_bbr.c: bbr_startup_pacing_gain"));
    let v2 = all["bbr2"].iter().find(|d| d.name == "startup_pacing_gain").unwrap();
    assert_eq!(v2.default, 739.0 / 256.0);
    let json = serde_json::to_value(&all).unwrap();
    assert_eq!(json["cubic"][0]["name"], "beta");
    assert_eq!(json["cubic"][0]["kind"], "integer");
    assert_eq!(json["cubic"][0]["default"], 717.0);
}
