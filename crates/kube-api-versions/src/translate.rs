//! The one rule for translating an object to an API version the cluster serves.
//!
//! OWNED BY THE conversions HELPER.

use serde_json::Value;

use crate::convert::ConvertError;

/// A user-declared mapping for a third-party kind (e.g. a CRD group's `v1alpha1` ->
/// `v1`): only `apiVersion` changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub from_api_version: String,
    /// `None`: every kind of that group/version.
    pub kind: Option<String>,
    pub to_api_version: String,
}

/// Translation settings: on by default, plus user mappings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translator {
    pub enabled: bool,
    pub mappings: Vec<Mapping>,
}

impl Default for Translator {
    fn default() -> Self {
        Translator {
            enabled: true,
            mappings: Vec::new(),
        }
    }
}

/// An object moved to a served version.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    pub object: Value,
    /// The version the template wrote (no longer served).
    pub from_api_version: String,
    /// The version the object is applied as.
    pub to_api_version: String,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// The version is not served and translation is off or knows no served successor.
    #[error("unset")]
    NotServed {
        kind: String,
        name: String,
        api_version: String,
        /// A served successor, when one exists (translation off).
        use_instead: Option<String>,
        /// Translation is switched off by the provider setting.
        disabled: bool,
    },
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

impl Translator {
    /// apiVersions to try for `kind` at `api_version` when the cluster does not serve it,
    /// most preferred first: user mappings, then built-in successors. Empty when
    /// translation is off.
    pub fn candidates(&self, api_version: &str, kind: &str) -> Vec<String> {
        let _ = (api_version, kind);
        unimplemented!("conversions helper")
    }

    /// Converts `obj` to `to_api_version` (a candidate).
    pub fn convert(&self, obj: &Value, to_api_version: &str) -> Result<Translation, ConvertError> {
        let _ = (obj, to_api_version);
        unimplemented!("conversions helper")
    }

    /// The whole rule with a synchronous `served(api_version, kind)` (a release profile,
    /// a discovery snapshot): `Ok(None)` when the object's own version is served,
    /// `Ok(Some)` when it was converted, `Err(NotServed)` otherwise.
    pub fn translate(
        &self,
        obj: &Value,
        served: impl Fn(&str, &str) -> bool,
    ) -> Result<Option<Translation>, TranslateError> {
        let _ = (obj, served);
        unimplemented!("conversions helper")
    }
}
