//! The control channel: one bidirectional byte stream (a serial port, a virtio console,
//! or stdin/stdout), lines of JSON both ways.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::protocol::Command;
use crate::sender::{Done, Notices};

/// A terminal switched to raw mode, restored when dropped.
struct RawTerminal {
    fd: RawFd,
    saved: libc::termios,
}

impl RawTerminal {
    /// Raw mode on `fd` if it is a terminal (`None` if it is not): no echo, no line
    /// editing, no CR/NL translation, no signals from control characters, 8 data bits,
    /// and modem lines ignored (`CLOCAL`), so that every byte passes unchanged.
    fn enter(fd: RawFd) -> io::Result<Option<RawTerminal>> {
        // SAFETY: isatty only inspects the descriptor. A virtio serial port
        // (/dev/vportNpM) or a pipe is not a terminal and needs no set-up.
        if unsafe { libc::isatty(fd) } == 0 {
            return Ok(None);
        }
        // SAFETY: termios is plain data, filled by tcgetattr before any use.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut raw = saved;
        // SAFETY: `raw` is a valid termios obtained from tcgetattr. The line speed is
        // left alone: QEMU's serial and virtio consoles do not pace by it.
        unsafe { libc::cfmakeraw(&mut raw) };
        raw.c_cflag |= libc::CLOCAL | libc::CREAD;
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: valid fd and termios; TCSAFLUSH drops anything typed before raw mode.
        if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &raw) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Some(RawTerminal { fd, saved }))
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        // SAFETY: restores the settings read from the same descriptor.
        unsafe { libc::tcsetattr(self.fd, libc::TCSADRAIN, &self.saved) };
    }
}

/// Lines in, lines out.
pub struct Channel {
    reader: BufReader<Box<dyn Read>>,
    writer: Box<dyn Write>,
    /// The descriptor the reader reads, for polling (None over arbitrary readers).
    fd: Option<RawFd>,
    /// The end of input was met during a run.
    closed: bool,
    _raw: Option<RawTerminal>,
}

impl Channel {
    /// The character device at `path` (opened read-write, never as the controlling
    /// terminal), or stdin/stdout when `path` is `None`.
    pub fn open(path: Option<&Path>) -> io::Result<Channel> {
        match path {
            Some(path) => {
                let device = OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOCTTY).open(path)?;
                let raw = RawTerminal::enter(device.as_raw_fd())?;
                let writer: File = device.try_clone()?;
                let fd = Some(device.as_raw_fd());
                let reader = BufReader::new(Box::new(device) as Box<dyn Read>);
                Ok(Channel { reader, writer: Box::new(writer), fd, closed: false, _raw: raw })
            }
            None => {
                let raw = RawTerminal::enter(io::stdin().as_raw_fd())?;
                let fd = Some(io::stdin().as_raw_fd());
                let reader = BufReader::new(Box::new(io::stdin()) as Box<dyn Read>);
                Ok(Channel { reader, writer: Box::new(io::stdout().lock()), fd, closed: false, _raw: raw })
            }
        }
    }

    /// Over any reader and writer (tests).
    pub fn from_parts(reader: Box<dyn Read>, writer: Box<dyn Write>) -> Channel {
        Channel { reader: BufReader::new(reader), writer, fd: None, closed: false, _raw: None }
    }

    /// The next non-blank line without its end (`\n` or `\r\n`); `None` at end of input.
    pub fn read_line(&mut self) -> io::Result<Option<String>> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if self.reader.read_until(b'\n', &mut buf)? == 0 {
                return Ok(None);
            }
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim();
            if !line.is_empty() {
                return Ok(Some(line.to_owned()));
            }
        }
    }

    pub fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.writer.write_all(line.as_bytes())?;
        self.writer.flush()
    }
}

/// During a run the channel brings the receiver's notices of completed downloads
/// (`{"cmd": "done", ...}`); any other line is not for a running agent and is dropped.
impl Notices for Channel {
    fn fd(&self) -> Option<RawFd> {
        self.fd.filter(|_| !self.closed)
    }

    fn pending(&self) -> bool {
        !self.closed && !self.reader.buffer().is_empty()
    }

    fn take(&mut self) -> io::Result<Vec<Done>> {
        let mut out = Vec::new();
        loop {
            match self.read_line()? {
                None => {
                    self.closed = true;
                    break;
                }
                Some(line) => {
                    if let Ok(Command::Done(d)) = Command::parse(&line) {
                        out.push(d);
                    }
                }
            }
            if !self.pending() {
                break;
            }
        }
        Ok(out)
    }
}
