//! Integer settings' allowed ranges, declared beside their fields: the scenario check,
//! the front end's schema (`config::schema_facts`) and docs/input-ranges.md read them.

use serde::Serialize;

/// How a range's bounds read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A count, with the word for what it counts ("" for a plain number).
    Count(&'static str),
    Bytes,
    Nanoseconds,
    Picoseconds,
}

/// An integer field's allowed values, inclusive, and why they end where they do.
#[derive(Clone, Copy, Debug)]
pub struct Range {
    /// The field as it serializes (`rto_min_ns`).
    pub field: &'static str,
    pub lo: u64,
    pub hi: u64,
    pub unit: Unit,
    pub why: &'static str,
}

impl Range {
    /// The scenario's key: the field without its unit suffix (`rto_min`, `limit`).
    pub fn key(&self) -> &'static str {
        ["_ns", "_bytes", "_packets"].iter().find_map(|unit| self.field.strip_suffix(unit)).unwrap_or(self.field)
    }
}

/// The first of `ranges` that `value`'s field is outside of, with the field's value. A
/// field that is unset (`None`) is not checked.
pub fn first_out_of_range<T: Serialize>(value: &T, ranges: &'static [Range]) -> Option<(&'static Range, u64)> {
    let fields = serde_json::to_value(value).expect("plain fields serialize");
    ranges.iter().find_map(|r| {
        let v = &fields[r.field];
        if v.is_null() {
            return None;
        }
        let v = v.as_u64().unwrap_or_else(|| panic!("{} is not an unsigned integer", r.field));
        (!(r.lo..=r.hi).contains(&v)).then_some((r, v))
    })
}
