//! `ccbench._core`: the Python binding of the ccbench simulator.
//!
//! The Python package parses human-unit TOML scenarios and hands the resolved scenario
//! over as JSON (`ccbench_sim::config::Scenario`). Results come back as a summary JSON
//! string plus two column tables (`{column: list}`) that the package turns into pandas
//! DataFrames.

mod scripted;

use ccbench_sim::observe::capture::{write_error, Point, Sink};
use ccbench_sim::observe::series::{Table, Values};
use ccbench_sim::ConfigError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// With `ccbench --debug`, a panic prints its message and a backtrace as Rust's default
/// hook would; otherwise it is silent and reaches the user as one `error:` line.
static DEBUG: AtomicBool = AtomicBool::new(false);
/// Where and why the last panic happened, for the one-line message.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_string());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(format!("{message}{at}"));
        }
        if DEBUG.load(Ordering::Relaxed) {
            eprintln!("simulator panicked: {message}{at}\n{}", std::backtrace::Backtrace::force_capture());
        }
    }));
}

/// Run `work`, turning a panic into `ccbench.errors.InternalError` (exit status 1 from
/// the command line) instead of unwinding into Python.
fn guarded<T>(py: Python<'_>, work: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
        // A BPF program's run-time fault is the scenario's doing, not the simulator's.
        if let Some(f) = payload.downcast_ref::<ccbench_sim::cc::bpf::Fault>() {
            LAST_PANIC.lock().ok().map(|mut l| l.take());
            return scenario_error(py, ConfigError { field: f.field.clone(), message: f.message.clone() });
        }
        let what = LAST_PANIC.lock().ok().and_then(|mut l| l.take()).unwrap_or_else(|| "panic".to_string());
        match py
            .import("ccbench.errors")
            .and_then(|m| m.getattr("InternalError"))
            .and_then(|cls| cls.call1(("simulator", what)))
        {
            Ok(exc) => PyErr::from_value(exc),
            Err(import_failure) => import_failure,
        }
    })
}

/// The single mapping of core errors to Python: a `ConfigError` becomes
/// `ccbench.errors.ScenarioError(field, message)` (a `ValueError` subclass, also exported
/// as `ccbench._core.ScenarioError`).
fn scenario_error(py: Python<'_>, e: ConfigError) -> PyErr {
    match scenario_error_type(py).and_then(|cls| cls.call1((e.field, e.message))) {
        Ok(exc) => PyErr::from_value(exc),
        Err(import_failure) => import_failure,
    }
}

fn scenario_error_type(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("ccbench.errors")?.getattr("ScenarioError")
}

fn table_to_dict<'py>(py: Python<'py>, table: &Table) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, values) in &table.columns {
        let column = match values {
            Values::F64(v) => PyList::new(py, v)?,
            Values::U32(v) => PyList::new(py, v)?,
            Values::Str(v) => PyList::new(py, v)?,
        };
        dict.set_item(name, column)?;
    }
    Ok(dict)
}

/// A run as Python gets it: the summary JSON, then the flows, link and states tables.
type RunOutput<'py> = (String, Bound<'py, PyDict>, Bound<'py, PyDict>, Bound<'py, PyDict>, Bound<'py, PyDict>);

/// Run a scenario given as JSON. Returns (summary JSON, flows table, link table, states
/// table, connections table: the arrivals' connections, empty without any).
/// With `capture_json` (`ccbench_sim::observe::capture::CaptureSpec`), also write pcap
/// files of the chosen flows at the chosen points.
#[pyfunction]
#[pyo3(signature = (scenario_json, capture_json=None))]
fn run<'py>(py: Python<'py>, scenario_json: String, capture_json: Option<String>) -> PyResult<RunOutput<'py>> {
    // The GIL is released while the simulator runs; a panic is caught once it is back.
    let output = guarded(py, || {
        py.detach(move || match capture_json {
            None => ccbench_sim::run_json(&scenario_json),
            Some(c) => {
                let scenario = ccbench_sim::Scenario::from_json(&scenario_json)?;
                let spec: ccbench_sim::observe::capture::CaptureSpec = serde_json::from_str(&c)
                    .map_err(|e| ConfigError { field: "capture".into(), message: e.to_string() })?;
                let files = pcap_files(spec.dir.clone());
                ccbench_sim::run_with_capture(&scenario, &spec, files)
            }
        })
    })?
    .map_err(|e| scenario_error(py, e))?;
    let summary = serde_json::to_string(&output.summary)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("summary serialisation: {e}")))?;
    let flows = table_to_dict(py, &output.series.flows)?;
    let link = table_to_dict(py, &output.series.link)?;
    let states = table_to_dict(py, &output.series.states)?;
    let connections = table_to_dict(py, &output.series.connections)?;
    Ok((summary, flows, link, states, connections))
}

