//! Dependency resolution as Terraform shows it, shared by `kudo_operator` (plan and
//! apply) and the `kudo_dependencies` data source so that both give the same answer
//! for the same package, repositories and overrides.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_package::Package;
use kudo_resolve::Resolution;

use super::RepositoryConfig;
use super::packages;

/// An error about the package, on the `package` attribute (both users name it so).
pub fn package_error(source: &str, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        "Cannot load the operator package",
        super::diag::with_advice(
            format!("Package {source:?}: {e}"),
            &super::diag::package_advice(),
        ),
    )
    .with_attribute(AttributePath::attribute("package"))
}

/// The `dependency_overrides` map of a configuration (empty when null).
pub fn overrides_of(v: &Value) -> BTreeMap<String, String> {
    v.get("dependency_overrides")
        .to_string_map()
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Loads the package and resolves its dependencies (blocking work: reads files and
/// may download).
pub async fn load_with_dependencies(
    repositories: &[RepositoryConfig],
    source: &str,
    overrides: BTreeMap<String, String>,
) -> Result<(Package, Resolution), Diagnostic> {
    let repositories = repositories.to_vec();
    let source_owned = source.to_string();
    let work = tokio::task::spawn_blocking(move || {
        let pkg = packages::load_source(&source_owned, &repositories)
            .map_err(|e| package_error(&source_owned, e))?;
        let resolution = packages::resolve(&pkg, &repositories, overrides).map_err(|e| {
            Diagnostic::error(
                "Cannot resolve the operator's dependencies",
                super::diag::with_advice(e, &format!("Add a repository that has the missing versions, or pin a version with `dependency_overrides`, {}", super::diag::AGAIN)),
            )
            .with_attribute(AttributePath::attribute("package"))
        })?;
        Ok((pkg, resolution))
    });
    work.await.map_err(|e| package_error(source, e))?
}

/// `dependencies` and `install_order` values of a resolution.
pub fn resolution_values(resolution: &Resolution) -> (Value, Value) {
    let deps = resolution.dependencies().into_iter().map(|d| {
        Value::object([
            ("package", Value::string(d.package)),
            ("operator_version", Value::string(d.operator_version)),
            ("app_version", Value::opt_string(d.app_version)),
            (
                "operator_version_name",
                Value::string(d.operator_version_name),
            ),
            ("source", Value::string(d.source)),
            ("required_by", Value::string(d.required_by)),
            ("constraint", Value::opt_string(d.constraint)),
            ("enabled", Value::bool(d.enabled)),
        ])
    });
    (
        Value::list(deps),
        Value::list(
            resolution
                .install_order_versions()
                .into_iter()
                .map(Value::string),
        ),
    )
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
