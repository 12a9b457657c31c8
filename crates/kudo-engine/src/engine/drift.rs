//! Field-level drift: fields of a managed object that someone changed since this
//! provider applied it (`kubectl scale`, `kubectl edit`), whoever owns them now.
//!
//! The comparison is between the live object and the server's answer to a server-side
//! dry-run of what the instance's last plan applies ([`PlannedObject::dry_run`], forced
//! for objects the instance owns). That answer is the object as our apply would leave
//! it, merged, defaulted and normalised by the server itself, so a difference is a field
//! our apply would change: drift. Fields this provider never sent (defaulted by the
//! server, set by another manager) are the same on both sides and never show.

use serde_json::Value;

use super::concurrent::each_until_failure;
use super::error::EngineError;
use super::preview::PlannedObject;
use crate::cluster::{Cluster, ObjectRef};

/// One field of a managed object that differs from what the apply sends.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDrift {
    pub object: ObjectRef,
    /// Dotted path with list indices: `spec.replicas`, `spec.template.spec.containers[0].image`.
    pub path: String,
    /// What the apply sets; None when the apply removes the field.
    pub applied: Option<Value>,
    /// What the cluster has; None when someone removed the field.
    pub live: Option<Value>,
}

/// A field path (or a whole subtree) whose changes are not drift, for one kind or all:
/// `spec.replicas` of a Deployment scaled by an autoscaler. `[*]` in a path stands for
/// any list index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredPath {
    pub kind: Option<String>,
    pub path: String,
}

/// A `drift_ignore` path that names no field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{path:?} is not a field path; write it dotted from the object's top, as `spec.replicas` or `spec.template.spec.containers[*].image` (`[*]` for any list item)."
)]
pub struct NotAFieldPath {
    pub path: String,
}

impl IgnoredPath {
    /// A rule as written: `kind` (blank for every kind) and a dotted `path`, trimmed.
    /// An empty path, or one that starts or ends with a dot, would cover nothing or
    /// everything by accident, so it is refused.
    pub fn parse(kind: Option<&str>, path: &str) -> Result<IgnoredPath, NotAFieldPath> {
        let path = path.trim();
        if path.is_empty() || path.starts_with('.') || path.ends_with('.') {
            return Err(NotAFieldPath {
                path: path.to_string(),
            });
        }
        Ok(IgnoredPath {
            kind: kind
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_string),
            path: path.to_string(),
        })
    }

    fn covers(&self, kind: &str, path: &str) -> bool {
        if self.kind.as_deref().is_some_and(|k| k != kind) {
            return false;
        }
        let (mut rule, mut field) = (self.path.as_str(), path);
        // Segment by segment, so `spec.rep` never covers `spec.replicas`.
        loop {
            match (next_segment(rule), next_segment(field)) {
                (None, _) => return true,
                (Some(_), None) => return false,
                (Some((r, rule_rest)), Some((f, field_rest))) => {
                    let same = r == f || (r == "[*]" && f.starts_with('['));
                    if !same {
                        return false;
                    }
                    (rule, field) = (rule_rest, field_rest);
                }
            }
        }
    }
}

/// The first segment of a dotted path (`name` or `[3]`) and the rest.
fn next_segment(path: &str) -> Option<(&str, &str)> {
    let path = path.strip_prefix('.').unwrap_or(path);
    if path.is_empty() {
        return None;
    }
    let end = match path.strip_prefix('[') {
        Some(rest) => rest.find(']').map_or(path.len(), |i| i + 2),
        None => path.find(['.', '[']).unwrap_or(path.len()),
    };
    Some((&path[..end], &path[end..]))
}

/// Drift of every planned object that the server could judge and that exists. A
/// missing object is not field drift (the caller notices it by its uid).
pub async fn field_drift(
    cluster: &Cluster,
    planned: &[PlannedObject],
    ignored: &[IgnoredPath],
) -> Result<Vec<FieldDrift>, EngineError> {
    let judged: Vec<(&PlannedObject, &Value)> = planned
        .iter()
        .filter_map(|p| Some((p, p.dry_run.as_ref()?)))
        .collect();
    let found = each_until_failure(judged, |(p, applied)| async move {
        let live = cluster
            .get(&p.object)
            .await
            .map_err(|e| EngineError::from(e).with_object(&p.object))?;
        Ok::<_, EngineError>(
            live.map(|live| object_drift(&p.object, applied, &live, ignored))
                .unwrap_or_default(),
        )
    })
    .await?;
    Ok(found.into_iter().flatten().collect())
}

/// The fields in which `live` differs from `applied` (the dry-run answer), outside
/// what the server and controllers own and outside `ignored`.
pub fn object_drift(
    object: &ObjectRef,
    applied: &Value,
    live: &Value,
    ignored: &[IgnoredPath],
) -> Vec<FieldDrift> {
    let (Some(applied), Some(live)) = (applied.as_object(), live.as_object()) else {
        return Vec::new();
    };
    let mut out: Vec<Difference> = Vec::new();
    let keys: std::collections::BTreeSet<&String> = applied.keys().chain(live.keys()).collect();
    for key in keys {
        match key.as_str() {
            // Written by controllers, not by applies.
            "status" => {}
            // Only labels and annotations: the rest is the server's bookkeeping, and
            // owner references are set by the run, never by the dry-run.
            "metadata" => {
                for part in ["labels", "annotations"] {
                    let pick = |v: Option<&Value>| {
                        v.and_then(|m| m.get(part))
                            .and_then(Value::as_object)
                            .map(|m| {
                                m.iter()
                                    // The plan/phase/step that last applied it is ours.
                                    .filter(|(k, _)| !k.starts_with("kudo.dev/"))
                                    .map(|(k, v)| (k.clone(), v.clone()))
                                    .collect::<serde_json::Map<_, _>>()
                            })
                            .unwrap_or_default()
                    };
                    let (a, l) = (pick(applied.get(key)), pick(live.get(key)));
                    compare(
                        &format!("metadata.{part}"),
                        Some(&Value::Object(a)),
                        Some(&Value::Object(l)),
                        &mut out,
                    );
                }
            }
            _ => compare(key, applied.get(key), live.get(key), &mut out),
        }
    }
    out.retain(|(path, _, _)| !ignored.iter().any(|i| i.covers(&object.kind, path)));
    out.into_iter()
        .map(|(path, applied, live)| FieldDrift {
            object: object.clone(),
            path,
            applied,
            live,
        })
        .collect()
}

