//! Columnar time series, as handed to the front end (one row per flow per interval, one
//! per bottleneck interval, one per state-machine move).

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// A column's values; in JSON, a plain list.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
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

/// A table of equally long named columns; in JSON, an object of them in order.
#[derive(Clone, Debug, Default)]
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

impl Serialize for Table {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.columns.len()))?;
        for (name, values) in &self.columns {
            map.serialize_entry(name, values)?;
        }
        map.end()
    }
}

/// Time series of a run: per-flow samples, bottleneck samples, and the algorithms'
/// state-machine moves as they happened.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Series {
    pub flows: Table,
    pub link: Table,
    pub states: Table,
    /// The arrivals' connections, one row each (empty without arrivals).
    pub connections: Table,
}
