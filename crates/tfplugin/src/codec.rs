//! Wire encodings of [`Value`]: cty's msgpack (what Terraform sends in
//! `DynamicValue.msgpack`) and cty's JSON (state files, `DynamicValue.json`).
//!
//! msgpack rules (from cty's `msgpack` package): null is nil; an unknown
//! value is any extension (0 plain, 12 refined); a `dynamic` slot holds a
//! two-element array `[type JSON as bytes, value]`; numbers are integers,
//! float64 or, when neither is exact, decimal strings.

use std::collections::BTreeMap;

use rmpv::Value as Mp;
use serde_json::Value as Json;

use crate::diag::{AttributePath, PathStep};
use crate::types::Type;
use crate::value::{Number, Value};

/// A value that does not fit its type, or bytes that are not a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("at {path}: ") })]
pub struct ValueError {
    pub path: AttributePath,
    pub message: String,
}

fn err(path: &[PathStep], message: impl Into<String>) -> ValueError {
    ValueError {
        path: AttributePath(path.to_vec()),
        message: message.into(),
    }
}

/// cty's encoding of a plain unknown value: fixext1, type 0, one zero byte.
const UNKNOWN_EXT: i8 = 0;

impl Value {
    /// Decodes cty msgpack against `ty`.
    pub fn from_msgpack(bytes: &[u8], ty: &Type) -> Result<Value, ValueError> {
        let mut cursor = bytes;
        let mp = rmpv::decode::read_value(&mut cursor)
            .map_err(|e| err(&[], format!("invalid msgpack: {e}")))?;
        let mut path = Vec::new();
        from_mp(&mp, ty, &mut path)
    }

    /// Encodes as cty msgpack against `ty`. Objects may be given as `Map` and
    /// vice versa, and list/set/tuple are interchangeable: the type decides.
    /// Attributes missing from an object value are encoded as null.
    pub fn to_msgpack(&self, ty: &Type) -> Result<Vec<u8>, ValueError> {
        let mut path = Vec::new();
        let mp = to_mp(self, ty, &mut path)?;
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &mp)
            .map_err(|e| err(&[], format!("msgpack write failed: {e}")))?;
        Ok(out)
    }

    /// Decodes cty JSON (as stored in state) against `ty`. Object attributes
    /// that the type does not have are ignored, so state written by an older
    /// schema still decodes; missing ones become null.
    pub fn from_json(json: &Json, ty: &Type) -> Result<Value, ValueError> {
        let mut path = Vec::new();
        from_js(json, ty, &mut path)
    }

    pub fn from_json_bytes(bytes: &[u8], ty: &Type) -> Result<Value, ValueError> {
        let json: Json =
            serde_json::from_slice(bytes).map_err(|e| err(&[], format!("invalid JSON: {e}")))?;
        Value::from_json(&json, ty)
    }

    /// Encodes as cty JSON. Fails on unknown values, which JSON cannot carry.
    pub fn to_json(&self, ty: &Type) -> Result<Json, ValueError> {
        let mut path = Vec::new();
        to_js(self, ty, &mut path)
    }
}

// ------------------------------------------------------------------ msgpack

