//! ccbench-sim: a packet-level discrete-event simulator of Linux TCP congestion control.
//!
//! Sans-IO: no clock, no OS randomness. A run is a pure function of its [`Scenario`]
//! (which carries the seed), so the same scenario gives byte-identical results.
//!
//! Layers, from the bottom; each uses only those below it:
//! `time`, `units` -> `base` (random streams, histograms, min/max filters) -> `event` (the
//! queue and timers) -> `net` (packets, pipes, the bottleneck) -> `cc` (the algorithms) ->
//! `tcp`, `udp`, `arrivals` (the endpoints and their traffic) -> `host` (the sender's CPU) -> `config` (the scenario, its checks,
//! and what it builds) -> `observe` (series, captures) -> `summary` -> `meter` (the link's
//! samples and totals, for the simulator and the emulator) -> `world` (the assembly and
//! its run loop).

pub mod arrivals;
pub mod base;
pub mod cc;
pub mod config;
pub mod event;
pub mod host;
pub mod meter;
pub mod net;
pub mod observe;
pub mod summary;
pub mod tcp;
pub mod time;
pub mod udp;
pub mod units;
pub mod world;

pub use config::{ConfigError, Scenario};
pub use observe::series::Series;
pub use summary::{Summary, VERSION};
pub use world::RunOutput;

/// Run a validated scenario to completion.
pub fn run(scenario: &Scenario) -> Result<RunOutput, ConfigError> {
    scenario.validate()?;
    Ok(world::World::new(scenario)?.run())
}

/// Run a validated scenario, capturing packets as `spec` says, each point's pcap to the
/// sink `open` gives for it.
pub fn run_with_capture(
    scenario: &Scenario,
    spec: &observe::capture::CaptureSpec,
    open: impl FnMut(observe::capture::Point) -> Result<observe::capture::Sink, ConfigError>,
) -> Result<RunOutput, ConfigError> {
    scenario.validate()?;
    world::World::new(scenario)?.with_capture(spec, open)?.run_captured()
}

/// Run while checking the simulator's invariants every `every` events (property tests).
pub fn run_audited(scenario: &Scenario, every: u64) -> Result<RunOutput, String> {
    scenario.validate().map_err(|e| e.to_string())?;
    world::World::new(scenario).map_err(|e| e.to_string())?.run_audited(every)
}

/// Parse, validate and run a scenario given as JSON (the binding's entry point).
pub fn run_json(json: &str) -> Result<RunOutput, ConfigError> {
    run(&Scenario::from_json(json)?)
}

/// The FCT of a transfer of `size` bytes of arrivals group `group` alone on the
/// scenario's empty path (the slowdown's denominator; other engines take it from here).
pub fn alone_fct_ns(scenario: &Scenario, group: usize, size: u64) -> Option<u64> {
    world::alone_fct_ns(scenario, &scenario.arrivals[group], size)
}

/// The FCT alone of each `(group, size)` transfer of the scenario's arrivals, as the
/// simulator's own summary takes it (`ConnMeasured::ideal_fct_ns`): simulated once per
/// distinct size.
pub fn alone_fcts(scenario: &Scenario, transfers: &[(usize, u64)]) -> Vec<Option<u64>> {
    world::alone_fcts(scenario, transfers)
}

/// Every connection of arrivals group `group` that the simulator opens: (instant in ns
/// from the run's start, transfer size in bytes), drawn from the scenario's seed.
pub fn arrival_schedule(scenario: &Scenario, group: usize) -> Vec<(u64, u64)> {
    let a = &scenario.arrivals[group];
    let end = time::Time(scenario.duration_ns);
    let process = arrivals::ArrivalProcess::new(a, scenario.arrival_rate(group), scenario.seed, group as u64, end);
    process.schedule(time::Time(a.start_ns))
}

/// The send instants of UDP flow `k` before the run's end, as its simulated source sends.
pub fn udp_schedule(scenario: &Scenario, k: usize) -> Vec<udp::SendRun> {
    udp::send_runs(&scenario.udp[k], scenario.seed, k as u64, time::Time(scenario.duration_ns))
}