type Difference = (String, Option<Value>, Option<Value>);

fn compare(path: &str, applied: Option<&Value>, live: Option<&Value>, out: &mut Vec<Difference>) {
    match (applied, live) {
        (Some(Value::Object(a)), Some(Value::Object(l))) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(l.keys()).collect();
            for key in keys {
                compare(&format!("{path}.{key}"), a.get(key), l.get(key), out);
            }
        }
        // Lists of one length are compared item by item; otherwise the list as a whole
        // is the difference (items were added or removed).
        (Some(Value::Array(a)), Some(Value::Array(l))) if a.len() == l.len() => {
            for (i, (a, l)) in a.iter().zip(l).enumerate() {
                compare(&format!("{path}[{i}]"), Some(a), Some(l), out);
            }
        }
        (a, l) if a == l => {}
        (a, l) => out.push((path.to_string(), a.cloned(), l.cloned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sts() -> ObjectRef {
        ObjectRef::new("apps/v1", "StatefulSet", Some("ns"), "zk")
    }

    #[test]
    fn differences_outside_server_fields_are_drift() {
        let applied = json!({
            "metadata": {"labels": {"app": "zk", "kudo.dev/instance": "zk"},
                         "annotations": {"kudo.dev/plan": "deploy"},
                         "resourceVersion": "1", "generation": 1},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "zk", "image": "zk:3.4"}]}}},
            "status": {"replicas": 1}
        });
        let live = json!({
            "metadata": {"labels": {"app": "zk", "kudo.dev/instance": "zk"},
                         "annotations": {"kudo.dev/plan": "update"},
                         "resourceVersion": "7", "generation": 3,
                         "ownerReferences": [{"kind": "Instance"}]},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "zk", "image": "zk:3.5"}]}}},
            "status": {"replicas": 2}
        });
        let drift = object_drift(&sts(), &applied, &live, &[]);
        let paths: Vec<(&str, Option<&Value>, Option<&Value>)> = drift
            .iter()
            .map(|d| (d.path.as_str(), d.applied.as_ref(), d.live.as_ref()))
            .collect();
        assert_eq!(
            paths,
            vec![
                ("spec.replicas", Some(&json!(1)), Some(&json!(2))),
                (
                    "spec.template.spec.containers[0].image",
                    Some(&json!("zk:3.4")),
                    Some(&json!("zk:3.5"))
                ),
            ]
        );
    }

    #[test]
    fn equal_objects_and_ignored_paths_have_no_drift() {
        let applied = json!({"spec": {"replicas": 1, "ports": [{"port": 1}, {"port": 2}]}});
        assert!(object_drift(&sts(), &applied, &applied.clone(), &[]).is_empty());
        let live = json!({"spec": {"replicas": 3, "ports": [{"port": 1}, {"port": 9}]}});
        let ignore = |kind: Option<&str>, path: &str| IgnoredPath {
            kind: kind.map(str::to_string),
            path: path.to_string(),
        };
        let drift = object_drift(
            &sts(),
            &applied,
            &live,
            &[
                ignore(Some("StatefulSet"), "spec.replicas"),
                ignore(None, "spec.ports[*].port"),
            ],
        );
        assert!(drift.is_empty(), "{drift:?}");
        // Another kind's rule, or a rule on a longer name, does not cover the field.
        let drift = object_drift(
            &sts(),
            &applied,
            &live,
            &[
                ignore(Some("Deployment"), "spec.replicas"),
                ignore(None, "spec.rep"),
            ],
        );
        assert_eq!(drift.len(), 2, "{drift:?}");
    }

    #[test]
    fn ignore_rules_are_trimmed_and_must_name_a_field() {
        let rule = IgnoredPath::parse(Some(" Deployment "), " spec.replicas ");
        assert_eq!(
            rule,
            Ok(IgnoredPath {
                kind: Some("Deployment".to_string()),
                path: "spec.replicas".to_string()
            })
        );
        let any_kind = IgnoredPath::parse(Some("  "), "metadata.labels.team");
        assert_eq!(any_kind.map(|r| r.kind), Ok(None));
        for bad in ["", "  ", ".spec", "spec."] {
            let e = IgnoredPath::parse(None, bad).expect_err(bad);
            assert!(
                e.to_string()
                    .starts_with(&format!("{:?} is not a field path", bad.trim())),
                "{e}"
            );
        }
    }

    #[test]
    fn added_list_items_and_removed_fields_show_whole() {
        let applied = json!({"spec": {"args": ["a"], "paused": true}});
        let live = json!({"spec": {"args": ["a", "b"]}});
        let drift = object_drift(&sts(), &applied, &live, &[]);
        assert_eq!(drift.len(), 2);
        assert_eq!(drift[0].path, "spec.args");
        assert_eq!(drift[0].live, Some(json!(["a", "b"])));
        assert_eq!(drift[1].path, "spec.paused");
        assert_eq!(drift[1].live, None);
    }
}
