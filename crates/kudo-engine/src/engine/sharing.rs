//! Cluster-scoped objects several instances render under one name (a CRD every
//! instance of an operator ships, a ClusterRole with a fixed name): each object records
//! which instances use it, so that removing one instance leaves it to the others.
//!
//! The record is one annotation, `kudo.dev/used-by: "ns-a/inst-a,ns-b/inst-b"`,
//! changed by merge patches that carry the resourceVersion they were computed from: two
//! instances applying at once cannot lose each other's entry (the loser's patch gets
//! 409 and is computed again), and a deletion decided on an empty list fails the same
//! way when someone registered meanwhile.

use std::collections::BTreeSet;

use serde_json::Value;

use super::metadata::LABEL_INSTANCE;
use crate::cluster::{Cluster, ClusterError, Guarded, ObjectRef};

pub const ANNOTATION_USED_BY: &str = "kudo.dev/used-by";

/// How often a guarded change is computed again after losing a race before giving up:
/// each loss means another writer made progress, so this only runs out under a storm.
pub(crate) const ATTEMPTS: usize = 20;

/// How an instance is named in the annotation.
pub fn user_id(namespace: &str, instance: &str) -> String {
    format!("{namespace}/{instance}")
}

/// The instances the object records, or None when it has no record (applied by a
/// provider version before the record existed, or by someone else).
pub(crate) fn users_of(obj: &Value) -> Option<BTreeSet<String>> {
    let raw = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_USED_BY))
        .and_then(Value::as_str)?;
    Some(
        raw.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// The users of an object without a record: the instance its label names, the only
/// trace left of who applied it last. An object with neither is treated as `user`'s.
pub(crate) fn legacy_users(obj: &Value, user: &str) -> BTreeSet<String> {
    let labelled = obj
        .pointer("/metadata/labels")
        .and_then(|l| l.get(LABEL_INSTANCE))
        .and_then(Value::as_str);
    let own_name = user.rsplit('/').next().unwrap_or(user);
    match labelled {
        Some(name) if name != own_name => {
            BTreeSet::from([format!("{name} (as its {LABEL_INSTANCE} label says)")])
        }
        _ => BTreeSet::from([user.to_string()]),
    }
}

/// The version of `obj` a guarded change is computed from.
pub(crate) fn resource_version(obj: &Value) -> &str {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn joined(users: &BTreeSet<String>) -> Option<String> {
    (!users.is_empty()).then(|| users.iter().cloned().collect::<Vec<_>>().join(","))
}

/// Writes `users` as the record, if `obj` (as last read) is still current.
pub(crate) async fn write_users(
    cluster: &Cluster,
    r: &ObjectRef,
    obj: &Value,
    users: &BTreeSet<String>,
) -> Result<Guarded<Value>, ClusterError> {
    cluster
        .patch_annotations_at(
            r,
            resource_version(obj),
            &[(ANNOTATION_USED_BY.to_string(), joined(users))],
        )
        .await
}

/// Adds `user` to the record of the cluster-scoped object `r`; `applied` is the object
/// as the apply returned it, so an instance already recorded costs no request.
pub(crate) async fn record_user(
    cluster: &Cluster,
    r: &ObjectRef,
    applied: &Value,
    user: &str,
) -> Result<(), ClusterError> {
    let mut current = applied.clone();
    for _ in 0..ATTEMPTS {
        let mut users = users_of(&current).unwrap_or_default();
        if !users.insert(user.to_string()) {
            return Ok(());
        }
        match write_users(cluster, r, &current, &users).await? {
            Guarded::Done(_) | Guarded::Gone => return Ok(()),
            Guarded::Stale => match cluster.get(r).await? {
                Some(obj) => current = obj,
                None => return Ok(()),
            },
        }
    }
    Err(ClusterError::Other {
        verb: "record the users of",
        object: r.to_string(),
        message: format!(
            "the object kept changing under {ATTEMPTS} attempts to add {user} to its {ANNOTATION_USED_BY} annotation"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn record_is_a_sorted_set() {
        let obj = json!({"metadata": {"annotations": {ANNOTATION_USED_BY: "b/x, a/y,,b/x"}}});
        let users = users_of(&obj).unwrap();
        assert_eq!(
            users.iter().cloned().collect::<Vec<_>>(),
            vec!["a/y".to_string(), "b/x".to_string()]
        );
        assert_eq!(joined(&users).as_deref(), Some("a/y,b/x"));
        assert_eq!(joined(&BTreeSet::new()), None);
        assert_eq!(users_of(&json!({"metadata": {}})), None);
    }

    #[test]
    fn legacy_objects_belong_to_the_instance_their_label_names() {
        let other = json!({"metadata": {"labels": {LABEL_INSTANCE: "wb"}}});
        let users = legacy_users(&other, "a/wa");
        assert!(!users.contains("a/wa"), "{users:?}");
        assert!(users.iter().any(|u| u.contains("wb")), "{users:?}");
        let own = json!({"metadata": {"labels": {LABEL_INSTANCE: "wa"}}});
        assert_eq!(
            legacy_users(&own, "a/wa"),
            BTreeSet::from(["a/wa".to_string()])
        );
        assert_eq!(
            legacy_users(&json!({}), "a/wa"),
            BTreeSet::from(["a/wa".to_string()])
        );
    }
}
