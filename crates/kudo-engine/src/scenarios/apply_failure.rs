//! `engine::apply_change` when its run fails, against kube-sim: what
//! `ApplyRequest::on_failure` asks for runs inside the same call (a failed update put
//! back on its last completed version, a failed create removed), under its own limit
//! rather than the apply's token, and the answer keeps the failed run beside it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cluster::{Cluster, ObjectRef};
use crate::engine::{self, ApplyAnswer, ApplyRequest, OnFailure, PackageSource, instance_ref};
use crate::scenarios::common::*;
use kudo_package::Package;
use tokio_util::sync::CancellationToken;

const PARAMS: &str = "apiVersion: kudo.dev/v1beta1\nparameters: []\n";

/// Version 1.0.0: one ConfigMap.
pub(super) const V1: &str = r#"
name: ledger
operatorVersion: 1.0.0
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
          - name: app
            tasks: [app]
"#;

/// Version 2.0.0: another ConfigMap, then a Job marked as migrating data that fails.
pub(super) const V2: &str = r#"
name: ledger
operatorVersion: 2.0.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml]
  - name: migrate
    kind: Apply
    spec:
      resources: [job.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: app
            tasks: [app]
          - name: migrate
            tasks: [migrate]
"#;

const CM_V1: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-v1
data:
  k: v
"#;

const CM_V2: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-v2
data:
  k: v
"#;

pub(super) const FAILING_MIGRATION: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Name }}-migrate
  annotations:
    rollback.kudo.dev/migrates-data: "true"
    kube-sim.kudo.dev/job-fail: "true"
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: m
          image: busybox
"#;

fn v1() -> Package {
    package(V1, PARAMS, &[("cm.yaml", CM_V1)])
}

fn v2() -> Package {
    package(
        V2,
        PARAMS,
        &[("cm.yaml", CM_V2), ("job.yaml", FAILING_MIGRATION)],
    )
}

/// No record of a tree yet.
static NO_RECORD: engine::TreeRecord = engine::TreeRecord {
    dependencies: std::collections::BTreeMap::new(),
    drifted: std::collections::BTreeMap::new(),
    checked: false,
    every_object_checked: false,
    decided: None,
};

/// KUDO's own health rules (the default settings).
static KUDO_HEALTH: engine::HealthSettings = engine::HealthSettings {
    ready: None,
    rules: Vec::new(),
};

/// The apply of `pkg`'s `deploy` as `l` in `default`, over `previous` (none: a create).
pub(super) fn apply_request<'a>(
    pkg: &'a Package,
    none: &'a BTreeMap<String, String>,
    previous: &'a [ObjectRef],
    on_failure: OnFailure<'a>,
) -> ApplyRequest<'a> {
    ApplyRequest {
        name: "l",
        namespace: "default",
        package: PackageSource::Given(pkg),
        public: none,
        sensitive: none,
        plan: "deploy",
        seed: None,
        resolution: None,
        operator_namespace: "default",
        previous,
        record: &NO_RECORD,
        fresh: previous.is_empty(),
        crd_deletion: engine::CrdDeletion::default(),
        crd_safety: engine::CrdSafety::default(),
        health: &KUDO_HEALTH,
        manifests: false,
        progress: None,
        must_not_exist: previous.is_empty(),
        create_namespace: false,
        settled: false,
        on_failure,
        write_only: None,
    }
}

async fn exists(cluster: &Cluster, kind: (&str, &str), name: &str) -> bool {
    let r = oref(kind.0, kind.1, Some("default"), name);
    cluster.get(&r).await.expect("read").is_some()
}

const CONFIG_MAP: (&str, &str) = ("v1", "ConfigMap");
const JOB: (&str, &str) = ("batch/v1", "Job");

