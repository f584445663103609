//! Where the run loop hands what happens to the packet capture, if the run has one:
//! without one each tap is a single branch, and the loop reads the same either way.

use crate::config::ConfigError;
use crate::observe::capture::Capture;
use crate::time::Time;

#[derive(Default)]
pub(super) struct Taps(Option<Capture>);

impl Taps {
    pub fn new(capture: Capture) -> Taps {
        Taps(Some(capture))
    }

    #[inline]
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Hand something to the capture, if there is one.
    #[inline]
    pub fn tap(&mut self, f: impl FnOnce(&mut Capture)) {
        if let Some(c) = self.0.as_mut() {
            f(c);
        }
    }

    /// Write what is due by `end` and close the files: the first error writing them.
    pub fn finish(&mut self, end: Time) -> Result<(), ConfigError> {
        self.0.take().map_or(Ok(()), |c| c.finish(end))
    }
}
