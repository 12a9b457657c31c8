//! Which Kubernetes minor release serves which built-in group/version/kind.
//!
//! OWNED BY THE kube-sim HELPER: fill `builtin_kinds()` with the table.

use std::fmt;
use std::str::FromStr;

/// A Kubernetes 1.x minor release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    pub minor: u32,
}

/// The oldest release the table describes.
pub const OLDEST: Release = Release { minor: 16 };
/// The newest release the table describes; kube-sim's default profile.
pub const CURRENT: Release = Release { minor: 36 };

/// One built-in kind as a group/version serves it, and the releases that serve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Has a `status` subresource.
    pub has_status: bool,
    /// First 1.x minor release serving it (by default, without feature gates).
    pub since: u32,
    /// First 1.x minor release that no longer serves it.
    pub removed_in: Option<u32>,
}

impl BuiltinKind {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn served_by(&self, release: Release) -> bool {
        release.minor >= self.since && self.removed_in.is_none_or(|r| release.minor < r)
    }
}

/// Every built-in kind the table knows, all versions.
pub fn builtin_kinds() -> &'static [BuiltinKind] {
    &[]
}

impl Release {
    /// Built-in kinds this release serves.
    pub fn served(self) -> impl Iterator<Item = &'static BuiltinKind> {
        builtin_kinds().iter().filter(move |k| k.served_by(self))
    }

    /// Whether this release serves `kind` at `api_version`; `None` when the table does not
    /// know the kind at all (a custom resource).
    pub fn serves(self, api_version: &str, kind: &str) -> Option<bool> {
        let (group, version) = crate::split_api_version(api_version);
        let mut known = false;
        for k in builtin_kinds()
            .iter()
            .filter(|k| k.group == group && k.kind == kind)
        {
            known = true;
            if k.version == version && k.served_by(self) {
                return Some(true);
            }
        }
        known.then_some(false)
    }
}

/// `Release` from "1.24", "v1.24.3", "1.24.0-gke.100" or "v0.0.0-master" (an error:
/// development builds do not say what they serve).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a Kubernetes version: write it as 1.<minor>, for example 1.24 or 1.36")]
pub struct ParseReleaseError {
    pub input: String,
}

impl FromStr for Release {
    type Err = ParseReleaseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseReleaseError {
            input: s.to_string(),
        };
        let t = s.trim().trim_start_matches('v');
        let mut parts = t.split(['.', '-', '+']);
        let major = parts.next().ok_or_else(err)?;
        let minor = parts.next().ok_or_else(err)?;
        if major != "1" {
            return Err(err());
        }
        let minor: u32 = minor.trim_end_matches('+').parse().map_err(|_| err())?;
        Ok(Release { minor })
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}", self.minor)
    }
}
