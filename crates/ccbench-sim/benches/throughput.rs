//! Simulator speed and memory: `cargo bench -p ccbench-sim`, or
//! `cargo bench -p ccbench-sim --bench throughput -- [--quick] [--repeat N] [--cca NAME] [CASE]`;
//! `-- --algorithms [--quick] [--also bpf:PATH ...]` runs `1flow-1bdp` with every
//! algorithm (and each BPF object named) and compares each one's per-packet cost with
//! Cubic's. Prints a table; nothing here passes or fails (see docs/benchmarks.md).
//!
//! Each case runs in its own child process (this binary re-invoked with `--case NAME`)
//! so that its peak resident set (`VmHWM`) is its own.

use ccbench_sim::config::{Aqm, ArrivalsConfig, BufferLimit, FlowConfig, FqCodelConfig, LinkConfig, Sizes, TcpConfig};
use ccbench_sim::Scenario;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const GBIT: u64 = 1_000_000_000;

struct Case {
    name: &'static str,
    what: &'static str,
    cca: &'static str,
    /// Simulated seconds (full, quick).
    secs: (u64, u64),
    flows: usize,
    buffer_bdp: f64,
    series: bool,
    link: Link,
    /// A host preset: every sender task goes through the CPU model.
    host: Option<&'static str>,
    /// Instead of bulk flows: connections arriving as a Poisson process at this many a
    /// second, of 2 KB to 100 KB (uniform).
    arrivals: Option<f64>,
}

/// The bottleneck's capacity model and queue.
#[derive(Clone, Copy, PartialEq)]
enum Link {
    /// 1 Gbit/s, drop-tail.
    Rate,
    /// A delivery-opportunity trace averaging exactly 1 Gbit/s (250 opportunities every
    /// 3 ms), drop-tail: the per-packet cost of serving from a trace.
    Trace,
    /// 1 Gbit/s with FQ-CoDel (kernel defaults).
    FqCodel,
    /// The T-Mobile LTE downlink trace (16.7 Mbit/s mean) for one period (140 s).
    LteTrace,
    /// A constant rate equal to that trace's mean, as long.
    LteRate,
}

const CASES: &[Case] = &[
    Case {
        cca: "cubic",
        name: "1flow-1bdp",
        what: "1 Cubic, 1 Gbit/s 20 ms, 1 BDP",
        secs: (30, 5),
        flows: 1,
        buffer_bdp: 1.0,
        series: true,
        host: None,
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "1flow-10bdp",
        what: "1 Cubic, 1 Gbit/s 20 ms, 10 BDP",
        secs: (30, 5),
        flows: 1,
        buffer_bdp: 10.0,
        series: true,
        host: None,
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "100flows-1bdp",
        what: "100 Cubic, 1 Gbit/s 20 ms, 1 BDP",
        secs: (30, 5),
        flows: 100,
        buffer_bdp: 1.0,
        series: true,
        host: None,
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "mem-short",
        what: "1 Cubic, 1 Gbit/s 20 ms, 1 BDP, no series",
        secs: (10, 2),
        flows: 1,
        buffer_bdp: 1.0,
        series: false,
        host: None,
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "mem-long",
        what: "1 Cubic, 1 Gbit/s 20 ms, 1 BDP, no series",
        secs: (60, 12),
        flows: 1,
        buffer_bdp: 1.0,
        series: false,
        host: None,
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "bbr",
        name: "bbr-1bdp",
        what: "1 BBRv1 (paced), 1 Gbit/s 20 ms, 1 BDP",
        secs: (30, 5),
        flows: 1,
        buffer_bdp: 1.0,
        series: true,
        host: None,
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "bbr3",
        name: "bbr3-1bdp",
        what: "1 BBRv3 (paced), 1 Gbit/s 20 ms, 1 BDP",
        secs: (30, 5),
        flows: 1,
        buffer_bdp: 1.0,
        series: true,
        host: None,
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "trace-1bdp",
        what: "1 Cubic, 1 Gbit/s trace 20 ms, 1 BDP",
        secs: (30, 5),
        flows: 1,
        buffer_bdp: 1.0,
        series: true,
        host: None,
        link: Link::Trace,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "fq_codel",
        what: "1 Cubic, 1 Gbit/s 20 ms, FQ-CoDel",
        secs: (30, 5),
        flows: 1,
        buffer_bdp: 1.0,
        series: true,
        host: None,
        link: Link::FqCodel,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "lte-trace",
        what: "1 Cubic, T-Mobile LTE trace 40 ms, 250 pkt",
        secs: (140, 28),
        flows: 1,
        buffer_bdp: 0.0,
        series: true,
        host: None,
        link: Link::LteTrace,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "lte-rate",
        what: "1 Cubic, 16.7 Mbit/s 40 ms, 250 pkt",
        secs: (140, 28),
        flows: 1,
        buffer_bdp: 0.0,
        series: true,
        host: None,
        link: Link::LteRate,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "1flow-1bdp-cpu",
        what: "1flow-1bdp with a host CPU (highend)",
        secs: (30, 5),
        flows: 1,
        buffer_bdp: 1.0,
        series: true,
        host: Some("phone-highend"),
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "bbr",
        name: "bbr-1bdp-cpu",
        what: "bbr-1bdp with a host CPU (highend)",
        secs: (30, 5),
        flows: 1,
        buffer_bdp: 1.0,
        series: true,
        host: Some("phone-highend"),
        link: Link::Rate,
        arrivals: None,
    },
    Case {
        cca: "cubic",
        name: "arrivals-100k",
        what: "100,000 Cubic conns/60 s, 2-100 KB, 1 Gbit/s",
        secs: (60, 12),
        flows: 0,
        buffer_bdp: 1.0,
        series: false,
        host: None,
        link: Link::Rate,
        arrivals: Some(100_000.0 / 60.0),
    },
    Case {
        cca: "cubic",
        name: "arrivals-50k",
        what: "50,000 Cubic conns/30 s, 2-100 KB, 1 Gbit/s",
        secs: (30, 6),
        flows: 0,
        buffer_bdp: 1.0,
        series: false,
        host: None,
        link: Link::Rate,
        arrivals: Some(100_000.0 / 60.0),
    },
    Case {
        cca: "cubic",
        name: "arrivals-bulk",
        what: "1 Cubic as many packets (41 s), no series",
        secs: (41, 8),
        flows: 1,
        buffer_bdp: 1.0,
        series: false,
        host: None,
        link: Link::Rate,
        arrivals: None,
    },
];

