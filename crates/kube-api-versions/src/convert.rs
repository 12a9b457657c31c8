//! Field-by-field conversion of objects written for removed API versions.
//!
//! OWNED BY THE conversions HELPER.

use serde_json::Value;

/// A converted object and what the conversion could not carry over.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub object: Value,
    /// Human-readable notes on dropped or changed fields ("spec.x has no v1 equivalent;
    /// dropped"). Empty for a lossless conversion.
    pub notes: Vec<String>,
}

/// A conversion that cannot be done (a field whose meaning has no successor, a value
/// of the wrong type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot convert {kind} {name:?} from {from} to {to}: {message}")]
pub struct ConvertError {
    pub kind: String,
    pub name: String,
    pub from: String,
    pub to: String,
    pub message: String,
}

/// The apiVersions `kind` written at `api_version` converts to, most preferred first
/// (empty when there is no built-in conversion).
pub fn successors(api_version: &str, kind: &str) -> &'static [&'static str] {
    let _ = (api_version, kind);
    &[]
}

/// Converts `obj` (its own `apiVersion`) to `to_api_version`, one of
/// [`successors`]. The result carries `apiVersion: to_api_version`.
pub fn convert(obj: &Value, to_api_version: &str) -> Result<Converted, ConvertError> {
    let _ = (obj, to_api_version);
    unimplemented!("conversions helper")
}
