//! Typed models of Terraform values: decode a [`Value`] object into a Rust struct and
//! encode it back, so that resource code reads `model.namespace` rather than
//! `value.get("namespace")`.
//!
//! [`FromValue`] and [`IntoValue`] are implemented for the scalar types, `Option`,
//! `Vec`, `BTreeMap<String, _>`, [`Value`] itself (for data a struct would add nothing
//! to) and [`Attr`], which keeps Terraform's three states (null, unknown, known). The
//! [`model!`](crate::model!) macro declares a struct whose fields are the object's
//! attributes and implements both traits for it.
//!
//! Decoding is strict about shape (a string attribute holding a number is an error
//! naming the attribute path) but lenient about absence: an attribute the value lacks
//! decodes as null, and attributes the model does not name are ignored. A model that
//! must round-trip a whole resource value names every attribute of its schema.

use std::collections::BTreeMap;

use crate::diag::{AttributePath, Diagnostic};
use crate::value::{Number, Value};

/// An attribute that may be null, not known yet (during plan), or known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Attr<T> {
    #[default]
    Null,
    Unknown,
    Known(T),
}

impl<T> Attr<T> {
    pub fn is_null(&self) -> bool {
        matches!(self, Attr::Null)
    }
    pub fn is_unknown(&self) -> bool {
        matches!(self, Attr::Unknown)
    }
    pub fn is_known(&self) -> bool {
        matches!(self, Attr::Known(_))
    }
    /// The value when known; `None` for null and unknown alike.
    pub fn known(&self) -> Option<&T> {
        match self {
            Attr::Known(v) => Some(v),
            _ => None,
        }
    }
    pub fn into_known(self) -> Option<T> {
        match self {
            Attr::Known(v) => Some(v),
            _ => None,
        }
    }
    pub fn as_ref(&self) -> Attr<&T> {
        match self {
            Attr::Null => Attr::Null,
            Attr::Unknown => Attr::Unknown,
            Attr::Known(v) => Attr::Known(v),
        }
    }
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Attr<U> {
        match self {
            Attr::Null => Attr::Null,
            Attr::Unknown => Attr::Unknown,
            Attr::Known(v) => Attr::Known(f(v)),
        }
    }
    /// The known value as its dereferenced form (`&str` for `Attr<String>`).
    pub fn as_deref(&self) -> Option<&T::Target>
    where
        T: std::ops::Deref,
    {
        self.known().map(|v| &**v)
    }
}

impl<T> From<Option<T>> for Attr<T> {
    /// `None` is null.
    fn from(v: Option<T>) -> Attr<T> {
        v.map_or(Attr::Null, Attr::Known)
    }
}

impl From<&str> for Attr<String> {
    fn from(v: &str) -> Attr<String> {
        Attr::Known(v.to_string())
    }
}

impl From<String> for Attr<String> {
    fn from(v: String) -> Attr<String> {
        Attr::Known(v)
    }
}

/// Decoding from a [`Value`]; `path` is where the value sits, for the diagnostic.
pub trait FromValue: Sized {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic>;
}

/// Encoding into a [`Value`]; the server then encodes that against the schema type.
pub trait IntoValue {
    fn into_value(self) -> Value;
}

impl Value {
    /// Decodes the whole value (the root of a resource, data source or provider
    /// configuration) into a model.
    pub fn decode<T: FromValue>(&self) -> Result<T, Diagnostic> {
        T::from_value(self, &AttributePath::new())
    }
}

/// Encodes a model; the counterpart of [`Value::decode`].
pub fn encode<T: IntoValue>(model: T) -> Value {
    model.into_value()
}