/// The T-Mobile LTE downlink trace shipped in `traces/`.
fn lte_trace() -> Vec<u64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces/TMobile-LTE-short.down");
    std::fs::read_to_string(path).expect("trace file").lines().map(|l| l.trim().parse().expect("timestamp")).collect()
}

fn link_for(c: &Case) -> LinkConfig {
    let buffer = BufferLimit::Bdp(c.buffer_bdp);
    match c.link {
        Link::Rate => LinkConfig::new(GBIT, 20 * MS, buffer),
        Link::Trace => {
            let ms: Vec<u64> =
                [(1, 83), (2, 83), (3, 84)].iter().flat_map(|&(t, n)| std::iter::repeat_n(t, n)).collect();
            LinkConfig::with_trace(ms, 20 * MS, buffer)
        }
        Link::FqCodel => {
            LinkConfig { aqm: Aqm::FqCodel(FqCodelConfig::default()), ..LinkConfig::new(GBIT, 20 * MS, buffer) }
        }
        Link::LteTrace => LinkConfig::with_trace(lte_trace(), 40 * MS, BufferLimit::Packets(250)),
        Link::LteRate => {
            let mean = LinkConfig::with_trace(lte_trace(), 40 * MS, BufferLimit::Packets(250)).rate_bps;
            LinkConfig::new(mean, 40 * MS, BufferLimit::Packets(250))
        }
    }
}

fn scenario(c: &Case, quick: bool) -> Scenario {
    let flows = (0..c.flows)
        .map(|i| FlowConfig {
            // Many flows join over the first second rather than in one synchronised burst.
            start_ns: if c.flows > 1 { i as u64 * SEC / c.flows as u64 } else { 0 },
            // Large enough that the window, not the receiver, limits every case.
            rwnd_bytes: 100_000_000,
            ..FlowConfig::bulk(c.cca)
        })
        .collect();
    Scenario {
        seed: 1,
        duration_ns: if quick { c.secs.1 } else { c.secs.0 } * SEC,
        sample_interval_ns: if c.series { 100 * MS } else { 0 },
        link: link_for(c),
        flows,
        tcp: TcpConfig::default(),
        host: c.host.map(|name| ccbench_sim::host::presets::preset(name).expect("known preset")),
        udp: Vec::new(),
        arrivals: c.arrivals.map_or(Vec::new(), |rate| {
            let sizes = Sizes::Cdf(vec![(2_000, 0.0), (100_000, 1.0)]);
            vec![ArrivalsConfig::poisson(c.cca, rate, sizes)]
        }),
    }
}

/// A `kB` field of /proc/self/status (Linux only; 0 elsewhere).
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// One measured case, as the child reports it on a single line.
struct Measured {
    sim_s: f64,
    wall_s: f64,
    packets: u64,
    events: u64,
    rss_before_kb: u64,
    peak_kb: u64,
}

