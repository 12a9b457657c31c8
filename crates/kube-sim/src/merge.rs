//! Object merging: JSON merge patch (RFC 7386), an approximation of strategic merge patch,
//! and the merge server-side apply performs.

use serde_json::Value;

use crate::fieldset::{ListKind, item_key, list_kind};

/// RFC 7386 JSON merge patch (the one implementation, in kube-merge).
pub use kube_merge::json_merge_patch as merge_patch;

/// Strategic merge patch, with the merge keys task patches use too (`kube_merge`).
pub fn strategic_merge(
    target: &mut Value,
    patch: &Value,
    typed: bool,
) -> Result<(), kube_merge::PatchError> {
    kube_merge::strategic_merge(target, patch, typed)
}

/// Merges an applied configuration into the live object: maps recursively, keyed lists by
/// key (new items appended), sets by union, scalars and atomic lists replaced.
pub fn apply_merge(live: &mut Value, applied: &Value, typed: bool) {
    apply_at(live, applied, "", "", typed);
}

/// `field`: the name the values sit under; `parent`: the field holding their mapping.
fn apply_at(live: &mut Value, applied: &Value, parent: &str, field: &str, typed: bool) {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => {
            for (k, av) in a {
                match l.get_mut(k) {
                    Some(lv) => apply_at(lv, av, field, k, typed),
                    None => {
                        l.insert(k.clone(), av.clone());
                    }
                }
            }
        }
        (Value::Array(l), Value::Array(a)) => {
            let kind = list_kind(parent, field, a, typed);
            let live_kind = list_kind(parent, field, l, typed);
            match kind {
                ListKind::Map(_) if live_kind != ListKind::Atomic => {
                    for item in a {
                        let key = item_key(item, &kind);
                        let pos = l.iter().position(|x| item_key(x, &kind) == key);
                        match pos {
                            Some(i) => apply_at(&mut l[i], item, parent, field, typed),
                            None => l.push(item.clone()),
                        }
                    }
                }
                ListKind::Set if live_kind == ListKind::Set => {
                    for item in a {
                        if !l.contains(item) {
                            l.push(item.clone());
                        }
                    }
                }
                _ => *l = a.clone(),
            }
        }
        (l, a) => *l = a.clone(),
    }
}

/// Drops `null` members: an applied `null` means "no opinion" here.
pub fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merges_containers_by_name_and_deletes_with_directive() {
        let mut t = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}});
        let p = json!({"spec": {"containers": [{"name": "a", "image": "2"}, {"name": "b", "$patch": "delete"}, {"name": "c", "image": "3"}]}});
        strategic_merge(&mut t, &p, true).expect("patch applies");
        assert_eq!(
            t,
            json!({"spec": {"containers": [{"name": "a", "image": "2"}, {"name": "c", "image": "3"}]}})
        );
    }

    #[test]
    fn merge_patch_null_deletes() {
        let mut t = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge_patch(&mut t, &json!({"a": {"b": null}, "l": [3]}));
        assert_eq!(t, json!({"a": {"c": 2}, "l": [3]}));
    }
}
