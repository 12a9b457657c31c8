//! Simulated controllers: readiness after the configured delay, as kube-rs conditions see it.

use std::time::Duration;

use crate::common::*;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use kube::runtime::conditions;
use kube::runtime::wait::{Condition, await_condition};
use kube_sim::SimConfig;
use serde_json::json;
use tokio::time::timeout;

fn template() -> serde_json::Value {
    json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "img:1"}]}})
}

fn deployment(name: &str, image: &str, annotations: serde_json::Value) -> serde_json::Value {
    let mut t = template();
    t["spec"]["containers"][0]["image"] = json!(image);
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": "default", "annotations": annotations},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": t}})
}

async fn wait<K, C>(api: Api<K>, name: &str, cond: C) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    C: Condition<K>,
{
    timeout(WAIT, await_condition(api, name, cond))
        .await
        .expect("condition reached in time")
        .expect("watch works")
        .expect("object exists")
}

// kubernetes.io/docs/concepts/workloads/controllers/deployment/#deployment-status
#[tokio::test]
async fn deployment_becomes_ready_after_delay_and_again_after_spec_change() {
    let (_sim, client) = start_with(SimConfig {
        ready_delay: Duration::from_millis(1000),
        ..Default::default()
    })
    .await;
    let (api, _) = api_for(&client, "apps/v1", "Deployment", Some("default")).await;
    apply(&api, deployment("web", "img:1", json!({})), MANAGER, true)
        .await
        .unwrap();
    let typed: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let first = typed
        .get_status("web")
        .await
        .unwrap()
        .status
        .unwrap_or_default();
    assert_ne!(first.ready_replicas, Some(2), "not ready before the delay");
    let done = wait(typed.clone(), "web", conditions::is_deployment_completed()).await;
    let st = done.status.unwrap();
    assert_eq!(
        (
            st.observed_generation,
            st.ready_replicas,
            st.available_replicas
        ),
        (Some(1), Some(2), Some(2))
    );

    apply(&api, deployment("web", "img:2", json!({})), MANAGER, true)
        .await
        .unwrap();
    // The controller observes the new generation first, un-ready until the delay passes.
    let observed = wait(typed.clone(), "web", |o: Option<&Deployment>| {
        o.and_then(|d| d.status.as_ref())
            .is_some_and(|s| s.observed_generation == Some(2))
    })
    .await;
    assert!(
        !conditions::is_deployment_completed().matches_object(Some(&observed)),
        "a new generation is rolling out"
    );
    assert_eq!(observed.status.unwrap().updated_replicas.unwrap_or(0), 0);
    let done = wait(typed, "web", |o: Option<&Deployment>| {
        o.and_then(|d| d.status.as_ref())
            .is_some_and(|s| s.observed_generation == Some(2))
            && conditions::is_deployment_completed().matches_object(o)
    })
    .await;
    assert_eq!(done.status.unwrap().updated_replicas, Some(2));
}

// kubernetes.io/docs/concepts/workloads/controllers/deployment/#failed-deployment
#[tokio::test]
async fn never_ready_deployment_exceeds_its_progress_deadline() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "Deployment", Some("default")).await;
    let mut d = deployment(
        "stuck",
        "img:1",
        json!({"kube-sim.kudo.dev/never-ready": "true"}),
    );
    d["spec"]["progressDeadlineSeconds"] = json!(1);
    apply(&api, d, MANAGER, true).await.unwrap();
    let typed: Api<Deployment> = Api::namespaced(client, "default");
    let stuck = wait(typed, "stuck", |o: Option<&Deployment>| {
        o.and_then(|d| d.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.type_.as_deref() == Some("Progressing")
                        && c.status.as_deref() == Some("False")
                })
            })
    })
    .await;
    let cond = stuck
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .unwrap();
    assert_eq!(cond.reason.as_deref(), Some("ProgressDeadlineExceeded"));
}

// kubernetes.io/docs/concepts/workloads/controllers/statefulset/#rolling-updates
#[tokio::test]
async fn statefulset_reports_revisions_and_ready_replicas() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "StatefulSet", Some("default")).await;
    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
                     "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "x"}}, "template": template()}});
    apply(&api, sts, MANAGER, true).await.unwrap();
    let typed: Api<StatefulSet> = Api::namespaced(client, "default");
    let ready = wait(typed, "db", |o: Option<&StatefulSet>| {
        o.and_then(|s| s.status.as_ref())
            .is_some_and(|s| s.ready_replicas == Some(3))
    })
    .await;
    let st = ready.status.unwrap();
    assert_eq!(st.observed_generation, Some(1));
    assert_eq!(st.current_revision, st.update_revision);
    assert!(st.update_revision.unwrap().starts_with("db-"));
}

