//! Waiting until an applied object is healthy, by watching it (see
//! `cluster::watch`): each change the server reports is judged by the health rules.

use tokio_util::sync::CancellationToken;

use serde_json::Value;

use super::error::EngineError;
use super::health::Health;
use super::readiness::{HealthPolicy, judge};
use crate::cluster::{Cluster, ObjectRef, Waited};

fn has_status(obj: &serde_json::Value) -> bool {
    obj.get("status")
        .and_then(serde_json::Value::as_object)
        .is_some_and(|s| !s.is_empty())
}

/// Whether `r` is a custom resource whose CRD declares a status subresource for its
/// version: then a controller reports on it, and under the `ready` policy the wait
/// lasts until it has. False when that cannot be read (the built-in rules decide).
async fn reports_status(cluster: &Cluster, r: &ObjectRef) -> bool {
    let Some((group, version)) = r.api_version.split_once('/') else {
        return false;
    };
    let Ok((resource, _)) = cluster.resolve(&r.api_version, &r.kind).await else {
        return false;
    };
    let crd = ObjectRef::new(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
        &format!("{}.{group}", resource.plural),
    );
    let Ok(Some(crd)) = cluster.get(&crd).await else {
        return false;
    };
    crd.pointer("/spec/versions")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("name").and_then(serde_json::Value::as_str) == Some(version))
        .is_some_and(|v| v.pointer("/subresources/status").is_some())
}

/// Whether the apply's answer already shows the object healthy under `policy`, so that
/// nothing needs to wait for it (a ConfigMap, a Service, an unchanged rollout). Under
/// KUDO's rules the answer decides; under `ready` a custom resource may still wait for
/// its controller's first status, which only [`wait_healthy`] can tell.
pub(crate) fn healthy_as_applied(answer: &Value, policy: &HealthPolicy) -> bool {
    matches!(policy, HealthPolicy::Kudo) && judge(answer, policy) == Health::Healthy
}

/// Follows `r` until `policy` says healthy (Ok), fatal (Err, fatal) or `cancel` fires
/// (Err, not fatal, with the last thing we were waiting for).
pub(crate) async fn wait_healthy(
    cluster: &Cluster,
    r: &ObjectRef,
    policy: &HealthPolicy,
    applied: Option<&Value>,
    cancel: &CancellationToken,
) -> Result<(), EngineError> {
    let mut last = String::new();
    // Why the scheduler could not place the pod, as last seen: a wait that ends then
    // is about the cluster's nodes (see `EngineError::unschedulable`).
    let mut unplaced: Option<String> = None;
    let expects_status = match policy {
        HealthPolicy::Ready(_) => reports_status(cluster, r).await,
        HealthPolicy::Kudo => false,
    };
    let mut judge_seen = |seen: Option<&serde_json::Value>| {
        unplaced = seen.and_then(super::health::unschedulable);
        let verdict = match seen {
                // A controller that has not written any status yet has not judged the
                // object: kstatus would call it current, which races the controller.
                Some(obj) if expects_status && !has_status(obj) => Health::Progressing(
                    "waiting for the controller to write a status (the CRD declares a status subresource)".into(),
                ),
                Some(obj) => judge(obj, policy),
                None => Health::Progressing("object does not exist (yet)".into()),
            };
        match verdict {
            Health::Healthy => {
                // An established CRD: the next step's objects of its kind go by its
                // names, whether or not discovery lists them yet.
                if let Some(obj) = seen {
                    cluster.saw_crd(obj);
                }
                Some(Ok(()))
            }
            Health::Fatal(msg) => Some(Err(EngineError::fatal(msg).with_object(r))),
            Health::Progressing(msg) => {
                if msg != last {
                    tracing::info!(object = %r, waiting_for = %msg, "waiting for object to become healthy");
                    last = msg;
                }
                None
            }
        }
    };
    // The apply's answer is the object as the server keeps it: what is healthy there
    // (a ConfigMap, a Service, an unchanged Deployment whose rollout finished) needs no
    // read, and the wait follows the rest from the answer's resourceVersion, without a
    // list first (an answer without one: from a fresh list).
    let after = applied
        .and_then(|obj| obj.pointer("/metadata/resourceVersion"))
        .and_then(serde_json::Value::as_str);
    let waited = match (applied.map(|obj| judge_seen(Some(obj))), after) {
        (Some(Some(Ok(()))), _) => {
            tracing::debug!(object = %r, "healthy as applied");
            return Ok(());
        }
        // Fatal as written (a Job that failed before): nothing to wait for.
        (Some(Some(fatal)), Some(_)) => Ok(Waited::Done(fatal)),
        _ => {
            cluster
                .watch_until_after(r, after, cancel, judge_seen)
                .await
        }
    }
    .map_err(|e| EngineError::from(e).with_object(r))?;
    match waited {
        Waited::Done(verdict) => {
            if verdict.is_ok() {
                tracing::debug!(object = %r, "healthy");
            }
            verdict
        }
        Waited::Cancelled => {
            if let Some(why) = unplaced {
                return Err(EngineError::unschedulable(format!(
                    "cancelled while waiting for the pod to be scheduled: no node of the cluster can run it ({why})"
                ))
                .with_object(r));
            }
            // Cancelled before the server answered at all: say so rather than print an
            // empty "last seen".
            if last.is_empty() {
                last = "no answer from the API server yet".into();
            }
            Err(EngineError::cancelled(format!(
                "cancelled while waiting for the object to become healthy (last seen: {last})"
            ))
            .with_object(r))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_kudos_rules_settle_an_object_on_the_apply_answer() {
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert!(healthy_as_applied(&configmap, &HealthPolicy::Kudo));
        // A rollout the server has not finished is waited for.
        let rolling = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "generation": 2},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1}
        });
        assert!(!healthy_as_applied(&rolling, &HealthPolicy::Kudo));
        // Under `ready` a custom resource may still wait for its controller's first
        // status, which only the wait can tell.
        let ready = HealthPolicy::Ready(Default::default());
        assert!(!healthy_as_applied(&configmap, &ready));
    }
}
