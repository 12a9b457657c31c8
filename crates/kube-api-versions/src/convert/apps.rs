//! `extensions/v1beta1`, `apps/v1beta1`, `apps/v1beta2` workloads -> `apps/v1`.
//!
//! The fields are the same apart from two dropped ones; what changed is defaulting.
//! Where an old version defaulted a field differently from `apps/v1`, the old default
//! is written when the field is unset, so the workload keeps behaving as it did.
//! The old defaults, from the API reference of each version:
//! - selector: `extensions/v1beta1` and `apps/v1beta1` derived it from the template
//!   labels; `apps/v1beta2` and `apps/v1` require it.
//! - Deployment `revisionHistoryLimit`: `extensions/v1beta1` max int32 ("retain all"),
//!   `apps/v1beta1` 2, later 10.
//! - Deployment `progressDeadlineSeconds`: `extensions/v1beta1` max int32 ("no
//!   deadline"), later 600.
//! - Deployment rolling update `maxUnavailable`/`maxSurge`: `extensions/v1beta1` 1 and 1,
//!   later 25% and 25%.
//! - DaemonSet `updateStrategy.type`: `extensions/v1beta1` OnDelete, later RollingUpdate.
//! - StatefulSet `updateStrategy.type`: `apps/v1beta1` OnDelete, later RollingUpdate.

use serde_json::{Map, Value, json};

use super::{ConvertError, Cx, set_default};

const EXTENSIONS: &str = "extensions/v1beta1";
const APPS_V1BETA1: &str = "apps/v1beta1";

pub(super) fn workload(cx: &mut Cx, root: &mut Map<String, Value>) -> Result<(), ConvertError> {
    let spec = cx.spec(root)?;
    default_selector(cx, spec)?;
    match cx.kind {
        "Deployment" => deployment(cx, spec),
        "DaemonSet" => daemon_set(cx, spec),
        "StatefulSet" => stateful_set(cx, spec),
        _ => Ok(()),
    }
}

/// apps/v1 requires a selector; the old versions derived a missing one from the pod
/// template's labels, and so does the conversion (for `apps/v1beta2`, which already
/// required it, this repairs an object that version would have rejected).
fn default_selector(cx: &mut Cx, spec: &mut Map<String, Value>) -> Result<(), ConvertError> {
    if !spec.get("selector").is_none_or(Value::is_null) {
        return Ok(());
    }
    let labels = spec
        .get("template")
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .filter(|labels| !labels.is_empty())
        .cloned();
    let Some(labels) = labels else {
        return Err(cx.err(
            "spec.selector is not set and spec.template.metadata.labels is empty, so none \
             can be derived; apps/v1 requires a selector",
        ));
    };
    spec.insert(
        "selector".to_string(),
        json!({"matchLabels": Value::Object(labels)}),
    );
    let note = format!(
        "spec.selector was not set; derived matchLabels from spec.template.metadata.labels \
         as {} did",
        cx.from
    );
    cx.note(note);
    Ok(())
}

fn deployment(cx: &mut Cx, spec: &mut Map<String, Value>) -> Result<(), ConvertError> {
    if spec.remove("rollbackTo").is_some_and(|v| !v.is_null()) {
        cx.note(
            "spec.rollbackTo has no apps/v1 equivalent (roll back with `kubectl rollout \
             undo`); dropped",
        );
    }
    let mut kept = Vec::new();
    if cx.from == EXTENSIONS {
        if set_default(spec, "revisionHistoryLimit", json!(i32::MAX)) {
            kept.push("revisionHistoryLimit: 2147483647 (keep every old ReplicaSet)");
        }
        if set_default(spec, "progressDeadlineSeconds", json!(i32::MAX)) {
            kept.push("progressDeadlineSeconds: 2147483647 (no deadline)");
        }
        let strategy = cx.object_entry(spec, "strategy", "spec.strategy")?;
        let rolling = match cx.string(strategy, "type", "spec.strategy.type")? {
            None => {
                strategy.insert("type".to_string(), json!("RollingUpdate"));
                true
            }
            Some(t) => t == "RollingUpdate",
        };
        if rolling {
            let update =
                cx.object_entry(strategy, "rollingUpdate", "spec.strategy.rollingUpdate")?;
            if set_default(update, "maxUnavailable", json!(1)) {
                kept.push("strategy.rollingUpdate.maxUnavailable: 1");
            }
            if set_default(update, "maxSurge", json!(1)) {
                kept.push("strategy.rollingUpdate.maxSurge: 1");
            }
        }
    } else if cx.from == APPS_V1BETA1 && set_default(spec, "revisionHistoryLimit", json!(2)) {
        kept.push("revisionHistoryLimit: 2");
    }
    note_kept_defaults(cx, &kept);
    Ok(())
}

