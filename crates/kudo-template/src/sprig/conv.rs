//! Sprig v2's casts (`toInt64`, `toFloat64`, `strval`, `strslice`) and the type
//! conversion functions built on them.
//!
//! v2 (unlike v3, which uses spf13/cast) parses strings with `strconv.ParseInt(s, 10,
//! 64)` / `ParseFloat(s, 64)` and yields 0 when that fails; floats truncate to
//! integers; booleans are 0/1; anything else is 0.

use gotmpl::Value;

use super::Reg;
use super::args::{arity, s, string, strings};
use crate::gofmt::sprint;

pub(crate) fn to_int64(v: &Value) -> i64 {
    match v {
        Value::String(st) => st.parse::<i64>().unwrap_or(0),
        Value::Int(i) => *i,
        Value::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

pub(crate) fn to_float64(v: &Value) -> f64 {
    match v {
        Value::String(st) => parse_go_float(st).unwrap_or(0.0),
        Value::Int(i) => *i as f64,
        Value::Uint(u) => *u as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => 0.0,
    }
}

/// `strconv.ParseFloat` for decimal input (Go's hex floats are not supported).
fn parse_go_float(st: &str) -> Option<f64> {
    if st.is_empty() || st.contains('_') {
        return None;
    }
    st.parse::<f64>().ok()
}

/// Sprig's `strval`: strings as they are, everything else through `%v`.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(st) => st.to_string(),
        other => sprint(other),
    }
}

/// Sprig's `strslice`: a list's non-nil items as strings; a scalar as a one-item list;
/// nil as an empty list.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(items) => items
            .iter()
            .filter(|i| !matches!(i, Value::Nil))
            .map(strval)
            .collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

pub(super) fn register(m: &mut Reg) {
    m.add("toString", |a| {
        arity("toString", a, 1)?;
        Ok(s(strval(&a[0])))
    });
    m.add("atoi", |a| {
        arity("atoi", a, 1)?;
        Ok(Value::Int(
            string("atoi", &a[0])?.parse::<i64>().unwrap_or(0),
        ))
    });
    m.add("int", |a| {
        arity("int", a, 1)?;
        Ok(Value::Int(to_int64(&a[0])))
    });
    m.add("int64", |a| {
        arity("int64", a, 1)?;
        Ok(Value::Int(to_int64(&a[0])))
    });
    m.add("float64", |a| {
        arity("float64", a, 1)?;
        Ok(Value::Float(to_float64(&a[0])))
    });
    m.add("toDecimal", |a| {
        arity("toDecimal", a, 1)?;
        Ok(Value::Int(
            i64::from_str_radix(&strval(&a[0]), 8).unwrap_or(0),
        ))
    });
    m.add("toStrings", |a| {
        arity("toStrings", a, 1)?;
        Ok(strings(strslice(&a[0])))
    });
    m.add("toJson", |a| {
        arity("toJson", a, 1)?;
        Ok(s(super::json::to_json(&a[0], false)))
    });
    m.add("toPrettyJson", |a| {
        arity("toPrettyJson", a, 1)?;
        Ok(s(super::json::to_json(&a[0], true)))
    });
    m.add("toYaml", |a| {
        arity("toYaml", a, 1)?;
        Ok(s(crate::toyaml::to_yaml(&a[0])))
    });
}
