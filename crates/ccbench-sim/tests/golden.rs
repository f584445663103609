//! Golden outputs of the crate itself: each resolved scenario in `tests/golden/*.json`
//! (written by the front end's `python tests/golden.py --update`) must give the stored
//! summary, time series and event-trace hash, bit for bit. A refactor that moves any of
//! them changes behaviour. After an intended change, rewrite the expectations with
//! `CCBENCH_UPDATE_GOLDEN=1 cargo test --release --test golden` and say why.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ccbench_sim::observe::series::{Table, Values};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

/// FNV-1a over a byte stream.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn table_hash(t: &Table) -> String {
    let mut h = Fnv::new();
    for (name, values) in &t.columns {
        h.write(name.as_bytes());
        match values {
            Values::F64(v) => v.iter().for_each(|x| h.write(&x.to_bits().to_le_bytes())),
            Values::U32(v) => v.iter().for_each(|x| h.write(&x.to_le_bytes())),
            Values::Str(v) => v.iter().for_each(|x| h.write(x.as_bytes())),
        }
    }
    format!("{:016x}", h.0)
}

fn fingerprint(json: &str) -> BTreeMap<String, String> {
    let out = ccbench_sim::run_json(json).expect("golden scenario runs");
    let mut summary = Fnv::new();
    summary.write(serde_json::to_string(&out.summary).unwrap().as_bytes());
    BTreeMap::from([
        ("summary".to_string(), format!("{:016x}", summary.0)),
        ("flows".to_string(), table_hash(&out.series.flows)),
        ("link".to_string(), table_hash(&out.series.link)),
        ("states".to_string(), table_hash(&out.series.states)),
        ("trace".to_string(), format!("{:016x}", out.trace_hash)),
    ])
}

#[test]
fn golden_scenarios_give_the_stored_outputs() {
    let dir = golden_dir();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/golden exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.file_stem().is_some_and(|s| s != "expected"))
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no golden scenarios in {}", dir.display());
    let actual: BTreeMap<String, BTreeMap<String, String>> = inputs
        .iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, fingerprint(&std::fs::read_to_string(p).unwrap()))
        })
        .collect();
    let expected_path = dir.join("expected.json");
    if std::env::var_os("CCBENCH_UPDATE_GOLDEN").is_some() {
        std::fs::write(&expected_path, serde_json::to_string_pretty(&actual).unwrap() + "\n").unwrap();
        return;
    }
    let expected: BTreeMap<String, BTreeMap<String, String>> =
        serde_json::from_str(&std::fs::read_to_string(&expected_path).expect("expected.json exists")).unwrap();
    let moved: Vec<&String> = actual.keys().filter(|k| expected.get(*k) != actual.get(*k)).collect();
    assert_eq!(expected.keys().collect::<Vec<_>>(), actual.keys().collect::<Vec<_>>(), "golden case names");
    assert!(moved.is_empty(), "outputs moved for: {moved:?}");
}
