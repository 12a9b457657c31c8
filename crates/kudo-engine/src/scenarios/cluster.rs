//! The cluster layer against kube-sim: transient failures, cluster-scoped objects.

use crate::cluster::{ClusterError, Trouble};
use crate::engine::{self, LABEL_INSTANCE, instance_ref};
use crate::scenarios::common::*;
use kube_sim::FaultRule;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_are_retried_permanent_ones_are_not() {
    let (sim, cluster) = sim().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}});
    sim.add_faults([
        FaultRule {
            verb: Some("patch".into()),
            resource: Some("configmaps".into()),
            status: Some(503),
            count: Some(2),
            ..Default::default()
        },
        FaultRule {
            verb: Some("get".into()),
            resource: Some("configmaps".into()),
            status: Some(429),
            retry_after_seconds: Some(1),
            count: Some(1),
            ..Default::default()
        },
        FaultRule {
            verb: Some("get".into()),
            resource: Some("configmaps".into()),
            drop: true,
            count: Some(1),
            ..Default::default()
        },
    ]);
    cluster
        .apply(&cm, false)
        .await
        .expect("apply retried past two 503s");
    let r = oref("v1", "ConfigMap", Some("default"), "c");
    assert!(
        cluster
            .get(&r)
            .await
            .expect("get retried past 429 and a dropped connection")
            .is_some()
    );

    sim.add_faults([FaultRule {
        verb: Some("patch".into()),
        resource: Some("configmaps".into()),
        status: Some(403),
        count: Some(1),
        ..Default::default()
    }]);
    let err = cluster
        .apply(&cm, false)
        .await
        .expect_err("403 is not retried");
    assert!(matches!(err, ClusterError::Api { code: 403, .. }), "{err}");
    assert!(err.to_string().contains("ConfigMap default/c"), "{err}");
}

/// Connections that keep dropping after the provider connected are a transient
/// failure, not wrong settings; a namespace deleted under the run is named as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_and_a_deleted_namespace_are_told_apart() {
    let (sim, cluster) = sim().await;
    let r = oref("v1", "ConfigMap", Some("default"), "c");
    sim.add_faults([FaultRule {
        verb: Some("get".into()),
        resource: Some("configmaps".into()),
        drop: true,
        ..Default::default()
    }]);
    let err = cluster.get(&r).await.expect_err("every attempt dropped");
    assert!(
        matches!(err, ClusterError::ConnectionLost { .. }),
        "{err:?}"
    );
    assert_eq!(err.trouble(), Trouble::Transient);
    assert!(err.to_string().contains("ConfigMap default/c"), "{err}");
    sim.clear_faults();

    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "gone"}});
    let err = cluster
        .apply(&cm, false)
        .await
        .expect_err("namespace does not exist");
    match &err {
        ClusterError::NamespaceGone { namespace, .. } => assert_eq!(namespace, "gone"),
        other => panic!("{other:?}"),
    }
    assert_eq!(err.trouble(), Trouble::Namespace);
    let engine_err = crate::engine::EngineError::from(err);
    // Not the package's fault, but running again will not help until someone creates
    // the namespace (issue #51): never called retryable.
    assert!(engine_err.fatal, "{engine_err}");
    assert_eq!(engine_err.failure(), crate::cluster::Failure::Namespace);
    assert!(
        engine_err
            .to_string()
            .contains("will not pass by retrying until the namespace exists"),
        "{engine_err}"
    );
}

/// The label sweep discovers every kind: under faults on discovery paths (each request
/// failing once, in turn) it still finds the labelled objects, and a second sweep in
/// the same process asks no discovery at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_sweep_survives_discovery_faults_and_discovers_once() {
    let (sim, cluster) = sim().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "labels": {"sweep": "me"}}});
    cluster.apply(&cm, false).await.expect("apply");
    let faults = ["/api", "/apis", "/api/v1"].map(|path| FaultRule {
        verb: Some("get".into()),
        resource: Some(kube_sim::DISCOVERY.into()),
        name: Some(path.into()),
        status: Some(500),
        count: Some(1),
        ..Default::default()
    });
    sim.add_faults(faults.into_iter().chain([FaultRule {
        verb: Some("get".into()),
        resource: Some(kube_sim::DISCOVERY.into()),
        drop: true,
        count: Some(1),
        ..Default::default()
    }]));
    let found = cluster
        .list_labelled("default", "sweep=me")
        .await
        .expect("discovery retried request by request");
    assert_eq!(found.len(), 1, "{found:?}");
    let before = sim.request_stats();
    cluster
        .list_labelled("default", "sweep=me")
        .await
        .expect("second sweep");
    let after = sim.request_stats();
    assert_eq!(
        after.discovery_requests, before.discovery_requests,
        "the second sweep reuses the discovery"
    );
}

