//! Setting sysctls through `/proc/sys`, as `agent.py`'s `set_sysctls` does.

use std::path::Path;

use serde_json::{Map, Value};

/// Writes every `key = value` (`net.ipv4.tcp_wmem = "4096 16384 4194304"`). IPv6 keys
/// are skipped on a kernel without IPv6, like the Python agent.
pub fn set_all(pairs: &Map<String, Value>) -> Result<(), String> {
    for (key, value) in pairs {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(format!("sysctls.{key}: a string or a number")),
        };
        if key.starts_with("net.ipv6.") && !Path::new("/proc/sys/net/ipv6").exists() {
            continue;
        }
        if key.is_empty() || key.contains('/') || key.split('.').any(|part| part.is_empty() || part == "..") {
            return Err(format!("sysctls.{key}: a dotted sysctl name such as net.ipv4.tcp_wmem"));
        }
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        std::fs::write(&path, text).map_err(|e| format!("sysctls.{key}: cannot write {path}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_names_that_leave_proc_sys_and_values_that_are_not_text() {
        let one = |k: &str, v: Value| set_all(&Map::from_iter([(k.to_string(), v)])).unwrap_err();
        assert!(one("net/../../etc/passwd", "x".into()).contains("a dotted sysctl name"));
        assert!(one("net..ipv4", "x".into()).contains("a dotted sysctl name"));
        assert_eq!(one("net.ipv4.tcp_ecn", Value::Bool(true)), "sysctls.net.ipv4.tcp_ecn: a string or a number");
    }
}