fn from_mp(mp: &Mp, ty: &Type, path: &mut Vec<PathStep>) -> Result<Value, ValueError> {
    match mp {
        Mp::Nil => return Ok(Value::Null),
        Mp::Ext(_, _) => return Ok(Value::Unknown),
        _ => {}
    }
    match ty {
        Type::Dynamic => {
            let pair = match mp {
                Mp::Array(items) if items.len() == 2 => items,
                _ => return Err(err(path, "dynamic value must be a [type, value] pair")),
            };
            let type_json: &[u8] = match &pair[0] {
                Mp::Binary(b) => b,
                Mp::String(s) => s.as_bytes(),
                _ => return Err(err(path, "dynamic value type must be JSON bytes")),
            };
            let actual = Type::from_json_bytes(type_json).map_err(|e| err(path, e.to_string()))?;
            from_mp(&pair[1], &actual, path)
        }
        Type::Bool => match mp {
            Mp::Boolean(b) => Ok(Value::Bool(*b)),
            _ => Err(err(path, "expected a bool")),
        },
        Type::String => match mp {
            Mp::String(s) => s
                .as_str()
                .map(Value::string)
                .ok_or_else(|| err(path, "string is not valid UTF-8")),
            _ => Err(err(path, "expected a string")),
        },
        Type::Number => mp_number(mp)
            .map(Value::Number)
            .ok_or_else(|| err(path, "expected a number")),
        Type::List(e) | Type::Set(e) => {
            let Mp::Array(items) = mp else {
                return Err(err(path, "expected an array"));
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::ElementKeyInt(i as i64));
                out.push(from_mp(item, e, path)?);
                path.pop();
            }
            Ok(if matches!(ty, Type::Set(_)) {
                Value::Set(out)
            } else {
                Value::List(out)
            })
        }
        Type::Tuple(types) => {
            let Mp::Array(items) = mp else {
                return Err(err(path, "expected an array"));
            };
            if items.len() != types.len() {
                return Err(err(
                    path,
                    format!("tuple needs {} elements, got {}", types.len(), items.len()),
                ));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, t)) in items.iter().zip(types).enumerate() {
                path.push(PathStep::ElementKeyInt(i as i64));
                out.push(from_mp(item, t, path)?);
                path.pop();
            }
            Ok(Value::Tuple(out))
        }
        Type::Map(e) => {
            let Mp::Map(entries) = mp else {
                return Err(err(path, "expected a map"));
            };
            let mut out = BTreeMap::new();
            for (k, v) in entries {
                let key = mp_key(k).ok_or_else(|| err(path, "map key must be a string"))?;
                path.push(PathStep::ElementKeyString(key.to_string()));
                out.insert(key.to_string(), from_mp(v, e, path)?);
                path.pop();
            }
            Ok(Value::Map(out))
        }
        Type::Object(attrs) => {
            let Mp::Map(entries) = mp else {
                return Err(err(path, "expected an object"));
            };
            let mut out = BTreeMap::new();
            for (k, v) in entries {
                let key = mp_key(k).ok_or_else(|| err(path, "attribute name must be a string"))?;
                let Some(at) = attrs.get(key) else {
                    return Err(err(path, format!("unsupported attribute {key:?}")));
                };
                path.push(PathStep::Attribute(key.to_string()));
                out.insert(key.to_string(), from_mp(v, at, path)?);
                path.pop();
            }
            for name in attrs.keys() {
                out.entry(name.clone()).or_insert(Value::Null);
            }
            Ok(Value::Object(out))
        }
    }
}

fn mp_key(k: &Mp) -> Option<&str> {
    match k {
        Mp::String(s) => s.as_str(),
        _ => None,
    }
}

fn mp_number(mp: &Mp) -> Option<Number> {
    match mp {
        Mp::Integer(i) => i
            .as_i64()
            .map(Number::from)
            .or_else(|| i.as_u64().map(Number::from)),
        Mp::F64(f) => float_number(*f),
        Mp::F32(f) => float_number(f64::from(*f)),
        Mp::String(s) => s.as_str().and_then(parse_number),
        _ => None,
    }
}

fn parse_number(s: &str) -> Option<Number> {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        return Some(Number::from(i));
    }
    if let Ok(u) = s.parse::<u64>() {
        return Some(Number::from(u));
    }
    s.parse::<f64>().ok().and_then(float_number)
}

/// A float as a [`Number`] in the form the encoder writes: whole numbers that fit an
/// i64 become integers, as cty writes them. Without this `3.0` decoded from one
/// encoding and `3` from another (or from our own output) compare unequal, and a value
/// changes across a decode/encode round trip.
fn float_number(f: f64) -> Option<Number> {
    if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 {
        Some(Number::from(f as i64))
    } else {
        Number::from_f64(f)
    }
}

