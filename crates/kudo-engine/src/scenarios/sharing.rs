//! Instances never take each other's objects: a namespaced object another Instance
//! controls is refused, and a cluster-scoped object records every instance using it,
//! even when they apply at the same moment.

use crate::cluster::Trouble;
use crate::engine::{self, ANNOTATION_USED_BY};
use crate::scenarios::common::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const OPERATOR: &str = r#"
name: sharing
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [objects.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: app
            tasks: [app]
"#;

/// A ConfigMap and a ClusterRole whose names do not depend on the instance.
const OBJECTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: fixed-settings
data:
  owner: {{ .Name | quote }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: fixed-reader
rules:
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get"]
"#;

const CLUSTER_ROLE_ONLY: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: fixed-reader
rules:
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get"]
"#;

fn controller_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/ownerReferences/0/name")
        .and_then(Value::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaced_object_of_another_instance_is_refused_and_left_alone() {
    let pkg = package(
        OPERATOR,
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
        &[("objects.yaml", OBJECTS)],
    );
    let (_sim, cluster) = sim().await;
    let none = params(&[]);
    let cancel = CancellationToken::new();
    engine::run_plan(
        &cluster,
        request(&pkg, "x", "default", &none, "deploy"),
        &cancel,
    )
    .await
    .expect("x deploys");
    let err = engine::run_plan(
        &cluster,
        request(&pkg, "y", "default", &none, "deploy"),
        &cancel,
    )
    .await
    .expect_err("y must not take x's ConfigMap");
    assert_eq!(err.trouble, Trouble::Taken, "{err}");
    assert!(
        err.to_string().contains("belongs to instance x"),
        "the error names the holder: {err}"
    );
    assert_eq!(
        err.object,
        Some(oref("v1", "ConfigMap", Some("default"), "fixed-settings"))
    );
    let cm = cluster
        .get(&oref("v1", "ConfigMap", Some("default"), "fixed-settings"))
        .await
        .unwrap()
        .expect("ConfigMap");
    assert_eq!(controller_of(&cm), Some("x"));
    assert_eq!(cm.pointer("/data/owner"), Some(&Value::from("x")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_instances_all_record_themselves_on_a_shared_object() {
    let pkg = package(
        OPERATOR,
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
        &[("objects.yaml", CLUSTER_ROLE_ONLY)],
    );
    let (_sim, cluster) = sim().await;
    let none = params(&[]);
    let cancel = CancellationToken::new();
    let names: Vec<String> = (0..8).map(|i| format!("i{i}")).collect();
    let runs = names.iter().map(|n| {
        engine::run_plan(
            &cluster,
            request(&pkg, n, "default", &none, "deploy"),
            &cancel,
        )
    });
    for outcome in futures::future::join_all(runs).await {
        outcome.expect("deploy");
    }
    let role = oref(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
        "fixed-reader",
    );
    let obj = cluster.get(&role).await.unwrap().expect("ClusterRole");
    let recorded: Vec<&str> = obj
        .pointer(&format!(
            "/metadata/annotations/{}",
            ANNOTATION_USED_BY.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .split(',')
        .collect();
    let expected: Vec<String> = names.iter().map(|n| format!("default/{n}")).collect();
    assert_eq!(recorded, expected, "every instance is recorded once");

    // Uninstalling all but the last keeps it; the last takes it.
    for n in &names[..7] {
        let kept = engine::uninstall_instance(
            &cluster,
            "default",
            n,
            std::slice::from_ref(&role),
            None,
            engine::CrdDeletion::default(),
            &cancel,
        )
        .await
        .expect("uninstall");
        assert_eq!(kept.len(), 1, "{n}: {kept:?}");
    }
    assert!(cluster.get(&role).await.unwrap().is_some());
    let kept = engine::uninstall_instance(
        &cluster,
        "default",
        &names[7],
        std::slice::from_ref(&role),
        None,
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect("uninstall");
    assert!(kept.is_empty(), "{kept:?}");
    assert!(cluster.get(&role).await.unwrap().is_none());
}
