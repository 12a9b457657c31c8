//! Stored `kudo_instance` state of older schema versions, brought to the current one
//! (`UpgradeResourceState`).
//!
//! Version 0 kept `objects` as a list, and `preview`'s `create`, `update` and `delete`
//! as lists of labels; version 1 keys `objects` by [`ManagedObject::key`] and makes each
//! preview list a map from label to apiVersion (taken from the object of that label in
//! `objects`; empty for an object that is not there, such as a deleted one). Objects
//! without an identity were skipped when read before and are dropped here.
//!
//! Version 2 spells an object one way in every attribute, as `objects` keys it
//! (`Kind.group namespace/name` outside the core group): `preview`'s and `manifests`'
//! keys and `drifted_fields[*].object` gain the group of the object they name; each
//! `drifted_fields` entry names its `instance` (the resource's own: dependency
//! instances were not compared before); and `preview` has a `dependencies` map (empty:
//! the dependency instances' changes were not planned before).
//!
//! Tested through `UpgradeResourceState` (tests/acceptance/state_upgrade.rs).

use std::collections::HashMap;

use kudo_engine::cluster::ObjectRef;
use serde_json::{Map, Value as Json};

use super::model::ManagedObject;

/// `raw` (stored with schema `version`) as the current schema stores it.
pub fn upgrade_state(version: i64, raw: Json) -> Json {
    let raw = match version {
        ..1 => to_version_1(raw),
        _ => raw,
    };
    match version {
        ..2 => to_version_2(raw),
        _ => raw,
    }
}

/// Version 1's labels (`Kind namespace/name`, qualified only where two collide) as the
/// `objects` keys of the same objects.
fn to_version_2(mut raw: Json) -> Json {
    // label -> key, from the objects the state holds (the first of a label wins).
    let mut keys: HashMap<String, String> = HashMap::new();
    if let Some(Json::Object(objects)) = raw.get("objects") {
        for entry in objects.values() {
            if let Some(r) = identity(entry) {
                keys.entry(r.label())
                    .or_insert_with(|| ManagedObject::key(&r));
            }
        }
    }
    // An entry whose object `objects` no longer holds (a deleted one) keeps its label,
    // qualified by the apiVersion the preview recorded for it when there is one.
    let key_of = |label: &str, api_version: Option<&str>| -> String {
        if let Some(key) = keys.get(label) {
            return key.clone();
        }
        let group = api_version
            .and_then(|v| v.rsplit_once('/'))
            .map(|(g, _)| g)
            .unwrap_or_default();
        match (group, label.split_once(' ')) {
            ("", _) | (_, None) => label.to_string(),
            (group, Some((kind, rest))) if !kind.contains('.') => {
                format!("{kind}.{group} {rest}")
            }
            _ => label.to_string(),
        }
    };
    if let Some(Json::Object(preview)) = raw.get_mut("preview") {
        for part in ["create", "update", "delete"] {
            if let Some(Json::Object(map)) = preview.get_mut(part) {
                let rekeyed: Map<String, Json> = map
                    .iter()
                    .map(|(label, v)| (key_of(label, v.as_str()), v.clone()))
                    .collect();
                *map = rekeyed;
            }
        }
        preview.insert("dependencies".to_string(), Json::Object(Map::new()));
    }
    if let Some(Json::Object(manifests)) = raw.get_mut("manifests") {
        let rekeyed: Map<String, Json> = manifests
            .iter()
            .map(|(label, v)| (key_of(label, None), v.clone()))
            .collect();
        *manifests = rekeyed;
    }
    let instance = raw.get("name").cloned().unwrap_or(Json::Null);
    if let Some(Json::Array(fields)) = raw.get_mut("drifted_fields") {
        for field in fields.iter_mut() {
            if let Json::Object(f) = field {
                let label = f.get("object").and_then(Json::as_str).unwrap_or_default();
                let key = key_of(label, None);
                f.insert("object".to_string(), Json::from(key));
                f.insert("instance".to_string(), instance.clone());
            }
        }
    }
    raw
}

/// Version 0's lists as version 1's maps.
fn to_version_1(mut raw: Json) -> Json {
    // label -> apiVersion of the old objects (one table: a scan per preview entry
    // would be quadratic in a big instance's objects).
    // The first object of a label wins, as a scan would find it.
    let mut versions: HashMap<String, String> = HashMap::new();
    if let Some(Json::Array(list)) = raw.get("objects") {
        for r in list.iter().filter_map(identity) {
            versions.entry(r.label()).or_insert(r.api_version);
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