/// A JSON number in the encoder's form (see [`float_number`]).
fn json_number(n: &Number) -> Number {
    if n.is_f64() {
        n.as_f64()
            .and_then(float_number)
            .unwrap_or_else(|| n.clone())
    } else {
        n.clone()
    }
}

fn to_mp(v: &Value, ty: &Type, path: &mut Vec<PathStep>) -> Result<Mp, ValueError> {
    match v {
        Value::Null => return Ok(Mp::Nil),
        Value::Unknown => return Ok(Mp::Ext(UNKNOWN_EXT, vec![0])),
        _ => {}
    }
    match (ty, v) {
        (Type::Dynamic, _) => {
            let actual = v.infer_type();
            let inner = to_mp(v, &actual, path)?;
            Ok(Mp::Array(vec![Mp::Binary(actual.to_json_bytes()), inner]))
        }
        (Type::Bool, Value::Bool(b)) => Ok(Mp::Boolean(*b)),
        (Type::String, Value::String(s)) => Ok(Mp::String(s.clone().into())),
        (Type::Number, Value::Number(n)) => Ok(number_to_mp(n)),
        (
            Type::List(e) | Type::Set(e),
            Value::List(items) | Value::Set(items) | Value::Tuple(items),
        ) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::ElementKeyInt(i as i64));
                out.push(to_mp(item, e, path)?);
                path.pop();
            }
            Ok(Mp::Array(out))
        }
        (Type::Tuple(types), Value::List(items) | Value::Set(items) | Value::Tuple(items)) => {
            if items.len() != types.len() {
                return Err(err(
                    path,
                    format!("tuple needs {} elements, got {}", types.len(), items.len()),
                ));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, t)) in items.iter().zip(types).enumerate() {
                path.push(PathStep::ElementKeyInt(i as i64));
                out.push(to_mp(item, t, path)?);
                path.pop();
            }
            Ok(Mp::Array(out))
        }
        (Type::Map(e), Value::Map(m) | Value::Object(m)) => {
            let mut out = Vec::with_capacity(m.len());
            for (k, item) in m {
                path.push(PathStep::ElementKeyString(k.clone()));
                out.push((Mp::String(k.clone().into()), to_mp(item, e, path)?));
                path.pop();
            }
            Ok(Mp::Map(out))
        }
        (Type::Object(attrs), Value::Object(m) | Value::Map(m)) => {
            if let Some(extra) = m.keys().find(|k| !attrs.contains_key(*k)) {
                return Err(err(
                    path,
                    format!("attribute {extra:?} is not in the schema"),
                ));
            }
            let mut out = Vec::with_capacity(attrs.len());
            for (name, at) in attrs {
                path.push(PathStep::Attribute(name.clone()));
                let item = m.get(name).unwrap_or(&Value::Null);
                out.push((Mp::String(name.clone().into()), to_mp(item, at, path)?));
                path.pop();
            }
            Ok(Mp::Map(out))
        }
        (ty, v) => Err(err(
            path,
            format!("value {} does not fit type {}", kind_name(v), ty.to_json()),
        )),
    }
}

