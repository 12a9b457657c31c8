//! Reading server-side apply conflicts: which fields, held by which other manager, and
//! whether we applied the object before (so a conflict is drift to repair).

use kube::api::DynamicObject;
use kube::core::Status;

/// One field another field manager owns and our apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldConflict {
    /// The field as the API server prints it, e.g. `.data.key`.
    pub field: String,
    /// The other field manager, e.g. `kubectl`; empty when the server did not say.
    pub manager: String,
}

const CAUSE_REASON: &str = "FieldManagerConflict";

/// Whether a 409 is an apply conflict (rather than, say, a stale resourceVersion).
pub(crate) fn is_field_conflict(status: &Status) -> bool {
    status
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == CAUSE_REASON))
}

/// The conflicting fields listed in the status details.
pub(crate) fn causes(status: &Status) -> Vec<FieldConflict> {
    status
        .details
        .iter()
        .flat_map(|d| d.causes.iter())
        .filter(|c| c.reason == CAUSE_REASON)
        .map(|c| FieldConflict {
            field: c.field.clone(),
            manager: manager_of(&c.message).unwrap_or_default(),
        })
        .collect()
}

/// The manager named in a cause message: Kubernetes writes `conflict with "NAME"`
/// followed by the subresource, API version and (for updates) the time.
fn manager_of(message: &str) -> Option<String> {
    let rest = message.split_once("conflict with \"")?.1;
    let end = rest.find('"')?;
    Some(rest[..end].to_string())
}

/// Whether `manager` has server-side applied the main resource of `obj` before. The API
/// server keeps no history of former owners, so this is our evidence that the fields now
/// held by someone else came from our earlier applies.
pub(crate) fn applied_by(obj: &DynamicObject, manager: &str) -> bool {
    obj.metadata.managed_fields.iter().flatten().any(|e| {
        e.manager.as_deref() == Some(manager)
            && e.operation.as_deref() == Some("Apply")
            && e.subresource.as_deref().is_none_or(str::is_empty)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // As the API server sends it, so the test covers how kube decodes the details too.
    fn status(causes: &[(&str, &str, &str)]) -> Status {
        let causes: Vec<serde_json::Value> = causes
            .iter()
            .map(|(reason, field, message)| {
                serde_json::json!({"reason": reason, "field": field, "message": message})
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 409,
            "reason": "Conflict", "message": "Apply failed",
            "details": {"name": "c", "kind": "configmaps", "causes": causes},
        }))
        .expect("status")
    }

    #[test]
    fn causes_name_field_and_manager() {
        let s = status(&[
            (
                CAUSE_REASON,
                ".data.key",
                "conflict with \"kubectl\" using v1",
            ),
            (
                CAUSE_REASON,
                ".spec.replicas",
                "conflict with \"kube-controller-manager\" with subresource \"scale\" using apps/v1",
            ),
        ]);
        assert!(is_field_conflict(&s));
        assert_eq!(
            causes(&s),
            vec![
                FieldConflict {
                    field: ".data.key".into(),
                    manager: "kubectl".into()
                },
                FieldConflict {
                    field: ".spec.replicas".into(),
                    manager: "kube-controller-manager".into()
                },
            ]
        );
    }

    #[test]
    fn a_stale_resource_version_is_not_a_field_conflict() {
        let mut s = status(&[]);
        s.details = None;
        assert!(!is_field_conflict(&s));
        assert!(causes(&s).is_empty());
    }

    #[test]
    fn only_our_apply_entry_on_the_main_resource_counts() {
        let obj = |entries: serde_json::Value| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "managedFields": entries},
            }))
            .expect("object")
        };
        let entry = |manager: &str, op: &str, sub: Option<&str>| {
            let mut e = serde_json::json!({"manager": manager, "operation": op,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}});
            if let Some(s) = sub {
                e["subresource"] = serde_json::json!(s);
            }
            e
        };
        assert!(applied_by(
            &obj(serde_json::json!([
                entry("kubectl", "Apply", None),
                entry("tf", "Apply", None)
            ])),
            "tf"
        ));
        assert!(!applied_by(
            &obj(serde_json::json!([entry("kubectl", "Apply", None)])),
            "tf"
        ));
        assert!(!applied_by(
            &obj(serde_json::json!([entry("tf", "Update", None)])),
            "tf"
        ));
        assert!(!applied_by(
            &obj(serde_json::json!([entry("tf", "Apply", Some("status"))])),
            "tf"
        ));
    }
}
