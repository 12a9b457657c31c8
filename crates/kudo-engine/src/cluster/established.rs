//! The kinds a CustomResourceDefinition serves, learned from the definition itself once
//! the server reports it Established.
//!
//! A step that creates a CRD and the next one, which writes objects of its kind, meet a
//! race of the real API server: `Established` is set by one controller of
//! apiextensions-apiserver, the group-version's discovery document by another
//! (`DiscoveryController`), and for a moment after the first the second may still
//! answer 404 for the new group-version. The resource itself is served from then on
//! (`crdHandler.ServeHTTP` serves a CRD whose names are accepted or which is
//! established), so the names the definition carries (`status.acceptedNames`, the
//! served `spec.versions`, `spec.scope`) are what discovery will answer, and a run
//! takes them from there instead of asking discovery and failing on its lag.
//!
//! What is learned this way lives in this process only (never in the discovery file:
//! it did not come from discovery), and is dropped when this process deletes the CRD.

use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

use super::discovery::ServedKind;

/// The longest pause before a write to the resource of a CRD seen established is asked
/// again after a 404: the server's handler watches the definitions too, and may see the
/// condition a moment after we do (asked again after 0.1, 0.2, 0.4, 0.8 and 1.6 s: 3.1 s
/// in all before the 404 is believed).
pub(super) const HANDLER_LAG: std::time::Duration = std::time::Duration::from_millis(1600);

/// The verbs the API server serves for every custom resource.
pub(super) const CUSTOM_RESOURCE_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// Whether the CRD's `Established` condition is true: the server serves its kinds.
pub(crate) fn is_established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Established")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// The CRD's name and the kinds it serves, one per served version, when `crd` is an
/// established CustomResourceDefinition with accepted names; None otherwise.
pub(super) fn served_by(crd: &Value) -> Option<(String, Vec<ServedKind>)> {
    if crd.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
        || !is_established(crd)
    {
        return None;
    }
    let name = crd.pointer("/metadata/name")?.as_str()?;
    let group = crd.pointer("/spec/group")?.as_str()?;
    // The names the server accepted, which are the ones it serves (they differ from
    // `spec.names` only while a rename is pending).
    let names = crd.pointer("/status/acceptedNames")?;
    let kind = names.get("kind")?.as_str()?;
    let plural = names.get("plural")?.as_str()?;
    if kind.is_empty() || plural.is_empty() {
        return None;
    }
    let namespaced = crd.pointer("/spec/scope").and_then(Value::as_str) != Some("Cluster");
    let kinds: Vec<ServedKind> = crd
        .pointer("/spec/versions")?
        .as_array()?
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(|version| ServedKind {
            ar: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(group, version, kind),
                plural,
            ),
            namespaced,
            verbs: CUSTOM_RESOURCE_VERBS
                .iter()
                .map(|v| v.to_string())
                .collect(),
        })
        .collect();
    (!kinds.is_empty()).then(|| (name.to_string(), kinds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gadgets(established: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Cluster",
                "names": {"kind": "Gadget", "plural": "gadgets"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true},
                    {"name": "v1alpha1", "served": false, "storage": false},
                    {"name": "v1beta1", "served": true, "storage": false}
                ]
            },
            "status": {
                "acceptedNames": {"kind": "Gadget", "plural": "gadgets"},
                "conditions": [{"type": "Established", "status": established}]
            }
        })
    }

    #[test]
    fn an_established_crd_serves_its_kind_at_each_served_version() {
        let (name, kinds) = served_by(&gadgets("True")).expect("established");
        assert_eq!(name, "gadgets.example.com");
        let served: Vec<(&str, &str, &str, bool)> = kinds
            .iter()
            .map(|k| {
                (
                    k.ar.api_version.as_str(),
                    k.ar.kind.as_str(),
                    k.ar.plural.as_str(),
                    k.namespaced,
                )
            })
            .collect();
        assert_eq!(
            served,
            [
                ("example.com/v1", "Gadget", "gadgets", false),
                ("example.com/v1beta1", "Gadget", "gadgets", false)
            ]
        );
        assert!(kinds[0].supports("patch"));
    }

    #[test]
    fn a_crd_not_yet_established_teaches_nothing() {
        assert!(served_by(&gadgets("False")).is_none());
        let mut unnamed = gadgets("True");
        unnamed["status"]["acceptedNames"] = json!({});
        assert!(served_by(&unnamed).is_none());
        assert!(served_by(&json!({"kind": "ConfigMap"})).is_none());
    }
}
