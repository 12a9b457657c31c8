//! `engine::destroy_instance` against kube-sim: the choices the action makes for its
//! caller (whether the dependency tree is worth resolving, which limit stopped the
//! uninstall) and the namespace it releases last.

use std::time::Duration;

use crate::cluster::{Cluster, ObjectRef};
use crate::engine::{
    self, DestroyError, DestroyRequest, Destroyed, NamespaceUser, Released, instance_ref,
};
use crate::scenarios::common::*;
use kudo_package::Package;
use tokio_util::sync::CancellationToken;

const DEPLOY_ONLY: &str = r#"
name: plain
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml]
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

const WITH_CLEANUP: &str = r#"
name: tidy
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml]
  - name: note
    kind: Apply
    spec:
      resources: [note.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [app]
  cleanup:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: note
            tasks: [note]
"#;

const CM: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-app
data:
  k: v
"#;

/// A ConfigMap whose finalizer nothing removes: its deletion never ends.
const HELD_CM: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-app
  finalizers: [example.com/hold]
data:
  k: v
"#;

const NOTE: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-cleaned-up
data:
  k: v
"#;

/// Deploys `pkg` as `name` in `namespace`; returns its inventory.
async fn deployed(cluster: &Cluster, pkg: &Package, name: &str, namespace: &str) -> Vec<ObjectRef> {
    let none = params(&[]);
    engine::run_plan(
        cluster,
        request(pkg, name, namespace, &none, "deploy"),
        &CancellationToken::new(),
    )
    .await
    .expect("deploy")
    .inventory
}

/// Destroys `name` in `namespace` with `pkg`, without a dependency tree.
async fn destroy(
    cluster: &Cluster,
    (namespace, name): (&str, &str),
    pkg: &Package,
    inventory: &[ObjectRef],
    create_namespace: bool,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Destroyed, DestroyError> {
    let none = params(&[]);
    engine::destroy_instance(
        cluster,
        DestroyRequest {
            namespace,
            name,
            inventory,
            package: engine::PackageSource::Given(pkg),
            operator_namespace: namespace,
            parameters: &none,
            sensitive: &none,
            render_seed: None,
            resolution: None,
            crd_deletion: engine::CrdDeletion::default(),
            delete_volumes: false,
            create_namespace,
            timeout,
        },
        cancel,
    )
    .await
}

/// The namespace `create_namespace` made is released last, once the instance is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_cleanup_plan_the_namespace_goes_last() {
    let pkg = package(DEPLOY_ONLY, "parameters: []\n", &[("cm.yaml", CM)]);
    let (_sim, cluster) = sim().await;
    let user = NamespaceUser::instance("team", "p");
    engine::ensure_namespace(&cluster, "team", Some(&user))
        .await
        .expect("create the namespace");
    let inventory = deployed(&cluster, &pkg, "p", "team").await;
    let cancel = CancellationToken::new();
    let answer = bounded(destroy(
        &cluster,
        ("team", "p"),
        &pkg,
        &inventory,
        true,
        Duration::from_secs(60),
        &cancel,
    ))
    .await;
    let destroyed = answer.expect("destroyed");
    assert!(
        destroyed.not_checked.is_empty(),
        "{:?}",
        destroyed.not_checked
    );
    assert!(destroyed.kept.is_empty(), "{:?}", destroyed.kept);
    assert_eq!(destroyed.volumes.as_ref().ok(), Some(&Vec::new()));
    assert!(
        matches!(destroyed.namespace, Some(Ok(Released::Deleted))),
        "{:?}",
        destroyed.namespace
    );
    assert!(
        cluster
            .get(&instance_ref("team", "p"))
            .await
            .unwrap()
            .is_none()
    );
    let namespace = oref("v1", "Namespace", None, "team");
    assert!(cluster.get(&namespace).await.unwrap().is_none());
}

/// Without a dependency tree the cleanup plan still runs (a package without dependency
/// tasks needs none) and the instance goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanup_plan_runs_without_a_tree() {
    let pkg = package(
        WITH_CLEANUP,
        "parameters: []\n",
        &[("cm.yaml", CM), ("note.yaml", NOTE)],
    );
    let (_sim, cluster) = sim().await;
    let inventory = deployed(&cluster, &pkg, "t", "default").await;
    let cancel = CancellationToken::new();
    let answer = bounded(destroy(
        &cluster,
        ("default", "t"),
        &pkg,
        &inventory,
        false,
        Duration::from_secs(60),
        &cancel,
    ))
    .await;
    let destroyed = answer.expect("destroyed");
    assert!(
        destroyed.namespace.is_none(),
        "no create_namespace: nothing released"
    );
    for gone in [
        instance_ref("default", "t"),
        oref("v1", "ConfigMap", Some("default"), "t-app"),
        oref("v1", "ConfigMap", Some("default"), "t-cleaned-up"),
    ] {
        assert!(cluster.get(&gone).await.unwrap().is_none(), "{gone:?} left");
    }
}

/// An uninstall stopped by the request's timeout says so (`timed_out`), one stopped by
/// the caller does not; either way the instance stays for the next destroy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_says_whether_the_timeout_stopped_the_uninstall() {
    let pkg = package(DEPLOY_ONLY, "parameters: []\n", &[("cm.yaml", HELD_CM)]);
    let (_sim, cluster) = sim().await;
    let inventory = deployed(&cluster, &pkg, "h", "default").await;

    let limit = Duration::from_secs(1);
    let cancel = CancellationToken::new();
    let answer = bounded(destroy(
        &cluster,
        ("default", "h"),
        &pkg,
        &inventory,
        false,
        limit,
        &cancel,
    ))
    .await;
    match answer {
        Err(DestroyError::Uninstall { error, timed_out }) => {
            assert!(error.is_cancelled(), "{error}");
            assert_eq!(timed_out, Some(limit));
        }
        Ok(d) => panic!("a held object was destroyed: {d:?}"),
        Err(other) => panic!("expected the uninstall to stop, got {other}"),
    }
    assert!(
        cluster
            .get(&instance_ref("default", "h"))
            .await
            .unwrap()
            .is_some()
    );

    let stopped = CancellationToken::new();
    let stop = stopped.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.cancel();
    });
    let answer = bounded(destroy(
        &cluster,
        ("default", "h"),
        &pkg,
        &inventory,
        false,
        Duration::from_secs(60),
        &stopped,
    ))
    .await;
    match answer {
        Err(DestroyError::Uninstall { error, timed_out }) => {
            assert!(error.is_cancelled(), "{error}");
            assert_eq!(timed_out, None);
        }
        Ok(d) => panic!("a held object was destroyed: {d:?}"),
        Err(other) => panic!("expected the uninstall to stop, got {other}"),
    }
}
