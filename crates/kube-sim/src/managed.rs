//! `metadata.managedFields`: reading and writing entries, and ownership bookkeeping for
//! non-apply writes (an update takes ownership of the fields it changed).

use serde_json::{Map, Value, json};

use crate::fieldset::{FieldPath, FieldSet, get_at};
use crate::store::now_rfc3339;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    Apply,
    Update,
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub time: String,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl Entry {
    pub fn is(&self, manager: &str, op: &Operation, sub: Option<&str>) -> bool {
        self.manager == manager && self.operation == *op && self.subresource.as_deref() == sub
    }
}

pub fn read(obj: &Value) -> Vec<Entry> {
    let Some(list) = obj["metadata"]["managedFields"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|e| {
            Some(Entry {
                manager: e.get("manager")?.as_str()?.to_string(),
                operation: match e.get("operation")?.as_str()? {
                    "Apply" => Operation::Apply,
                    _ => Operation::Update,
                },
                api_version: e["apiVersion"].as_str().unwrap_or_default().to_string(),
                time: e["time"].as_str().unwrap_or_default().to_string(),
                subresource: e["subresource"].as_str().map(str::to_string),
                fields: FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&Value::Null)),
            })
        })
        .collect()
}

pub fn write(obj: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": match e.operation { Operation::Apply => "Apply", Operation::Update => "Update" },
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": e.fields.to_fields_v1(),
            });
            if let Some(s) = &e.subresource {
                v["subresource"] = json!(s);
            }
            v
        })
        .collect();
    if let Some(m) = obj["metadata"].as_object_mut() {
        if list.is_empty() {
            m.remove("managedFields");
        } else {
            m.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// Metadata fields no manager owns (server-set or identity).
const UNOWNED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "generateName",
];

/// The part of an object field managers own for a write to `sub` (`None` = main resource).
pub fn managed_view(obj: &Value, sub: Option<&str>, has_status: bool) -> Value {
    let mut view = Map::new();
    let Some(m) = obj.as_object() else {
        return Value::Object(view);
    };
    if sub == Some("status") {
        if let Some(s) = m.get("status") {
            view.insert("status".into(), s.clone());
        }
        return Value::Object(view);
    }
    for (k, v) in m {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "status" if has_status => {}
            "metadata" => {
                let mut md = v.as_object().cloned().unwrap_or_default();
                md.retain(|k, _| !UNOWNED_METADATA.contains(&k.as_str()));
                if !md.is_empty() {
                    view.insert(k.clone(), Value::Object(md));
                }
            }
            _ => {
                view.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(view)
}

fn is_item(p: &FieldPath) -> bool {
    p.last()
        .is_some_and(|l| l.starts_with("k:") || l.starts_with("v:"))
}

/// Whether the value at `p` differs between two views (an item counts as changed only
/// when it appears).
pub fn changed(p: &FieldPath, before: &Value, after: &Value) -> bool {
    if is_item(p) {
        get_at(before, p).is_none()
    } else {
        get_at(before, p) != get_at(after, p)
    }
}

/// Ownership after a non-apply write by `manager`: it takes the fields it changed; fields
/// that disappeared are dropped from every entry.
pub fn record_update(
    entries: &mut Vec<Entry>,
    before: &Value,
    after: &Value,
    manager: &str,
    api_version: &str,
    sub: Option<&str>,
    typed: bool,
) {
    let old_set = FieldSet::from_value(before, typed);
    let new_set = FieldSet::from_value(after, typed);
    let changed_paths: Vec<FieldPath> = new_set
        .0
        .iter()
        .filter(|p| changed(p, before, after))
        .cloned()
        .collect();
    for e in entries.iter_mut() {
        e.fields
            .0
            .retain(|p| new_set.contains(p) || !old_set.contains(p));
        if !e.is(manager, &Operation::Update, sub) {
            e.fields.0.retain(|p| !changed_paths.contains(p));
        }
    }
    if !changed_paths.is_empty() {
        match entries
            .iter_mut()
            .find(|e| e.is(manager, &Operation::Update, sub))
        {
            Some(e) => {
                e.fields.0.extend(changed_paths);
                e.time = now_rfc3339();
                e.api_version = api_version.to_string();
            }
            None => entries.push(Entry {
                manager: manager.to_string(),
                operation: Operation::Update,
                api_version: api_version.to_string(),
                time: now_rfc3339(),
                subresource: sub.map(str::to_string),
                fields: FieldSet(changed_paths.into_iter().collect()),
            }),
        }
    }
    entries.retain(|e| !e.fields.is_empty());
}
