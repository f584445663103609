//! How long the guest's NIC holds a sent skb: from `net_dev_start_xmit` (the skb handed
//! to the driver's `ndo_start_xmit`) to the `consume_skb` that frees it once the device
//! reports it transmitted, which is when `tcp_wfree` returns its bytes to the socket and
//! TCP Small Queues lets the next skb go. Read from the kernel's trace events (tracefs),
//! for one device, during a run.
//!
//! A free that runs in the idle task's context (`<idle>-0`: the interrupt found the CPU
//! idle, and its softirq ran before anything else) is counted apart from one that found
//! the CPU busy, so that the device's own delay and the CPU's wake-up can be told apart.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;

use serde::Serialize;

const TRACEFS: &str = "/sys/kernel/tracing";
/// Per-CPU ring buffer, KB: room for about ten seconds of a guest's skbs at 100 Mbit/s
/// (an event takes some 30 to 90 bytes), and little enough that 16 vCPUs' buffers fit
/// in the guest's 512 MB; once full, later events are dropped (not the first ones) and
/// counted.
const BUFFER_KB: u32 = 8 * 1024;
/// At most this many delays of each kind are reported.
const MAX_DELAYS: usize = 100_000;

/// The delays of one run, in microseconds (the trace's resolution).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TxCompletions {
    /// Freed in the idle task's context: the completion woke the CPU.
    pub idle_us: Vec<u64>,
    /// Freed while the CPU was busy with something else.
    pub busy_us: Vec<u64>,
    /// Skbs sent whose free was not seen (still in the device at the end, or dropped).
    pub unpaired: u64,
    /// Events the ring buffer had no room for.
    pub lost_events: u64,
}

/// Turns the two events on for `device`, with an empty buffer.
pub fn start(device: &str) -> Result<(), String> {
    let root = Path::new(TRACEFS);
    if !root.join("events").is_dir() {
        mount_tracefs()?;
    }
    let set = |rel: &str, value: &str| {
        fs::write(root.join(rel), value).map_err(|e| format!("trace_tx: {TRACEFS}/{rel}: {e}"))
    };
    set("tracing_on", "0")?;
    set("options/overwrite", "0")?;
    set("buffer_size_kb", &BUFFER_KB.to_string())?;
    set("trace", "")?;
    set("events/net/net_dev_start_xmit/filter", &format!("name == \"{device}\""))?;
    set("events/net/net_dev_start_xmit/enable", "1")?;
    set("events/skb/consume_skb/enable", "1")?;
    set("tracing_on", "1")
}

/// Turns tracing off and reads what it recorded.
pub fn finish() -> Result<TxCompletions, String> {
    let root = Path::new(TRACEFS);
    let _ = fs::write(root.join("tracing_on"), "0");
    for event in ["net/net_dev_start_xmit", "skb/consume_skb"] {
        let _ = fs::write(root.join("events").join(event).join("enable"), "0");
    }
    let text = fs::read_to_string(root.join("trace")).map_err(|e| format!("trace_tx: {TRACEFS}/trace: {e}"))?;
    let mut out = parse(&text);
    if let Ok(stats) = fs::read_to_string(root.join("per_cpu/cpu0/stats")) {
        out.lost_events = overrun(&stats);
    }
    let _ = fs::write(root.join("trace"), "");
    Ok(out)
}

