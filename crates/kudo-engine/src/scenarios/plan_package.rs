//! `engine::plan_change` handed a change without its package (no plan-time copy of
//! `kudo_operator`'s), against kube-sim: the engine reads the OperatorVersion the
//! cluster holds and plans with it (its defaults, its refusals), and hands the package
//! it read to the caller's closure; without the operator's namespace it plans without
//! one, as before the apply knows it.

use std::collections::BTreeMap;

use kudo_plan::{ChangeRequest, Seed};

use crate::engine::{self, CrdSafety, PlanChangeRequest, TreeRecord};
use crate::scenarios::common::*;

const PARAMS: &str =
    "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: SIZE\n    default: \"3\"\n";

/// One ConfigMap holding `SIZE`.
fn ledger() -> kudo_package::Package {
    let operator = "name: ledger\noperatorVersion: 1.0.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: app\n            tasks: [app]\n";
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\ndata:\n  size: \"{{ .Params.SIZE }}\"\n";
    package(operator, PARAMS, &[("cm.yaml", cm)])
}

/// What the closure saw: the package's name, and the planned values or the refusal.
type Seen = (
    Option<String>,
    Result<Option<BTreeMap<String, String>>, String>,
);

/// The plan of a new instance `l` in `default` running `ledger-1.0.0` with `values`,
/// the OperatorVersion looked for in `operator_namespace`.
async fn plan(
    cluster: &crate::cluster::Cluster,
    values: &BTreeMap<String, String>,
    operator_namespace: Option<&str>,
) -> Seen {
    let none = params(&[]);
    let change = ChangeRequest {
        name: Some("l"),
        namespace: "default",
        operator_version: Some("ledger-1.0.0"),
        package: None,
        parameters: Some(values),
        sensitive: &none,
        plan_triggers: None,
        seed: Seed::AtApply,
        resolution: None,
        prior: None,
        replacing: false,
        allow_downgrade: false,
    };
    let record = TreeRecord::default();
    let request = PlanChangeRequest {
        change: &change,
        objects: &[],
        record: &record,
        fresh: true,
        crd_safety: CrdSafety::default(),
        manifests: false,
        must_not_exist: true,
        create_namespace: false,
        operator_namespace,
        prior_operator_namespace: None,
        write_only: None,
    };
    let seen = |change: &ChangeRequest<'_>, planned: Result<engine::Planned<'_>, _>| {
        let name = change.package.map(|p| p.operator_version_name());
        let planned: Result<_, engine::PlanRefusal> = planned;
        (
            name,
            planned
                .map(|p| p.change.effective)
                .map_err(|r| r.to_string()),
        )
    };
    bounded(engine::plan_change(Some(cluster), &request, seen)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_reads_the_cluster_s_package_and_checks_the_values_with_it() {
    let pkg = ledger();
    let (_sim, cluster) = sim().await;
    engine::install_operator(&cluster, &pkg, "default")
        .await
        .expect("install ledger-1.0.0");

    let (package, planned) = plan(&cluster, &params(&[]), Some("default")).await;
    assert_eq!(package.as_deref(), Some("ledger-1.0.0"));
    let effective = planned.expect("planned").expect("values known");
    assert_eq!(
        effective.get("SIZE").map(String::as_str),
        Some("3"),
        "the package's default"
    );

    let (_, refused) = plan(&cluster, &params(&[("COLOR", "red")]), Some("default")).await;
    let refusal = refused.expect_err("an undeclared parameter is refused");
    assert!(refusal.contains("COLOR"), "{refusal}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_operator_s_namespace_or_its_operator_version_the_values_wait_for_the_apply() {
    let (_sim, cluster) = sim().await;
    // Nothing installed: no package to read.
    let (package, planned) = plan(&cluster, &params(&[("COLOR", "red")]), Some("default")).await;
    assert_eq!(package, None);
    assert_eq!(planned.expect("planned without the package"), None);

    engine::install_operator(&cluster, &ledger(), "default")
        .await
        .expect("install ledger-1.0.0");
    // Installed, but the request does not say where: nothing is read.
    let (package, planned) = plan(&cluster, &params(&[("COLOR", "red")]), None).await;
    assert_eq!(package, None);
    assert_eq!(planned.expect("planned without the package"), None);
}
