//! The world's events: its own (flow starts, the bottleneck's service, the delay lines,
//! sampling) and the wake-ups that the layers below schedule through `event::Schedule`.

use crate::host::CpuRun;
use crate::tcp::{SenderTimer, Wake};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    FlowStart(u32),
    /// The head of a flow's NIC pipe reaches the bottleneck.
    NicArrival(u32),
    /// The bottleneck's next service instant: its head packet is serialized, or (on a
    /// trace) a delivery opportunity comes.
    LinkTxDone,
    /// A delivery opportunity of the ACK direction's trace-driven link.
    AckLinkTxDone,
    /// Step `k` of the link's RTT schedule takes effect.
    RttStep(u32),
    /// The head of the forward delay line reaches its receiver.
    ReceiverArrival,
    /// The head of a flow's reverse path reaches its sender.
    AckArrival(u32),
    Sender(u32, SenderTimer),
    /// The receiver's delayed-ACK timer.
    DelayedAck(u32),
    /// The receiver's SACK-compression timer.
    SackCompress(u32),
    /// The sender host's CPU may take its next task.
    CpuRun,
    /// A flow opens its next connection for another download.
    FlowRestart(u32),
    Sample,
    End,
}

impl From<Wake> for Event {
    #[inline]
    fn from(w: Wake) -> Event {
        match w {
            Wake::Sender(i, k) => Event::Sender(i, k),
            Wake::NicArrival(i) => Event::NicArrival(i),
            Wake::DelayedAck(i) => Event::DelayedAck(i),
            Wake::SackCompress(i) => Event::SackCompress(i),
            Wake::AckArrival(i) => Event::AckArrival(i),
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
    /// The event's code in the run's trace hash (fixed: stored hashes depend on it).
    pub fn code(&self) -> u64 {
        match *self {
            Event::FlowStart(i) => 1 | (i as u64) << 8,
            Event::NicArrival(i) => 2 | (i as u64) << 8,
            Event::LinkTxDone => 3,
            Event::ReceiverArrival => 4,
            Event::AckArrival(i) => 5 | (i as u64) << 8,
            Event::Sender(i, k) => 6 | (k as u64) << 4 | (i as u64) << 8,
            Event::DelayedAck(i) => 7 | (i as u64) << 8,
            Event::SackCompress(i) => 8 | (i as u64) << 8,
            Event::Sample => 9,
            Event::End => 10,
            Event::AckLinkTxDone => 11,
            Event::RttStep(k) => 12 | (k as u64) << 8,
            Event::FlowRestart(i) => 13 | (i as u64) << 8,
            Event::CpuRun => 14,
        }
    }
}
