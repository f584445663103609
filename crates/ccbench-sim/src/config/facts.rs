//! What the scenario's tables declare, handed on whole: to the front end's schema
//! (`schema_facts`: defaults, ranges, names) and to docs/input-ranges.md (`input_ranges`:
//! what every value allows). Neither lists a field of its own; each table's module does.

use super::aqm::Aqm;
use super::validate::describe;
use super::*;
use crate::base::range::Range;
use crate::host::config::{DEFAULT_CPU_SLICE_NS, DEFAULT_CPU_TICK_NS};
use crate::host::presets;
use serde_json::{json, Value};

/// Every scenario value's allowed range, as [`Scenario::validate`] and
/// [`Scenario::validate_link_models`] check it: (TOML field, what is allowed).
pub fn input_ranges() -> Vec<(String, String)> {
    use limits::*;
    let ranged = |table: &str, ranges: &'static [Range]| -> Vec<(String, String)> {
        ranges.iter().map(|r| (format!("{table}.{}", r.key()), describe(r))).collect()
    };
    let hz = "a divisor of 1000000 (a jiffy is a whole number of microseconds, the unit usecs_to_jiffies divides by), e.g. 100, 250, 1000";
    let mut rows: Vec<(String, String)> = vec![
        ("seed".into(), "0 to 2^64 - 1".into()),
        (
            "duration".into(),
            format!(
                "positive, at most 2^31 jiffies: {} at tcp.hz = 1000 (the kernel's jiffy comparisons wrap beyond)",
                fmt_ns(max_duration_ns(1000))
            ),
        ),
        ("interval".into(), format!("0 (no time series) or at least {}", fmt_ns(MIN_SAMPLE_INTERVAL_NS))),
    ];
    rows.extend(LinkConfig::allowed().into_iter().map(|(k, a)| (k.to_string(), a)));
    rows.extend(ranged("link.aqm_params", Aqm::RANGES));
    rows.push(("tcp.hz".into(), hz.into()));
    rows.extend(ranged("tcp", TcpConfig::RANGES));
    rows.extend([
        ("flows (in all)".into(), format!("1 to {MAX_FLOWS}")),
        (
            "flows[i].cca".into(),
            format!(
                "{}, or bpf:PATH (a BPF struct_ops object)",
                crate::cc::Algorithm::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
            ),
        ),
        ("flows[i].start".into(), "before the end of the run".into()),
        ("flows[i].access_delay".into(), format!("link.rtt + 2 x access_delay at most {}", fmt_ns(MAX_PATH_RTT_NS))),
        ("flows[i].size".into(), "positive (none: bulk)".into()),
        ("flows[i].rwnd".into(), format!("one MSS to {MAX_WINDOW_BYTES} bytes (65535 << 14, TCP's largest window)")),
    ]);
    rows.extend(ranged("flows[i]", FlowConfig::RANGES));
    rows.push(("flows[i].fixed_pacing_rate".into(), format!("1 bit/s to {}", fmt_bps(MAX_RATE_BPS))));
    rows.extend(super::host::allowed());
    rows
}

/// What the front end's schema takes from the simulator, so that each is written once:
/// `defaults`, what deserializing a table with only its required keys gives (`tcp`,
/// `flow`, `link`, `host`, whose `cpu` is the preset's name and `cpu_slice_ns` and
/// `cpu_tick_ns` what the front end resolves `cpu_share` with); `ranges`, the inclusive
/// bounds [`Scenario::validate`] checks integer values against with what they allow as
/// its errors word it, by dotted field (`tcp.mss`, `host.cost.per_ack_ns`); `aqms`, every
/// AQM's name and parameters; `cpu_costs`, every cost's `[host.cost]` key, field, unit,
/// description and example; `cpu_presets`, the named hosts' costs;
/// `cpu_preset_when_reserved`, the one a `[host]` that reserves a CPU share without naming
/// a preset takes; `limits`, the bounds the front end's parsers apply.
pub fn schema_facts() -> Value {
    let flow: FlowConfig = serde_json::from_value(json!({"cca": ""})).expect("only cca is required");
    let scenario: Scenario = serde_json::from_value(json!({
        "seed": 0, "duration_ns": 1, "link": {"rate_bps": 1, "rtt_ns": 1}, "flows": []}))
    .expect("seed, duration, link and flows are required");
    let mut host = serde_json::to_value(HostConfig::default()).expect("plain fields serialize");
    host["cpu"] = presets::DEFAULT.into();
    host["cpu_slice_ns"] = DEFAULT_CPU_SLICE_NS.into();
    host["cpu_tick_ns"] = DEFAULT_CPU_TICK_NS.into();
    host.as_object_mut().expect("a table").remove("cost");
    json!({
        "defaults": {
            "sample_interval_ns": scenario.sample_interval_ns,
            "tcp": TcpConfig::default(),
            "flow": flow,
            "link": LinkConfig::defaults(),
            "host": host,
        },
        "ranges": ranges(),
        "aqms": Aqm::all().iter().map(|a| json!({"name": a.name(), "params": a.params()})).collect::<Vec<_>>(),
        "cpu_costs": cpu_costs(),
        "cpu_presets": presets::NAMES.map(|n| json!({"name": n, "costs": presets::preset(n).expect("listed").cost})),
        "cpu_preset_when_reserved": presets::WHEN_RESERVED,
        "limits": {"max_bdp_multiple": limits::MAX_BDP_MULTIPLE},
    })
}

/// `{table.field: {lo, hi, allowed}}` of every declared range.
fn ranges() -> Value {
    let mut out = json!({});
    let tables: [(&str, &'static [Range]); 4] = [
        ("tcp", TcpConfig::RANGES),
        ("flows", FlowConfig::RANGES),
        ("host", HostConfig::RANGES),
        ("link.aqm_params", Aqm::RANGES),
    ];
    let costs = CpuCost::KEYS.iter().map(|c| ("host.cost", &c.range));
    let all = tables.iter().flat_map(|&(t, rs)| rs.iter().map(move |r| (t, r))).chain(costs);
    for (table, r) in all {
        out[format!("{table}.{}", r.field)] = json!({"lo": r.lo, "hi": r.hi, "allowed": describe(r)});
    }
    out
}

fn cpu_costs() -> Vec<Value> {
    use crate::base::range::Unit;
    CpuCost::KEYS
        .iter()
        .map(|c| {
            let unit = if c.range.unit == Unit::Picoseconds { "ps" } else { "ns" };
            json!({"key": c.key, "field": c.range.field, "unit": unit, "about": c.about, "example": c.example})
        })
        .collect()
}
