//! The apply runs the plan it is handed (#48): planned, then the cluster changed, then
//! the handed plan applied. When an object of the plan was taken by someone else in
//! between, the apply refuses with the words the plan now uses and writes nothing.

use std::collections::BTreeMap;

use crate::cluster::Cluster;
use crate::engine::{self, PlanFailure, TreePlan, TreePrior};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::scenarios::common::*;

const OPERATOR: &str = r#"
apiVersion: kudo.dev/v1beta1
name: handed
operatorVersion: 0.1.0
tasks:
  - name: first
    kind: Apply
    spec:
      resources: [first.yaml]
  - name: second
    kind: Apply
    spec:
      resources: [second.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: first
            tasks: [first]
          - name: second
            tasks: [second]
"#;

const PARAMS: &str = r#"
apiVersion: kudo.dev/v1beta1
parameters:
  - name: COLOUR
    default: red
  - name: EXTRA
    default: "false"
"#;

const FIRST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-first
data:
  colour: {{ .Params.COLOUR }}
"#;

/// The second step gains a ConfigMap with `EXTRA`: the object the plan expects to
/// create, which someone else makes between the plan and the apply.
const SECOND: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-second
data:
  colour: {{ .Params.COLOUR }}
{{ if eq .Params.EXTRA "true" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-extra
data:
  colour: {{ .Params.COLOUR }}
{{ end }}
"#;

fn configmaps(cluster: &Cluster) -> kube::Api<DynamicObject> {
    kube::Api::namespaced_with(
        cluster.client().clone(),
        "default",
        &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
    )
}

/// Every object of the namespace with its resourceVersion: what "nothing written"
/// compares.
async fn written(cluster: &Cluster) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for kind in ["ConfigMap", "Instance"] {
        let (group, version) = match kind {
            "Instance" => ("kudo.dev", "v1beta1"),
            _ => ("", "v1"),
        };
        let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(
            cluster.client().clone(),
            "default",
            &ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)),
        );
        for o in api.list(&Default::default()).await.expect("list").items {
            out.insert(
                format!("{kind}/{}", o.metadata.name.unwrap_or_default()),
                o.metadata.resource_version.unwrap_or_default(),
            );
        }
    }
    out
}

/// The first deploy, and the plan of the change to hand to the apply: both ConfigMaps
/// blue and a third one created.
struct Planned {
    pkg: kudo_package::Package,
    inventory: Vec<crate::cluster::ObjectRef>,
    values: BTreeMap<String, String>,
    tree: TreePlan,
}

async fn deployed_and_planned(cluster: &Cluster) -> Planned {
    let pkg = package(
        OPERATOR,
        PARAMS,
        &[("first.yaml", FIRST), ("second.yaml", SECOND)],
    );
    let none = BTreeMap::new();
    let deployed = run(cluster, request(&pkg, "app", "default", &none, "deploy"))
        .await
        .expect("first deploy");
    let values = params(&[("COLOUR", "blue"), ("EXTRA", "true")]);
    let tree = plan_app(cluster, &pkg, &values, &deployed.inventory)
        .await
        .unwrap_or_else(|e| panic!("the plan refused: {e:?}"));
    Planned {
        pkg,
        inventory: deployed.inventory,
        values,
        tree,
    }
}

/// The apply of the plan `planned` handed over, as Terraform's apply after that plan.
async fn apply_handed(
    cluster: &Cluster,
    planned: &Planned,
) -> Result<engine::RunOutcome, engine::EngineError> {
    let handed = TreePrior {
        checked: true,
        every_object_checked: true,
        decided: Some(&planned.tree.decisions),
        ..TreePrior::default()
    };
    engine::run_plan(
        cluster,
        engine::RunRequest {
            previous_inventory: &planned.inventory,
            tree: handed,
            ..request(&planned.pkg, "app", "default", &planned.values, "deploy")
        },
        &CancellationToken::new(),
    )
    .await
}

async fn colour(cluster: &Cluster, name: &str) -> Option<String> {
    let found = configmaps(cluster).get_opt(name).await.expect("read");
    found.and_then(|o| {
        o.data
            .pointer("/data/colour")
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_taken_after_the_plan_stops_the_apply_with_the_plans_words_before_any_write() {
    let (_sim, cluster) = sim().await;
    let planned = deployed_and_planned(&cluster).await;

    // Between the plan and the apply someone else creates the third ConfigMap with
    // their own field manager.
    configmaps(&cluster)
        .patch(
            "app-extra",
            &PatchParams::apply("kubectl").force(),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "app-extra", "namespace": "default"},
                "data": {"colour": "green"},
            })),
        )
        .await
        .expect("another manager creates app-extra");

    // What a plan made now says.
    let words = match plan_app(&cluster, &planned.pkg, &planned.values, &planned.inventory).await {
        Err(PlanFailure::Refused { error, .. }) => error.to_string(),
        other => panic!("a plan after the change should refuse it, got {other:?}"),
    };
    assert!(words.contains("app-extra"), "{words}");

    let before = written(&cluster).await;
    let error = match apply_handed(&cluster, &planned).await {
        Ok(_) => panic!("the apply of the handed plan went through"),
        Err(e) => e.to_string(),
    };
    assert_eq!(error, words, "the apply refuses in the plan's words");
    assert_eq!(
        written(&cluster).await,
        before,
        "the apply wrote before refusing"
    );
    assert_eq!(colour(&cluster, "app-first").await.as_deref(), Some("red"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_deleted_after_the_plan_stops_the_apply_before_any_write() {
    let (_sim, cluster) = sim().await;
    let planned = deployed_and_planned(&cluster).await;
    configmaps(&cluster)
        .delete("app-second", &Default::default())
        .await
        .expect("someone deletes app-second");

    let before = written(&cluster).await;
    let error = match apply_handed(&cluster, &planned).await {
        Ok(_) => panic!("the apply of the handed plan went through"),
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains(
            "ConfigMap default/app-second existed when the plan was made and has been deleted since"
        ) && error.contains("Run `terraform plan` again"),
        "{error}"
    );
    assert_eq!(
        written(&cluster).await,
        before,
        "the apply wrote before refusing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_another_manager_adds_after_the_plan_does_not_stop_the_apply() {
    let (_sim, cluster) = sim().await;
    let planned = deployed_and_planned(&cluster).await;
    // `kubectl label`: a merge patch under kubectl's own field manager, on a field the
    // package does not write.
    configmaps(&cluster)
        .patch(
            "app-first",
            &PatchParams {
                field_manager: Some("kubectl-label".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"metadata": {"labels": {"team": "blue"}}})),
        )
        .await
        .expect("label app-first");

    apply_handed(&cluster, &planned)
        .await
        .expect("the apply goes on: nothing it does changed");
    for name in ["app-first", "app-second", "app-extra"] {
        assert_eq!(
            colour(&cluster, name).await.as_deref(),
            Some("blue"),
            "{name}"
        );
    }
}