/// The error for a value of the wrong shape at `path`.
pub fn invalid(path: &AttributePath, expected: &str, found: &Value) -> Diagnostic {
    let found = match found {
        Value::Null => "null",
        Value::Unknown => "a value not known yet",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::List(_) => "a list",
        Value::Set(_) => "a set",
        Value::Map(_) => "a map",
        Value::Object(_) => "an object",
        Value::Tuple(_) => "a tuple",
    };
    let at = match path.is_empty() {
        true => "the value".to_string(),
        false => format!("{path}"),
    };
    let d = Diagnostic::error(
        "Unexpected attribute value",
        format!(
            "Expected {expected} for {at}, found {found}. This is a bug in the provider: its model does not match its schema."
        ),
    );
    match path.is_empty() {
        true => d,
        false => d.with_attribute(path.clone()),
    }
}

/// The attributes of an object value, for [`model!`](crate::model!)'s decoder.
pub fn object_attributes<'v>(
    value: &'v Value,
    path: &AttributePath,
) -> Result<&'v BTreeMap<String, Value>, Diagnostic> {
    match value {
        Value::Object(m) => Ok(m),
        other => Err(invalid(path, "an object", other)),
    }
}

/// One attribute of an object, absent meaning null, decoded at `path.name`.
pub fn attribute<T: FromValue>(
    attrs: &BTreeMap<String, Value>,
    path: &AttributePath,
    name: &str,
) -> Result<T, Diagnostic> {
    static NULL: Value = Value::Null;
    T::from_value(attrs.get(name).unwrap_or(&NULL), &path.clone().attr(name))
}

impl FromValue for Value {
    fn from_value(value: &Value, _: &AttributePath) -> Result<Self, Diagnostic> {
        Ok(value.clone())
    }
}

impl IntoValue for Value {
    fn into_value(self) -> Value {
        self
    }
}

impl FromValue for String {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic> {
        match value {
            Value::String(s) => Ok(s.clone()),
            other => Err(invalid(path, "a string", other)),
        }
    }
}

impl IntoValue for String {
    fn into_value(self) -> Value {
        Value::String(self)
    }
}

impl IntoValue for &str {
    fn into_value(self) -> Value {
        Value::string(self)
    }
}

impl FromValue for bool {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic> {
        match value {
            Value::Bool(b) => Ok(*b),
            other => Err(invalid(path, "a bool", other)),
        }
    }
}

impl IntoValue for bool {
    fn into_value(self) -> Value {
        Value::Bool(self)
    }
}

impl FromValue for i64 {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic> {
        value
            .as_i64()
            .ok_or_else(|| invalid(path, "a whole number", value))
    }
}

impl IntoValue for i64 {
    fn into_value(self) -> Value {
        Value::int(self)
    }
}

impl FromValue for Number {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic> {
        match value {
            Value::Number(n) => Ok(n.clone()),
            other => Err(invalid(path, "a number", other)),
        }
    }
}

impl IntoValue for Number {
    fn into_value(self) -> Value {
        Value::Number(self)
    }
}

/// Null is `None`; an unknown value is an error (use [`Attr`] where it may occur).
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic> {
        match value {
            Value::Null => Ok(None),
            v => T::from_value(v, path).map(Some),
        }
    }
}

impl<T: IntoValue> IntoValue for Option<T> {
    fn into_value(self) -> Value {
        self.map_or(Value::Null, IntoValue::into_value)
    }
}

impl<T: FromValue> FromValue for Attr<T> {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic> {
        match value {
            Value::Null => Ok(Attr::Null),
            Value::Unknown => Ok(Attr::Unknown),
            v => T::from_value(v, path).map(Attr::Known),
        }
    }
}

impl<T: IntoValue> IntoValue for Attr<T> {
    fn into_value(self) -> Value {
        match self {
            Attr::Null => Value::Null,
            Attr::Unknown => Value::Unknown,
            Attr::Known(v) => v.into_value(),
        }
    }
}

/// A list, set or tuple. Elements are addressed by index in diagnostics.
impl<T: FromValue> FromValue for Vec<T> {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic> {
        match value {
            Value::List(items) | Value::Set(items) | Value::Tuple(items) => items
                .iter()
                .zip(0_i64..)
                .map(|(v, i)| T::from_value(v, &path.clone().index(i)))
                .collect(),
            other => Err(invalid(path, "a list", other)),
        }
    }
}

