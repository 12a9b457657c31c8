//! Delete tasks: the task's objects go side by side, except what holds others: a CRD
//! after its custom resources, whatever order the task lists them in.

use std::collections::BTreeMap;

use serde_json::json;

use crate::cluster::ObjectRef;
use crate::scenarios::common::*;

const OPERATOR: &str = r#"
name: deletes
operatorVersion: 0.1.0
tasks:
  - name: definition
    kind: Apply
    spec:
      resources: [crd.yaml]
  - name: objects
    kind: Apply
    spec:
      resources: [widget.yaml, config.yaml]
  - name: remove
    kind: Delete
    spec:
      resources: [crd.yaml, config.yaml, widget.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: all
        strategy: serial
        steps:
          - name: definition
            tasks: [definition]
          - name: objects
            tasks: [objects]
  remove:
    strategy: serial
    phases:
      - name: all
        strategy: serial
        steps:
          - name: remove
            tasks: [remove]
"#;

const WIDGET: &str = r#"
apiVersion: deletes.example.com/v1
kind: Widget
metadata:
  name: {{ .Name }}-widget
spec:
  size: 1
"#;

const CONFIG: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-config
data:
  k: v
"#;

/// The task lists the CRD before its custom resource: the custom resource still goes
/// first, so the CRD is not kept for it, and every object of the task is gone.
#[tokio::test]
async fn a_delete_task_removes_a_crd_listed_before_its_custom_resource() {
    let (_sim, cluster) = sim().await;
    namespace(&cluster, "deletes").await;
    let crd = open_crd("deletes.example.com", "v1", "Widget", "widgets");
    let crd_yaml = serde_json::to_string(&crd).expect("crd");
    let pkg = package(
        OPERATOR,
        "parameters: []\n",
        &[
            ("crd.yaml", crd_yaml.as_str()),
            ("widget.yaml", WIDGET),
            ("config.yaml", CONFIG),
        ],
    );
    let none = BTreeMap::new();
    let deployed = bounded(run(
        &cluster,
        request(&pkg, "del", "deletes", &none, "deploy"),
    ))
    .await
    .unwrap_or_else(|e| panic!("deploy: {e}"));
    let removed = bounded(run(
        &cluster,
        crate::engine::RunRequest {
            previous_inventory: &deployed.inventory,
            ..request(&pkg, "del", "deletes", &none, "remove")
        },
    ))
    .await
    .unwrap_or_else(|e| panic!("remove: {e}"));
    assert!(removed.kept.is_empty(), "kept: {:?}", removed.kept);
    let gone = |object: serde_json::Value| {
        let r = ObjectRef::from_object(&object).expect("ref");
        let cluster = cluster.clone();
        async move { matches!(cluster.get(&r).await, Ok(None) | Err(_)) }
    };
    assert!(gone(crd.clone()).await, "the CRD is still there");
    assert!(
        gone(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "del-config", "namespace": "deletes"}}))
        .await,
        "the ConfigMap is still there"
    );
}