fn number_to_mp(n: &Number) -> Mp {
    if let Some(i) = n.as_i64() {
        return Mp::from(i);
    }
    if let Some(u) = n.as_u64() {
        return Mp::from(u);
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    // cty writes whole numbers as integers; match it so values compare equal.
    match float_number(f).and_then(|n| n.as_i64()) {
        Some(i) => Mp::from(i),
        None => Mp::F64(f),
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Unknown => "unknown",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::List(_) => "list",
        Value::Set(_) => "set",
        Value::Map(_) => "map",
        Value::Object(_) => "object",
        Value::Tuple(_) => "tuple",
    }
}

// --------------------------------------------------------------------- JSON

fn from_js(js: &Json, ty: &Type, path: &mut Vec<PathStep>) -> Result<Value, ValueError> {
    if js.is_null() {
        return Ok(Value::Null);
    }
    match ty {
        Type::Dynamic => {
            let obj = js.as_object().ok_or_else(|| {
                err(
                    path,
                    "dynamic value must be an object with \"value\" and \"type\"",
                )
            })?;
            let type_json = obj
                .get("type")
                .ok_or_else(|| err(path, "dynamic value has no \"type\""))?;
            let actual = Type::from_json(type_json).map_err(|e| err(path, e.to_string()))?;
            from_js(obj.get("value").unwrap_or(&Json::Null), &actual, path)
        }
        Type::Bool => match js {
            Json::Bool(b) => Ok(Value::Bool(*b)),
            // cty converts these strings to bool; older states may hold them.
            Json::String(s) if s == "true" => Ok(Value::Bool(true)),
            Json::String(s) if s == "false" => Ok(Value::Bool(false)),
            _ => Err(err(path, "expected a bool")),
        },
        Type::String => match js {
            Json::String(s) => Ok(Value::string(s.clone())),
            Json::Number(n) => Ok(Value::string(n.to_string())),
            Json::Bool(b) => Ok(Value::string(b.to_string())),
            _ => Err(err(path, "expected a string")),
        },
        Type::Number => match js {
            Json::Number(n) => Ok(Value::Number(json_number(n))),
            Json::String(s) => parse_number(s)
                .map(Value::Number)
                .ok_or_else(|| err(path, format!("{s:?} is not a number"))),
            _ => Err(err(path, "expected a number")),
        },
        Type::List(e) | Type::Set(e) => {
            let items = js
                .as_array()
                .ok_or_else(|| err(path, "expected an array"))?;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::ElementKeyInt(i as i64));
                out.push(from_js(item, e, path)?);
                path.pop();
            }
            Ok(if matches!(ty, Type::Set(_)) {
                Value::Set(out)
            } else {
                Value::List(out)
            })
        }
        Type::Tuple(types) => {
            let items = js
                .as_array()
                .ok_or_else(|| err(path, "expected an array"))?;
            if items.len() != types.len() {
                return Err(err(
                    path,
                    format!("tuple needs {} elements, got {}", types.len(), items.len()),
                ));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, t)) in items.iter().zip(types).enumerate() {
                path.push(PathStep::ElementKeyInt(i as i64));
                out.push(from_js(item, t, path)?);
                path.pop();
            }
            Ok(Value::Tuple(out))
        }
        Type::Map(e) => {
            let obj = js
                .as_object()
                .ok_or_else(|| err(path, "expected an object"))?;
            let mut out = BTreeMap::new();
            for (k, v) in obj {
                path.push(PathStep::ElementKeyString(k.clone()));
                out.insert(k.clone(), from_js(v, e, path)?);
                path.pop();
            }
            Ok(Value::Map(out))
        }
        Type::Object(attrs) => {
            let obj = js
                .as_object()
                .ok_or_else(|| err(path, "expected an object"))?;
            let mut out = BTreeMap::new();
            for (name, at) in attrs {
                path.push(PathStep::Attribute(name.clone()));
                let v = match obj.get(name) {
                    Some(j) => from_js(j, at, path)?,
                    None => Value::Null,
                };
                path.pop();
                out.insert(name.clone(), v);
            }
            Ok(Value::Object(out))
        }
    }
}