/// Encodes as a list; keep a set-typed attribute as [`Value`] to keep it a set.
impl<T: IntoValue> IntoValue for Vec<T> {
    fn into_value(self) -> Value {
        Value::List(self.into_iter().map(IntoValue::into_value).collect())
    }
}

impl<T: FromValue> FromValue for BTreeMap<String, T> {
    fn from_value(value: &Value, path: &AttributePath) -> Result<Self, Diagnostic> {
        match value {
            Value::Map(m) => m
                .iter()
                .map(|(k, v)| Ok((k.clone(), T::from_value(v, &path.clone().key(k.clone()))?)))
                .collect(),
            other => Err(invalid(path, "a map", other)),
        }
    }
}

impl<T: IntoValue> IntoValue for BTreeMap<String, T> {
    fn into_value(self) -> Value {
        Value::Map(self.into_iter().map(|(k, v)| (k, v.into_value())).collect())
    }
}

/// Declares a model struct for an object value: one field per attribute, named as the
/// attribute, with [`FromValue`] and [`IntoValue`] implementations and
/// `ATTRIBUTES`, the attribute names in declaration order (for a test that the model
/// covers its schema).
///
/// ```
/// use tfplugin::{Attr, Value};
///
/// tfplugin::model! {
///     /// `example_thing`.
///     #[derive(Debug, Clone, PartialEq)]
///     pub struct Thing {
///         pub name: String,
///         pub size: Attr<i64>,
///         pub labels: Option<std::collections::BTreeMap<String, String>>,
///     }
/// }
///
/// let v = Value::object([("name", Value::string("a")), ("size", Value::Unknown)]);
/// let thing: Thing = v.decode().expect("decodes");
/// assert_eq!(thing.size, Attr::Unknown);
/// assert_eq!(thing.labels, None);
/// assert_eq!(Thing::ATTRIBUTES, ["name", "size", "labels"]);
/// ```
#[macro_export]
macro_rules! model {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                $field_vis:vis $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                $(#[$field_meta])*
                $field_vis $field: $ty,
            )*
        }

        impl $name {
            /// The attribute names, in declaration order.
            #[allow(dead_code)]
            pub const ATTRIBUTES: &'static [&'static str] = &[$(stringify!($field)),*];
        }

        impl $crate::FromValue for $name {
            fn from_value(
                value: &$crate::Value,
                path: &$crate::AttributePath,
            ) -> ::std::result::Result<Self, $crate::Diagnostic> {
                let attrs = $crate::model::object_attributes(value, path)?;
                Ok($name {
                    $($field: $crate::model::attribute(attrs, path, stringify!($field))?,)*
                })
            }
        }

        impl $crate::IntoValue for $name {
            fn into_value(self) -> $crate::Value {
                $crate::Value::object([
                    $((stringify!($field), $crate::IntoValue::into_value(self.$field)),)*
                ])
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::PathStep;

    crate::model! {
        #[derive(Debug, Clone, PartialEq)]
        struct Timeouts {
            create: Attr<String>,
        }
    }

    crate::model! {
        #[derive(Debug, Clone, PartialEq)]
        struct Thing {
            name: String,
            namespace: Attr<String>,
            count: Option<i64>,
            enabled: Attr<bool>,
            labels: Attr<BTreeMap<String, String>>,
            items: Vec<String>,
            raw: Value,
            timeouts: Attr<Timeouts>,
        }
    }

    fn thing() -> Value {
        Value::object([
            ("name", Value::string("a")),
            ("namespace", Value::Unknown),
            ("count", Value::Null),
            ("enabled", Value::bool(true)),
            ("labels", Value::string_map([("k", "v")])),
            ("items", Value::list([Value::string("x")])),
            ("raw", Value::map([("p", Value::Unknown)])),
            (
                "timeouts",
                Value::object([("create", Value::string("10m"))]),
            ),
        ])
    }

    #[test]
    fn null_unknown_and_known_decode_apart_and_encode_back() {
        let v = thing();
        let t: Thing = v.decode().expect("decodes");
        assert_eq!(t.name, "a");
        assert_eq!(t.namespace, Attr::Unknown);
        assert_eq!(t.count, None);
        assert_eq!(t.enabled, Attr::Known(true));
        assert_eq!(
            t.labels
                .known()
                .and_then(|l| l.get("k"))
                .map(String::as_str),
            Some("v")
        );
        assert_eq!(t.items, ["x"]);
        assert_eq!(t.raw, Value::map([("p", Value::Unknown)]));
        assert_eq!(
            t.timeouts.known().map(|t| t.create.clone()),
            Some(Attr::Known("10m".to_string()))
        );
        assert_eq!(encode(t), v, "a decoded value encodes to itself");
    }

    #[test]
    fn absent_attributes_are_null_and_extra_ones_are_ignored() {
        let v = Value::object([
            ("name", Value::string("a")),
            ("items", Value::list([])),
            ("other", Value::bool(true)),
        ]);
        let t: Thing = v.decode().expect("decodes");
        assert_eq!(t.namespace, Attr::Null);
        assert_eq!(t.timeouts, Attr::Null);
        assert_eq!(t.raw, Value::Null);
        assert_eq!(encode(t).get("other"), &Value::Null);
        assert_eq!(Thing::ATTRIBUTES.len(), 8);
        let none: Option<Thing> = Value::Null.decode().expect("null");
        assert_eq!(none, None);
    }

    #[test]
    fn a_wrong_type_is_a_diagnostic_naming_the_path() {
        let mut v = thing();
        v.set_attr("timeouts", Value::object([("create", Value::int(5))]));
        let d = v.decode::<Thing>().expect_err("a number is not a string");
        assert!(d.is_error());
        assert_eq!(
            d.attribute,
            Some(AttributePath::attribute("timeouts").attr("create"))
        );
        assert!(d.detail.contains("timeouts.create"), "{}", d.detail);
        assert!(
            d.detail.contains("a string") && d.detail.contains("a number"),
            "{}",
            d.detail
        );

        let mut v = thing();
        v.set_attr("labels", Value::map([("k", Value::bool(false))]));
        let d = v.decode::<Thing>().expect_err("bool in a string map");
        assert_eq!(
            d.attribute.as_ref().map(|p| p.steps().to_vec()),
            Some(vec![
                PathStep::Attribute("labels".into()),
                PathStep::ElementKeyString("k".into())
            ])
        );
        let mut v = thing();
        v.set_attr("items", Value::list([Value::string("x"), Value::Unknown]));
        let d = v
            .decode::<Thing>()
            .expect_err("unknown element of a plain list");
        assert_eq!(
            d.attribute,
            Some(AttributePath::attribute("items").index(1))
        );
    }

    #[test]
    fn unknown_or_null_where_the_model_wants_a_value_are_errors() {
        let mut v = thing();
        v.set_attr("name", Value::Unknown);
        let d = v.decode::<Thing>().expect_err("unknown name");
        assert_eq!(d.attribute, Some(AttributePath::attribute("name")));
        assert!(d.detail.contains("not known yet"), "{}", d.detail);
        v.set_attr("name", Value::Null);
        assert!(v.decode::<Thing>().is_err());
        v.set_attr("name", Value::string("a"));
        v.set_attr("count", Value::Unknown);
        let d = v
            .decode::<Thing>()
            .expect_err("Option does not take unknown");
        assert_eq!(d.attribute, Some(AttributePath::attribute("count")));
        let d = Value::string("x")
            .decode::<Thing>()
            .expect_err("not an object");
        assert_eq!(d.attribute, None);
    }
}
