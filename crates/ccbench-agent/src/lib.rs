//! The VM engine's traffic agent: the kernel engine's sender (`send` in
//! `python/ccbench/kernel/agent.py`), as one statically linked binary that runs inside a
//! QEMU guest whose initramfs has nothing but busybox.
//!
//! It opens a TCP connection per flow (per download) to `addr:base_port+i` with the flow's congestion
//! control (`TCP_CONGESTION`; `SO_MAX_PACING_RATE` for `force_pacing`), sends bulk or
//! sized flows from their start times, samples `TCP_INFO` (and `TCP_CC_INFO` for `bbr*`)
//! at t0 + k x interval and once at the end, and reports in the schema of the Python
//! sender's out file (`samples`, `final`, `done_ns`, `end_ns`, `tcp_ext`, `downloads`), which
//! `python/ccbench/kernel/results.py` assembles unchanged. Connections are reset at the
//! end. Addresses are numeric IPv4 only (no resolver).
//!
//! # Modes
//!
//! * `ccbench-agent serve [--control PATH]`: the guest's agent. Commands come over one
//!   bidirectional byte stream: the character device PATH, switched to raw mode when it
//!   is a terminal, or stdin/stdout by default. In a QEMU guest that is a virtio serial
//!   port (`-device virtserialport`, `/dev/vport0p1`) or a serial port (`/dev/ttyS1`),
//!   never a virtio console (`virtconsole`, `/dev/hvcN`): QEMU drops console output
//!   that its host side is not ready to take, which cuts long results
//!   (`hw/char/virtio-console.c`, `flush_buf`). See `docs/vm-agent.md`.
//! * `ccbench-agent send CONFIG.json`: the Python sender's command line, for runs on a
//!   host: prints `ready` once connected, reads `go T0` (T0 in `CLOCK_MONOTONIC` ns) on
//!   stdin, writes the result to the configuration's `out`.
//!
//! # Control protocol (`serve`)
//!
//! One JSON object per line in both directions; lines end with `\n` (a `\r` before it
//! and blank lines are ignored). The agent speaks only when spoken to: every command
//! gets exactly one reply line, an object with one key; a failure is
//! `{"error": "<what failed>"}` and the agent goes on reading commands. Input that
//! arrives before the agent has put a terminal in raw mode is discarded (`TCSAFLUSH`), so
//! the host repeats `{"cmd": "info"}` until the first answer, reading one reply per
//! command sent.
//!
//! | host sends | agent replies |
//! |---|---|
//! | `{"cmd": "info"}` | `{"info": {"kernel": "6.1.0-…", "available_congestion_control": ["reno", "cubic", "bbr"], "cpus": 1, "version": "0.1.0", "protocol": 3, "static": true}}` |
//! | `{"cmd": "sysctl", "set": {"net.ipv4.tcp_wmem": "4096 16384 4194304"}}` | `{"ok": true}` |
//! | `{"cmd": "route", "dst": "10.0.0.3", "initcwnd": 20, "rto_min_ms": 50, "ecn": true}` | `{"ok": true}` once `dst/32` is routed via the default gateway with those metrics (`ecn`: `features ecn`) |
//! | `{"cmd": "send", "config": {…}}` | `{"ready": true}` once every flow is connected |
//! | `{"cmd": "go"}` (only right after `ready`) | `{"result": {"samples": …, "final": …, "done_ns": …, "end_ns": …, "tcp_ext": …, "downloads": …, "cpu_counters": …}}` when the run ends |
//! | `{"cmd": "done", "flow": 0, "download": 2, "at_ns": 5100000000}` (during a run) | nothing: flow 0's download 2 is complete at the receiver, and the flow's next download starts its `pause_ns` later |
//! | `{"cmd": "quit"}` | `{"ok": true}`, then the agent exits (status 0) |
//!
//! `config` is the Python sender's configuration without `out`: `base_port`,
//! `duration_ns`, `interval_ns`, `flows` (each `addr`, `cca`, `start_ns`, `size` or null,
//! `force_pacing`, and for repeated downloads `repeat` and `pause_ns`) and optionally
//! `sysctls` and `trace_tx` (a device whose skbs' TX completion delays the result then
//! reports as `tx_completions`, see `txtrace`). `cpu_counters` is the kernel's own account of its
//! CPUs from `ready` to the end (`cpucount`), and `kernel_profile` its tick profile over the
//! same time when it was booted with `profile=` (`kprofile`). A flow that repeats downloads opens one connection per download (the next
//! one connected ahead) and starts download k+1 when the host relays the receiver's
//! notice that download k is complete (`done`). The agent's epoch t0 is its own
//! `CLOCK_MONOTONIC` when it reads `go` (the guest's clock is not the host's); every
//! time in the result is nanoseconds after t0. Any line other than `go` or `quit` after
//! `ready` abandons the prepared run (connections reset) with an error reply. The end of
//! input ends the agent like `quit`. A send that fails names its cause, e.g.
//! `{"error": "flows[0].cca: \"bbr3\" is not available in this kernel (available: reno cubic)"}`.

pub mod clock;
pub mod config;
pub mod control;
pub mod cpucount;
pub mod hostinfo;
pub mod kprofile;
pub mod protocol;
pub mod route;
pub mod sender;
pub mod serve;
pub mod socket;
pub mod sysctl;
pub mod tcpinfo;
pub mod txtrace;
pub mod warm;
