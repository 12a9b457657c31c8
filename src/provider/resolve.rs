//! Dependency resolution as Terraform shows it, shared by `kudo_operator` (plan and
//! apply) and the `kudo_dependencies` data source so that both give the same answer
//! for the same package, repositories and overrides: one call,
//! [`engine::load_operator_tree`], whose errors become diagnostics on `package`.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_engine::engine::{self, TreeLoadError};
use kudo_package::Package;
use kudo_resolve::{LoadError, PlannedTree, Resolution};

use super::{Session, packages};

/// A `dependency_overrides` value as a map (empty when null). Kept a `Value` in the
/// models: its entries may be unknown while planning, which the callers check first.
pub fn overrides_of(overrides: &Value) -> BTreeMap<String, String> {
    overrides.to_string_map().ok().flatten().unwrap_or_default()
}

/// Loads the package `source` names (from the cluster for a `cluster:` source) and
/// resolves its dependencies ([`engine::load_operator_tree`]); with `planned`, reads
/// exactly what an earlier plan resolved.
pub async fn load_tree(
    session: &Session,
    cluster: Option<&kudo_engine::cluster::Cluster>,
    source: &str,
    overrides: BTreeMap<String, String>,
    planned: Option<PlannedTree>,
) -> Result<(Package, Resolution), Diagnostic> {
    let context = packages::load_context(&session.config.repositories);
    engine::load_operator_tree(cluster, source, context, overrides, planned)
        .await
        .map_err(|e| tree_error(session, e))
}

/// The diagnostic for a failed [`engine::load_operator_tree`]: on `package`, with what
/// to do in Terraform.
pub fn tree_error(session: &Session, e: TreeLoadError) -> Diagnostic {
    use super::diag::{AGAIN, package_advice, with_advice};
    let advice = match &e {
        TreeLoadError::Read(error) => return session.engine_error(e.summary(), error),
        TreeLoadError::Load { error, .. } => match error.as_ref() {
            LoadError::Package(p) if p.is_unreachable() => Some(format!(
                "Make the repository reachable (the `url` of its `repository` block in the provider configuration), {AGAIN}"
            )),
            LoadError::Resolve(r) => Some(format!("{}, {AGAIN}", r.advice())),
            LoadError::Package(_) => Some(package_advice()),
            LoadError::Kubernetes { .. } | LoadError::Planned(_) => None,
        },
        _ => Some(package_advice()),
    };
    let detail = match advice {
        Some(advice) => with_advice(&e, &advice),
        None => e.to_string(),
    };
    Diagnostic::error(e.summary(), detail).with_attribute(AttributePath::attribute("package"))
}

tfplugin::model! {
    /// An entry of `dependencies` (`kudo_operator`, `kudo_dependencies`). Every field
    /// may be null, so that a state written before a field existed still decodes.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Dependency {
        pub package: Option<String>,
        pub operator_version: Option<String>,
        pub app_version: Option<String>,
        pub operator_version_name: Option<String>,
        pub source: Option<String>,
        pub required_by: Option<String>,
        pub constraint: Option<String>,
        pub enabled: Option<bool>,
    }
}

/// `dependencies` and `install_order` of a resolution.
pub fn resolution_values(resolution: &Resolution) -> (Vec<Dependency>, Vec<String>) {
    let deps = resolution
        .dependencies()
        .into_iter()
        .map(|d| Dependency {
            package: Some(d.package),
            operator_version: Some(d.operator_version),
            app_version: d.app_version,
            operator_version_name: Some(d.operator_version_name),
            source: Some(d.source),
            required_by: Some(d.required_by),
            constraint: d.constraint,
            enabled: Some(d.enabled),
        })
        .collect();
    (deps, resolution.install_order_versions())
}

/// `graph`: the tree as a Mermaid flowchart, the text `resolve --format mermaid`
/// prints for the same package, repositories and overrides (no parameter values:
/// `enablingParameter` subtrees as their defaults switch them).
pub fn resolution_graph(resolution: &Resolution) -> String {
    kudo_resolve::to_mermaid(resolution, None)
}

/// A warning for each override key that names no package of the tree: most likely a
/// typo, which would otherwise silently leave the version unpinned.
pub fn unused_override_warnings(resolution: &Resolution) -> Vec<Diagnostic> {
    resolution
        .unused_overrides
        .iter()
        .map(|unused| {
            Diagnostic::warning(
                "Override matches no dependency",
                format!("`dependency_overrides` names {unused:?}, which this operator does not depend on."),
            )
            .with_attribute(AttributePath::attribute("dependency_overrides").key(unused.clone()))
        })
        .collect()
}