impl Measured {
    fn to_line(&self) -> String {
        format!(
            "RESULT {} {} {} {} {} {}",
            self.sim_s, self.wall_s, self.packets, self.events, self.rss_before_kb, self.peak_kb
        )
    }
    fn parse(out: &str) -> Option<Measured> {
        let line = out.lines().find(|l| l.starts_with("RESULT "))?;
        let v: Vec<&str> = line.split_whitespace().skip(1).collect();
        Some(Measured {
            sim_s: v.first()?.parse().ok()?,
            wall_s: v.get(1)?.parse().ok()?,
            packets: v.get(2)?.parse().ok()?,
            events: v.get(3)?.parse().ok()?,
            rss_before_kb: v.get(4)?.parse().ok()?,
            peak_kb: v.get(5)?.parse().ok()?,
        })
    }
    fn pps(&self) -> f64 {
        self.packets as f64 / self.wall_s
    }
}

/// Child: run one case (with `cca` instead of its own algorithm, if given) and report.
fn run_case(name: &str, quick: bool, cca: Option<&str>) {
    let c = CASES.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("unknown case {name}"));
    let mut s = scenario(c, quick);
    if let Some(cca) = cca {
        s.flows.iter_mut().for_each(|f| f.cca = cca.to_string());
    }
    let rss_before_kb = status_kb("VmRSS:");
    let t = Instant::now();
    let out = ccbench_sim::run(&s).expect("valid scenario");
    let wall_s = t.elapsed().as_secs_f64();
    let sm = &out.summary;
    let r = Measured {
        sim_s: sm.duration_s,
        wall_s,
        // ACKs return on a separate path, so everything the bottleneck forwarded is data.
        packets: sm.link.packets_forwarded,
        events: sm.events.unwrap_or(0),
        rss_before_kb,
        peak_kb: status_kb("VmHWM:"),
    };
    // Keep the output alive until after the peak is read.
    std::hint::black_box(&out);
    println!("{}", r.to_line());
}

/// Runs one case in a child process (see the module's notes).
fn child(case: &str, quick: bool, cca: Option<&str>) -> Result<Measured, String> {
    let mut cmd = Command::new(std::env::current_exe().expect("current_exe"));
    cmd.args(["--case", case]);
    if quick {
        cmd.arg("--quick");
    }
    if let Some(cca) = cca {
        cmd.args(["--cca", cca]);
    }
    let out = cmd.output().expect("spawn case");
    Measured::parse(&String::from_utf8_lossy(&out.stdout))
        .filter(|_| out.status.success())
        .ok_or_else(|| String::from_utf8_lossy(&out.stderr).trim().to_string())
}

/// The run with the median wall time.
fn median(mut runs: Vec<Measured>) -> Measured {
    runs.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    runs.swap_remove(runs.len() / 2)
}

