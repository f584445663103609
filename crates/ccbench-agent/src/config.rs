//! The sender's configuration: the JSON the kernel engine writes for its Python sender
//! (`python/ccbench/kernel/session.py`, `send_cfg`), with `out` only in `send` mode.
//! Unknown keys are ignored, as the Python sender ignores them.

use std::net::Ipv4Addr;

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SendConfig {
    pub base_port: u16,
    pub duration_ns: i64,
    pub interval_ns: i64,
    pub flows: Vec<FlowConfig>,
    #[serde(default)]
    pub sysctls: Map<String, Value>,
    /// Where `send` mode writes its result; not used by `serve`.
    #[serde(default)]
    pub out: Option<String>,
    /// Where, in `send` mode, the receiver tells of each completed download of a flow
    /// that repeats them (a Unix datagram socket the sender binds); `serve` hears of
    /// them on its control channel.
    #[serde(default)]
    pub done_path: Option<String>,
    /// Record how long this network device holds each sent skb (`txtrace`), and report
    /// it as `tx_completions`.
    #[serde(default)]
    pub trace_tx: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FlowConfig {
    /// Numeric IPv4 only: the agent never resolves names (a static glibc binary cannot
    /// load NSS modules, and the guest has no resolver).
    pub addr: String,
    pub cca: String,
    #[serde(default)]
    pub start_ns: i64,
    /// Bytes to send; `None` for a bulk flow that sends until the end.
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub force_pacing: Option<bool>,
    /// Downloads in a row, each on a connection of its own (`repeat`).
    #[serde(default = "one")]
    pub repeat: u32,
    /// The pause between a download's completion at the receiver and the next one.
    #[serde(default)]
    pub pause_ns: i64,
    /// The `TCP_CC_INFO` structure to sample (`bbr`, `vegas`, `dctcp`), if any.
    #[serde(default)]
    pub cc_info: Option<String>,
}

fn one() -> u32 {
    1
}

impl SendConfig {
    /// Parses and checks; an error names the field, as `flows[1].addr: ...`.
    pub fn from_json(text: &str) -> Result<SendConfig, String> {
        let cfg: SendConfig = serde_json::from_str(text).map_err(|e| format!("config: {e}"))?;
        cfg.check()?;
        Ok(cfg)
    }

    pub fn from_value(value: Value) -> Result<SendConfig, String> {
        let cfg: SendConfig = serde_json::from_value(value).map_err(|e| format!("config: {e}"))?;
        cfg.check()?;
        Ok(cfg)
    }

    fn check(&self) -> Result<(), String> {
        if self.interval_ns <= 0 {
            return Err("interval_ns: a positive number of nanoseconds".into());
        }
        if self.duration_ns <= 0 {
            return Err("duration_ns: a positive number of nanoseconds".into());
        }
        if self.flows.is_empty() {
            return Err("flows: at least one flow".into());
        }
        if usize::from(self.base_port) + self.flows.len() > usize::from(u16::MAX) + 1 {
            return Err("base_port: base_port + number of flows must stay within 65535".into());
        }
        for (i, flow) in self.flows.iter().enumerate() {
            flow.ipv4().map_err(|what| format!("flows[{i}].addr: {what}"))?;
            if flow.cca.is_empty() || flow.cca.len() >= TCP_CA_NAME_MAX || flow.cca.contains('\0') {
                return Err(format!("flows[{i}].cca: a congestion control name of 1 to 15 bytes"));
            }
            if flow.start_ns < 0 {
                return Err(format!("flows[{i}].start_ns: zero or more nanoseconds"));
            }
            if flow.repeat == 0 {
                return Err(format!("flows[{i}].repeat: one or more downloads"));
            }
            if flow.repeat > 1 && flow.size.is_none() {
                return Err(format!("flows[{i}].repeat: only a sized flow repeats (give size)"));
            }
            if flow.pause_ns < 0 {
                return Err(format!("flows[{i}].pause_ns: zero or more nanoseconds"));
            }
        }
        Ok(())
    }
}

/// `TCP_CA_NAME_MAX` in `include/net/tcp.h` (the name plus its NUL).
const TCP_CA_NAME_MAX: usize = 16;

impl FlowConfig {
    pub fn ipv4(&self) -> Result<Ipv4Addr, String> {
        self.addr.parse().map_err(|_| format!("a numeric IPv4 address, not {:?}", self.addr))
    }

    pub fn paced(&self) -> bool {
        self.force_pacing.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL_ENGINE_CONFIG: &str = r#"{"base_port": 5201, "duration_ns": 2000000000,
        "interval_ns": 100000000, "out": "/tmp/x.json", "flows": [
        {"addr": "10.0.0.2", "cca": "cubic", "start_ns": 0, "size": null, "force_pacing": false},
        {"addr": "10.0.0.3", "cca": "bbr", "start_ns": 500000000, "size": 1000000, "force_pacing": true,
         "cc_info": "bbr"}]}"#;

    #[test]
    fn reads_the_kernel_engines_sender_config() {
        let cfg = SendConfig::from_json(KERNEL_ENGINE_CONFIG).unwrap();
        assert_eq!(cfg.flows.len(), 2);
        assert_eq!(cfg.flows[1].size, Some(1_000_000));
        assert!(
            cfg.flows[1].paced() && cfg.flows[1].cc_info.as_deref() == Some("bbr") && cfg.flows[0].cc_info.is_none()
        );
        assert_eq!(cfg.out.as_deref(), Some("/tmp/x.json"));
        assert!(cfg.sysctls.is_empty());
        assert_eq!((cfg.flows[0].repeat, cfg.flows[0].pause_ns), (1, 0));
    }

    #[test]
    fn names_the_field_that_is_wrong() {
        let bad = |from: &str, to: &str| SendConfig::from_json(&KERNEL_ENGINE_CONFIG.replace(from, to)).unwrap_err();
        assert_eq!(bad("10.0.0.3", "receiver.local"), "flows[1].addr: a numeric IPv4 address, not \"receiver.local\"");
        assert!(bad("\"bbr\"", "\"bbr_with_a_long_name\"").starts_with("flows[1].cca: "));
        assert!(bad("100000000", "0").starts_with("interval_ns: "));
        assert!(bad("\"base_port\": 5201", "\"base_port\": 65535").starts_with("base_port: "));
        assert!(bad("\"duration_ns\"", "\"duration\"").starts_with("config: missing field `duration_ns`"));
        assert!(bad("\"size\": null,", "\"size\": null, \"repeat\": 3,").starts_with("flows[0].repeat: "));
        assert!(bad("\"force_pacing\": true", "\"force_pacing\": true, \"repeat\": 0").starts_with("flows[1].repeat: "));
    }
}
