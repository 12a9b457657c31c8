//! Workload health rules: OnDelete StatefulSets and progress deadlines.

use crate::engine::{self, RunRequest};
use crate::scenarios::common::*;
use tokio_util::sync::CancellationToken;

const WORKLOAD_OPERATOR: &str = r#"
name: workloads
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [app.yaml]
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

const WORKLOAD_PARAMS: &str = r#"
parameters:
  - name: IMAGE
    default: busybox:1
  - name: STUCK
    default: "false"
"#;

const WORKLOADS: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Name }}-sts
spec:
  serviceName: {{ .Name }}
  replicas: 2
  updateStrategy:
    type: OnDelete
  selector:
    matchLabels: {app: sts}
  template:
    metadata:
      labels: {app: sts}
    spec:
      containers:
        - name: c
          image: {{ .Params.IMAGE }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-web
  {{- if eq .Params.STUCK "true" }}
  annotations:
    kube-sim.kudo.dev/never-ready: "true"
  {{- end }}
spec:
  progressDeadlineSeconds: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: c
          image: {{ .Params.IMAGE }}
"#;

/// OnDelete StatefulSets finish once the controller caught up (kubectl would wait for
/// ever); a Deployment past its progress deadline is FATAL instead of a hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_delete_statefulset_updates_and_progress_deadline() {
    let pkg = package(
        WORKLOAD_OPERATOR,
        WORKLOAD_PARAMS,
        &[("app.yaml", WORKLOADS)],
    );
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let v1 = params(&[]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "w", "default", &v1, "deploy"),
        &cancel,
    )
    .await
    .expect("first deploy");
    let v2 = params(&[("IMAGE", "busybox:2")]);
    bounded(engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "w", "default", &v2, "deploy")
        },
        &cancel,
    ))
    .await
    .expect("OnDelete update completes");

    let stuck = params(&[("IMAGE", "busybox:3"), ("STUCK", "true")]);
    let err = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "w", "default", &stuck, "deploy")
        },
        &cancel,
    )
    .await
    .expect_err("progress deadline exceeded");
    assert!(
        err.fatal && err.to_string().contains("progress deadline"),
        "{err}"
    );
    assert_eq!(
        err.object,
        Some(oref("apps/v1", "Deployment", Some("default"), "w-web"))
    );
}
