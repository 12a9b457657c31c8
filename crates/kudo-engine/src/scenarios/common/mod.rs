//! Shared helpers for the kube-sim tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cluster::{Cluster, ConnectionSettings, ObjectRef};
use crate::engine::{self, EngineError, RunOutcome, RunRequest};
use kube_sim::{KubeSim, SimConfig};
use kudo_package::Package;
use serde_json::{Value, json};

pub fn fixtures() -> Option<PathBuf> {
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/fixtures"
    ));
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("SKIPPED: KUDO fixtures not found at {}", p.display());
        None
    }
}

pub fn fixture_package(name: &str) -> Option<Package> {
    let dir = fixtures()?.join("operators").join(name);
    Some(Package::load_dir(&dir).unwrap_or_else(|e| panic!("load {name}: {e}")))
}

/// A simulator and a cluster connected with explicit host/token/CA settings.
pub async fn sim() -> (KubeSim, Cluster) {
    // Engine progress (INFO) shows with `--nocapture`; kube-sim's own logs stay quiet.
    use tracing_subscriber::prelude::*;
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_test_writer())
        .with(
            tracing_subscriber::filter::Targets::new()
                .with_target("kudo_engine", tracing::Level::INFO),
        )
        .try_init();
    let sim = KubeSim::start(SimConfig::default())
        .await
        .expect("start kube-sim");
    let settings = ConnectionSettings {
        host: Some(sim.url()),
        token: Some(sim.token().to_string()),
        cluster_ca_certificate: Some(sim.ca_pem()),
        ..Default::default()
    };
    let cluster = Cluster::connect(&settings)
        .await
        .expect("connect to kube-sim");
    cluster.ensure_kudo_crds().await.expect("KUDO CRDs");
    (sim, cluster)
}

pub async fn namespace(cluster: &Cluster, name: &str) {
    cluster
        .apply(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            false,
        )
        .await
        .expect("create namespace");
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "kudo-engine-{tag}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Writes a package folder and loads it.
pub fn package(operator: &str, params: &str, templates: &[(&str, &str)]) -> Package {
    let dir = temp_dir("pkg");
    write_package(&dir, operator, params, templates);
    let pkg = Package::load_dir(&dir).unwrap_or_else(|e| panic!("load test package: {e}"));
    // A loaded package holds its files' contents: the folder is no longer needed.
    let _ = std::fs::remove_dir_all(&dir);
    pkg
}

pub fn write_package(dir: &Path, operator: &str, params: &str, templates: &[(&str, &str)]) {
    std::fs::write(dir.join("operator.yaml"), operator).expect("write operator.yaml");
    std::fs::write(dir.join("params.yaml"), params).expect("write params.yaml");
    std::fs::create_dir_all(dir.join("templates")).expect("templates dir");
    for (name, text) in templates {
        std::fs::write(dir.join("templates").join(name), text).expect("write template");
    }
}

/// A namespaced CRD serving `kind` (plural `plural`) at `group/version`, its objects
/// schema-free.
pub fn open_crd(group: &str, version: &str, kind: &str, plural: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.to_lowercase(),
                "listKind": format!("{kind}List"),
            },
            "versions": [{"name": version, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    })
}

pub fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn oref(api_version: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectRef {
    ObjectRef::new(api_version, kind, ns, name)
}

pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// Polls `cond` until it holds (condition polling, not a timing assumption); panics after
/// a generous deadline so a broken engine fails instead of hanging.
pub async fn eventually<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !cond().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Fails (instead of hanging) when a run that should finish does not.
pub async fn bounded<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(60), fut)
        .await
        .expect("the run did not finish within 60s")
}

/// A run of `plan` with nothing from earlier runs: no inventory, no resolved
/// dependencies, the public render seed. Tests that need more set those fields with
/// `RunRequest { field, ..request(...) }`.
pub fn request<'a>(
    package: &'a Package,
    instance: &'a str,
    namespace: &'a str,
    parameters: &'a BTreeMap<String, String>,
    plan: &'a str,
) -> RunRequest<'a> {
    RunRequest {
        package,
        instance,
        namespace,
        parameters,
        plan,
        previous_inventory: &[],
        dependencies: None,
        render_seed: None,
        crd_deletion: engine::CrdDeletion::default(),
        crd_safety: engine::CrdSafety::default(),
        health: &engine::HealthPolicy::Kudo,
        progress: None,
        tree: Default::default(),
    }
}

/// Starts `instance`'s deploy plan (no parameters, namespace `default`) in the
/// background, so a test can watch its progress and cancel it midway.
pub fn spawn_deploy(
    cluster: &Cluster,
    package: &Package,
    instance: &str,
    cancel: &tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<Result<RunOutcome, EngineError>> {
    let (cluster, package, instance, cancel) = (
        cluster.clone(),
        package.clone(),
        instance.to_string(),
        cancel.clone(),
    );
    tokio::spawn(async move {
        let none = BTreeMap::new();
        engine::run_plan(
            &cluster,
            request(&package, &instance, "default", &none, "deploy"),
            &cancel,
        )
        .await
    })
}

/// Runs `req` to the end with nothing that cancels it.
pub async fn run(cluster: &Cluster, req: RunRequest<'_>) -> Result<RunOutcome, EngineError> {
    engine::run_plan(cluster, req, &tokio_util::sync::CancellationToken::new()).await
}

/// The tree plan of `pkg`'s deploy for instance `app` in `default` with `values`, over
/// the `previous` inventory, as the planning call makes it (nothing written).
pub async fn plan_app(
    cluster: &Cluster,
    pkg: &Package,
    values: &BTreeMap<String, String>,
    previous: &[ObjectRef],
) -> Result<engine::TreePlan, engine::PlanFailure> {
    let desired = kudo_plan::Desired::new(kudo_plan::Inputs {
        package: pkg,
        instance: "app",
        namespace: "default",
        parameters: values,
        seed: None,
        dependencies: None,
    })
    .expect("desired");
    engine::plan_tree(
        cluster,
        &engine::TreeRequest {
            desired: &desired,
            plan: "deploy",
            prior: engine::Prior {
                objects: previous,
                parameters: None,
                drifted: &[],
            },
            tree: Default::default(),
            crd_safety: engine::CrdSafety::default(),
            contents: engine::Contents::Skip,
        },
    )
    .await
}