/// `1flow-1bdp` with each algorithm: wall time per packet the bottleneck forwarded, and
/// its ratio to Cubic's (each algorithm also sends a different number of packets).
fn per_algorithm(quick: bool, repeat: usize, also: &[&str]) {
    let case = "1flow-1bdp";
    println!("ccbench-sim {} per-algorithm cost, {case}, median of {repeat} run(s)", ccbench_sim::VERSION);
    println!(
        "{:<10} {:>11} {:>8} {:>10} {:>9} {:>12}",
        "algorithm", "data pkts", "wall s", "pkts/s", "ns/pkt", "/ Cubic's"
    );
    let mut measured = Vec::new();
    let names = ccbench_sim::cc::Algorithm::ALL.iter().map(|a| a.name()).chain(also.iter().copied());
    for name in names {
        match (0..repeat).map(|_| child(case, quick, Some(name))).collect::<Result<Vec<_>, _>>() {
            Ok(runs) => measured.push((name, median(runs))),
            Err(e) => println!("{name:<10} failed: {e}"),
        }
    }
    let ns_per_packet = |r: &Measured| r.wall_s * 1e9 / r.packets.max(1) as f64;
    let cubic = measured.iter().find(|(name, _)| *name == "cubic").map(|(_, r)| ns_per_packet(r));
    for (name, r) in &measured {
        let ns = ns_per_packet(r);
        let ratio = cubic.map_or(f64::NAN, |c| ns / c);
        // A BPF object by its file's name.
        let label = name
            .strip_prefix("bpf:")
            .map_or(name.to_string(), |p| format!("bpf:{}", p.rsplit('/').next().unwrap_or(p)));
        println!("{label:<10} {:>11} {:>8.3} {:>10.3e} {ns:>9.1} {ratio:>12.2}", r.packets, r.wall_s, r.pps());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let cca = args.iter().position(|a| a == "--cca").map(|i| args.get(i + 1).expect("--cca NAME").as_str());
    if let Some(i) = args.iter().position(|a| a == "--case") {
        run_case(args.get(i + 1).expect("--case NAME"), quick, cca);
        return;
    }
    // Each case runs this many times; the run with the median wall time is reported.
    let repeat: usize = match args.iter().position(|a| a == "--repeat") {
        Some(i) => args.get(i + 1).and_then(|v| v.parse().ok()).expect("--repeat N"),
        None if quick => 1,
        None => 3,
    };
    if args.iter().any(|a| a == "--algorithms") {
        let also: Vec<&str> = args.windows(2).filter(|w| w[0] == "--also").map(|w| w[1].as_str()).collect();
        return per_algorithm(quick, repeat, &also);
    }
    // `cargo bench` passes `--bench`; any other bare argument filters cases by name.
    let filters: Vec<&String> = args
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(i, a)| !a.starts_with("--") && !["--repeat", "--cca", "--also"].contains(&args[i - 1].as_str()))
        .map(|(_, a)| a)
        .collect();
    println!(
        "ccbench-sim {} throughput benchmark{}, median of {repeat} run{}",
        ccbench_sim::VERSION,
        if quick { " (--quick)" } else { "" },
        if repeat == 1 { "" } else { "s" }
    );
    println!(
        "{:<14} {:<42} {:>6} {:>7} {:>11} {:>10} {:>11} {:>10} {:>9}",
        "case", "scenario", "sim s", "wall s", "data pkts", "pkts/s", "events", "events/s", "peak MB"
    );
    let mut results: BTreeMap<&str, Measured> = BTreeMap::new();
    'cases: for c in CASES {
        if !filters.iter().all(|f| c.name.contains(f.as_str())) {
            continue;
        }
        let mut runs = Vec::new();
        for _ in 0..repeat {
            match child(c.name, quick, cca) {
                Ok(r) => runs.push(r),
                Err(e) => {
                    println!("{:<14} failed: {e}", c.name);
                    continue 'cases;
                }
            }
        }
        let r = median(runs);
        println!(
            "{:<14} {:<42} {:>6.1} {:>7.3} {:>11} {:>10.3e} {:>11} {:>10.3e} {:>9.1}",
            c.name,
            c.what,
            r.sim_s,
            r.wall_s,
            r.packets,
            r.pps(),
            r.events,
            r.events as f64 / r.wall_s,
            r.peak_kb as f64 / 1024.0
        );
        results.insert(c.name, r);
    }
    if let Some(r) = results.values().next() {
        println!(
            "(peak MB is VmHWM of the case's own process; {:.1} MB was resident before the run started)",
            r.rss_before_kb as f64 / 1024.0
        );
    }
    if let (Some(a), Some(b)) = (results.get("1flow-1bdp"), results.get("1flow-10bdp")) {
        print!("packets/s 10 BDP / 1 BDP: {:.2}", b.pps() / a.pps());
    }
    if let (Some(a), Some(b)) = (results.get("mem-short"), results.get("mem-long")) {
        print!("   peak RSS {:.0} s / {:.0} s: {:.2}", b.sim_s, a.sim_s, b.peak_kb as f64 / a.peak_kb as f64);
    }
    for name in ["bbr-1bdp", "bbr3-1bdp"] {
        if let (Some(a), Some(b)) = (results.get("1flow-1bdp"), results.get(name)) {
            print!("   packets/s {name} / Cubic: {:.2}", b.pps() / a.pps());
        }
    }
    println!();
    if let (Some(bulk), Some(a)) = (results.get("arrivals-bulk"), results.get("arrivals-100k")) {
        println!(
            "arrivals-100k / arrivals-bulk: packets {:.2}, wall {:.2}, packets/s {:.2}, peak RSS {:.2}",
            a.packets as f64 / bulk.packets as f64,
            a.wall_s / bulk.wall_s,
            a.pps() / bulk.pps(),
            a.peak_kb as f64 / bulk.peak_kb as f64
        );
    }
    if let (Some(half), Some(a)) = (results.get("arrivals-50k"), results.get("arrivals-100k")) {
        println!("peak RSS arrivals-100k / arrivals-50k: {:.2}", a.peak_kb as f64 / half.peak_kb as f64);
    }
    for (base, name) in [("1flow-1bdp", "trace-1bdp"), ("1flow-1bdp", "fq_codel"), ("lte-rate", "lte-trace")] {
        if let (Some(a), Some(b)) = (results.get(base), results.get(name)) {
            print!("packets/s {name} / {base}: {:.2}   ", b.pps() / a.pps());
        }
    }
    println!();
}
