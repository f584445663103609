//! Windowed running min/max over (time, value) samples: Kathleen Nichols' estimator
//! as in `lib/win_minmax.c`. It keeps the best, second- and third-best samples of the
//! window so the best can be replaced when it ages out without storing every sample.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub t: u32,
    pub v: u64,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct MinMax {
    s: [Sample; 3],
}

impl MinMax {
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    pub fn reset(&mut self, t: u32, v: u64) -> u64 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// Age the candidates: a best older than the window gives way to the next one; after
    /// a quarter (half) of the window without news the second (third) choice is refreshed.
    fn subwin_update(&mut self, win: u32, val: Sample) -> u64 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            self.s = [self.s[1], self.s[2], val];
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].v
    }

    pub fn running_max(&mut self, win: u32, t: u32, v: u64) -> u64 {
        let val = Sample { t, v };
        if v >= self.s[0].v || t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    pub fn running_min(&mut self, win: u32, t: u32, v: u64) -> u64 {
        let val = Sample { t, v };
        if v <= self.s[0].v || t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if v <= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_survives_its_window_then_falls_to_later_candidates() {
        let mut m = MinMax::default();
        m.reset(0, 100);
        for t in 1..=10 {
            assert_eq!(m.running_max(10, t, 50), 100);
        }
        // At t=11 the best is 11 rounds old: a later candidate (50) takes over.
        assert_eq!(m.running_max(10, 11, 40), 50);
    }

    #[test]
    fn min_takes_new_lower_values_immediately() {
        let mut m = MinMax::default();
        m.reset(0, 30);
        assert_eq!(m.running_min(100, 5, 20), 20);
        assert_eq!(m.running_min(100, 6, 25), 20);
    }
}
