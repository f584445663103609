//! Algorithm parameters, one behaviour for every algorithm.
//!
//! Each algorithm keeps its parameters in a typed struct in the kernel's own units
//! (`CubicParams`, `BbrParams`, `Bbr3Params`), whose `Default` (or `defaults`) is the one
//! place its kernel values are written. Beside it, a table of [`Param`]s names each
//! overridable field with its kernel name, its meaning and the range the algorithm can
//! run with. [`apply`] applies a scenario's overrides through that table: an unknown
//! name is rejected with the allowed names, a value out of range or of the wrong kind
//! (a fraction for a whole number) with the allowed range; nothing is clamped.
//! [`describe`] lists the same tables for the front end and the docs.

use super::bbr::model::BBR_UNIT;
use serde::Serialize;
use std::collections::BTreeMap;

/// How a scenario number is read into a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// 0 (off) or 1 (on).
    Flag,
    /// A whole number: the kernel holds an integer.
    Integer,
    /// A real number, rounded to BBR's fixed point of 1/256 (`BBR_UNIT`, tcp_bbr.c).
    Gain,
}

/// A field of a parameter struct that [`apply`] can set and [`describe`] can read.
pub trait Field {
    /// Store `x`, already checked against the parameter's kind and range.
    fn store(&mut self, kind: Kind, x: f64);
    /// The value in the scenario's units.
    fn read(&self, kind: Kind) -> f64;
}

impl Field for bool {
    fn store(&mut self, _kind: Kind, x: f64) {
        *self = x == 1.0;
    }
    fn read(&self, _kind: Kind) -> f64 {
        *self as u8 as f64
    }
}

impl Field for u32 {
    fn store(&mut self, kind: Kind, x: f64) {
        *self = match kind {
            Kind::Gain => (x * BBR_UNIT as f64).round() as u32,
            Kind::Flag | Kind::Integer => x as u32,
        };
    }
    fn read(&self, kind: Kind) -> f64 {
        match kind {
            Kind::Gain => *self as f64 / BBR_UNIT as f64,
            Kind::Flag | Kind::Integer => *self as f64,
        }
    }
}

/// One overridable parameter of an algorithm's struct `P`.
pub struct Param<P> {
    /// The name a scenario uses (`[[flows]] params = { name = value }`).
    pub name: &'static str,
    /// Where the kernel keeps it, e.g. `tcp_cubic.c: beta`.
    pub kernel: &'static str,
    pub meaning: &'static str,
    pub kind: Kind,
    /// The accepted values, inclusive, in the scenario's units.
    pub min: f64,
    pub max: f64,
    pub field: fn(&mut P) -> &mut dyn Field,
}

/// The smallest gain the /256 fixed point holds above zero.
pub const MIN_GAIN: f64 = 1.0 / BBR_UNIT as f64;
/// The largest gain the kernel can hold: the current gains live in 10-bit fields of
/// `struct bbr` (`pacing_gain:10, cwnd_gain:10`, tcp_bbr.c), so at most 1023/256.
pub const MAX_GAIN: f64 = 1023.0 / BBR_UNIT as f64;
/// The largest fraction below 1 the /256 fixed point holds (255/256).
pub const MAX_FRACTION: f64 = (BBR_UNIT - 1) as f64 / BBR_UNIT as f64;

/// A parameter's kind and inclusive range, for the rows of the tables.
pub type Range = (Kind, f64, f64);
/// A pacing or cwnd gain: above zero (a pacing gain of zero never sends).
pub const GAIN: Range = (Kind::Gain, MIN_GAIN, MAX_GAIN);
/// A fraction below 1, such as a multiplicative cut or a loss rate threshold.
pub const FRACTION: Range = (Kind::Gain, 0.0, MAX_FRACTION);
/// A proportion from 0 (off) to 1.
pub const PROPORTION: Range = (Kind::Gain, 0.0, 1.0);
/// A count of rounds, at least one (the counters hold 32 bits).
pub const ROUNDS: Range = (Kind::Integer, 1.0, 1e6);
pub const FLAG: Range = (Kind::Flag, 0.0, 1.0);

/// A row of a parameter table: `param!(name, kernel name, range, field, meaning)`.
macro_rules! param {
    ($name:literal, $kernel:literal, $range:expr, $field:ident, $meaning:literal) => {
        $crate::cc::params::Param {
            name: $name,
            kernel: $kernel,
            meaning: $meaning,
            kind: $range.0,
            min: $range.1,
            max: $range.2,
            field: |p| &mut p.$field,
        }
    };
}
pub(crate) use param;

/// A parameter rejected by [`apply`]: `name` is the scenario's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub name: String,
    pub message: String,
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.message)
    }
}

/// Range bounds as a person writes them: `717`, `0.5`, `0.00390625`.
fn number(x: f64) -> String {
    format!("{x}")
}

/// Check `x` against `p`: its kind, then its range.
fn check<P>(p: &Param<P>, x: f64) -> Result<(), String> {
    let range = format!("[{}, {}]", number(p.min), number(p.max));
    match p.kind {
        Kind::Flag if x != 0.0 && x != 1.0 => return Err(format!("is a flag: must be 0 or 1, got {x}")),
        Kind::Integer if x.fract() != 0.0 || !x.is_finite() => {
            return Err(format!("must be a whole number in {range}, got {x}"))
        }
        _ => {}
    }
    if !(p.min..=p.max).contains(&x) {
        return Err(format!("must be in {range}, got {x}"));
    }
    Ok(())
}

/// `defaults` with the named overrides of `algorithm` applied through `table`.
pub fn apply<P>(
    algorithm: &str,
    table: &[Param<P>],
    mut defaults: P,
    overrides: &BTreeMap<String, f64>,
) -> Result<P, ParamError> {
    for (name, &x) in overrides {
        let Some(p) = table.iter().find(|p| p.name == name) else {
            let message = if table.is_empty() {
                format!("{algorithm} takes no parameters")
            } else {
                let names: Vec<&str> = table.iter().map(|p| p.name).collect();
                format!("not a parameter of {algorithm}; allowed: {}", names.join(", "))
            };
            return Err(ParamError { name: name.clone(), message });
        };
        check(p, x).map_err(|message| ParamError { name: name.clone(), message })?;
        (p.field)(&mut defaults).store(p.kind, x);
    }
    Ok(defaults)
}

/// One row of [`describe`]: a parameter with its default, range and meaning.
#[derive(Clone, Debug, Serialize)]
pub struct Description {
    pub name: &'static str,
    pub kind: Kind,
    pub default: f64,
    pub min: f64,
    pub max: f64,
    pub kernel: &'static str,
    pub meaning: &'static str,
}

/// The rows of `table`, with defaults read from `defaults`.
pub fn describe<P>(table: &[Param<P>], mut defaults: P) -> Vec<Description> {
    table
        .iter()
        .map(|p| Description {
            name: p.name,
            kind: p.kind,
            default: (p.field)(&mut defaults).read(p.kind),
            min: p.min,
            max: p.max,
            kernel: p.kernel,
            meaning: p.meaning,
        })
        .collect()
}

#[cfg(test)]
mod tests;

/// An algorithm the kernel gives no module parameters: any override is an error.
pub fn none(algorithm: &str, overrides: &BTreeMap<String, f64>) -> Result<(), ParamError> {
    apply(algorithm, &[] as &[Param<()>], (), overrides)
}
