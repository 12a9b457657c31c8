//! Plans run against kube-sim, one file per scenario; shared builders are in
//! `tests/common` (`sim`, `request`, `run`, `package`, ...).

mod basics;
mod deletes;
mod dependencies;
mod drift;
mod failures;
mod packages;
mod planning;
mod pruning;
mod strategies;
mod webhooks;
mod workloads;

use crate::cluster::Cluster;
use crate::engine::instance_ref;
use serde_json::Value;

pub(super) const NEVER_READY: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-slow
  annotations:
    kube-sim.kudo.dev/never-ready: "true"
spec:
  selector:
    matchLabels: {app: slow}
  template:
    metadata:
      labels: {app: slow}
    spec:
      containers:
        - name: c
          image: busybox
"#;

pub(super) const QUICK: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-quick
data:
  k: v
"#;

pub(super) fn two_step_operator(strategy: &str) -> String {
    format!(
        r#"
name: twosteps
operatorVersion: 0.1.0
tasks:
  - name: slow
    kind: Apply
    spec:
      resources: [slow.yaml]
  - name: quick
    kind: Apply
    spec:
      resources: [quick.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: both
        strategy: {strategy}
        steps:
          - name: slow
            tasks: [slow]
          - name: quick
            tasks: [quick]
"#
    )
}

pub(super) async fn status_of(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    pointer: &str,
) -> Option<String> {
    let inst = cluster.get(&instance_ref(ns, name)).await.ok()??;
    inst.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}
