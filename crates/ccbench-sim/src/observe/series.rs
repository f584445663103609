//! Columnar time series, as handed to the front end (one row per flow per interval, one
//! per bottleneck interval, one per state-machine move).

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub enum Values {
    F64(Vec<f64>),
    U32(Vec<u32>),
    Str(Vec<&'static str>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table of equally long named columns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Table {
    pub columns: Vec<(String, Values)>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, v)| v.len())
    }
    pub fn column(&self, name: &str) -> Option<&Values> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
    pub fn f64s(&self, name: &str) -> Option<&[f64]> {
        match self.column(name)? {
            Values::F64(v) => Some(v),
            _ => None,
        }
    }
}

/// Time series of a run: per-flow samples, bottleneck samples, and the algorithms'
/// state-machine moves as they happened.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Series {
    pub flows: Table,
    pub link: Table,
    pub states: Table,
}