// kubernetes.io/docs/concepts/workloads/controllers/job/#job-termination-and-cleanup
#[tokio::test]
async fn jobs_complete_or_fail_by_annotation() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "batch/v1", "Job", Some("default")).await;
    let job = |name: &str, ann: serde_json::Value| {
        let mut t = template();
        t["spec"]["restartPolicy"] = json!("Never");
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default", "annotations": ann},
               "spec": {"completions": 2, "template": t}})
    };
    apply(&api, job("ok", json!({})), MANAGER, true)
        .await
        .unwrap();
    apply(
        &api,
        job("bad", json!({"kube-sim.kudo.dev/job-fail": "true"})),
        MANAGER,
        true,
    )
    .await
    .unwrap();
    let typed: Api<Job> = Api::namespaced(client, "default");
    let ok = wait(typed.clone(), "ok", conditions::is_job_completed()).await;
    assert_eq!(ok.status.unwrap().succeeded, Some(2));
    let bad = wait(typed, "bad", |o: Option<&Job>| {
        o.and_then(|j| j.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Failed" && c.status == "True"))
    })
    .await;
    assert!(bad.status.unwrap().failed.unwrap_or(0) > 0);
}

// kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-conditions
#[tokio::test]
async fn pods_run_and_become_ready() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "Pod", Some("default")).await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                     "spec": {"containers": [{"name": "c", "image": "img:1"}]}});
    apply(&api, pod, MANAGER, true).await.unwrap();
    let typed: Api<Pod> = Api::namespaced(client, "default");
    let p = wait(typed, "p", |o: Option<&Pod>| {
        o.and_then(|p| p.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    })
    .await;
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running"));
}

// kubernetes.io/docs/concepts/services-networking/service/#loadbalancer
#[tokio::test]
async fn load_balancer_services_get_an_ingress_ip() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "Service", Some("default")).await;
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb", "namespace": "default"},
                     "spec": {"type": "LoadBalancer", "selector": {"app": "x"}, "ports": [{"port": 443}]}});
    apply(&api, svc, MANAGER, true).await.unwrap();
    let typed: Api<Service> = Api::namespaced(client, "default");
    let s = wait(
        typed,
        "lb",
        conditions::is_service_loadbalancer_provisioned(),
    )
    .await;
    assert!(
        s.status.unwrap().load_balancer.unwrap().ingress.unwrap()[0]
            .ip
            .is_some()
    );
}

// kubernetes.io/docs/concepts/workloads/controllers/statefulset/#on-delete
#[tokio::test]
async fn on_delete_statefulset_update_stays_pending() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "StatefulSet", Some("default")).await;
    let sts = |image: &str| {
        let mut t = template();
        t["spec"]["containers"][0]["image"] = json!(image);
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "od", "namespace": "default",
               // With no delay a RollingUpdate would finish at once; OnDelete must not.
               "annotations": {"kube-sim.kudo.dev/ready-delay-ms": "0"}},
               "spec": {"replicas": 2, "serviceName": "od", "updateStrategy": {"type": "OnDelete"},
                        "selector": {"matchLabels": {"app": "x"}}, "template": t}})
    };
    apply(&api, sts("img:1"), MANAGER, true).await.unwrap();
    let typed: Api<StatefulSet> = Api::namespaced(client, "default");
    let ready = |generation: i64| {
        move |o: Option<&StatefulSet>| {
            o.and_then(|s| s.status.as_ref()).is_some_and(|s| {
                s.observed_generation == Some(generation) && s.ready_replicas == Some(2)
            })
        }
    };
    let first = wait(typed.clone(), "od", ready(1)).await.status.unwrap();
    assert_eq!(first.current_revision, first.update_revision);
    apply(&api, sts("img:2"), MANAGER, true).await.unwrap();
    let updated = wait(typed, "od", ready(2)).await.status.unwrap();
    assert_ne!(
        updated.current_revision, updated.update_revision,
        "pods are replaced only when deleted"
    );
    assert_eq!(updated.updated_replicas.unwrap_or(0), 0);
}

