//! Where the packages and the dependency tree of an instance come from: the copies
//! `kudo_operator` keeps for the plan (see `kudo_resolve::PlanCache`), else the cluster.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic};

use kudo_engine::engine;
use kudo_package::Package;
use kudo_resolve::Resolution;

use crate::provider::Session;
use crate::provider::packages::{self, parse_operator_id};

/// The package an instance runs. While planning, the copy `kudo_operator` just planned
/// wins (it is what the apply will install); otherwise the cluster is asked.
pub(super) async fn find_package(
    session: &Session,
    operator_id: &str,
    planning: bool,
) -> Result<Option<Package>, Diagnostic> {
    let Some((ns, ov_name)) = parse_operator_id(operator_id) else {
        return Ok(None);
    };
    // The plan-time copy, read once: it wins while planning, otherwise it names the
    // Operator (so the cluster is asked for both at once) and stands in when the
    // cluster has no such OperatorVersion.
    let copy = packages::plan_cache().load(ns, ov_name);
    if planning && copy.is_some() {
        return Ok(copy);
    }
    let operator = copy.as_ref().map(|p| p.operator.name.as_str());
    let from_cluster = async {
        let cluster = session.cluster().await?;
        engine::load_operator(&cluster, ns, ov_name, operator)
            .await
            .map_err(|e| session.engine_error("Cannot read the operator", &e))
    };
    match from_cluster.await {
        Ok(Some(pkg)) => Ok(Some(pkg)),
        Ok(None) => Ok(copy),
        // A plan can still go ahead without the package; the apply will need the cluster.
        Err(d) if planning => {
            tracing::debug!(detail = %d.detail, "package not available while planning");
            Ok(None)
        }
        Err(d) => Err(d),
    }
}

fn tree_error(detail: String) -> Diagnostic {
    Diagnostic::error("Cannot work out the instance's dependencies", detail)
        .with_attribute(AttributePath::attribute("operator"))
}

/// The dependency tree of `pkg` as `kudo_operator` recorded it in the plan cache (an
/// empty one for a package without dependencies), without resolving again.
pub(super) fn recorded_resolution(operator_id: &str, pkg: &Package) -> Option<Resolution> {
    if !kudo_plan::has_dependency_tasks(pkg) {
        return Some(Resolution::default());
    }
    parse_operator_id(operator_id)
        .and_then(|(ns, ov)| packages::plan_cache().load_resolution(ns, ov))
}

/// The dependency tree of `pkg` as `kudo_operator` resolved it. While planning, only
/// the plan-time copy counts (`None` without it: the tree is not known yet). An apply
/// without the copy (state made elsewhere) resolves again from the provider's
/// repositories, which works for repository and URL dependencies.
pub(super) async fn resolution(
    session: &Session,
    operator_id: &str,
    pkg: &Package,
    planning: bool,
) -> Result<Option<Resolution>, Diagnostic> {
    if let Some(r) = recorded_resolution(operator_id, pkg) {
        return Ok(Some(r));
    }
    if planning {
        return Ok(None);
    }
    tracing::info!(operator = %operator_id, "no plan-time dependency tree; resolving again");
    let repositories = session.config.repositories.clone();
    let root = pkg.clone();
    // The apply is connected: the same cluster filter as kudo_operator's plan.
    let version = match session.cluster().await {
        Ok(c) => c.kubernetes_version(),
        Err(_) => None,
    };
    let work = tokio::task::spawn_blocking(move || {
        packages::resolve(&root, &repositories, BTreeMap::new(), version)
    });
    match work.await {
        Ok(Ok(r)) => Ok(Some(r)),
        Ok(Err(e)) => Err(tree_error(format!(
            "{e}\n\nRun `terraform plan` again so that the kudo_operator resource records its dependency tree."
        ))),
        Err(e) => Err(tree_error(e.to_string())),
    }
}
