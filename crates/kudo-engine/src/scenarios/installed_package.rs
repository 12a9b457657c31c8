//! `engine::apply_change` handed only the OperatorVersion's name
//! (`PackageSource::Installed` without a plan-time copy or without its tree), against
//! kube-sim: the engine reads the package the cluster holds and resolves the tree
//! itself, and refuses before any write when it can do neither.

use kudo_package::LoadContext;
use tokio_util::sync::CancellationToken;

use crate::engine::{self, ApplyAnswer, ApplyRequest, OnFailure, PackageSource, PlanRefusal};
use crate::scenarios::apply_failure::apply_request;
use crate::scenarios::common::*;

const PARAMS: &str = "apiVersion: kudo.dev/v1beta1\nparameters: []\n";

/// One ConfigMap, and (with `dependency`) a KudoOperator task naming a package only a
/// repository could provide.
fn ledger(dependency: bool) -> kudo_package::Package {
    let (task, step) = match dependency {
        true => (
            "  - name: audit\n    kind: KudoOperator\n    spec:\n      package: audit\n",
            "          - name: audit\n            tasks: [audit]\n",
        ),
        false => ("", ""),
    };
    let operator = format!(
        "name: ledger\noperatorVersion: 1.0.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\n{task}plans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: app\n            tasks: [app]\n{step}"
    );
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\ndata:\n  k: v\n";
    package(&operator, PARAMS, &[("cm.yaml", cm)])
}

/// Whether instance `l` or its ConfigMap is in `default`.
async fn written(cluster: &crate::cluster::Cluster) -> bool {
    let instance = cluster.get(&engine::instance_ref("default", "l")).await;
    let cm = cluster
        .get(&oref("v1", "ConfigMap", Some("default"), "l-cm"))
        .await;
    instance.expect("read").is_some() || cm.expect("read").is_some()
}

/// The create of `l` in `default` handed OperatorVersion `ledger-1.0.0` by name, with
/// `copy` and no recorded tree.
fn by_name<'a>(
    pkg: &'a kudo_package::Package,
    copy: Option<&'a kudo_package::Package>,
    none: &'a std::collections::BTreeMap<String, String>,
    sources: &'a LoadContext,
) -> ApplyRequest<'a> {
    ApplyRequest {
        package: PackageSource::Installed {
            operator_version: "ledger-1.0.0",
            copy,
            sources,
        },
        ..apply_request(pkg, none, &[], OnFailure::Stay)
    }
}

async fn apply(
    cluster: &crate::cluster::Cluster,
    req: &ApplyRequest<'_>,
) -> Result<ApplyAnswer, PlanRefusal> {
    bounded(engine::apply_change(
        cluster,
        req,
        &CancellationToken::new(),
        |_, answer| answer,
    ))
    .await
}

/// No copy: the OperatorVersion the cluster holds is read first and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_copy_the_cluster_s_operator_version_runs() {
    let pkg = ledger(false);
    let (_sim, cluster) = sim().await;
    engine::install_operator(&cluster, &pkg, "default")
        .await
        .expect("install ledger-1.0.0");
    let (none, sources) = (params(&[]), LoadContext::default());
    let req = by_name(&pkg, None, &none, &sources);
    let Ok(ApplyAnswer::Ran(applied)) = apply(&cluster, &req).await else {
        panic!("the apply did not run");
    };
    assert!(applied.run.is_ok(), "{:?}", applied.run);
    assert_eq!(applied.package.operator_version_name(), "ledger-1.0.0");
    assert!(written(&cluster).await, "nothing was written");
}

/// Neither a copy nor the OperatorVersion: refused, naming it, and nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_copy_or_the_operator_version_nothing_is_written() {
    let pkg = ledger(false);
    let (_sim, cluster) = sim().await;
    let (none, sources) = (params(&[]), LoadContext::default());
    let req = by_name(&pkg, None, &none, &sources);
    match apply(&cluster, &req).await {
        Err(PlanRefusal::NotInstalled {
            operator_namespace,
            operator_version,
        }) => assert_eq!(
            (operator_namespace.as_str(), operator_version.as_str()),
            ("default", "ledger-1.0.0")
        ),
        other => panic!("not refused as not installed: {other:?}"),
    }
    assert!(!written(&cluster).await, "the refused apply wrote");
}

/// A copy with a KudoOperator task but no recorded tree: the tree is resolved again
/// from the sources; when it cannot be (no repository has `audit`), the apply is
/// refused before any write, in the resolver's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_that_cannot_be_resolved_refuses_the_apply_before_any_write() {
    let pkg = ledger(true);
    let (_sim, cluster) = sim().await;
    let (none, sources) = (params(&[]), LoadContext::default());
    let req = by_name(&pkg, Some(&pkg), &none, &sources);
    match apply(&cluster, &req).await {
        Err(PlanRefusal::Unresolved(e)) => {
            assert!(e.to_string().contains("audit"), "{e}")
        }
        other => panic!("not refused as unresolved: {other:?}"),
    }
    assert!(!written(&cluster).await, "the refused apply wrote");
}