fn daemon_set(cx: &mut Cx, spec: &mut Map<String, Value>) -> Result<(), ConvertError> {
    if spec
        .remove("templateGeneration")
        .is_some_and(|v| !v.is_null())
    {
        cx.note("spec.templateGeneration has no apps/v1 equivalent; dropped");
    }
    if cx.from == EXTENSIONS {
        default_update_strategy_on_delete(cx, spec)?;
    }
    Ok(())
}

fn stateful_set(cx: &mut Cx, spec: &mut Map<String, Value>) -> Result<(), ConvertError> {
    if cx.from == APPS_V1BETA1 {
        default_update_strategy_on_delete(cx, spec)?;
    }
    Ok(())
}

fn default_update_strategy_on_delete(
    cx: &mut Cx,
    spec: &mut Map<String, Value>,
) -> Result<(), ConvertError> {
    let strategy = cx.object_entry(spec, "updateStrategy", "spec.updateStrategy")?;
    if set_default(strategy, "type", json!("OnDelete")) {
        note_kept_defaults(cx, &["updateStrategy.type: OnDelete"]);
    }
    Ok(())
}

fn note_kept_defaults(cx: &mut Cx, kept: &[&str]) {
    if kept.is_empty() {
        return;
    }
    let note = format!(
        "wrote the {} defaults that apps/v1 changed, so the {} behaves as before: spec.{}",
        cx.from,
        cx.kind,
        kept.join(", spec.")
    );
    cx.note(note);
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::{Value, json};

    fn workload(api_version: &str, kind: &str, spec: Value) -> Value {
        let mut obj = json!({
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": "kafka", "namespace": "kafka"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": "kafka", "tier": "broker"}},
                    "spec": {"containers": [{"name": "k", "image": "confluentinc/cp-kafka:5.3.0"}]}
                }
            }
        });
        if let (Some(s), Value::Object(extra)) = (obj["spec"].as_object_mut(), spec) {
            s.extend(extra);
        }
        obj
    }

    // Deployment extensions/v1beta1 (selector defaulted, revisionHistoryLimit and progressDeadlineSeconds max int32,
    // rollingUpdate 1/1, rollbackTo): kubernetes.io/docs/reference/generated/kubernetes-api/v1.15/#deploymentspec-v1beta1-extensions;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#deploymentspec-v1-apps
    #[test]
    fn extensions_deployment_keeps_its_old_defaults() {
        let dep = workload(
            "extensions/v1beta1",
            "Deployment",
            json!({"replicas": 3, "rollbackTo": {"revision": 2}}),
        );
        let out = convert(&dep, "apps/v1").unwrap();
        let spec = &out.object["spec"];
        assert_eq!(
            spec["selector"],
            json!({"matchLabels": {"app": "kafka", "tier": "broker"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 2147483647);
        assert_eq!(spec["progressDeadlineSeconds"], 2147483647);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})
        );
        assert!(spec.get("rollbackTo").is_none());
        assert_eq!(spec["replicas"], 3);
        assert_eq!(out.object["metadata"], dep["metadata"]);
        assert_eq!(out.notes.len(), 3, "{:?}", out.notes);
    }

    // Same pages: a written Recreate strategy and explicit values are left alone.
    #[test]
    fn explicit_values_win_over_old_defaults() {
        let dep = workload(
            "extensions/v1beta1",
            "Deployment",
            json!({"selector": {"matchLabels": {"app": "kafka"}}, "revisionHistoryLimit": 5,
                   "progressDeadlineSeconds": 300, "strategy": {"type": "Recreate"}}),
        );
        let out = convert(&dep, "apps/v1").unwrap();
        assert_eq!(out.object["spec"]["selector"], dep["spec"]["selector"]);
        assert_eq!(out.object["spec"]["revisionHistoryLimit"], 5);
        assert_eq!(out.object["spec"]["strategy"], json!({"type": "Recreate"}));
        assert!(out.notes.is_empty(), "{:?}", out.notes);
    }

    // Deployment apps/v1beta1 (revisionHistoryLimit default 2): kubernetes.io/docs/reference/generated/kubernetes-api/v1.15/#deploymentspec-v1beta1-apps;
    // apps/v1beta2 (default 10, as v1): kubernetes.io/docs/reference/generated/kubernetes-api/v1.15/#deploymentspec-v1beta2-apps;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#deploymentspec-v1-apps
    #[test]
    fn apps_beta_deployments() {
        let out = convert(
            &workload("apps/v1beta1", "Deployment", json!({})),
            "apps/v1",
        )
        .unwrap();
        assert_eq!(out.object["spec"]["revisionHistoryLimit"], 2);
        assert!(out.object["spec"].get("strategy").is_none());

        let out = convert(
            &workload(
                "apps/v1beta2",
                "Deployment",
                json!({"selector": {"matchLabels": {"app": "kafka"}}}),
            ),
            "apps/v1",
        )
        .unwrap();
        assert!(out.object["spec"].get("revisionHistoryLimit").is_none());
        assert!(out.notes.is_empty());
    }

    // DaemonSet extensions/v1beta1 (updateStrategy default OnDelete, templateGeneration):
    // kubernetes.io/docs/reference/generated/kubernetes-api/v1.15/#daemonsetspec-v1beta1-extensions;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#daemonsetspec-v1-apps
    #[test]
    fn extensions_daemon_set_keeps_on_delete() {
        let ds = workload(
            "extensions/v1beta1",
            "DaemonSet",
            json!({"templateGeneration": 4}),
        );
        let out = convert(&ds, "apps/v1").unwrap();
        assert_eq!(
            out.object["spec"]["updateStrategy"],
            json!({"type": "OnDelete"})
        );
        assert!(out.object["spec"].get("templateGeneration").is_none());
        assert_eq!(out.notes.len(), 3, "{:?}", out.notes);
    }

    // StatefulSet apps/v1beta1 (updateStrategy default OnDelete): kubernetes.io/docs/reference/generated/kubernetes-api/v1.15/#statefulsetspec-v1beta1-apps;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#statefulsetspec-v1-apps
    #[test]
    fn apps_v1beta1_stateful_set_keeps_on_delete() {
        let sts = workload(
            "apps/v1beta1",
            "StatefulSet",
            json!({"serviceName": "kafka-svc", "replicas": 3,
                   "volumeClaimTemplates": [{"metadata": {"name": "data"},
                       "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}}]}),
        );
        let out = convert(&sts, "apps/v1").unwrap();
        assert_eq!(out.object["spec"]["updateStrategy"]["type"], "OnDelete");
        assert_eq!(
            out.object["spec"]["selector"]["matchLabels"]["app"],
            "kafka"
        );
        assert_eq!(
            out.object["spec"]["volumeClaimTemplates"],
            sts["spec"]["volumeClaimTemplates"]
        );

        // apps/v1beta2 already defaulted to RollingUpdate, like v1.
        let sts2 = workload(
            "apps/v1beta2",
            "StatefulSet",
            json!({"selector": {"matchLabels": {"app": "kafka"}}}),
        );
        let out = convert(&sts2, "apps/v1").unwrap();
        assert!(out.object["spec"].get("updateStrategy").is_none());
    }

    // ReplicaSet extensions/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.15/#replicasetspec-v1beta1-extensions;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#replicasetspec-v1-apps
    #[test]
    fn replica_set_without_selector_or_labels_is_an_error() {
        let mut rs = workload("extensions/v1beta1", "ReplicaSet", json!({}));
        let out = convert(&rs, "apps/v1").unwrap();
        assert_eq!(
            out.object["spec"]["selector"]["matchLabels"]["tier"],
            "broker"
        );
        rs["spec"]["template"]["metadata"] = json!({});
        let err = convert(&rs, "apps/v1").unwrap_err();
        assert!(err.message.contains("selector"), "{err}");
    }
}
