//! Terraform values, decoded from the wire against a [`Type`].
//!
//! A `Value` does not carry its type: the schema supplies it on decode and
//! encode. `Null` and `Unknown` are valid for every type. Refinements of
//! unknown values (msgpack extension 12) are not kept: they decode to plain
//! `Unknown`, which Terraform accepts as a weaker promise.

use std::collections::BTreeMap;

pub use serde_json::Number;

use crate::types::Type;

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Unknown,
    Bool(bool),
    Number(Number),
    String(String),
    List(Vec<Value>),
    Set(Vec<Value>),
    Map(BTreeMap<String, Value>),
    Object(BTreeMap<String, Value>),
    Tuple(Vec<Value>),
}

static NULL: Value = Value::Null;

impl Value {
    // ------------------------------------------------------------ builders

    pub fn string(s: impl Into<String>) -> Value {
        Value::String(s.into())
    }
    pub fn bool(b: bool) -> Value {
        Value::Bool(b)
    }
    pub fn int(i: i64) -> Value {
        Value::Number(Number::from(i))
    }
    /// `None` for NaN and infinities, which Terraform numbers cannot hold here.
    pub fn float(f: f64) -> Option<Value> {
        Number::from_f64(f).map(Value::Number)
    }
    pub fn list(items: impl IntoIterator<Item = Value>) -> Value {
        Value::List(items.into_iter().collect())
    }
    pub fn set(items: impl IntoIterator<Item = Value>) -> Value {
        Value::Set(items.into_iter().collect())
    }
    pub fn object<K: Into<String>>(attrs: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Object(attrs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
    pub fn map<K: Into<String>>(entries: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Map(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
    /// A `map(string)` value; `Value::Map` of strings.
    pub fn string_map<K: Into<String>, V: Into<String>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Value {
        Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (k.into(), Value::String(v.into())))
                .collect(),
        )
    }
    /// Like [`Value::string`] but `None` becomes `Null`.
    pub fn opt_string(s: Option<impl Into<String>>) -> Value {
        s.map_or(Value::Null, Value::string)
    }

    // ------------------------------------------------------------- queries

    /// Attribute or map entry; `Null` when absent or when `self` is not an
    /// object/map (including when it is null or unknown).
    pub fn get(&self, name: &str) -> &Value {
        match self {
            Value::Object(m) | Value::Map(m) => m.get(name).unwrap_or(&NULL),
            _ => &NULL,
        }
    }
    /// Mutable access to an object attribute or map entry, inserting `Null`.
    /// `None` when `self` is not an object or map.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        match self {
            Value::Object(m) | Value::Map(m) => Some(m.entry(name.to_string()).or_default()),
            _ => None,
        }
    }
    /// Sets an attribute (or map entry). Returns false when `self` is not an
    /// object or map.
    pub fn set_attr(&mut self, name: impl Into<String>, value: Value) -> bool {
        match self {
            Value::Object(m) | Value::Map(m) => {
                m.insert(name.into(), value);
                true
            }
            _ => false,
        }
    }
    /// Builder form of [`Value::set_attr`]: turns `Null` into an empty object first.
    pub fn with(mut self, name: impl Into<String>, value: Value) -> Value {
        if self.is_null() {
            self = Value::Object(BTreeMap::new());
        }
        self.set_attr(name, value);
        self
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// False only for `Unknown` itself; see [`Value::is_fully_known`].
    pub fn is_known(&self) -> bool {
        !matches!(self, Value::Unknown)
    }
    pub fn is_fully_known(&self) -> bool {
        match self {
            Value::Unknown => false,
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => v.iter().all(Value::is_fully_known),
            Value::Map(m) | Value::Object(m) => m.values().all(Value::is_fully_known),
            _ => true,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// Integers only; a fractional or out-of-range number gives `None`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= i64::MIN as f64 && *f <= i64::MAX as f64)
                    .map(|f| f as i64)
            }),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    /// Elements of a list, set or tuple.
    pub fn as_slice(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => Some(v),
            _ => None,
        }
    }
    /// Entries of a map or attributes of an object.
    pub fn as_map(&self) -> Option<&BTreeMap<String, Value>> {
        match self {
            Value::Map(m) | Value::Object(m) => Some(m),
            _ => None,
        }
    }
    /// A `map(string)` as plain strings. `Ok(None)` for null; an error names
    /// the first entry that is unknown, null or not a string.
    pub fn to_string_map(&self) -> Result<Option<BTreeMap<String, String>>, String> {
        match self {
            Value::Null => Ok(None),
            Value::Map(m) | Value::Object(m) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    Value::Unknown => Err(format!("value of {k:?} is not known yet")),
                    Value::Null => Err(format!("value of {k:?} is null")),
                    _ => Err(format!("value of {k:?} is not a string")),
                })
                .collect::<Result<_, _>>()
                .map(Some),
            Value::Unknown => Err("map is not known yet".into()),
            _ => Err("not a map".into()),
        }
    }
    /// Strings of a list/set/tuple of strings. `Ok(None)` for null.
    pub fn to_string_list(&self) -> Result<Option<Vec<String>>, String> {
        match self {
            Value::Null => Ok(None),
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => v
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(format!("element {i} is not a known string")),
                })
                .collect::<Result<_, _>>()
                .map(Some),
            Value::Unknown => Err("list is not known yet".into()),
            _ => Err("not a list".into()),
        }
    }

    /// Best-effort type of a value, used when a `dynamic` attribute must be
    /// encoded and only the value is at hand. Empty collections get element
    /// type `dynamic`; lists and sets take the type of their first element.
    pub fn infer_type(&self) -> Type {
        match self {
            Value::Null | Value::Unknown => Type::Dynamic,
            Value::Bool(_) => Type::Bool,
            Value::Number(_) => Type::Number,
            Value::String(_) => Type::String,
            Value::List(v) => Type::list(first_known_type(v)),
            Value::Set(v) => Type::set(first_known_type(v)),
            Value::Map(m) => Type::map(first_known_type(m.values())),
            Value::Object(m) => {
                Type::Object(m.iter().map(|(k, v)| (k.clone(), v.infer_type())).collect())
            }
            Value::Tuple(v) => Type::Tuple(v.iter().map(Value::infer_type).collect()),
        }
    }
}

impl Value {
    /// The value a JSON document spells, typed as Terraform infers the type of a literal:
    /// objects stay objects and arrays become tuples (their items may differ in type),
    /// so `m.spec.replicas` and `[for m in ... : m.kind]` work on a `dynamic` result.
    /// A number beyond what a float holds becomes null.
    pub fn from_untyped_json(json: &serde_json::Value) -> Value {
        use serde_json::Value as Json;
        match json {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => n
                .as_i64()
                .map(Value::int)
                .or_else(|| n.as_f64().and_then(Value::float))
                .unwrap_or(Value::Null),
            Json::String(s) => Value::string(s),
            Json::Array(items) => {
                Value::Tuple(items.iter().map(Value::from_untyped_json).collect())
            }
            Json::Object(m) => Value::object(
                m.iter()
                    .map(|(k, v)| (k.clone(), Value::from_untyped_json(v))),
            ),
        }
    }
}

fn first_known_type<'a>(items: impl IntoIterator<Item = &'a Value>) -> Type {
    items
        .into_iter()
        .map(Value::infer_type)
        .find(|t| *t != Type::Dynamic)
        .unwrap_or(Type::Dynamic)
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::int(i)
    }
}
