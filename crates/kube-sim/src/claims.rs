//! The StatefulSet controller's PersistentVolumeClaims: for each ordinal of a
//! StatefulSet and each of its `volumeClaimTemplates`, a claim named
//! `<template>-<statefulset>-<ordinal>`, labelled with the template's labels plus the
//! StatefulSet's `selector.matchLabels` (the selector wins), as kube-controller-manager's
//! `getPersistentVolumeClaims` makes them. Claims outlive their StatefulSet unless
//! `persistentVolumeClaimRetentionPolicy.whenDeleted` is `Delete`, in which case the
//! controller makes the StatefulSet their owner and garbage collection removes them.
//! Existing claims are never changed (the real controller does not update them either).
//! See https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#stable-storage

use serde_json::{Map, Value, json};
use tracing::warn;

use crate::ops::{self, WriteOpts};
use crate::store::{ObjKey, Store};

const MANAGER: &str = "kube-controller-manager";

/// The claims a StatefulSet calls for, as (namespace, manifest).
pub fn wanted(sts: &Value) -> Vec<(String, Value)> {
    let meta = &sts["metadata"];
    let (Some(name), Some(namespace)) = (meta["name"].as_str(), meta["namespace"].as_str()) else {
        return Vec::new();
    };
    let Some(templates) = sts["spec"]["volumeClaimTemplates"].as_array() else {
        return Vec::new();
    };
    let replicas = sts["spec"]["replicas"].as_i64().unwrap_or(1).max(0);
    let selector = sts["spec"]["selector"]["matchLabels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let owned = sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == "Delete";
    let mut out = Vec::new();
    for ordinal in 0..replicas {
        for template in templates {
            let Some(tname) = template["metadata"]["name"].as_str() else {
                continue;
            };
            let mut labels: Map<String, Value> = template["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            labels.extend(selector.clone());
            let mut claim = json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": format!("{tname}-{name}-{ordinal}"),
                    "namespace": namespace,
                    "labels": labels,
                },
                "spec": template["spec"].clone(),
            });
            if let Some(annotations) = template["metadata"]["annotations"].as_object() {
                claim["metadata"]["annotations"] = Value::Object(annotations.clone());
            }
            if owned {
                claim["metadata"]["ownerReferences"] = json!([{
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": name,
                    "uid": meta["uid"],
                    "controller": true,
                    "blockOwnerDeletion": true,
                }]);
            }
            out.push((namespace.to_string(), claim));
        }
    }
    out
}

/// Creates the missing claims of every StatefulSet that is not being deleted.
pub fn create_missing(store: &mut Store) {
    let Some(rt) = store
        .registry
        .find("", "v1", "persistentvolumeclaims")
        .cloned()
    else {
        return;
    };
    let wanted: Vec<(String, Value)> = store
        .objects
        .iter()
        .filter(|(k, o)| {
            k.group == "apps"
                && k.plural == "statefulsets"
                && o["metadata"]["deletionTimestamp"].is_null()
        })
        .flat_map(|(_, o)| wanted(o))
        .collect();
    let opts = WriteOpts {
        manager: MANAGER.into(),
        dry_run: false,
    };
    for (namespace, claim) in wanted {
        let key = ObjKey {
            group: String::new(),
            plural: "persistentvolumeclaims".into(),
            namespace: namespace.clone(),
            name: claim["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        };
        if store.objects.contains_key(&key) {
            continue;
        }
        if let Err(e) = ops::create(store, &rt, &namespace, claim, &opts, None) {
            warn!(error = %e, claim = %key.name, "statefulset claim");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_per_ordinal_and_template_with_selector_labels() {
        let sts = json!({
            "metadata": {"name": "zk", "namespace": "ns", "uid": "u1"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "zk", "tier": "sel"}},
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data", "labels": {"tier": "tpl", "x": "y"}},
                    "spec": {"accessModes": ["ReadWriteOnce"]},
                }],
            },
        });
        let claims = wanted(&sts);
        let names: Vec<&str> = claims
            .iter()
            .map(|(_, c)| c["metadata"]["name"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(names, ["data-zk-0", "data-zk-1"]);
        assert_eq!(
            claims[0].1["metadata"]["labels"],
            json!({"app": "zk", "tier": "sel", "x": "y"})
        );
        assert!(claims[0].1["metadata"]["ownerReferences"].is_null());
    }
}
