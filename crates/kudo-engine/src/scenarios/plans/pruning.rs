//! Pruning objects no longer rendered, Toggle tasks, and cleanup on uninstall.

use super::*;
use crate::engine::{self, Cleanup, RunRequest, instance_ref};
use crate::scenarios::common::*;
use tokio_util::sync::CancellationToken;

const PRUNE_OPERATOR: &str = r#"
name: prune
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cms.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [app]
"#;

const PRUNE_PARAMS: &str = r#"
parameters:
  - name: EXTRA
    default: "true"
  - name: SUFFIX
    default: a
"#;

const PRUNE_CMS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-{{ .Params.SUFFIX }}
data: {k: v}
{{- if eq .Params.EXTRA "true" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-extra
data: {k: v}
{{- end }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_no_longer_rendered_are_pruned() {
    let pkg = package(PRUNE_OPERATOR, PRUNE_PARAMS, &[("cms.yaml", PRUNE_CMS)]);
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let first = params(&[]);
    let out1 = engine::run_plan(
        &cluster,
        request(&pkg, "p", "default", &first, "deploy"),
        &cancel,
    )
    .await
    .expect("first run");
    let a = oref("v1", "ConfigMap", Some("default"), "p-a");
    let b = oref("v1", "ConfigMap", Some("default"), "p-b");
    let extra = oref("v1", "ConfigMap", Some("default"), "p-extra");
    assert_eq!(out1.inventory, vec![a.clone(), extra.clone()]);

    let second = params(&[("EXTRA", "false"), ("SUFFIX", "b")]);
    let out2 = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out1.inventory,
            ..request(&pkg, "p", "default", &second, "deploy")
        },
        &cancel,
    )
    .await
    .expect("second run");
    assert_eq!(out2.inventory, vec![b.clone()]);
    assert!(
        cluster.get(&a).await.unwrap().is_none(),
        "renamed object pruned"
    );
    assert!(
        cluster.get(&extra).await.unwrap().is_none(),
        "disabled object pruned"
    );
    assert!(cluster.get(&b).await.unwrap().is_some());
}

const TOGGLE_OPERATOR: &str = r#"
name: toggler
operatorVersion: 0.1.0
tasks:
  - name: maybe
    kind: Toggle
    spec:
      parameter: ENABLED
      resources: [cm.yaml]
  - name: boom
    kind: Dummy
    spec:
      wantErr: true
      fatal: true
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: toggle
            tasks: [maybe]
  cleanup:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: fail
            tasks: [boom]
"#;

const TOGGLE_PARAMS: &str = r#"
parameters:
  - name: ENABLED
    type: boolean
    default: "true"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toggle_applies_and_deletes_and_cleanup_failure_stops_uninstall() {
    let pkg = package(TOGGLE_OPERATOR, TOGGLE_PARAMS, &[("cm.yaml", QUICK)]);
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let cm = oref("v1", "ConfigMap", Some("default"), "t-quick");
    let on = params(&[("ENABLED", "T")]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "t", "default", &on, "deploy"),
        &cancel,
    )
    .await
    .expect("toggle on");
    assert!(cluster.get(&cm).await.unwrap().is_some());
    let off = params(&[("ENABLED", "0")]);
    let out = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "t", "default", &off, "deploy")
        },
        &cancel,
    )
    .await
    .expect("toggle off");
    assert!(cluster.get(&cm).await.unwrap().is_none());
    assert!(out.inventory.is_empty());

    let err = engine::uninstall_instance(
        &cluster,
        "default",
        "t",
        &out.inventory,
        Some(Cleanup {
            dependencies: None,
            package: &pkg,
            parameters: &off,
            render_seed: None,
        }),
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect_err("failing cleanup plan stops uninstall");
    assert!(err.fatal && err.plan.as_deref() == Some("cleanup"), "{err}");
    assert!(
        cluster
            .get(&instance_ref("default", "t"))
            .await
            .unwrap()
            .is_some()
    );
    engine::uninstall_instance(
        &cluster,
        "default",
        "t",
        &out.inventory,
        None,
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect("uninstall");
    assert!(
        cluster
            .get(&instance_ref("default", "t"))
            .await
            .unwrap()
            .is_none()
    );
}
