//! The cty type system as seen on the wire: schemas carry attribute types as
//! cty's JSON type notation, and dynamic values carry their type alongside.

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};

/// A cty type. `Dynamic` is cty's `DynamicPseudoType` (spelled `dynamic`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    Bool,
    Number,
    String,
    Dynamic,
    List(Box<Type>),
    Set(Box<Type>),
    Map(Box<Type>),
    Object(BTreeMap<String, Type>),
    Tuple(Vec<Type>),
}

/// A type JSON document that is not a cty type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cty type JSON: {0}")]
pub struct TypeError(pub String);

impl Type {
    pub fn list(element: Type) -> Type {
        Type::List(Box::new(element))
    }
    pub fn set(element: Type) -> Type {
        Type::Set(Box::new(element))
    }
    pub fn map(element: Type) -> Type {
        Type::Map(Box::new(element))
    }
    pub fn object<K: Into<String>>(attributes: impl IntoIterator<Item = (K, Type)>) -> Type {
        Type::Object(attributes.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// True when `dynamic` appears anywhere in the type.
    pub fn has_dynamic(&self) -> bool {
        match self {
            Type::Dynamic => true,
            Type::Bool | Type::Number | Type::String => false,
            Type::List(e) | Type::Set(e) | Type::Map(e) => e.has_dynamic(),
            Type::Object(attrs) => attrs.values().any(Type::has_dynamic),
            Type::Tuple(elems) => elems.iter().any(Type::has_dynamic),
        }
    }

    /// cty's JSON notation, e.g. `["list","string"]`.
    pub fn to_json(&self) -> Json {
        match self {
            Type::Bool => json!("bool"),
            Type::Number => json!("number"),
            Type::String => json!("string"),
            Type::Dynamic => json!("dynamic"),
            Type::List(e) => json!(["list", e.to_json()]),
            Type::Set(e) => json!(["set", e.to_json()]),
            Type::Map(e) => json!(["map", e.to_json()]),
            Type::Object(attrs) => {
                let fields: serde_json::Map<String, Json> = attrs
                    .iter()
                    .map(|(k, t)| (k.clone(), t.to_json()))
                    .collect();
                json!(["object", fields])
            }
            Type::Tuple(elems) => {
                json!(["tuple", elems.iter().map(Type::to_json).collect::<Vec<_>>()])
            }
        }
    }

    /// The bytes that go in `Schema.Attribute.type`.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        // Serialising a serde_json::Value to a Vec cannot fail.
        serde_json::to_vec(&self.to_json()).unwrap_or_default()
    }

    /// Reads cty's JSON notation. Optional-attribute markers (the third element of
    /// an object type) are accepted and ignored: they only matter for type
    /// conversion, not for encoding values.
    pub fn from_json(json: &Json) -> Result<Type, TypeError> {
        match json {
            Json::String(s) => match s.as_str() {
                "bool" => Ok(Type::Bool),
                "number" => Ok(Type::Number),
                "string" => Ok(Type::String),
                "dynamic" => Ok(Type::Dynamic),
                other => Err(TypeError(format!("unknown primitive type {other:?}"))),
            },
            Json::Array(parts) => {
                let kind = parts
                    .first()
                    .and_then(Json::as_str)
                    .ok_or_else(|| TypeError(format!("expected a type kind in {json}")))?;
                let arg = parts
                    .get(1)
                    .ok_or_else(|| TypeError(format!("{kind} type needs an argument")))?;
                match kind {
                    "list" => Ok(Type::list(Type::from_json(arg)?)),
                    "set" => Ok(Type::set(Type::from_json(arg)?)),
                    "map" => Ok(Type::map(Type::from_json(arg)?)),
                    "object" => {
                        let fields = arg.as_object().ok_or_else(|| {
                            TypeError("object type needs a JSON object of attributes".into())
                        })?;
                        let mut attrs = BTreeMap::new();
                        for (k, v) in fields {
                            attrs.insert(k.clone(), Type::from_json(v)?);
                        }
                        Ok(Type::Object(attrs))
                    }
                    "tuple" => {
                        let elems = arg.as_array().ok_or_else(|| {
                            TypeError("tuple type needs a JSON array of types".into())
                        })?;
                        Ok(Type::Tuple(
                            elems
                                .iter()
                                .map(Type::from_json)
                                .collect::<Result<_, _>>()?,
                        ))
                    }
                    other => Err(TypeError(format!("unknown type kind {other:?}"))),
                }
            }
            other => Err(TypeError(format!("unexpected JSON {other}"))),
        }
    }

    pub fn from_json_bytes(bytes: &[u8]) -> Result<Type, TypeError> {
        let json: Json =
            serde_json::from_slice(bytes).map_err(|e| TypeError(format!("not JSON: {e}")))?;
        Type::from_json(&json)
    }
}