/// Where a capture's points go: `DIR/capture-<point>.pcap`, the directory made first.
fn pcap_files(dir: PathBuf) -> impl FnMut(Point) -> Result<Sink, ConfigError> {
    let mut made = false;
    move |point| {
        if !made {
            std::fs::create_dir_all(&dir).map_err(|e| write_error(&dir, e))?;
            made = true;
        }
        let path = point.file_in(&dir);
        let file = std::fs::File::create(&path).map_err(|e| write_error(&path, e))?;
        Ok(Box::new(std::io::BufWriter::with_capacity(1 << 20, file)))
    }
}

/// The FCT (ns) of each `(group, size)` transfer of the scenario's arrivals alone on its
/// empty path, as the simulator's own summary takes it (None if it would not complete);
/// GIL released.
#[pyfunction]
fn alone_fcts(py: Python<'_>, scenario_json: String, transfers: Vec<(usize, u64)>) -> PyResult<Vec<Option<u64>>> {
    let scenario = parsed(py, &scenario_json)?;
    if let Some(&(g, _)) = transfers.iter().find(|&&(g, _)| g >= scenario.arrivals.len()) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("no group {g} of arrivals")));
    }
    guarded(py, || py.detach(|| ccbench_sim::alone_fcts(&scenario, &transfers)))
}

/// Every connection of arrivals group `group` as the simulator opens them: `(instant ns
/// from the run's start, size in bytes)`, from the scenario's seed (engines that open real
/// connections follow it).
#[pyfunction]
fn arrival_schedule(py: Python<'_>, scenario_json: String, group: usize) -> PyResult<Vec<(u64, u64)>> {
    let scenario = parsed(py, &scenario_json)?;
    if group >= scenario.arrivals.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("no group {group} of arrivals")));
    }
    guarded(py, || ccbench_sim::arrival_schedule(&scenario, group))
}

/// The send instants of UDP flow `k` as the simulator's source sends them, as runs
/// `(first ns from the run's start, gap ns, count)` of evenly spaced instants.
#[pyfunction]
fn udp_schedule(py: Python<'_>, scenario_json: String, k: usize) -> PyResult<Vec<(u64, u64, u64)>> {
    let scenario = parsed(py, &scenario_json)?;
    if k >= scenario.udp.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("no UDP flow {k}")));
    }
    let runs = guarded(py, || ccbench_sim::udp_schedule(&scenario, k))?;
    Ok(runs.iter().map(|r| (r.first_ns, r.gap_ns, r.count)).collect())
}

/// A scenario given as JSON, parsed and validated (a `ScenarioError` if it is not valid).
fn parsed(py: Python<'_>, scenario_json: &str) -> PyResult<ccbench_sim::Scenario> {
    guarded(py, || ccbench_sim::Scenario::from_json(scenario_json))?.map_err(|e| scenario_error(py, e))
}

/// Parse and validate a scenario given as JSON without running it.
#[pyfunction]
fn validate(py: Python<'_>, scenario_json: String) -> PyResult<()> {
    guarded(py, || ccbench_sim::Scenario::from_json(&scenario_json))?.map(|_| ()).map_err(|e| scenario_error(py, e))
}

