//! Stored `kudo_instance` state of older schema versions, brought to the current one
//! (`UpgradeResourceState`).
//!
//! Version 0 kept `objects` as a list, and `preview`'s `create`, `update` and `delete`
//! as lists of labels; version 1 keys `objects` by [`ManagedObject::key`] and makes each
//! preview list a map from label to apiVersion (taken from the object of that label in
//! `objects`; empty for an object that is not there, such as a deleted one). Objects
//! without an identity were skipped when read before and are dropped here.

use std::collections::HashMap;

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine;
use serde_json::{Map, Value as Json};

use super::model::ManagedObject;

/// `raw` (stored with schema `version`) as the current schema stores it.
pub fn upgrade_state(version: i64, mut raw: Json) -> Json {
    if version >= 1 {
        return raw;
    }
    // label -> apiVersion of the old objects (one table: a scan per preview entry
    // would be quadratic in a big instance's objects).
    // The first object of a label wins, as a scan would find it.
    let mut versions: HashMap<String, String> = HashMap::new();
    if let Some(Json::Array(list)) = raw.get("objects") {
        for r in list.iter().filter_map(identity) {
            versions.entry(engine::label(&r)).or_insert(r.api_version);
        }
    }
    if let Some(objects) = raw.get_mut("objects")
        && let Json::Array(list) = objects
    {
        let map: Map<String, Json> = list
            .iter()
            .filter_map(|entry| Some((ManagedObject::key(&identity(entry)?), entry.clone())))
            .collect();
        *objects = Json::Object(map);
    }
    if let Some(Json::Object(preview)) = raw.get_mut("preview") {
        for (_, part) in preview.iter_mut() {
            if let Json::Array(labels) = part {
                let map: Map<String, Json> = labels
                    .iter()
                    .filter_map(Json::as_str)
                    .map(|label| {
                        let version = versions.get(label).map_or("", String::as_str);
                        (label.to_string(), Json::from(version))
                    })
                    .collect();
                *part = Json::Object(map);
            }
        }
    }
    raw
}

fn identity(entry: &Json) -> Option<ObjectRef> {
    let field = |name: &str| entry.get(name).and_then(Json::as_str);
    Some(ObjectRef::new(
        field("api_version")?,
        field("kind")?,
        field("namespace").filter(|ns| !ns.is_empty()),
        field("name")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_version_0_list_becomes_the_map_and_entries_without_identity_go() {
        let old = json!({
            "id": "ns/zk",
            "objects": [
                {"api_version": "apps/v1", "kind": "StatefulSet", "namespace": "ns", "name": "zk", "uid": "u1"},
                {"api_version": "v1", "kind": "Namespace", "namespace": "", "name": "extra", "uid": null},
                {"api_version": null, "kind": "Secret", "namespace": "ns", "name": "s", "uid": null},
            ],
        });
        let new = upgrade_state(0, old);
        assert_eq!(
            new,
            json!({
                "id": "ns/zk",
                "objects": {
                    "StatefulSet.apps ns/zk": {"api_version": "apps/v1", "kind": "StatefulSet", "namespace": "ns", "name": "zk", "uid": "u1"},
                    "Namespace extra": {"api_version": "v1", "kind": "Namespace", "namespace": "", "name": "extra", "uid": null},
                },
            })
        );
    }

    #[test]
    fn version_0_preview_lists_become_maps_of_the_objects_api_versions() {
        let old = json!({
            "objects": [
                {"api_version": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web", "uid": "u1"},
            ],
            "preview": {
                "create": ["Deployment ns/web"],
                "update": [],
                "delete": ["ConfigMap ns/gone"],
            },
        });
        let new = upgrade_state(0, old);
        assert_eq!(
            new["preview"],
            json!({
                "create": {"Deployment ns/web": "apps/v1"},
                "update": {},
                "delete": {"ConfigMap ns/gone": ""},
            })
        );
        let unknown = json!({"objects": null, "preview": null});
        assert_eq!(upgrade_state(0, unknown.clone()), unknown);
    }

    #[test]
    fn null_objects_and_current_versions_are_left_alone() {
        let null = json!({"id": "ns/zk", "objects": null});
        assert_eq!(upgrade_state(0, null.clone()), null);
        let current = json!({"objects": {"ConfigMap ns/c": {}}});
        assert_eq!(upgrade_state(1, current.clone()), current);
    }
}
