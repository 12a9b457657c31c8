//! `kudo_instance.preview`: the engine's plan of the pending apply
//! ([`kudo_engine::engine::plan_instance`]) as a Terraform value and diagnostics. No
//! decision is made here.

use std::collections::HashMap;

use tfplugin::{Diagnostic, Type, Value};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine::{Changes, InstancePlan, PlanNote, Source};

pub use kudo_engine::engine::{label, qualified_label};

/// `create`, `update` and `delete` are maps keyed by object, not lists: Terraform's
/// plan renderer matches list elements pairwise, which is quadratic in their number
/// (seconds and a gigabyte at 10,000 objects on every no-change plan, which keeps the
/// last apply's preview), and map entries by key.
pub fn preview_type() -> Type {
    Type::object([
        ("create", Type::map(Type::String)),
        ("update", Type::map(Type::String)),
        ("delete", Type::map(Type::String)),
    ])
}

/// The attribute's value for the engine's changes (unknown when they are).
pub fn of_changes(changes: Option<&Changes>) -> Value {
    let Some(c) = changes else {
        return Value::Unknown;
    };
    Value::object([
        ("create", entries(&c.create)),
        ("update", entries(&c.update)),
        ("delete", entries(&c.delete)),
    ])
}

/// One entry per object, keyed by its [`label`] and holding the apiVersion it is applied
/// (or was recorded) as. Objects whose labels coincide (one kind name in two groups)
/// are keyed with their kinds qualified by group, as `kudo_instance.objects` is, so
/// that none hides another.
fn entries(refs: &[ObjectRef]) -> Value {
    let mut uses: HashMap<String, usize> = HashMap::new();
    for r in refs {
        *uses.entry(label(r)).or_default() += 1;
    }
    Value::map(refs.iter().map(|r| {
        let plain = label(r);
        let key = match uses.get(&plain) {
            Some(n) if *n > 1 && !r.group().is_empty() => qualified_label(r),
            _ => plain,
        };
        (key, Value::string(r.api_version.clone()))
    }))
}

/// A plan note as a Terraform warning.
pub fn warning(note: &PlanNote) -> Diagnostic {
    Diagnostic::warning(note.summary.clone(), note.detail.clone())
}

/// A preview and what the plan knows of the objects managed after the apply.
pub struct Computed {
    /// The `preview` attribute's value (unknown when webhooks decide).
    pub value: Value,
    /// Plan-time warnings: translated API versions, why the preview is unknown.
    pub warnings: Vec<Diagnostic>,
    /// Every object the instance manages after the apply with where its content comes
    /// from (see `manifests`); `None` when the preview is unknown.
    pub managed: Option<Vec<(ObjectRef, Source)>>,
}

impl Computed {
    pub fn unknown(warnings: Vec<Diagnostic>) -> Computed {
        Computed {
            value: Value::Unknown,
            warnings,
            managed: None,
        }
    }

    pub fn of_plan(plan: InstancePlan) -> Computed {
        Computed {
            value: of_changes(plan.changes.as_ref()),
            warnings: plan.notes.iter().map(warning).collect(),
            managed: plan.managed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_keyed_by_label_and_qualified_only_where_labels_coincide() {
        let refs = [
            ObjectRef::new("v1", "ConfigMap", Some("ns"), "c"),
            ObjectRef::new("cert-manager.io/v1", "Certificate", Some("ns"), "tls"),
            ObjectRef::new("example.io/v1", "Certificate", Some("ns"), "tls"),
            ObjectRef::new("rbac.authorization.k8s.io/v1", "ClusterRole", None, "r"),
        ];
        let Value::Map(map) = entries(&refs) else {
            panic!("not a map")
        };
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "Certificate.cert-manager.io ns/tls",
                "Certificate.example.io ns/tls",
                "ClusterRole r",
                "ConfigMap ns/c",
            ]
        );
        assert_eq!(
            map["ClusterRole r"],
            Value::string("rbac.authorization.k8s.io/v1")
        );
    }
}