/// What running a scenario (JSON) will cost: `ccbench_sim::config::Estimate` as JSON.
#[pyfunction]
fn estimate(py: Python<'_>, scenario_json: String) -> PyResult<String> {
    let scenario =
        guarded(py, || ccbench_sim::Scenario::from_json(&scenario_json))?.map_err(|e| scenario_error(py, e))?;
    serde_json::to_string(&scenario.estimate()).map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// The simulator's input ranges: [(field, allowed)], as `ccbench_sim::config::input_ranges`.
#[pyfunction]
fn input_ranges() -> Vec<(String, String)> {
    ccbench_sim::config::input_ranges()
}

/// The summary of a run of a scenario (JSON) from what an engine measured (JSON of
/// `ccbench_sim::summary::Measured`), built as the simulator builds its own, as JSON.
#[pyfunction]
fn summarize(scenario_json: String, measured_json: String) -> PyResult<String> {
    let bad = |what: &str, e: serde_json::Error| pyo3::exceptions::PyValueError::new_err(format!("{what}: {e}"));
    let scenario: ccbench_sim::Scenario = serde_json::from_str(&scenario_json).map_err(|e| bad("scenario", e))?;
    let measured: ccbench_sim::summary::Measured =
        serde_json::from_str(&measured_json).map_err(|e| bad("measured", e))?;
    if measured.flows.len() != scenario.flows.len() {
        return Err(pyo3::exceptions::PyValueError::new_err("measured: one entry per scenario flow"));
    }
    let summary = ccbench_sim::Summary::build(&scenario, measured);
    serde_json::to_string(&summary).map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// The time-series tables' columns as the simulator writes them, by table: `flows` (the
/// algorithms' internals, `cc_<name>`, follow these) and `link`. Another engine's tables
/// take their names from here.
#[pyfunction]
fn series_columns() -> BTreeMap<&'static str, Vec<&'static str>> {
    use ccbench_sim::observe::recorder::{column_names, FLOW_COLUMNS, LINK_COLUMNS};
    BTreeMap::from([("flows", column_names(&FLOW_COLUMNS)), ("link", column_names(&LINK_COLUMNS))])
}

/// The defaults, integer ranges and names (AQMs, CPU costs, CPU presets) the front
/// end's schema takes from the simulator (`ccbench_sim::config::schema_facts`), as JSON.
#[pyfunction]
fn schema_facts() -> String {
    ccbench_sim::config::schema_facts().to_string()
}

/// Print panics with a backtrace (`ccbench --debug`) or keep them silent.
#[pyfunction]
fn set_debug(on: bool) {
    DEBUG.store(on, Ordering::Relaxed);
}

/// Run the real-time link emulator (the kernel engine's bottleneck) until it is told
/// to quit on `control_fd`; see `ccbench_emu::realtime` for the line protocol on
/// `control_fd` and `out_fd`. Blocks with the GIL released. Needs root (TUN devices).
#[pyfunction]
#[pyo3(signature = (config_json, control_fd=0, out_fd=1))]
fn emulate(py: Python<'_>, config_json: String, control_fd: i32, out_fd: i32) -> PyResult<()> {
    py.detach(move || ccbench_emu::serve(&config_json, control_fd, out_fd))
        .map_err(pyo3::exceptions::PyRuntimeError::new_err)
}

/// Version of the simulator crate.
#[pyfunction]
fn version() -> &'static str {
    ccbench_sim::VERSION
}

/// Names of the congestion-control algorithms the simulator implements.
#[pyfunction]
fn algorithms() -> Vec<&'static str> {
    ccbench_sim::cc::Algorithm::ALL.iter().map(|a| a.name()).collect()
}

/// Every algorithm's overridable parameters as JSON: {algorithm: [{name, kind, default,
/// min, max, kernel, meaning}, ...]} (see `ccbench_sim::cc::params`).
#[pyfunction]
fn parameters() -> PyResult<String> {
    serde_json::to_string(&ccbench_sim::cc::parameters())
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// What a BPF object holds, as JSON: its struct_ops maps, settable globals, kfuncs,
/// helpers and kconfig values. A refusal is a `ScenarioError` on `cca`.
#[pyfunction]
#[pyo3(signature = (path, hz=1000))]
fn bpf_object(py: Python<'_>, path: String, hz: u32) -> PyResult<String> {
    ccbench_sim::cc::bpf::describe(&path, hz).map(|v| v.to_string()).map_err(|r| bpf_refusal(py, r))
}

/// Write a copy of a BPF object for a kernel loader: its struct_ops maps renamed
/// (`names_json`: {map symbol: new name}) and `params_json` ({global: value}) set.
#[pyfunction]
fn bpf_prepare(py: Python<'_>, path: String, out: String, names_json: String, params_json: String) -> PyResult<()> {
    let bad = |e: serde_json::Error| pyo3::exceptions::PyValueError::new_err(e.to_string());
    let names = serde_json::from_str(&names_json).map_err(bad)?;
    let params = serde_json::from_str(&params_json).map_err(bad)?;
    ccbench_sim::cc::bpf::prepare(&path, &out, &names, &params).map_err(|r| bpf_refusal(py, r))
}

fn bpf_refusal(py: Python<'_>, r: ccbench_sim::cc::bpf::Refusal) -> PyErr {
    let field = r.param.map_or_else(|| "cca".to_string(), |p| format!("params.{p}"));
    scenario_error(py, ConfigError { field, message: r.message })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(alone_fcts, m)?)?;
    m.add_function(wrap_pyfunction!(arrival_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(udp_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(input_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(schema_facts, m)?)?;
    m.add_function(wrap_pyfunction!(summarize, m)?)?;
    m.add_function(wrap_pyfunction!(series_columns, m)?)?;
    m.add_function(wrap_pyfunction!(set_debug, m)?)?;
    install_panic_hook();
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(emulate, m)?)?;
    m.add_function(wrap_pyfunction!(parameters, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_object, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_prepare, m)?)?;
    m.add_class::<scripted::ScriptedSender>()?;
    m.add("ScenarioError", scenario_error_type(m.py())?)?;
    Ok(())
}
