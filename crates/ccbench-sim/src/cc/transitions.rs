//! The moves of an algorithm's state machines (BBR's mode, v2/v3's PROBE_BW phase),
//! reported as they happen rather than sampled: a state shorter than the sampling
//! interval still shows.

use crate::time::Time;

/// One move: at `at`, machine `machine` entered `state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    pub at: Time,
    pub machine: &'static str,
    pub state: &'static str,
}

/// An algorithm's log of moves since it was last drained. It keeps nothing until
/// someone listens, so a run without time series pays one branch per move.
#[derive(Clone, Debug, Default)]
pub struct Transitions {
    listening: bool,
    log: Vec<Transition>,
}

impl Transitions {
    pub fn listen(&mut self) {
        self.listening = true;
    }

    pub fn push(&mut self, at: Time, machine: &'static str, state: &'static str) {
        if self.listening {
            self.log.push(Transition { at, machine, state });
        }
    }

    /// The moves logged since the last call, oldest first.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Transition> {
        self.log.drain(..)
    }
}

/// Test support: `can_move` allows exactly the moves in `legal` among `all` states.
#[cfg(test)]
pub fn assert_moves<T: Copy + PartialEq + std::fmt::Debug>(all: &[T], legal: &[(T, T)], can_move: fn(T, T) -> bool) {
    for &from in all {
        for &to in all {
            assert_eq!(can_move(from, to), legal.contains(&(from, to)), "{from:?} -> {to:?}");
        }
    }
}
