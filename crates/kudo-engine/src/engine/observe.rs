//! What a refresh reads: the live state of an instance's objects, in as few round trips
//! as it can, and a fingerprint of the fields this provider applied to each, so that
//! only objects someone else wrote to since the last apply are compared field by field.
//!
//! Why the fingerprint works: server-side apply records, per field manager, the fields
//! it set (`metadata.managedFields`). Whoever changes one of our fields afterwards
//! (`kubectl edit`, `kubectl scale`, another tool's apply, a controller's update) takes
//! that field from our entry, and whoever removes one removes it from our entry. Our
//! entry is therefore the same as after our last apply exactly when nobody changed or
//! removed a field we set. Fields we never set do not matter: our apply leaves them.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::concurrent::each_until_failure;
use super::metadata::LABEL_INSTANCE;
use crate::cluster::{Cluster, ClusterError, FIELD_MANAGER, ObjectRef};

/// Objects of one kind in one namespace from which one LIST (by the instance's label)
/// is read instead of a GET each: below this the GETs, all sent at once, cost the same
/// one round trip without the list's larger answer.
pub const LIST_FROM: usize = 8;

/// `summarize(live object)` of each ref, in order (None: it does not exist). Objects of
/// a kind the instance has many of are read with one LIST of the instance's label per
/// kind and namespace; any object that list does not show (its label was removed, or
/// it belongs to another instance too) and every other object is read with a GET. The
/// reads go concurrently. Each object is summarized as it arrives and dropped, so a
/// refresh of 10,000 objects keeps 10,000 summaries, not 10,000 objects.
pub async fn live_objects<T: Clone>(
    cluster: &Cluster,
    refs: &[ObjectRef],
    instance: &str,
    summarize: impl Fn(&Value) -> T + Sync,
) -> Result<Vec<Option<T>>, ClusterError> {
    let mut groups: BTreeMap<(&str, &str, Option<&str>), usize> = BTreeMap::new();
    for r in refs {
        *groups
            .entry((&r.api_version, &r.kind, r.namespace.as_deref()))
            .or_default() += 1;
    }
    let mut listed: HashMap<&ObjectRef, T> = HashMap::new();
    if is_label_value(instance) {
        let selector = format!("{LABEL_INSTANCE}={instance}");
        let lists: Vec<_> = groups
            .into_iter()
            .filter(|(_, n)| *n >= LIST_FROM)
            .map(|(group, _)| group)
            .collect();
        let asked: HashMap<(&str, Option<&str>, &str), &ObjectRef> = refs
            .iter()
            .map(|r| {
                (
                    (r.kind.as_str(), r.namespace.as_deref(), r.name.as_str()),
                    r,
                )
            })
            .collect();
        // Only objects asked for are kept.
        let keep = |item: Value| -> Option<(&ObjectRef, T)> {
            let r = ObjectRef::from_object(&item).ok()?;
            let asked = asked.get(&(r.kind.as_str(), r.namespace.as_deref(), r.name.as_str()))?;
            Some((*asked, summarize(&item)))
        };
        let answers = each_until_failure(lists, |(api_version, kind, namespace)| {
            cluster.list_selected_map(api_version, kind, namespace, Some(&selector), keep)
        })
        .await?;
        listed.extend(answers.into_iter().flatten().flatten());
    }
    let missing: Vec<&ObjectRef> = refs.iter().filter(|r| !listed.contains_key(r)).collect();
    let summarize = &summarize;
    let got = each_until_failure(missing, |r| async move {
        let obj = cluster.get(r).await?;
        Ok::<_, ClusterError>((r, obj.as_ref().map(summarize)))
    })
    .await?;
    let mut found: HashMap<&ObjectRef, Option<T>> = got.into_iter().collect();
    found.extend(listed.into_iter().map(|(r, obj)| (r, Some(obj))));
    Ok(refs
        .iter()
        .map(|r| found.get(r).cloned().flatten())
        .collect())
}

