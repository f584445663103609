//! The control protocol's messages: one JSON object per line, both ways (see the crate
//! documentation for the conversation).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::sender::{Done, SenderResult};

/// Version of the line protocol, reported by `info`; raised on any incompatible change.
pub const PROTOCOL_VERSION: u32 = 3;

/// A command from the host.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "cmd", rename_all = "lowercase")]
pub enum Command {
    /// Kernel release, available congestion controls, CPUs, agent version.
    Info,
    /// Set sysctls in the guest, as `{"net.ipv4.tcp_wmem": "4096 16384 4194304"}`.
    Sysctl { set: Map<String, Value> },
    /// Route `dst` (a /32, via the default gateway) with an initial window, a minimum
    /// RTO and the ECN feature, as the kernel engine's sender routes carry them.
    Route {
        dst: String,
        #[serde(default)]
        initcwnd: Option<u32>,
        #[serde(default)]
        rto_min_ms: Option<u32>,
        #[serde(default)]
        ecn: bool,
    },
    /// Connect the flows of a sender configuration (the Python sender's, without `out`).
    Send { config: Value },
    /// Start the prepared run now: the agent's monotonic clock at this line is t0.
    Go,
    /// During a run: the receiver has all of download `download` of flow `flow`, at
    /// `at_ns` after t0 (the host's epoch); that flow's next download starts its pause
    /// later. No reply.
    Done(Done),
    /// End the agent.
    Quit,
}

impl Command {
    /// One line (without its end) into a command; the error says what was wrong.
    pub fn parse(line: &str) -> Result<Command, String> {
        serde_json::from_str(line).map_err(|e| format!("command: {e}"))
    }
}

/// What `info` reports about the guest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Info {
    /// `uname -r`
    pub kernel: String,
    /// `/proc/sys/net/ipv4/tcp_available_congestion_control`, split into names.
    pub available_congestion_control: Vec<String>,
    /// Online CPUs.
    pub cpus: u32,
    pub version: &'static str,
    pub protocol: u32,
    /// Whether this binary is statically linked (needs no dynamic loader).
    #[serde(rename = "static")]
    pub is_static: bool,
}

/// A reply to the host.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Info(Info),
    /// A command done (`sysctl`, `quit`).
    Ok,
    /// The flows are connected; waiting for `go`.
    Ready,
    Result(Box<SenderResult>),
    Error(String),
}

impl Serialize for Reply {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            Reply::Info(info) => map.serialize_entry("info", info)?,
            Reply::Ok => map.serialize_entry("ok", &true)?,
            Reply::Ready => map.serialize_entry("ready", &true)?,
            Reply::Result(result) => map.serialize_entry("result", result)?,
            Reply::Error(what) => map.serialize_entry("error", what)?,
        }
        map.end()
    }
}

impl Reply {
    /// The reply as one line, newline included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("replies always serialize");
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_command() {
        assert_eq!(Command::parse(r#"{"cmd": "info"}"#), Ok(Command::Info));
        assert_eq!(Command::parse(r#"{"cmd":"go"}"#), Ok(Command::Go));
        assert_eq!(Command::parse(r#" {"cmd": "quit"} "#), Ok(Command::Quit));
        let Ok(Command::Sysctl { set }) = Command::parse(r#"{"cmd": "sysctl", "set": {"net.ipv4.tcp_ecn": 1}}"#) else {
            panic!("sysctl")
        };
        assert_eq!(set["net.ipv4.tcp_ecn"], 1);
        let Ok(Command::Send { config }) = Command::parse(r#"{"cmd": "send", "config": {"flows": []}}"#) else {
            panic!("send")
        };
        assert!(config["flows"].is_array());
        assert_eq!(
            Command::parse(r#"{"cmd": "route", "dst": "10.0.0.2", "initcwnd": 20}"#),
            Ok(Command::Route { dst: "10.0.0.2".into(), initcwnd: Some(20), rto_min_ms: None, ecn: false })
        );
        assert_eq!(
            Command::parse(r#"{"cmd": "done", "flow": 1, "download": 2, "at_ns": 300}"#),
            Ok(Command::Done(Done { flow: 1, download: 2, at_ns: 300 }))
        );
    }

    #[test]
    fn refuses_what_is_not_a_command() {
        let err = |line: &str| Command::parse(line).unwrap_err();
        assert!(
            err(r#"{"cmd": "reboot"}"#).starts_with("command: unknown variant `reboot`"),
            "{}",
            err(r#"{"cmd": "reboot"}"#)
        );
        assert!(err(r#"{"cmd": "send"}"#).contains("missing field `config`"));
        assert!(err(r#"{"command": "info"}"#).contains("missing field `cmd`"));
        assert!(err("go").starts_with("command: "));
        assert!(err("").starts_with("command: "));
    }

    #[test]
    fn replies_are_single_json_lines() {
        assert_eq!(Reply::Ready.to_line(), "{\"ready\":true}\n");
        assert_eq!(Reply::Ok.to_line(), "{\"ok\":true}\n");
        assert_eq!(Reply::Error("a\nb".into()).to_line(), "{\"error\":\"a\\nb\"}\n");
        let result = SenderResult {
            samples: vec![],
            final_samples: vec![],
            done_ns: vec![None, Some(5)],
            end_ns: 7,
            tcp_ext: Default::default(),
            downloads: vec![vec![], vec![]],
            tx_completions: None,
            cpu_counters: None,
            kernel_profile: None,
        };
        assert_eq!(
            Reply::Result(Box::new(result)).to_line(),
            "{\"result\":{\"samples\":[],\"final\":[],\"done_ns\":[null,5],\"end_ns\":7,\"tcp_ext\":{},\"downloads\":[[],[]]}}\n"
        );
    }
}