/// Resolving kinds asks discovery once per group-version: the kinds a package uses from
/// `v1` and from `apps/v1` cost one request each, whatever their number. A kind the
/// group-version does not serve is unknown and asks again each time (a CRD created a
/// moment ago must be found).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_of_one_group_version_are_discovered_with_one_request() {
    let (sim, cluster) = sim().await;
    let discovery = || sim.request_stats().discovery_requests;
    let start = discovery();
    for kind in ["ConfigMap", "Secret", "Service", "ServiceAccount"] {
        let (ar, _) = cluster.resolve("v1", kind).await.expect("core kind");
        assert_eq!(ar.kind, kind);
    }
    assert_eq!(discovery() - start, 1, "one request for every v1 kind");
    let (sts, scope) = cluster
        .resolve("apps/v1", "StatefulSet")
        .await
        .expect("apps kind");
    assert_eq!(
        (sts.plural.as_str(), sts.api_version.as_str()),
        ("statefulsets", "apps/v1")
    );
    assert!(matches!(scope, kube::discovery::Scope::Namespaced));
    cluster
        .resolve("apps/v1", "Deployment")
        .await
        .expect("apps kind");
    assert_eq!(discovery() - start, 2, "one more for apps/v1");
    let (_, scope) = cluster.resolve("v1", "Namespace").await.expect("namespace");
    assert!(matches!(scope, kube::discovery::Scope::Cluster));
    assert_eq!(discovery() - start, 2, "Namespace came with the v1 list");

    for _ in 0..2 {
        let err = cluster
            .resolve("v1", "NoSuchKind")
            .await
            .expect_err("not served");
        assert!(matches!(err, ClusterError::UnknownKind { .. }), "{err:?}");
    }
    assert_eq!(discovery() - start, 4, "a miss asks again every time");
}

/// A planning call writes nothing, so within it a kind found unserved stays unserved:
/// a tree's child Instances before KUDO's CRDs exist cost one discovery request, not one
/// each. Outside it (and in a later planning call) a miss asks again, and a CRD created
/// since is found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planning_call_asks_for_an_unserved_kind_once() {
    let (sim, cluster) = sim().await;
    let discovery = || sim.request_stats().discovery_requests;
    let planning = cluster.remembering_misses();
    let start = discovery();
    for _ in 0..3 {
        let err = planning
            .clone()
            .resolve("example.com/v1", "Widget")
            .await
            .expect_err("not served");
        assert!(matches!(err, ClusterError::UnknownKind { .. }), "{err:?}");
    }
    assert_eq!(discovery() - start, 1, "one request for the call's misses");
    planning
        .resolve("example.com/v1", "Gadget")
        .await
        .expect_err("nothing of example.com/v1 is served");
    assert_eq!(
        discovery() - start,
        1,
        "no kind of a group-version found unserved is asked for"
    );
    cluster
        .apply(&open_crd("example.com", "v1", "Widget", "widgets"), false)
        .await
        .expect("create the CRD");
    let (ar, _) = cluster
        .resolve("example.com/v1", "Widget")
        .await
        .expect("the CRD's kind, found outside the planning call");
    assert_eq!(ar.plural, "widgets");
    let (ar, _) = cluster
        .remembering_misses()
        .resolve("example.com/v1", "Widget")
        .await
        .expect("found by the next planning call");
    assert_eq!(ar.plural, "widgets");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_and_wait_tolerates_missing_objects_and_unknown_kinds() {
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    cluster
        .delete_and_wait(&oref("v1", "ConfigMap", Some("default"), "absent"), &cancel)
        .await
        .expect("NotFound is fine");
    cluster
        .delete_and_wait(
            &oref("example.com/v1", "Widget", Some("default"), "w"),
            &cancel,
        )
        .await
        .expect("unknown kind skipped");
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    cluster
        .apply(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d", "namespace": "default"}}), false)
        .await
        .unwrap();
    // Already cancelled: the delete is sent, and either it is gone at the first look or
    // the wait reports cancellation; never a hang.
    match cluster
        .delete_and_wait(&oref("v1", "ConfigMap", Some("default"), "d"), &cancelled)
        .await
    {
        Ok(()) => {}
        Err(e) => assert!(e.is_cancelled(), "{e}"),
    }
}

const CLUSTER_SCOPED: &str = r#"
name: cs
operatorVersion: 0.1.0
tasks:
  - name: rbac
    kind: Apply
    spec:
      resources: [rbac.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [rbac]
"#;

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Namespace }}-{{ .Name }}-reader
  namespace: ignored
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [get]
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Name }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_scoped_objects_are_labelled_unowned_and_uninstalled() {
    let pkg = package(CLUSTER_SCOPED, "parameters: []\n", &[("rbac.yaml", RBAC)]);
    let (_sim, cluster) = sim().await;
    namespace(&cluster, "team").await;
    let none = params(&[]);
    let cancel = CancellationToken::new();
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "c1", "team", &none, "deploy"),
        &cancel,
    )
    .await
    .expect("deploy");
    let role = oref(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
        "team-c1-reader",
    );
    let sa = oref("v1", "ServiceAccount", Some("team"), "c1");
    assert_eq!(out.inventory, vec![role.clone(), sa.clone()]);
    let r = cluster.get(&role).await.unwrap().expect("cluster role");
    assert_eq!(label(&r, LABEL_INSTANCE), Some("c1"));
    assert!(r.pointer("/metadata/ownerReferences").is_none());
    assert!(r.pointer("/metadata/namespace").is_none());

    engine::uninstall_instance(
        &cluster,
        "team",
        "c1",
        &out.inventory,
        None,
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect("uninstall");
    assert!(
        cluster.get(&role).await.unwrap().is_none(),
        "cluster-scoped object removed"
    );
    assert!(cluster.get(&sa).await.unwrap().is_none());
    assert!(
        cluster
            .get(&instance_ref("team", "c1"))
            .await
            .unwrap()
            .is_none()
    );
}

