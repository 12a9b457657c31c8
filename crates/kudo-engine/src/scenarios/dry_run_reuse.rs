//! The final plan of `terraform apply` takes the first plan's dry-run answers (#48: the
//! apply's passes over the API server down from three to two), only for objects found
//! as the first plan found them: two connections sharing a dry-run directory stand for
//! the two provider processes of one `terraform apply`.

use std::collections::BTreeMap;
use std::path::Path;

use kube_sim::KubeSim;
use serde_json::json;

use crate::cluster::{Cluster, ConnectionSettings, ObjectRef};
use crate::engine::PlannedObject;

use crate::scenarios::common::*;

const OPERATOR: &str = r#"
apiVersion: kudo.dev/v1beta1
name: many
operatorVersion: 0.1.0
tasks:
  - name: maps
    kind: Apply
    spec:
      resources: [maps.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: maps
            tasks: [maps]
"#;

const PARAMS: &str = r#"
apiVersion: kudo.dev/v1beta1
parameters:
  - name: COLOUR
    default: red
  - name: LAST
    default: red
"#;

/// Ten ConfigMaps (more than a LIST is made for); the last one's colour apart.
const MAPS: &str = r#"
{{ range $i := until 9 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Name }}-{{ $i }}
data:
  colour: {{ $.Params.COLOUR }}
{{ end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-9
data:
  colour: {{ .Params.LAST }}
"#;

/// A provider process of the run: its own connection, the run's dry-run directory.
async fn process(sim: &KubeSim, dir: Option<&Path>) -> Cluster {
    let settings = ConnectionSettings {
        host: Some(sim.url()),
        token: Some(sim.token().to_string()),
        cluster_ca_certificate: Some(sim.ca_pem()),
        dry_run_cache_dir: dir.map(Into::into),
        ..Default::default()
    };
    Cluster::connect(&settings).await.expect("connect")
}

/// The plan of a fresh instance `app` with `values`: its objects as
/// Terraform's plan shows them, and the ConfigMap dry-runs it sent.
async fn plan(
    sim: &KubeSim,
    cluster: &Cluster,
    pkg: &kudo_package::Package,
    values: &BTreeMap<String, String>,
    previous: &[ObjectRef],
) -> (Vec<PlannedObject>, u64) {
    let before = sim.request_counts();
    let tree = plan_app(cluster, pkg, values, previous)
        .await
        .unwrap_or_else(|e| panic!("the plan refused: {e:?}"));
    let after = sim.request_counts();
    let key = "patch configmaps";
    let patches = after.get(key).copied().unwrap_or(0) - before.get(key).copied().unwrap_or(0);
    (tree.instance.planned, patches)
}

#[tokio::test]
async fn the_final_plan_takes_the_first_plans_answers_for_objects_found_as_they_were() {
    let (sim, kubectl) = sim().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let pkg = package(OPERATOR, PARAMS, &[("maps.yaml", MAPS)]);
    let values = params(&[("COLOUR", "blue"), ("LAST", "blue")]);

    // The plan the user reads, then the final plan of the apply, in another process.
    let (first, asked) = plan(
        &sim,
        &process(&sim, Some(dir.path())).await,
        &pkg,
        &values,
        &[],
    )
    .await;
    assert_eq!(asked, 10, "the first plan dry-runs every object");
    assert!(first.iter().all(|o| o.checked), "{first:?}");
    let (last, asked) = plan(
        &sim,
        &process(&sim, Some(dir.path())).await,
        &pkg,
        &values,
        &[],
    )
    .await;
    assert_eq!(asked, 0, "the final plan asks nothing the first plan asked");
    assert_eq!(
        last, first,
        "the final plan shows what the first one showed"
    );

    // One value changed: only the object it renders differently is asked.
    let changed = params(&[("COLOUR", "blue"), ("LAST", "green")]);
    let (planned, asked) = plan(
        &sim,
        &process(&sim, Some(dir.path())).await,
        &pkg,
        &changed,
        &[],
    )
    .await;
    assert_eq!(asked, 1, "only the changed object is dry-run");
    let app9 = planned.iter().find(|o| o.object.name == "app-9");
    assert!(app9.is_some_and(|o| o.checked), "{app9:?}");

    // Someone creates one of the objects between the plans: its answer no longer
    // holds, and it is asked again; the others still hold.
    kubectl
        .apply(
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "app-3", "namespace": "default"},
                    "data": {"colour": "red", "owner": "someone"}}),
            false,
        )
        .await
        .expect("someone's ConfigMap");
    let (planned, asked) = plan(
        &sim,
        &process(&sim, Some(dir.path())).await,
        &pkg,
        &values,
        &[],
    )
    .await;
    assert_eq!(asked, 1, "the object created since is dry-run again");
    let app3 = planned
        .iter()
        .find(|o| o.object.name == "app-3")
        .expect("app-3");
    // The server's answer now, not the first plan's: the object exists.
    let found = format!("{:?}", app3.found);
    assert!(found.starts_with("Some(Held"), "{found}");
    let before = first
        .iter()
        .find(|o| o.object.name == "app-3")
        .expect("app-3");
    assert_eq!(format!("{:?}", before.found), "Some(Absent)");

    // Without the directory (a saved plan applied on another machine), every plan asks.
    let (_, asked) = plan(&sim, &process(&sim, None).await, &pkg, &values, &[]).await;
    assert_eq!(asked, 10);
}

#[tokio::test]
async fn an_updates_final_plan_takes_the_answers_for_objects_still_at_their_version() {
    let (sim, kubectl) = sim().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let pkg = package(OPERATOR, PARAMS, &[("maps.yaml", MAPS)]);
    let deployed = run(
        &kubectl,
        request(&pkg, "app", "default", &BTreeMap::new(), "deploy"),
    )
    .await
    .expect("deploy");
    let values = params(&[("COLOUR", "blue"), ("LAST", "blue")]);
    let inventory = &deployed.inventory;

    let (first, asked) = plan(
        &sim,
        &process(&sim, Some(dir.path())).await,
        &pkg,
        &values,
        inventory,
    )
    .await;
    assert_eq!(
        asked, 10,
        "the first plan of the update dry-runs every object"
    );
    let (last, asked) = plan(
        &sim,
        &process(&sim, Some(dir.path())).await,
        &pkg,
        &values,
        inventory,
    )
    .await;
    assert_eq!(asked, 0, "the final plan asks nothing the first plan asked");
    assert_eq!(last, first);

    // Another manager changes one object in between (a new resourceVersion): only that
    // one is asked again.
    kubectl
        .apply(
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "app-4", "namespace": "default",
                                 "labels": {"touched": "yes"}}}),
            false,
        )
        .await
        .expect("label");
    let (_, asked) = plan(
        &sim,
        &process(&sim, Some(dir.path())).await,
        &pkg,
        &values,
        inventory,
    )
    .await;
    assert_eq!(asked, 1, "the object changed since is dry-run again");
}