// kubernetes.io/docs/concepts/workloads/controllers/daemonset/ and .../replicaset/,
// kubernetes.io/docs/concepts/storage/persistent-volumes/#binding,
// kubernetes.io/docs/concepts/services-networking/ingress/
#[tokio::test]
async fn daemonsets_replicasets_claims_and_ingresses_settle() {
    use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet};
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use k8s_openapi::api::networking::v1::Ingress;
    let (_sim, client) = start().await;
    let set = |kind: &str| {
        json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w", "namespace": "default"},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": template()}})
    };
    let (ds_api, _) = api_for(&client, "apps/v1", "DaemonSet", Some("default")).await;
    let mut ds = set("DaemonSet");
    ds["spec"].as_object_mut().unwrap().remove("replicas");
    apply(&ds_api, ds, MANAGER, true).await.unwrap();
    let (rs_api, _) = api_for(&client, "apps/v1", "ReplicaSet", Some("default")).await;
    apply(&rs_api, set("ReplicaSet"), MANAGER, true)
        .await
        .unwrap();
    let (pvc_api, _) = api_for(&client, "v1", "PersistentVolumeClaim", Some("default")).await;
    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "w", "namespace": "default"},
                     "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    apply(&pvc_api, pvc, MANAGER, true).await.unwrap();
    let (ing_api, _) = api_for(&client, "networking.k8s.io/v1", "Ingress", Some("default")).await;
    let ing = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "w", "namespace": "default"},
                     "spec": {"defaultBackend": {"service": {"name": "w", "port": {"number": 80}}}}});
    apply(&ing_api, ing, MANAGER, true).await.unwrap();

    let ds = wait(
        Api::<DaemonSet>::namespaced(client.clone(), "default"),
        "w",
        |o: Option<&DaemonSet>| {
            o.and_then(|d| d.status.as_ref())
                .is_some_and(|s| s.number_ready == 1 && s.number_available == Some(1))
        },
    )
    .await;
    assert_eq!(ds.status.unwrap().updated_number_scheduled, Some(1));
    wait(
        Api::<ReplicaSet>::namespaced(client.clone(), "default"),
        "w",
        |o: Option<&ReplicaSet>| {
            o.and_then(|r| r.status.as_ref())
                .is_some_and(|s| s.ready_replicas == Some(2))
        },
    )
    .await;
    let pvc = wait(
        Api::<PersistentVolumeClaim>::namespaced(client.clone(), "default"),
        "w",
        |o: Option<&PersistentVolumeClaim>| {
            o.and_then(|p| p.status.as_ref())
                .is_some_and(|s| s.phase.as_deref() == Some("Bound"))
        },
    )
    .await;
    assert!(
        pvc.status
            .unwrap()
            .capacity
            .unwrap()
            .contains_key("storage")
    );
    wait(
        Api::<Ingress>::namespaced(client, "default"),
        "w",
        conditions::is_ingress_provisioned(),
    )
    .await;
}

// kubernetes.io/docs/concepts/workloads/controllers/statefulset/#stable-storage and
// #persistentvolumeclaim-retention: one claim per ordinal and template, named
// `<template>-<statefulset>-<ordinal>`, labelled with the selector labels; kept when the
// StatefulSet goes unless `whenDeleted: Delete` makes the StatefulSet their owner.
#[tokio::test]
async fn statefulset_creates_claims_from_its_templates_and_they_outlive_it() {
    let (_sim, client) = start().await;
    let (sts, _) = api_for(&client, "apps/v1", "StatefulSet", Some("default")).await;
    let (pvcs, _) = api_for(&client, "v1", "PersistentVolumeClaim", Some("default")).await;
    let s = |name: &str, retention: serde_json::Value| {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "default"},
               "spec": {"serviceName": name, "replicas": 2, "selector": {"matchLabels": {"app": name}},
                        "persistentVolumeClaimRetentionPolicy": retention,
                        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                        "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"tier": "db"}},
                            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})
    };
    apply(
        &sts,
        s("db", json!({"whenDeleted": "Retain"})),
        MANAGER,
        true,
    )
    .await
    .expect("create");
    for ordinal in 0..2 {
        let name = format!("data-db-{ordinal}");
        let claim = wait(
            pvcs.clone(),
            &name,
            |o: Option<&kube::api::DynamicObject>| o.is_some(),
        )
        .await;
        let labels = claim.metadata.labels.unwrap_or_default();
        assert_eq!(labels.get("app").map(String::as_str), Some("db"), "{name}");
        assert_eq!(labels.get("tier").map(String::as_str), Some("db"), "{name}");
        assert!(
            claim
                .metadata
                .owner_references
                .unwrap_or_default()
                .is_empty()
        );
    }
    let gone = sts.get("db").await.unwrap().metadata.uid.unwrap();
    sts.delete("db", &kube::api::DeleteParams::foreground())
        .await
        .unwrap();
    timeout(
        WAIT,
        await_condition(sts.clone(), "db", conditions::is_deleted(&gone)),
    )
    .await
    .expect("deleted in time")
    .expect("watch works");
    assert!(
        pvcs.get("data-db-0").await.is_ok(),
        "a retained claim stays"
    );

    apply(
        &sts,
        s("web", json!({"whenDeleted": "Delete"})),
        MANAGER,
        true,
    )
    .await
    .expect("create");
    let claim = wait(
        pvcs.clone(),
        "data-web-0",
        |o: Option<&kube::api::DynamicObject>| o.is_some(),
    )
    .await;
    let owners = claim.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners[0].kind, "StatefulSet");
    let uid = claim.metadata.uid.unwrap();
    sts.delete("web", &kube::api::DeleteParams::background())
        .await
        .unwrap();
    timeout(
        WAIT,
        await_condition(pvcs, "data-web-0", conditions::is_deleted(&uid)),
    )
    .await
    .expect("collected with its StatefulSet")
    .expect("watch works");
}