fn mount_tracefs() -> Result<(), String> {
    let target = std::ffi::CString::new(TRACEFS).expect("no NUL");
    let fstype = std::ffi::CString::new("tracefs").expect("no NUL");
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe { libc::mount(fstype.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(format!("trace_tx: cannot mount tracefs on {TRACEFS}: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// Pairs each skb handed to the device with the next free of the same address.
pub fn parse(text: &str) -> TxCompletions {
    let mut sent: HashMap<&str, u64> = HashMap::new();
    let mut out = TxCompletions::default();
    for line in text.lines() {
        let Some(ev) = Event::parse(line) else { continue };
        match ev.kind {
            Kind::Xmit => {
                if sent.insert(ev.skb, ev.at_us).is_some() {
                    out.unpaired += 1;
                }
            }
            Kind::Free => {
                let Some(at) = sent.remove(ev.skb) else { continue };
                let delays = if ev.idle { &mut out.idle_us } else { &mut out.busy_us };
                if delays.len() < MAX_DELAYS {
                    // With several vCPUs the trace's per-CPU clocks may disagree by a little.
                    delays.push(ev.at_us.saturating_sub(at));
                }
            }
        }
    }
    out.unpaired += sent.len() as u64;
    out
}

/// Events lost to a full buffer, from a per-CPU `stats` file: `overrun` (overwritten)
/// and `dropped events` (refused, with the `overwrite` option off).
fn overrun(stats: &str) -> u64 {
    let field = |name: &str| -> u64 {
        stats.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok())).unwrap_or(0)
    };
    field("overrun:") + field("dropped events:")
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Xmit,
    Free,
}

#[derive(Debug)]
struct Event<'a> {
    kind: Kind,
    skb: &'a str,
    at_us: u64,
    idle: bool,
}

impl<'a> Event<'a> {
    /// A line of the `trace` file, as
    /// `  <idle>-0  [000] ..s2.  3.667239: consume_skb: skbaddr=00000000c13365c3 ...`.
    fn parse(line: &'a str) -> Option<Event<'a>> {
        let (kind, at) = if let Some(at) = line.find(": net_dev_start_xmit: ") {
            (Kind::Xmit, at)
        } else {
            (Kind::Free, line.find(": consume_skb: ")?)
        };
        let head = &line[..at];
        let stamp = head.rsplit(' ').next()?;
        let (secs, micros) = stamp.split_once('.')?;
        let at_us = secs.parse::<u64>().ok()? * 1_000_000 + micros.parse::<u64>().ok()?;
        let skb = line[at..].split_once("skbaddr=")?.1.split(' ').next()?;
        Some(Event { kind, skb, at_us, idle: head.trim_start().starts_with("<idle>-0 ") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
# tracer: nop
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
            ping-121     [000] b..1.     2.659263: net_dev_start_xmit: dev=eth0 queue_mapping=0 skbaddr=000000006688 vlan_tagged=0 len=42 gso_segs=1
            ping-121     [000] ..s2.     2.659849: consume_skb: skbaddr=000000006688 location=napi_consume_skb
          <idle>-0       [000] b.s2.     3.666839: net_dev_start_xmit: dev=eth0 queue_mapping=0 skbaddr=00000000c133 len=2962 gso_segs=2
          <idle>-0       [000] ..s1.     3.666877: consume_skb: skbaddr=000000001dca
          <idle>-0       [000] ..s2.     3.667239: consume_skb: skbaddr=00000000c133
  kworker/u2:1-24        [000] b..1.     3.700000: net_dev_start_xmit: dev=eth0 queue_mapping=0 skbaddr=00000000aaaa len=42
";

    #[test]
    fn pairs_each_sent_skb_with_its_free() {
        let got = parse(TRACE);
        assert_eq!(got.busy_us, vec![586]);
        assert_eq!(got.idle_us, vec![400]);
        // The last skb was never freed; the free of an address never sent is ignored.
        assert_eq!(got.unpaired, 1);
    }

    #[test]
    fn an_address_sent_twice_without_a_free_counts_once_unpaired() {
        let text = "x-1 [000] ..... 1.000001: net_dev_start_xmit: dev=eth0 skbaddr=ab len=1\n\
                    x-1 [000] ..... 1.000005: net_dev_start_xmit: dev=eth0 skbaddr=ab len=1\n\
                    x-1 [000] ..... 1.000015: consume_skb: skbaddr=ab\n";
        let got = parse(text);
        assert_eq!((got.busy_us.clone(), got.unpaired), (vec![10], 1));
    }

    #[test]
    fn a_free_stamped_before_its_send_counts_as_no_delay() {
        let text = "x-1 [001] ..... 1.000010: net_dev_start_xmit: dev=eth0 skbaddr=ab len=1\n\
                    y-2 [000] ..... 1.000008: consume_skb: skbaddr=ab\n";
        assert_eq!(parse(text).busy_us, vec![0]);
    }

    #[test]
    fn reads_the_overrun_count() {
        assert_eq!(overrun("entries: 10\noverrun: 42\ncommit overrun: 0\ndropped events: 3\n"), 45);
        assert_eq!(overrun(""), 0);
    }
}