/// A failed update with `OnFailure::RollBack` runs the last completed version again in
/// the same call: what only the failed change made is pruned, its OperatorVersion is
/// installed again (nothing had installed it), and the Job marked as migrating data
/// that the failed run wrote is named. The apply's token, cancelled before the call,
/// does not stop the rollback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_update_is_rolled_back_in_the_same_call() {
    let (v1, v2) = (v1(), v2());
    let (_sim, cluster) = sim().await;
    let none = params(&[]);
    let created = bounded(engine::apply_change(
        &cluster,
        &apply_request(&v1, &none, &[], OnFailure::Stay),
        &CancellationToken::new(),
        |_, answer| answer,
    ))
    .await
    .expect("the create");
    let ApplyAnswer::Ran(created) = created else {
        panic!("the create ran: {created:?}");
    };
    created.run.as_ref().expect("the create's run");
    let previous: Vec<ObjectRef> = created.objects.iter().map(|(r, _, _)| r.clone()).collect();

    let back = OnFailure::RollBack {
        package: &v1,
        resolution: None,
        plan: "deploy",
        public: &none,
        sensitive: &none,
        operator_namespace: "default",
        manifests: false,
        timeout: Duration::from_secs(60),
    };
    let answer = bounded(engine::apply_change(
        &cluster,
        &apply_request(&v2, &none, &previous, back),
        &CancellationToken::new(),
        |_, answer| answer,
    ))
    .await
    .expect("the update");
    let ApplyAnswer::RolledBack { failed, rolled } = answer else {
        panic!("the failed update was rolled back: {answer:?}");
    };
    assert!(failed.run.is_err(), "the update's run failed");
    assert_eq!(failed.package.operator.operator_version, "2.0.0");
    let rolled = (*rolled).expect("the rollback started");
    rolled.applied.run.as_ref().expect("the rollback's run");
    assert_eq!(rolled.applied.package.operator.operator_version, "1.0.0");
    assert_eq!(rolled.reinstalled, Some(v1.operator_version_name()));
    assert_eq!(
        rolled.migrated,
        vec![oref("batch/v1", "Job", Some("default"), "l-migrate")]
    );
    assert!(exists(&cluster, CONFIG_MAP, "l-v1").await);
    assert!(!exists(&cluster, CONFIG_MAP, "l-v2").await);
    assert!(!exists(&cluster, JOB, "l-migrate").await);

    // Interrupted: the apply's token is cancelled before its run; the rollback still runs.
    let stopped = CancellationToken::new();
    stopped.cancel();
    let answer = bounded(engine::apply_change(
        &cluster,
        &apply_request(&v2, &none, &previous, back),
        &stopped,
        |_, answer| answer,
    ))
    .await
    .expect("the interrupted update");
    let ApplyAnswer::RolledBack { failed, rolled } = answer else {
        panic!("the interrupted update was rolled back: {answer:?}");
    };
    let stop = failed.run.as_ref().expect_err("the interrupted run failed");
    assert!(stop.is_cancelled(), "{stop}");
    let rolled = (*rolled).expect("the rollback started");
    rolled
        .applied
        .run
        .as_ref()
        .expect("the rollback ran to its end");
    assert!(exists(&cluster, CONFIG_MAP, "l-v1").await);
    assert!(!exists(&cluster, CONFIG_MAP, "l-v2").await);
}

/// A failed create with `OnFailure::Remove` is removed in the same call, as a destroy
/// removes an instance: the Instance and what its run wrote are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_create_is_removed_in_the_same_call() {
    let v2 = v2();
    let (_sim, cluster) = sim().await;
    let none = params(&[]);
    let remove = OnFailure::Remove {
        delete_volumes: false,
        timeout: Duration::from_secs(60),
    };
    let answer = bounded(engine::apply_change(
        &cluster,
        &apply_request(&v2, &none, &[], remove),
        &CancellationToken::new(),
        |_, answer| answer,
    ))
    .await
    .expect("the create");
    let ApplyAnswer::Removed { failed, removed } = answer else {
        panic!("the failed create was removed: {answer:?}");
    };
    assert!(failed.run.is_err(), "the create's run failed");
    let written: Vec<&ObjectRef> = failed.objects.iter().map(|(r, _, _)| r).collect();
    assert!(
        written.contains(&&oref("v1", "ConfigMap", Some("default"), "l-v2")),
        "{written:?}"
    );
    let removed = (*removed).expect("removed");
    assert!(removed.kept.is_empty(), "{:?}", removed.kept);
    assert!(
        cluster
            .get(&instance_ref("default", "l"))
            .await
            .expect("read")
            .is_none()
    );
    assert!(!exists(&cluster, CONFIG_MAP, "l-v2").await);
    assert!(!exists(&cluster, JOB, "l-migrate").await);
}
