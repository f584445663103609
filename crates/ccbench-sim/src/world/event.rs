//! The world's events: its own (flow starts, sampling) and the wake-ups that the layers
//! below schedule through `event::Schedule` (the path's, the endpoints', the host's).

use crate::host::CpuRun;
use crate::net::PathWake;
use crate::tcp::{SenderTimer, Wake};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    FlowStart(u32),
    /// The path's wake-ups (`PathWake`), flat so that an event stays eight bytes.
    NicExit(u32),
    BottleneckService,
    ReverseService,
    ForwardExit,
    ReverseExit(u32),
    RttStep(u32),
    FarNicExit(u32),
    Sender(u32, SenderTimer),
    /// The receiver's delayed-ACK timer.
    DelayedAck(u32),
    /// The receiver's SACK-compression timer.
    SackCompress(u32),
    /// The retransmit timer of a receiver that opens its connection.
    Connect(u32),
    /// The sender host's CPU may take its next task.
    CpuRun,
    /// A flow opens its next connection for another download.
    FlowRestart(u32),
    /// An ICMP "fragmentation needed" reaches flow `.0`'s sender.
    Icmp(u32),
    /// UDP flow `.0`'s source is due.
    UdpSend(u32),
    /// A connection of group `.0` of arrivals arrives.
    Arrival(u32),
    Sample,
    End,
}

impl From<Wake> for Event {
    #[inline]
    fn from(w: Wake) -> Event {
        match w {
            Wake::Sender(i, k) => Event::Sender(i, k),
            Wake::DelayedAck(i) => Event::DelayedAck(i),
            Wake::SackCompress(i) => Event::SackCompress(i),
            Wake::Connect(i) => Event::Connect(i),
        }
    }
}

impl From<PathWake> for Event {
    #[inline]
    fn from(w: PathWake) -> Event {
        match w {
            PathWake::NicExit(i) => Event::NicExit(i),
            PathWake::BottleneckService => Event::BottleneckService,
            PathWake::ReverseService => Event::ReverseService,
            PathWake::ForwardExit => Event::ForwardExit,
            PathWake::ReverseExit(i) => Event::ReverseExit(i),
            PathWake::RttStep(k) => Event::RttStep(k),
            PathWake::FarNicExit(i) => Event::FarNicExit(i),
        }
    }
}

impl From<CpuRun> for Event {
    #[inline]
    fn from(_: CpuRun) -> Event {
        Event::CpuRun
    }
}

impl Event {
    /// The path's wake-up this event carries, if it is one.
    #[inline]
    pub fn path_wake(self) -> Option<PathWake> {
        Some(match self {
            Event::NicExit(i) => PathWake::NicExit(i),
            Event::BottleneckService => PathWake::BottleneckService,
            Event::ReverseService => PathWake::ReverseService,
            Event::ForwardExit => PathWake::ForwardExit,
            Event::ReverseExit(i) => PathWake::ReverseExit(i),
            Event::RttStep(k) => PathWake::RttStep(k),
            Event::FarNicExit(i) => PathWake::FarNicExit(i),
            _ => return None,
        })
    }

    /// The event's code in the run's trace hash (fixed: stored hashes depend on it).
    pub fn code(&self) -> u64 {
        match *self {
            Event::FlowStart(i) => 1 | (i as u64) << 8,
            Event::NicExit(i) => 2 | (i as u64) << 8,
            Event::BottleneckService => 3,
            Event::ForwardExit => 4,
            Event::ReverseExit(i) => 5 | (i as u64) << 8,
            Event::Sender(i, k) => 6 | (k as u64) << 4 | (i as u64) << 8,
            Event::DelayedAck(i) => 7 | (i as u64) << 8,
            Event::SackCompress(i) => 8 | (i as u64) << 8,
            Event::Sample => 9,
            Event::End => 10,
            Event::ReverseService => 11,
            Event::RttStep(k) => 12 | (k as u64) << 8,
            Event::FlowRestart(i) => 13 | (i as u64) << 8,
            Event::CpuRun => 14,
            Event::Connect(i) => 15 | (i as u64) << 8,
            Event::Icmp(i) => 16 | (i as u64) << 8,
            Event::FarNicExit(i) => 17 | (i as u64) << 8,
            Event::UdpSend(k) => 18 | (k as u64) << 8,
            Event::Arrival(k) => 19 | (k as u64) << 8,
        }
    }
}
