//! Kubernetes API versions over time, without a cluster.
//!
//! KUDO packages were written for Kubernetes 1.15-1.20 and use API versions later
//! releases removed (`policy/v1beta1`, `rbac.authorization.k8s.io/v1beta1`,
//! `apiextensions.k8s.io/v1beta1`, ...). This crate knows
//! - which release serves which built-in group/version/kind ([`releases`]), for the
//!   stand-in API server's version profiles and for author tools that check a package
//!   against a release;
//! - how to convert an object written for a removed version into its successor, field by
//!   field ([`convert`]);
//! - the one rule deciding whether and how an object is translated ([`Translator`]);
//!   the engine asks it with the cluster's discovery, the author tools with a release.

pub mod convert;
pub mod releases;
mod removed_fields;
mod translate;

pub use convert::{
    API_APPROVAL_ANNOTATION, ConvertError, Converted, UNAPPROVED_CONVERTED, convert,
    is_protected_group, successors,
};
pub use releases::{
    BuiltinKind, CURRENT, OLDEST, ParseReleaseError, Release, builtin_kinds,
    removed_without_successor,
};
pub use removed_fields::strip_removed_fields;
pub use translate::{
    Mapping, MappingField, MappingProblem, TranslateError, Translation, Translator,
};

/// `group/version` split; the core group is empty (`v1` -> `("", "v1")`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}
