//! Field-level drift: what someone changed out of band (`kubectl scale`, `kubectl
//! edit`) shows field by field; what the server defaults or another manager adds does
//! not.

use crate::engine::{self, IgnoredPath};
use crate::scenarios::common::*;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::json;

const OPERATOR: &str = r#"
apiVersion: kudo.dev/v1beta1
name: drifty
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [deploy.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: everything
            tasks: [app]
"#;

const PARAMS: &str = r#"
apiVersion: kudo.dev/v1beta1
parameters:
  - name: REPLICAS
    default: "1"
"#;

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-web
spec:
  replicas: {{ .Params.REPLICAS }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.25
"#;

/// `kubectl scale` as kubectl does it: a merge patch under its own field manager.
async fn scale(cluster: &crate::cluster::Cluster, name: &str, replicas: i64) {
    let gvk = GroupVersionKind::gvk("apps", "v1", "Deployment");
    let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        cluster.client().clone(),
        "default",
        &ApiResource::from_gvk(&gvk),
    );
    api.patch(
        name,
        &PatchParams {
            field_manager: Some("kubectl".into()),
            ..Default::default()
        },
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await
    .expect("scale");
}

#[tokio::test]
async fn an_out_of_band_change_is_field_drift_and_nothing_else_is() {
    let (_sim, cluster) = sim().await;
    let pkg = package(OPERATOR, PARAMS, &[("deploy.yaml", DEPLOYMENT)]);
    let values = params(&[]);
    let out = run(&cluster, request(&pkg, "d", "default", &values, "deploy"))
        .await
        .expect("deploy");
    let after_apply = engine::RunRequest {
        previous_inventory: &out.inventory,
        ..request(&pkg, "d", "default", &values, "deploy")
    };

    // Right after the apply, the server's defaults and status are no drift.
    let planned = engine::preview_plan(&cluster, after_apply)
        .await
        .expect("preview");
    assert!(planned.iter().all(|p| p.dry_run.is_some()), "{planned:?}");
    let drift = engine::field_drift(&cluster, &planned, &[])
        .await
        .expect("drift");
    assert!(
        drift.is_empty(),
        "no drift right after the apply: {drift:?}"
    );

    scale(&cluster, "d-web", 3).await;
    let planned = engine::preview_plan(&cluster, after_apply)
        .await
        .expect("preview");
    let drift = engine::field_drift(&cluster, &planned, &[])
        .await
        .expect("drift");
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0].object.kind, "Deployment");
    assert_eq!(drift[0].path, "spec.replicas");
    assert_eq!(drift[0].applied, Some(json!(1)));
    assert_eq!(drift[0].live, Some(json!(3)));

    // An autoscaler's field, ignored for the kind, is not drift.
    let ignored = [IgnoredPath {
        kind: Some("Deployment".into()),
        path: "spec.replicas".into(),
    }];
    let drift = engine::field_drift(&cluster, &planned, &ignored)
        .await
        .expect("drift");
    assert!(drift.is_empty(), "{drift:?}");
}
