//! What the TCP endpoints ask to be woken for. The world's event queue carries these
//! beside the other layers' wake-ups (`world::Event`).

/// Which sender timer fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SenderTimer {
    /// `icsk_retransmit_timer`: RTO, tail-loss probe or RACK reordering timeout.
    Retransmit,
    /// The internal pacing hrtimer (`tcp_pace_kick`).
    Pacing,
    /// TX completion of a throttled socket's skb (TCP Small Queues, `tcp_wfree`).
    TxCompletion,
}

/// A wake-up of flow `.0`'s endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// A sender timer expires.
    Sender(u32, SenderTimer),
    /// The receiver's delayed-ACK timer.
    DelayedAck(u32),
    /// The receiver's SACK-compression timer.
    SackCompress(u32),
    /// The retransmit timer of a receiver that opens its connection (its SYN, its request).
    Connect(u32),
}
