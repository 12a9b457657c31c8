use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ClusterError;

/// Identifies one object. Also the unit of the inventory Terraform stores in state.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// How the object is named in plans and diagnostics, as `kubectl` prints it:
    /// `Kind namespace/name`, or `Kind name` for a cluster-scoped object.
    pub fn label(&self) -> String {
        self.named(&self.kind)
    }

    /// [`ObjectRef::label`] with the kind qualified by its group outside the core group,
    /// as `kubectl` names a resource (`StatefulSet.apps ns/name`): unique per stored
    /// object, whatever version it is addressed under (the state's `objects` keys).
    pub fn qualified_label(&self) -> String {
        match self.group() {
            "" => self.label(),
            group => self.named(&format!("{}.{group}", self.kind)),
        }
    }

    fn named(&self, kind: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{kind} {ns}/{}", self.name),
            None => format!("{kind} {}", self.name),
        }
    }

    pub fn new(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Self {
        ObjectRef {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        }
    }

    /// Reads apiVersion, kind, metadata.name and metadata.namespace of a manifest.
    pub fn from_object(obj: &Value) -> Result<Self, ClusterError> {
        let field = |path: &[&str]| -> Option<String> {
            let mut v = obj;
            for p in path {
                v = v.get(p)?;
            }
            v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
        };
        let missing = |what: &str| ClusterError::InvalidObject {
            object: None,
            message: format!(
                "manifest has no {what} (kind {:?}, name {:?})",
                field(&["kind"]).unwrap_or_default(),
                field(&["metadata", "name"]).unwrap_or_default()
            ),
        };
        Ok(ObjectRef {
            api_version: field(&["apiVersion"]).ok_or_else(|| missing("apiVersion"))?,
            kind: field(&["kind"]).ok_or_else(|| missing("kind"))?,
            namespace: field(&["metadata", "namespace"]),
            name: field(&["metadata", "name"]).ok_or_else(|| missing("metadata.name"))?,
        })
    }
}

impl ObjectRef {
    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        kube_api_versions::split_api_version(&self.api_version).0
    }

    /// Whether both name the same stored object. Kubernetes stores an object once per
    /// group and resource and serves it under every version of the group, so refs that
    /// differ only in the version (`policy/v1beta1` and `policy/v1` PodDisruptionBudget
    /// `x`) are one object: deleting one deletes the other.
    pub fn same_object(&self, other: &ObjectRef) -> bool {
        // Cheapest comparisons first: this runs for every pair of big inventories.
        self.name == other.name
            && self.kind == other.kind
            && self.namespace == other.namespace
            && self.group() == other.group()
    }

    /// What [`ObjectRef::same_object`] compares (group, kind, namespace, name), as a key
    /// for sets and maps: matching thousands of objects pairwise is quadratic.
    pub fn identity(&self) -> (&str, &str, Option<&str>, &str) {
        (
            self.group(),
            &self.kind,
            self.namespace.as_deref(),
            &self.name,
        )
    }

    /// This ref under another version of its group.
    pub fn with_api_version(&self, api_version: &str) -> ObjectRef {
        ObjectRef {
            api_version: api_version.to_string(),
            ..self.clone()
        }
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(
                f,
                "{} {}/{} ({})",
                self.kind, ns, self.name, self.api_version
            ),
            None => write!(f, "{} {} ({})", self.kind, self.name, self.api_version),
        }
    }
}
