//! ccbench-sim: a packet-level discrete-event simulator of Linux TCP congestion control.
//!
//! Sans-IO: no clock, no OS randomness. A run is a pure function of its [`Scenario`]
//! (which carries the seed), so the same scenario gives byte-identical results.

pub mod cc;
pub mod config;
pub mod host;
pub mod net;
pub mod observe;
pub mod sim;
pub mod summary;
pub mod tcp;
pub mod time;
pub mod units;

pub use config::{ConfigError, Scenario};
pub use observe::series::Series;
pub use summary::Summary;

/// Everything a run produces.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub summary: Summary,
    pub series: Series,
    /// Hash of the processed event sequence, for determinism checks.
    pub trace_hash: u64,
}

/// Run a validated scenario to completion.
pub fn run(scenario: &Scenario) -> Result<RunOutput, ConfigError> {
    scenario.validate()?;
    Ok(sim::world::World::new(scenario)?.run())
}

/// Run a validated scenario, capturing packets to pcap files as `spec` says.
pub fn run_with_capture(scenario: &Scenario, spec: &observe::capture::CaptureSpec) -> Result<RunOutput, ConfigError> {
    scenario.validate()?;
    sim::world::World::new(scenario)?.with_capture(spec)?.run_captured()
}

/// Run while checking the simulator's invariants every `every` events (property tests).
pub fn run_audited(scenario: &Scenario, every: u64) -> Result<RunOutput, String> {
    scenario.validate().map_err(|e| e.to_string())?;
    sim::world::World::new(scenario).map_err(|e| e.to_string())?.run_audited(every)
}

/// Parse, validate and run a scenario given as JSON (the binding's entry point).
pub fn run_json(json: &str) -> Result<RunOutput, ConfigError> {
    run(&Scenario::from_json(json)?)
}

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
