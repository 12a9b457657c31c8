//! The package and dependency tree an instance runs when its caller knows only the
//! OperatorVersion's name: no plan-time copy of `kudo_operator`'s, or one without the
//! tree it recorded (a saved plan applied from a fresh checkout, a state made
//! elsewhere). The package is read from the cluster (the copy stands in when the
//! cluster has no such OperatorVersion yet), and its tree resolved again from the
//! repositories as `kudo_operator`'s plan resolves it, with the same cluster filter.

use std::collections::BTreeMap;

use kudo_package::{LoadContext, Package};
use kudo_resolve::Resolution;

use super::change::PlanRefusal;
use crate::cluster::Cluster;

/// The package of OperatorVersion `operator_version` in `operator_namespace` as the
/// cluster holds it, else `copy`; neither is [`PlanRefusal::NotInstalled`].
pub(super) async fn read_package(
    cluster: &Cluster,
    operator_namespace: &str,
    operator_version: &str,
    copy: Option<&Package>,
) -> Result<Package, PlanRefusal> {
    let not_installed = || PlanRefusal::NotInstalled {
        operator_namespace: operator_namespace.to_string(),
        operator_version: operator_version.to_string(),
    };
    if operator_version.is_empty() {
        return copy.cloned().ok_or_else(not_installed);
    }
    // The copy names the Operator, so both objects are read at once.
    let operator = copy.map(|p| p.operator.name.as_str());
    let read =
        super::operator::load_operator(cluster, operator_namespace, operator_version, operator)
            .await
            .map_err(|error| PlanRefusal::Cluster {
                summary: "Cannot read the operator",
                error: Box::new(error),
            })?;
    read.or_else(|| copy.cloned()).ok_or_else(not_installed)
}

/// The dependency tree of `pkg` (an empty one without KudoOperator tasks), resolved from
/// `sources` for the cluster's Kubernetes version.
pub(super) async fn dependency_tree(
    cluster: &Cluster,
    pkg: &Package,
    sources: &LoadContext,
) -> Result<Resolution, PlanRefusal> {
    if !kudo_plan::has_dependency_tasks(pkg) {
        return Ok(Resolution::default());
    }
    tracing::info!(operator = %pkg.operator_version_name(), "no recorded dependency tree; resolving again");
    let root = pkg.clone();
    let sources = sources.clone();
    let version = cluster.kubernetes_version();
    // The resolver reads repositories and archives with blocking I/O.
    let work = tokio::task::spawn_blocking(move || {
        let name = root.operator.name.clone();
        kudo_resolve::resolve_from_repositories(&root, &name, sources, BTreeMap::new(), version)
    });
    match work.await {
        Ok(resolved) => resolved.map_err(|e| PlanRefusal::Unresolved(Box::new(e))),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(PlanRefusal::Unresolved(Box::new(e))),
    }
}
