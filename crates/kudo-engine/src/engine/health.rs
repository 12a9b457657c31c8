//! Health rules: when is an applied object "done"? Pure functions over the object as the
//! server returns it, so every rule is unit-testable without a cluster.

use serde_json::Value;

/// The verdict on one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Healthy,
    /// Not there yet; the message says what is missing.
    Progressing(String),
    /// Will never become healthy without a change (the plan fails with FATAL_ERROR).
    Fatal(String),
}

fn int(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

fn condition_true(obj: &Value, kind: &str) -> bool {
    condition(obj, kind)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

fn condition_text(c: &Value) -> String {
    let reason = c.get("reason").and_then(Value::as_str).unwrap_or_default();
    let message = c.get("message").and_then(Value::as_str).unwrap_or_default();
    match (reason.is_empty(), message.is_empty()) {
        (false, false) => format!("{reason}: {message}"),
        (false, true) => reason.to_string(),
        _ => message.to_string(),
    }
}

/// Judges `obj` by its kind. Kinds without a rule are healthy as soon as they exist.
pub fn health(obj: &Value) -> Health {
    let api_version = text(obj, "/apiVersion").unwrap_or_default();
    let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
    match (group, text(obj, "/kind").unwrap_or_default()) {
        ("apps", "Deployment") => deployment(obj),
        ("apps", "StatefulSet") => statefulset(obj),
        ("batch", "Job") => job(obj),
        ("", "Pod") => pod(obj),
        ("", "Namespace") => namespace(obj),
        ("", "Service") => service(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(obj),
        ("kudo.dev", "Instance") => instance(obj),
        _ => Health::Healthy,
    }
}

/// The controller has seen the latest spec. Missing observedGeneration = not yet.
fn generation_observed(obj: &Value) -> bool {
    let generation = int(obj, "/metadata/generation").unwrap_or(0);
    int(obj, "/status/observedGeneration").is_some_and(|o| o >= generation)
}

// kubectl rollout status for Deployments, with the progress deadline made fatal.
fn deployment(obj: &Value) -> Health {
    if !generation_observed(obj) {
        return Health::Progressing("waiting for the deployment spec update to be observed".into());
    }
    if let Some(c) = condition(obj, "Progressing")
        && c.get("reason").and_then(Value::as_str) == Some("ProgressDeadlineExceeded")
    {
        return Health::Fatal(format!(
            "deployment exceeded its progress deadline: {}",
            condition_text(c)
        ));
    }
    let want = int(obj, "/spec/replicas").unwrap_or(1);
    let updated = int(obj, "/status/updatedReplicas").unwrap_or(0);
    let total = int(obj, "/status/replicas").unwrap_or(0);
    let available = int(obj, "/status/availableReplicas").unwrap_or(0);
    if updated < want {
        return Health::Progressing(format!(
            "{updated} of {want} new replicas have been updated"
        ));
    }
    if total > updated {
        return Health::Progressing(format!(
            "{} old replicas are pending termination",
            total - updated
        ));
    }
    if available < updated {
        return Health::Progressing(format!(
            "{available} of {updated} updated replicas are available"
        ));
    }
    Health::Healthy
}

// kubectl rollout status for StatefulSets; OnDelete (which kubectl refuses to judge) is
// done when the controller caught up and every replica is ready, because pods are only
// replaced when someone deletes them.
fn statefulset(obj: &Value) -> Health {
    if int(obj, "/status/observedGeneration").unwrap_or(0) == 0 || !generation_observed(obj) {
        return Health::Progressing(
            "waiting for the statefulset spec update to be observed".into(),
        );
    }
    let want = int(obj, "/spec/replicas").unwrap_or(1);
    let ready = int(obj, "/status/readyReplicas").unwrap_or(0);
    if ready < want {
        return Health::Progressing(format!("{ready} of {want} pods are ready"));
    }
    if text(obj, "/spec/updateStrategy/type") == Some("OnDelete") {
        return Health::Healthy;
    }
    if let Some(partition) = int(obj, "/spec/updateStrategy/rollingUpdate/partition")
        && partition > 0
    {
        let updated = int(obj, "/status/updatedReplicas").unwrap_or(0);
        let needed = (want - partition).max(0);
        if updated < needed {
            return Health::Progressing(format!(
                "partitioned rollout: {updated} of {needed} pods above partition {partition} updated"
            ));
        }
        return Health::Healthy;
    }
    let current = text(obj, "/status/currentRevision");
    let update = text(obj, "/status/updateRevision");
    if update.is_some() && current != update {
        let updated = int(obj, "/status/updatedReplicas").unwrap_or(0);
        return Health::Progressing(format!(
            "rolling update: {updated} of {want} pods at the new revision"
        ));
    }
    Health::Healthy
}

fn job(obj: &Value) -> Health {
    if let Some(c) = condition(obj, "Failed")
        && c.get("status").and_then(Value::as_str) == Some("True")
    {
        return Health::Fatal(format!("job failed: {}", condition_text(c)));
    }
    if condition_true(obj, "Complete") {
        return Health::Healthy;
    }
    // Without `completions` a Job is done when one pod succeeds.
    let want = int(obj, "/spec/completions").unwrap_or(1);
    let succeeded = int(obj, "/status/succeeded").unwrap_or(0);
    if succeeded >= want {
        Health::Healthy
    } else {
        Health::Progressing(format!("{succeeded} of {want} completions succeeded"))
    }
}

/// Why the scheduler cannot place `pod` (`Unschedulable: 0/3 nodes are available: ...`,
/// its `PodScheduled` condition's reason and message), `None` for a pod that is
/// scheduled or not judged yet. Only the reason `Unschedulable`: the scheduler tried
/// every node and none fits (resources, taints, selectors); a pod held back by its own
/// scheduling gates (`SchedulingGated`) is waiting on whoever removes them.
pub(crate) fn unschedulable(pod: &Value) -> Option<String> {
    let scheduled = condition(pod, "PodScheduled")?;
    let not_placed = scheduled.get("status").and_then(Value::as_str) == Some("False")
        && scheduled.get("reason").and_then(Value::as_str) == Some("Unschedulable");
    (not_placed && text(pod, "/status/phase").unwrap_or("Pending") == "Pending")
        .then(|| condition_text(scheduled))
}

// A pod that already ran to completion is done too: it is what a run-once pod is for.
// A failed pod rarely says why itself (its reason is set for evictions and deadlines);
// the container that failed does, so it is named with its exit code.
fn pod(obj: &Value) -> Health {
    let trouble = super::pod_trouble::trouble(obj);
    match text(obj, "/status/phase").unwrap_or("Pending") {
        "Failed" => {
            let own = text(obj, "/status/message").or(text(obj, "/status/reason"));
            Health::Fatal(match (own, trouble) {
                (Some(own), Some(t)) => format!("pod failed: {own}; {t}"),
                (None, Some(t)) => format!("pod failed: {t}"),
                (Some(own), None) => format!("pod failed: {own}"),
                (None, None) => "pod failed: no reason given".to_string(),
            })
        }
        "Succeeded" => Health::Healthy,
        "Running" if condition_true(obj, "Ready") => Health::Healthy,
        phase => match (trouble, unschedulable(obj)) {
            // No node can run it yet: the cluster may still change (an autoscaler adds
            // a node), so it is waited for, and the wait says why.
            (_, Some(why)) => Health::Progressing(format!("pod cannot be scheduled: {why}")),
            (trouble, None) => match trouble {
                // Still waiting (a restart may help), but say what is wrong.
                Some(t) => Health::Progressing(format!("pod is {phase}: {t}")),
                None if phase == "Running" => {
                    Health::Progressing("pod is running but not ready".into())
                }
                None => Health::Progressing(format!("pod is {phase}")),
            },
        },
    }
}

fn namespace(obj: &Value) -> Health {
    match text(obj, "/status/phase") {
        Some("Active") => Health::Healthy,
        Some(phase) => Health::Progressing(format!("namespace is {phase}")),
        None => Health::Progressing("namespace has no phase yet".into()),
    }
}

fn service(obj: &Value) -> Health {
    let kind = text(obj, "/spec/type").unwrap_or("ClusterIP");
    if kind == "ExternalName" {
        return Health::Healthy;
    }
    if text(obj, "/spec/clusterIP").unwrap_or_default().is_empty() {
        return Health::Progressing("service has no cluster IP yet".into());
    }
    if kind == "LoadBalancer"
        && obj
            .pointer("/status/loadBalancer/ingress")
            .and_then(Value::as_array)
            .is_none_or(|i| i.is_empty())
    {
        return Health::Progressing("load balancer has no ingress yet".into());
    }
    Health::Healthy
}

fn crd(obj: &Value) -> Health {
    if condition_true(obj, "Established") {
        Health::Healthy
    } else {
        Health::Progressing("CRD is not established yet".into())
    }
}

fn instance(obj: &Value) -> Health {
    let plan = text(obj, "/spec/planExecution/planName")
        .filter(|p| !p.is_empty())
        .unwrap_or("deploy");
    let Some(status) = obj.pointer("/status/planStatus").and_then(|s| s.get(plan)) else {
        return Health::Progressing(format!("instance plan {plan} has not started"));
    };
    let message = status
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match status
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("NEVER_RUN")
    {
        "COMPLETE" => Health::Healthy,
        "FATAL_ERROR" => Health::Fatal(format!("instance plan {plan} failed: {message}")),
        s => Health::Progressing(format!("instance plan {plan} is {s}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy(spec: Value, status: Value, generation: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"generation": generation}, "spec": spec, "status": status})
    }

    #[test]
    fn deployment_rollout() {
        let d = deploy(json!({"replicas": 2}), json!({"observedGeneration": 1}), 2);
        assert!(matches!(health(&d), Health::Progressing(m) if m.contains("observed")));
        let d = deploy(
            json!({"replicas": 2}),
            json!({"observedGeneration": 2, "updatedReplicas": 1, "replicas": 2}),
            2,
        );
        assert!(matches!(health(&d), Health::Progressing(m) if m.contains("1 of 2 new")));
        let d = deploy(
            json!({"replicas": 2}),
            json!({"observedGeneration": 2, "updatedReplicas": 2, "replicas": 3, "availableReplicas": 2}),
            2,
        );
        assert!(matches!(health(&d), Health::Progressing(m) if m.contains("pending termination")));
        let d = deploy(
            json!({"replicas": 2}),
            json!({"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 1}),
            2,
        );
        assert!(matches!(health(&d), Health::Progressing(m) if m.contains("available")));
        let d = deploy(
            json!({"replicas": 2}),
            json!({"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 2}),
            2,
        );
        assert_eq!(health(&d), Health::Healthy);
        // replicas omitted means 1
        let d = deploy(json!({}), json!({"observedGeneration": 1}), 1);
        assert!(matches!(health(&d), Health::Progressing(_)));
        let d = deploy(json!({"replicas": 0}), json!({"observedGeneration": 1}), 1);
        assert_eq!(health(&d), Health::Healthy);
    }

    #[test]
    fn deployment_progress_deadline_is_fatal() {
        let d = deploy(
            json!({"replicas": 1}),
            json!({"observedGeneration": 1, "conditions": [{"type": "Progressing", "status": "False",
                   "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet x has timed out"}]}),
            1,
        );
        assert!(matches!(health(&d), Health::Fatal(m) if m.contains("timed out")));
    }

    fn sts(spec: Value, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 1},
               "spec": spec, "status": status})
    }

    #[test]
    fn statefulset_rollout() {
        assert!(matches!(
            health(&sts(json!({"replicas": 3}), json!({}))),
            Health::Progressing(_)
        ));
        let s = sts(
            json!({"replicas": 3}),
            json!({"observedGeneration": 1, "readyReplicas": 2}),
        );
        assert!(matches!(health(&s), Health::Progressing(m) if m.contains("2 of 3")));
        let s = sts(
            json!({"replicas": 3}),
            json!({"observedGeneration": 1, "readyReplicas": 3,
            "currentRevision": "a", "updateRevision": "b", "updatedReplicas": 1}),
        );
        assert!(matches!(health(&s), Health::Progressing(m) if m.contains("rolling update")));
        let s = sts(
            json!({"replicas": 3}),
            json!({"observedGeneration": 1, "readyReplicas": 3,
            "currentRevision": "b", "updateRevision": "b"}),
        );
        assert_eq!(health(&s), Health::Healthy);
    }

    #[test]
    fn statefulset_on_delete_and_partition() {
        let s = sts(
            json!({"replicas": 3, "updateStrategy": {"type": "OnDelete"}}),
            json!({"observedGeneration": 1, "readyReplicas": 3, "currentRevision": "a", "updateRevision": "b"}),
        );
        assert_eq!(health(&s), Health::Healthy);
        let spec = json!({"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}});
        let s = sts(
            spec.clone(),
            json!({"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 0,
            "currentRevision": "a", "updateRevision": "b"}),
        );
        assert!(matches!(health(&s), Health::Progressing(m) if m.contains("partition")));
        let s = sts(
            spec,
            json!({"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 1,
            "currentRevision": "a", "updateRevision": "b"}),
        );
        assert_eq!(health(&s), Health::Healthy);
    }

    fn job_of(spec: Value, status: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "spec": spec, "status": status})
    }

    #[test]
    fn job_completions_and_failure() {
        assert!(matches!(
            health(&job_of(json!({}), json!({}))),
            Health::Progressing(_)
        ));
        assert_eq!(
            health(&job_of(json!({}), json!({"succeeded": 1}))),
            Health::Healthy
        );
        let j = job_of(json!({"completions": 3}), json!({"succeeded": 2}));
        assert!(matches!(health(&j), Health::Progressing(m) if m.contains("2 of 3")));
        assert_eq!(
            health(&job_of(json!({"completions": 3}), json!({"succeeded": 3}))),
            Health::Healthy
        );
        let j = job_of(
            json!({}),
            json!({"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}),
        );
        assert!(matches!(health(&j), Health::Fatal(m) if m.contains("BackoffLimitExceeded")));
        let j = job_of(
            json!({"completions": 5}),
            json!({"conditions": [{"type": "Complete", "status": "True"}]}),
        );
        assert_eq!(health(&j), Health::Healthy);
    }

    #[test]
    fn pod_phases() {
        let p = |status: Value| json!({"apiVersion": "v1", "kind": "Pod", "status": status});
        let unplaced = p(
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
            "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient cpu."}]}),
        );
        assert_eq!(
            health(&unplaced),
            Health::Progressing(
                "pod cannot be scheduled: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.".into()
            )
        );
        let gated = p(
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
            "status": "False", "reason": "SchedulingGated"}]}),
        );
        assert_eq!(unschedulable(&gated), None);
        assert!(matches!(
            health(&p(json!({"phase": "Pending"}))),
            Health::Progressing(_)
        ));
        assert!(matches!(
            health(&p(json!({"phase": "Running"}))),
            Health::Progressing(_)
        ));
        assert_eq!(
            health(&p(
                json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
            )),
            Health::Healthy
        );
        assert!(
            matches!(health(&p(json!({"phase": "Failed", "message": "OOMKilled"}))), Health::Fatal(m) if m.contains("OOMKilled"))
        );
    }

    #[test]
    fn services_namespaces_crds_and_others() {
        let svc = |spec: Value, status: Value| json!({"apiVersion": "v1", "kind": "Service", "spec": spec, "status": status});
        assert!(matches!(
            health(&svc(json!({}), json!({}))),
            Health::Progressing(_)
        ));
        assert_eq!(
            health(&svc(json!({"clusterIP": "None"}), json!({}))),
            Health::Healthy
        );
        assert!(
            matches!(health(&svc(json!({"type": "LoadBalancer", "clusterIP": "10.0.0.1"}), json!({}))), Health::Progressing(m) if m.contains("ingress"))
        );
        assert_eq!(
            health(&svc(
                json!({"type": "LoadBalancer", "clusterIP": "10.0.0.1"}),
                json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}})
            )),
            Health::Healthy
        );
        assert_eq!(
            health(
                &json!({"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Active"}})
            ),
            Health::Healthy
        );
        assert!(matches!(
            health(
                &json!({"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Terminating"}})
            ),
            Health::Progressing(_)
        ));
        assert!(matches!(
            health(
                &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"})
            ),
            Health::Progressing(_)
        ));
        assert_eq!(
            health(&json!({"apiVersion": "v1", "kind": "ConfigMap"})),
            Health::Healthy
        );
        // same kind name in another group has no rule
        assert_eq!(
            health(&json!({"apiVersion": "example.com/v1", "kind": "Deployment"})),
            Health::Healthy
        );
    }

    #[test]
    fn instance_active_plan() {
        let i = |plan: &str, status: &str| {
            json!({"apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "spec": {"planExecution": {"planName": plan}},
            "status": {"planStatus": {plan: {"status": status, "message": "boom"}}}})
        };
        assert_eq!(health(&i("deploy", "COMPLETE")), Health::Healthy);
        assert!(matches!(
            health(&i("update", "IN_PROGRESS")),
            Health::Progressing(_)
        ));
        assert!(
            matches!(health(&i("deploy", "FATAL_ERROR")), Health::Fatal(m) if m.contains("boom"))
        );
        assert!(matches!(
            health(&json!({"apiVersion": "kudo.dev/v1beta1", "kind": "Instance"})),
            Health::Progressing(_)
        ));
    }
}
