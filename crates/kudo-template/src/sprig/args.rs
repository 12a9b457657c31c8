//! Argument handling shaped after Go's reflection-based calls: typed parameters
//! (`string`, `int`, `bool`) reject other types as text/template does; `interface{}`
//! parameters take anything and are converted with Sprig's own casts (see `conv`).

use std::sync::Arc;

use gotmpl::{TemplateError, Value};

use crate::gofmt::type_name;

pub(crate) type R = Result<Value, TemplateError>;

/// An error as text/template reports a failing function: "error calling NAME: ...".
pub(crate) fn fail(name: &str, msg: impl std::fmt::Display) -> TemplateError {
    TemplateError::Exec(format!("error calling {name}: {msg}"))
}

/// The largest string a template function may build, and the most items a list may
/// have. Go has no such limits, but no template needs more: Kubernetes refuses objects
/// above about 1.5 MiB, and without a bound `{{ repeat 1000000000 "x" }}` or
/// `{{ until 1000000000 }}` in a package exhausts the provider's memory.
pub(crate) const MAX_RESULT_BYTES: usize = 16 << 20;
pub(crate) const MAX_LIST_ITEMS: usize = 1 << 20;

/// Refuse a string result of `size` bytes (computed with saturating arithmetic) before
/// it is built.
pub(crate) fn check_size(name: &str, size: usize) -> Result<(), TemplateError> {
    if size > MAX_RESULT_BYTES {
        return Err(fail(
            name,
            format!(
                "the result would be {size} bytes, more than the {MAX_RESULT_BYTES} a template function may produce"
            ),
        ));
    }
    Ok(())
}

pub(crate) fn arity(name: &str, args: &[Value], n: usize) -> Result<(), TemplateError> {
    if args.len() != n {
        return Err(fail(
            name,
            format!(
                "wrong number of args for {name}: want {n} got {}",
                args.len()
            ),
        ));
    }
    Ok(())
}

pub(crate) fn arity_min(name: &str, args: &[Value], n: usize) -> Result<(), TemplateError> {
    if args.len() < n {
        return Err(fail(
            name,
            format!(
                "wrong number of args for {name}: want at least {n} got {}",
                args.len()
            ),
        ));
    }
    Ok(())
}

fn wrong_type(name: &str, expected: &str, got: &Value) -> TemplateError {
    fail(
        name,
        format!(
            "wrong type for value; expected {expected}; got {}",
            type_name(got)
        ),
    )
}

/// A Go `string` parameter.
pub(crate) fn string(name: &str, v: &Value) -> Result<Arc<str>, TemplateError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Nil => Err(fail(name, "invalid value; expected string")),
        other => Err(wrong_type(name, "string", other)),
    }
}

/// A Go `int` parameter: integers only (Go will not convert a float64 or a string).
pub(crate) fn int(name: &str, v: &Value) -> Result<i64, TemplateError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Uint(u) => i64::try_from(*u).map_err(|_| fail(name, format!("{u} overflows int"))),
        Value::Nil => Err(fail(name, "invalid value; expected int")),
        other => Err(wrong_type(name, "int", other)),
    }
}

/// A Go `bool` parameter.
pub(crate) fn boolean(name: &str, v: &Value) -> Result<bool, TemplateError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Nil => Err(fail(name, "invalid value; expected bool")),
        other => Err(wrong_type(name, "bool", other)),
    }
}

/// A Go `map[string]interface{}` parameter.
pub(crate) fn dict(
    name: &str,
    v: &Value,
) -> Result<Arc<std::collections::BTreeMap<Arc<str>, Value>>, TemplateError> {
    match v {
        Value::Map(m) => Ok(m.clone()),
        Value::Nil => Ok(Arc::new(Default::default())),
        other => Err(wrong_type(name, "map[string]interface {}", other)),
    }
}

pub(crate) fn s(v: impl AsRef<str>) -> Value {
    Value::String(Arc::from(v.as_ref()))
}

pub(crate) fn strings(items: impl IntoIterator<Item = String>) -> Value {
    Value::List(items.into_iter().map(s).collect())
}