/// Whether `s` can be a label value (a selector with anything else is a bad request).
fn is_label_value(s: &str) -> bool {
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    !s.is_empty()
        && s.len() <= 63
        && ends_ok(s.chars().next())
        && ends_ok(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Who holds `obj` besides us: a digest of its uid and of every other field manager's
/// entry on the main resource (status writers left out, as controllers write status all
/// the time). What the apply compares with the plan's dry-run answer to see that nobody
/// took an object in between ([`super::decisions::Found`]). None for an object that
/// does not exist yet: a dry-run create answers without a resourceVersion.
pub(crate) fn holders(obj: &Value) -> Option<String> {
    let version = obj
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    if version.is_none_or(str::is_empty) {
        return None;
    }
    let mut hash = Sha256::new();
    hash.update(
        obj.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .as_bytes(),
    );
    let entries = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.get("manager").and_then(Value::as_str) != Some(FIELD_MANAGER))
        .filter(|e| {
            e.get("subresource")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        });
    let mut seen: Vec<String> = entries
        .map(|e| {
            ["manager", "operation", "apiVersion", "fieldsV1"]
                .iter()
                .map(|key| e.get(*key).map(Value::to_string).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\0")
        })
        .collect();
    // The server keeps entries in no promised order.
    seen.sort();
    for entry in seen {
        hash.update(b"\n");
        hash.update(entry.as_bytes());
    }
    Some(short_digest(hash))
}

/// A short digest of the fields this provider's field manager holds in `obj`
/// (`metadata.managedFields`), and of the object's uid. None when our manager holds
/// nothing: then nothing can be compared and the object is checked in full.
pub fn applied_fields_fingerprint(obj: &Value) -> Option<String> {
    let uid = obj.pointer("/metadata/uid").and_then(Value::as_str)?;
    let ours: Vec<&Value> = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)?
        .iter()
        .filter(|e| e.get("manager").and_then(Value::as_str) == Some(FIELD_MANAGER))
        .collect();
    if ours.is_empty() {
        return None;
    }
    let mut hash = Sha256::new();
    hash.update(uid.as_bytes());
    for entry in ours {
        // Not `time`: it is when the entry last changed, which says nothing the
        // fields do not.
        for key in ["operation", "apiVersion", "subresource", "fieldsV1"] {
            hash.update(b"\0");
            hash.update(key.as_bytes());
            hash.update(b"=");
            // serde_json writes an object's keys in one order for one value.
            hash.update(entry.get(key).map(Value::to_string).unwrap_or_default());
        }
    }
    Some(short_digest(hash))
}

/// The first 64 bits of `hash`, in hex: a change goes unnoticed only if two field sets
/// collide.
fn short_digest(hash: Sha256) -> String {
    hash.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(fields: Value) -> Value {
        json!({"metadata": {"uid": "u-1", "managedFields": [
            {"manager": FIELD_MANAGER, "operation": "Apply", "apiVersion": "v1",
             "time": "2026-11-25T10:00:00Z", "fieldsV1": fields},
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
             "fieldsV1": {"f:status": {}}}
        ]}})
    }

    #[test]
    fn the_fingerprint_changes_with_our_fields_only() {
        let ours = json!({"f:data": {"f:a": {}, "f:b": {}}});
        let before = applied_fields_fingerprint(&object(ours.clone())).expect("ours");
        assert_eq!(before.len(), 16);
        // Another manager's entry and our entry's time are not ours to compare.
        let mut later = object(ours.clone());
        later["metadata"]["managedFields"][0]["time"] = json!("2026-11-26T10:00:00Z");
        later["metadata"]["managedFields"][1]["fieldsV1"] = json!({"f:status": {"f:x": {}}});
        assert_eq!(
            applied_fields_fingerprint(&later).as_deref(),
            Some(before.as_str())
        );
        // `kubectl edit` of data.b takes it from our entry.
        let taken = object(json!({"f:data": {"f:a": {}}}));
        assert_ne!(
            applied_fields_fingerprint(&taken).as_deref(),
            Some(before.as_str())
        );
        // The same fields on an object created again under the name.
        let mut recreated = object(ours);
        recreated["metadata"]["uid"] = json!("u-2");
        assert_ne!(
            applied_fields_fingerprint(&recreated).as_deref(),
            Some(before.as_str())
        );
    }

    #[test]
    fn no_entry_of_ours_has_no_fingerprint() {
        assert_eq!(
            applied_fields_fingerprint(&json!({"metadata": {"uid": "u"}})),
            None
        );
        let theirs = json!({"metadata": {"uid": "u", "managedFields": [
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {}}]}});
        assert_eq!(applied_fields_fingerprint(&theirs), None);
    }

    #[test]
    fn label_values() {
        assert!(is_label_value("zk"));
        assert!(is_label_value("my-app.v1_2"));
        assert!(!is_label_value(""));
        assert!(!is_label_value("-zk"));
        assert!(!is_label_value(&"a".repeat(64)));
        assert!(!is_label_value("a,b"));
    }

    fn held(entries: Value) -> Value {
        json!({"metadata": {"uid": "u-1", "resourceVersion": "7", "managedFields": entries}})
    }

    #[test]
    fn holders_change_when_another_manager_takes_fields_not_when_we_or_status_writers_do() {
        let ours = json!({"manager": FIELD_MANAGER, "operation": "Apply", "apiVersion": "v1",
            "fieldsV1": {"f:data": {"f:a": {}}}});
        let status = json!({"manager": "kube-controller-manager", "operation": "Update",
            "apiVersion": "apps/v1", "subresource": "status", "fieldsV1": {"f:status": {}}});
        let kubectl = json!({"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
            "fieldsV1": {"f:data": {"f:b": {}}}});
        let planned = holders(&held(json!([ours, status]))).expect("held");
        // Our own entry and status writers come and go with every apply and every sync.
        let mut ours_later = ours.clone();
        ours_later["fieldsV1"] = json!({"f:data": {"f:a": {}, "f:c": {}}});
        assert_eq!(holders(&held(json!([ours_later]))), Some(planned.clone()));
        // Someone else taking a field, or another uid, is a change.
        assert_ne!(
            holders(&held(json!([ours, status, kubectl]))),
            Some(planned.clone())
        );
        let mut recreated = held(json!([ours, status]));
        recreated["metadata"]["uid"] = json!("u-2");
        assert_ne!(holders(&recreated), Some(planned));
        // Entries in another order are the same holders.
        let other = json!({"manager": "helm", "operation": "Update", "apiVersion": "v1",
            "fieldsV1": {"f:metadata": {}}});
        assert_eq!(
            holders(&held(json!([kubectl, other]))),
            holders(&held(json!([other, kubectl])))
        );
    }

    #[test]
    fn a_dry_run_create_has_no_holders() {
        let created = json!({"metadata": {"uid": "generated", "managedFields": []}});
        assert_eq!(holders(&created), None);
        let empty = json!({"metadata": {"uid": "generated", "resourceVersion": ""}});
        assert_eq!(holders(&empty), None);
    }
}