/// Server-side apply as another field manager would (`kubectl apply --server-side
/// --force-conflicts`).
async fn apply_as(cluster: &crate::cluster::Cluster, manager: &str, obj: &serde_json::Value) {
    use kube::api::{Api, DynamicObject, Patch, PatchParams};
    let (ar, _) = cluster.resolve("v1", "ConfigMap").await.expect("resolve");
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client().clone(), "default", &ar);
    let name = obj["metadata"]["name"].as_str().expect("name");
    api.patch(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(obj),
    )
    .await
    .expect("apply as another manager");
}

fn settings(value: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "settings", "namespace": "default"},
           "data": {"key": value, "other": "ours"}})
}

// kudo-semantics §7: conflicts are forced only for fields we owned before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_keeps_other_managers_fields_but_takes_back_its_own() {
    let (_sim, cluster) = sim().await;
    let r = oref("v1", "ConfigMap", Some("default"), "settings");

    // Another manager created the object: its field stays its own, and the error says
    // which field, whose, and what to do. A dry run (the plan-time check) says the same.
    apply_as(
        &cluster,
        "kubectl",
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"}, "data": {"key": "theirs"}}),
    )
    .await;
    for dry_run in [true, false] {
        let err = cluster
            .apply(&settings("mine"), dry_run)
            .await
            .expect_err("conflict");
        let ClusterError::FieldConflict { conflicts, .. } = &err else {
            panic!("expected a field conflict, got {err}");
        };
        assert_eq!(conflicts.len(), 1, "{err}");
        assert_eq!(
            (conflicts[0].field.as_str(), conflicts[0].manager.as_str()),
            (".data.key", "kubectl")
        );
        let text = err.to_string();
        assert!(
            text.contains("ConfigMap default/settings") && text.contains("delete the object"),
            "{text}"
        );
        assert!(crate::engine::EngineError::from(err).fatal);
    }
    let live = cluster.get(&r).await.expect("get").expect("exists");
    assert_eq!(live["data"], json!({"key": "theirs"}));

    // `apply_owned` (objects Terraform state records as ours) takes it over.
    cluster
        .apply_owned(&settings("mine"), false)
        .await
        .expect("owned apply forces");
    let live = cluster.get(&r).await.expect("get").expect("exists");
    assert_eq!(live["data"]["key"], "mine");

    // Someone takes a field we applied: drift, which the next plain apply repairs.
    apply_as(
        &cluster,
        "kubectl",
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"}, "data": {"key": "edited"}}),
    )
    .await;
    cluster
        .apply(&settings("mine"), false)
        .await
        .expect("our own field is taken back");
    let live = cluster.get(&r).await.expect("get").expect("exists");
    assert_eq!(live["data"], json!({"key": "mine", "other": "ours"}));
}