fn to_js(v: &Value, ty: &Type, path: &mut Vec<PathStep>) -> Result<Json, ValueError> {
    match v {
        Value::Null => return Ok(Json::Null),
        Value::Unknown => return Err(err(path, "unknown values cannot be written as JSON")),
        _ => {}
    }
    match (ty, v) {
        (Type::Dynamic, _) => {
            let actual = v.infer_type();
            let inner = to_js(v, &actual, path)?;
            Ok(serde_json::json!({ "value": inner, "type": actual.to_json() }))
        }
        (Type::Bool, Value::Bool(b)) => Ok(Json::Bool(*b)),
        (Type::String, Value::String(s)) => Ok(Json::String(s.clone())),
        (Type::Number, Value::Number(n)) => Ok(Json::Number(n.clone())),
        (
            Type::List(e) | Type::Set(e),
            Value::List(items) | Value::Set(items) | Value::Tuple(items),
        ) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::ElementKeyInt(i as i64));
                out.push(to_js(item, e, path)?);
                path.pop();
            }
            Ok(Json::Array(out))
        }
        (Type::Tuple(types), Value::List(items) | Value::Set(items) | Value::Tuple(items)) => {
            if items.len() != types.len() {
                return Err(err(
                    path,
                    format!("tuple needs {} elements, got {}", types.len(), items.len()),
                ));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, t)) in items.iter().zip(types).enumerate() {
                path.push(PathStep::ElementKeyInt(i as i64));
                out.push(to_js(item, t, path)?);
                path.pop();
            }
            Ok(Json::Array(out))
        }
        (Type::Map(e), Value::Map(m) | Value::Object(m)) => {
            let mut out = serde_json::Map::new();
            for (k, item) in m {
                path.push(PathStep::ElementKeyString(k.clone()));
                out.insert(k.clone(), to_js(item, e, path)?);
                path.pop();
            }
            Ok(Json::Object(out))
        }
        (Type::Object(attrs), Value::Object(m) | Value::Map(m)) => {
            if let Some(extra) = m.keys().find(|k| !attrs.contains_key(*k)) {
                return Err(err(
                    path,
                    format!("attribute {extra:?} is not in the schema"),
                ));
            }
            let mut out = serde_json::Map::new();
            for (name, at) in attrs {
                path.push(PathStep::Attribute(name.clone()));
                let item = m.get(name).unwrap_or(&Value::Null);
                out.insert(name.clone(), to_js(item, at, path)?);
                path.pop();
            }
            Ok(Json::Object(out))
        }
        (ty, v) => Err(err(
            path,
            format!("value {} does not fit type {}", kind_name(v), ty.to_json()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `codec` fuzz target: a whole float64 decoded as a float Number,
    /// was written back as an integer and then decoded as a different Number.
    #[test]
    fn whole_float64_round_trips_to_the_same_value() {
        let bytes = [0xcb, 0x41, 0x7f, 0xf0, 0, 0, 0, 0, 0]; // float64 33488896.0
        let v = Value::from_msgpack(&bytes, &Type::Number).expect("decodes");
        let again = Value::from_msgpack(
            &v.to_msgpack(&Type::Number).expect("encodes"),
            &Type::Number,
        )
        .expect("decodes again");
        assert_eq!(v, again);
        assert_eq!(v, Value::int(33_488_896));
    }

    #[test]
    fn whole_numbers_compare_equal_from_every_encoding() {
        let from_json = Value::from_json_bytes(b"3.0", &Type::Number).expect("json");
        let from_string = Value::from_json_bytes(b"\"3.0\"", &Type::Number).expect("string");
        let from_float = Value::from_msgpack(&[0xcb, 0x40, 0x08, 0, 0, 0, 0, 0, 0], &Type::Number)
            .expect("float64");
        assert_eq!(from_json, Value::int(3));
        assert_eq!(from_string, Value::int(3));
        assert_eq!(from_float, Value::int(3));
        // Fractions and numbers beyond i64 stay floats.
        let half = Value::from_json_bytes(b"2.5", &Type::Number).expect("json");
        assert_eq!(half.as_f64(), Some(2.5));
        let big = Value::from_json_bytes(b"1e300", &Type::Number).expect("json");
        assert_eq!(big.as_f64(), Some(1e300));
    }
}
