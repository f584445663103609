//! The real-time loop: two TUN devices, a control channel, and the sans-IO [`Link`]
//! driven by the monotonic clock.
//!
//! Control protocol (one line each, on the control descriptor):
//! * `start T0 END`: measure from `T0` to `END`, both `CLOCK_MONOTONIC` nanoseconds
//!   (the clock every process on the machine shares, in every network namespace);
//! * `quit` (or end of file): print the report and return.
//!
//! Output (on the output descriptor): `ready` once both devices exist, then at the end
//! one line `report {json}`.

use crate::config::EmuConfig;
use crate::link::{Link, Side};
use crate::tun::Tun;
use ccbench_sim::time::{Dur, Time};
use std::io;
use std::os::fd::RawFd;

/// The longest the loop sleeps without looking at the clock.
const MAX_WAIT: Dur = Dur::from_ms(50);
/// Packets read from one device before serving the other.
const READ_BATCH: usize = 64;
/// Larger than any packet a TUN device with a sane MTU hands out.
const BUF_BYTES: usize = 65_536;

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Emulator time: nanoseconds since the emulator started.
struct Clock {
    origin: u64,
}

impl Clock {
    fn now(&self) -> Time {
        Time(monotonic_ns().saturating_sub(self.origin))
    }
    fn at_monotonic(&self, ns: u64) -> Time {
        Time(ns.saturating_sub(self.origin))
    }
}

fn write_all(fd: RawFd, text: &str) -> io::Result<()> {
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        // SAFETY: writing from a live buffer, bounded by its length.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        rest = &rest[n as usize..];
    }
    Ok(())
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller handed us.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

enum Command {
    Start(u64, u64),
    Quit,
}

/// Reads whole lines from the (non-blocking) control descriptor.
struct Control {
    fd: RawFd,
    pending: Vec<u8>,
}

impl Control {
    fn read(&mut self) -> Result<Vec<Command>, String> {
        let mut buf = [0u8; 4096];
        let mut out = Vec::new();
        loop {
            // SAFETY: reading into a local buffer, bounded by its length.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n == 0 {
                out.push(Command::Quit);
                return Ok(out);
            }
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(out),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(format!("control channel: {e}")),
                };
            }
            self.pending.extend_from_slice(&buf[..n as usize]);
            while let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=i).collect();
                out.push(parse_command(String::from_utf8_lossy(&line).trim())?);
            }
        }
    }
}

fn parse_command(line: &str) -> Result<Command, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["quit"] => Ok(Command::Quit),
        ["start", t0, end] => {
            let num = |s: &str| s.parse::<u64>().map_err(|_| format!("control: bad time {s:?}"));
            Ok(Command::Start(num(t0)?, num(end)?))
        }
        _ => Err(format!("control: unknown command {line:?}")),
    }
}

/// SCHED_FIFO at `priority` for the calling thread; false if not permitted. The
/// kernel's real-time throttling (`sched_rt_runtime_us`) still leaves other tasks CPU.
fn set_realtime(priority: u8) -> bool {
    let param = libc::sched_param { sched_priority: priority as libc::c_int };
    // SAFETY: sched_setscheduler on the calling thread with a valid parameter.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Write everything due by the clock's current reading.
fn deliver(link: &mut Link, clock: &Clock, sender: &Tun, receiver: &Tun) {
    let now = clock.now();
    while let Some(d) = link.poll(now) {
        let wall = clock.now();
        let ok = match d.to {
            Side::Receiver => receiver.write(&d.bytes),
            Side::Sender => sender.write(&d.bytes),
        };
        link.on_written(&d, wall, ok);
    }
}

/// Create the devices, say `ready`, and emulate until told to quit (or until
/// `max_runtime_ns` has passed). Blocks the calling thread.
pub fn serve(config_json: &str, control_fd: RawFd, out_fd: RawFd) -> Result<(), String> {
    let cfg = EmuConfig::from_json(config_json)?;
    // Wake up when asked, not up to 50 µs later (the default timer slack).
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let realtime = cfg.realtime_priority > 0 && set_realtime(cfg.realtime_priority);
    let clock = Clock { origin: monotonic_ns() };
    let sender = Tun::create(&cfg.tun_sender).map_err(|e| format!("creating {}: {e}", cfg.tun_sender))?;
    let receiver = Tun::create(&cfg.tun_receiver).map_err(|e| format!("creating {}: {e}", cfg.tun_receiver))?;
    set_nonblocking(control_fd).map_err(|e| format!("control channel: {e}"))?;
    let mut control = Control { fd: control_fd, pending: Vec::new() };
    let mut link = Link::new(&cfg);
    if let Some(spec) = &cfg.capture {
        // Capture time stamps: the wall clock at the emulator's time zero, plus its time.
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the timespec we pass.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        let wall = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        let epoch = wall.saturating_sub(clock.now().ns());
        link = link.with_capture(crate::capture::EmuCapture::open(spec, epoch)?);
    }
    let deadline = Time(cfg.max_runtime_ns);
    write_all(out_fd, "ready\n").map_err(|e| format!("output: {e}"))?;

    let mut buf = vec![0u8; BUF_BYTES];
    let mut fds = [
        libc::pollfd { fd: sender.raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: receiver.raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: control_fd, events: libc::POLLIN, revents: 0 },
    ];
    'run: loop {
        deliver(&mut link, &clock, &sender, &receiver);
        for (tun, side) in [(&sender, Side::Sender), (&receiver, Side::Receiver)] {
            for _ in 0..READ_BATCH {
                match tun.read(&mut buf) {
                    Ok(n) => {
                        deliver(&mut link, &clock, &sender, &receiver);
                        link.arrive(clock.now(), side, buf[..n].to_vec());
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("reading {}: {e}", tun.name)),
                }
            }
        }
        deliver(&mut link, &clock, &sender, &receiver);
        for cmd in control.read()? {
            match cmd {
                Command::Start(t0, end) => link.begin(clock.at_monotonic(t0), clock.at_monotonic(end)),
                Command::Quit => break 'run,
            }
        }
        let now = clock.now();
        if now >= deadline {
            break;
        }
        let wake = link.next_time().unwrap_or(Time::NEVER).min(deadline).min(now + MAX_WAIT);
        let wait = wake.since(now);
        let ts = libc::timespec { tv_sec: (wait.ns() / 1_000_000_000) as _, tv_nsec: (wait.ns() % 1_000_000_000) as _ };
        // SAFETY: ppoll on our own pollfd array with a valid timeout and no signal mask.
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(format!("ppoll: {e}"));
            }
        }
    }
    let mut report = link.finish(clock.now());
    report.check.realtime_priority = realtime;
    report.capture_error = link.finish_capture();
    let json = serde_json::to_string(&report).map_err(|e| format!("report: {e}"))?;
    write_all(out_fd, &format!("report {json}\n")).map_err(|e| format!("output: {e}"))?;
    Ok(())
}
