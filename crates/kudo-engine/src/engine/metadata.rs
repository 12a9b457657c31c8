//! KUDO's metadata on every object it applies, so objects can be traced back to the
//! instance and plan (and found again at uninstall).

use serde_json::{Map, Value, json};

use super::error::Location;

pub const LABEL_HERITAGE: &str = "heritage";
pub const LABEL_OPERATOR: &str = "kudo.dev/operator";
pub const LABEL_INSTANCE: &str = "kudo.dev/instance";
pub const ANNOTATION_PLAN: &str = "kudo.dev/plan";
pub const ANNOTATION_PHASE: &str = "kudo.dev/phase";
pub const ANNOTATION_STEP: &str = "kudo.dev/step";

/// The Instance that owns the objects.
#[derive(Debug, Clone)]
pub struct Owner {
    pub operator: String,
    pub instance: String,
    pub namespace: String,
    pub uid: String,
}

fn map_at<'a>(obj: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = obj;
    for key in path {
        let m = cur.as_object_mut()?;
        cur = m
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
    }
    cur.as_object_mut()
}

fn add_labels(obj: &mut Value, path: &[&str], owner: &Owner) {
    if let Some(labels) = map_at(obj, path) {
        labels.insert(LABEL_HERITAGE.into(), json!("kudo"));
        labels.insert(LABEL_OPERATOR.into(), json!(owner.operator));
        labels.insert(LABEL_INSTANCE.into(), json!(owner.instance));
    }
}

/// Adds labels, annotations, namespace and owner reference (when `owner.uid` is set). Pod templates get the labels
/// but not the plan annotations: an annotation change there would restart every pod on
/// each plan run.
pub fn decorate(obj: &mut Value, owner: &Owner, loc: &Location, namespaced: bool) {
    add_labels(obj, &["metadata", "labels"], owner);
    if let Some(ann) = map_at(obj, &["metadata", "annotations"]) {
        ann.insert(ANNOTATION_PLAN.into(), json!(loc.plan));
        ann.insert(ANNOTATION_PHASE.into(), json!(loc.phase));
        ann.insert(ANNOTATION_STEP.into(), json!(loc.step));
    }

    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let pod_templates: &[&[&str]] = match kind.as_str() {
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => &[&["spec", "template"]],
        "CronJob" => &[
            &["spec", "jobTemplate"],
            &["spec", "jobTemplate", "spec", "template"],
        ],
        _ => &[],
    };
    for path in pod_templates {
        // Only label templates that exist; an invalid object is the server's to reject.
        let pointer = format!("/{}", path.join("/"));
        if obj.pointer(&pointer).is_some() {
            let labels: Vec<&str> = path.iter().copied().chain(["metadata", "labels"]).collect();
            add_labels(obj, &labels, owner);
        }
    }
    if kind == "StatefulSet"
        && let Some(vcts) = obj
            .pointer_mut("/spec/volumeClaimTemplates")
            .and_then(Value::as_array_mut)
    {
        for vct in vcts {
            add_labels(vct, &["metadata", "labels"], owner);
        }
    }

    let Some(meta) = map_at(obj, &["metadata"]) else {
        return;
    };
    if namespaced {
        // KUDO puts every namespaced object in the instance namespace, whatever the
        // template says; the owner reference would be invalid anywhere else.
        meta.insert("namespace".into(), json!(owner.namespace));
        // Without a uid (a preview before the Instance exists) there is nothing to point at.
        if owner.uid.is_empty() {
            return;
        }
        let reference = json!({
            "apiVersion": crate::cluster::KUDO_API_VERSION,
            "kind": "Instance",
            "name": owner.instance,
            "uid": owner.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        });
        let refs = meta.entry("ownerReferences").or_insert_with(|| json!([]));
        if let Some(refs) = refs.as_array_mut() {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner.uid.as_str()));
            // Only one controller reference is allowed; ours wins.
            for r in refs.iter_mut() {
                if let Some(m) = r.as_object_mut() {
                    m.remove("controller");
                }
            }
            refs.push(reference);
        }
    } else {
        meta.remove("namespace");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            operator: "zk".into(),
            instance: "zk1".into(),
            namespace: "ns".into(),
            uid: "u-1".into(),
        }
    }

    fn loc() -> Location {
        Location {
            plan: "deploy".into(),
            phase: "p".into(),
            step: "s".into(),
        }
    }

    #[test]
    fn statefulset_gets_labels_everywhere_and_owner() {
        let mut o = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "x", "namespace": "other", "labels": {"app": "a"}},
            "spec": {"template": {"metadata": {"labels": {"app": "a"}}},
                     "volumeClaimTemplates": [{"metadata": {"name": "d"}}]}});
        decorate(&mut o, &owner(), &loc(), true);
        assert_eq!(o.pointer("/metadata/labels/app"), Some(&json!("a")));
        assert_eq!(o.pointer("/metadata/labels/heritage"), Some(&json!("kudo")));
        assert_eq!(
            o.pointer("/metadata/labels/kudo.dev~1instance"),
            Some(&json!("zk1"))
        );
        assert_eq!(
            o.pointer("/spec/template/metadata/labels/kudo.dev~1operator"),
            Some(&json!("zk"))
        );
        assert_eq!(
            o.pointer("/spec/volumeClaimTemplates/0/metadata/labels/kudo.dev~1instance"),
            Some(&json!("zk1"))
        );
        assert_eq!(
            o.pointer("/metadata/annotations/kudo.dev~1plan"),
            Some(&json!("deploy"))
        );
        assert!(o.pointer("/spec/template/metadata/annotations").is_none());
        assert_eq!(o.pointer("/metadata/namespace"), Some(&json!("ns")));
        assert_eq!(
            o.pointer("/metadata/ownerReferences/0/uid"),
            Some(&json!("u-1"))
        );
        // idempotent
        decorate(&mut o, &owner(), &loc(), true);
        assert_eq!(
            o.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn cluster_scoped_objects_have_no_owner_or_namespace() {
        let mut o = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "x", "namespace": "ns", "labels": null}});
        decorate(&mut o, &owner(), &loc(), false);
        assert!(o.pointer("/metadata/ownerReferences").is_none());
        assert!(o.pointer("/metadata/namespace").is_none());
        assert_eq!(o.pointer("/metadata/labels/heritage"), Some(&json!("kudo")));
    }
}
