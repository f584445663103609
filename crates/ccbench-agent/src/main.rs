//! `ccbench-agent serve [--control PATH]` | `ccbench-agent send CONFIG.json`; see the
//! library's documentation for the protocol.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ccbench_agent::config::SendConfig;
use ccbench_agent::control::Channel;
use ccbench_agent::{sender, serve};

const USAGE: &str = "ccbench-agent serve [--control PATH] | ccbench-agent send CONFIG.json | ccbench-agent --version";

/// Why the agent stopped: bad input (one `error:` line, exit 2) or a failed run (exit 1).
enum Failure {
    Input(String),
    Run(String),
}

impl From<String> for Failure {
    fn from(what: String) -> Failure {
        Failure::Run(what)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match args.as_slice() {
        ["serve"] => run_serve(None),
        ["serve", "--control", path] => run_serve(Some(Path::new(path).to_path_buf())),
        ["send", config] => run_send(Path::new(config)),
        ["--version"] => {
            println!("ccbench-agent {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        ["--help" | "-h"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(Failure::Input(format!("arguments: {USAGE}"))),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(what)) => {
            eprintln!("error: {what}");
            ExitCode::from(2)
        }
        Err(Failure::Run(what)) => {
            eprintln!("ccbench-agent: {what}");
            ExitCode::FAILURE
        }
    }
}

fn run_serve(control: Option<PathBuf>) -> Result<(), Failure> {
    let name = control.as_ref().map_or_else(|| "stdin/stdout".to_owned(), |p| p.display().to_string());
    let mut chan = Channel::open(control.as_deref()).map_err(|e| Failure::Input(format!("--control: {name}: {e}")))?;
    Ok(serve::serve(&mut chan).map_err(|e| format!("control channel {name}: {e}"))?)
}

/// The Python sender's protocol on stdin/stdout: `ready`, then `go T0`.
fn run_send(path: &Path) -> Result<(), Failure> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Failure::Input(format!("CONFIG.json: {}: {e}", path.display())))?;
    let cfg = SendConfig::from_json(&text).map_err(Failure::Input)?;
    let out = cfg.out.clone().ok_or_else(|| Failure::Input("out: the path of the result file".into()))?;
    let prepared = sender::prepare(&cfg)?;
    // The receiver tells of completed downloads on a datagram socket, bound before `ready`.
    let mut notices: Box<dyn sender::Notices> = match &cfg.done_path {
        Some(path) if cfg.flows.iter().any(|f| f.repeat > 1) => {
            Box::new(sender::DoneSocket::bind(path).map_err(|e| Failure::Run(format!("done_path: {path}: {e}")))?)
        }
        _ => Box::new(sender::NoNotices),
    };
    say("ready").map_err(|e| format!("stdout: {e}"))?;
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line).map_err(|e| format!("stdin: {e}"))?;
    if line.is_empty() {
        return Err(Failure::Run("sender: control channel closed".into()));
    }
    let t0 = parse_go(&line)?;
    let result = prepared.run(t0, notices.as_mut())?;
    Ok(write_atomically(Path::new(&out), &serde_json::to_vec(&result).map_err(|e| e.to_string())?)?)
}

fn say(word: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{word}")?;
    out.flush()
}

fn parse_go(line: &str) -> Result<i64, String> {
    match line.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["go", t0] => t0.parse().map_err(|_| format!("agent: expected 'go T0', got {line:?}")),
        _ => Err(format!("agent: expected 'go T0', got {line:?}")),
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}
