//! Data source `kudo_dependencies`: the dependency decisions `kudo_operator` would make
//! for a package (versions, where they come from, install order), without a cluster.
//!
//! A data source of its own rather than more attributes on `kudo_package`: resolving
//! needs the dependencies' repositories and can fail on version ranges, and reading a
//! package's parameters should not fail because of that. It takes the same `package`
//! and `dependency_overrides` as `kudo_operator` and goes through the same code
//! ([`super::resolve`]), so CI can check what a later plan will pick.

use async_trait::async_trait;
use tfplugin::{
    Attr, Attribute, AttributePath, Block, DataSource, Diagnostic, IntoValue, Schema, Type, Value,
};

use super::resolve::{Dependency, load_tree, overrides_of, resolution_graph, resolution_values};
use super::schema::dependency_type;
use super::{Call, Session};

pub const NAME: &str = "kudo_dependencies";

tfplugin::model! {
    /// A `kudo_dependencies` value.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct DependenciesModel {
        pub package: Attr<String>,
        /// A value: its entries may be unknown while planning.
        pub dependency_overrides: Value,
        pub dependencies: Attr<Vec<Dependency>>,
        pub install_order: Attr<Vec<String>>,
        pub graph: Attr<String>,
    }
}

/// The `kudo_dependencies` data source.
pub struct DependenciesData;

#[async_trait]
impl DataSource<Call> for DependenciesData {
    fn name(&self) -> &'static str {
        NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    async fn read(&self, call: &Call, config: Value) -> (Value, Vec<Diagnostic>) {
        // Never asks for the cluster: CI runs this without any.
        read(&config, &call.session).await
    }
}

pub fn schema() -> Schema {
    Schema::new(
        0,
        Block::new()
            .description("Resolves the dependencies (KudoOperator tasks, transitively) of a KUDO operator package exactly as `kudo_operator` does when Terraform plans, without installing anything or contacting the cluster.")
            .attribute(Attribute::new("package", Type::String).required().description("The operator package, as in `kudo_operator.package`: a local folder or `.tgz` file (relative paths are resolved from the working directory; use `${path.module}`), an `http(s)://` URL of a `.tgz`, or `name`, `name@<operatorVersion>` or `name@<appVersion>_<operatorVersion>` looked up in the provider's `repository` blocks."))
            .attribute(Attribute::new("dependency_overrides", Type::map(Type::String)).optional().description("Same as `kudo_operator.dependency_overrides`: pins or overrides the version of a dependency, by package name: an operatorVersion or range (`\"1.3.2\"`, `\">=1.3.0 <2.0.0\"`, `\"1.x\"`), `\"app=<range>\"` for the appVersion, or both joined by `;`."))
            .attribute(Attribute::new("dependencies", Type::list(dependency_type())).computed().description("The operators the package installs, transitively, parents before children; the same value as `kudo_operator.dependencies`: `package`, `operator_version`, `app_version`, `operator_version_name`, `source` (repository or folder), `required_by` (the package whose task asks for it), `constraint` (what that task or an override asked for) and `enabled` (false when an `enablingParameter` default switches it off)."))
            .attribute(Attribute::new("install_order", Type::list(Type::String)).computed().description("OperatorVersion names in the order they are installed: dependencies before the packages that need them, the package itself last. The same value as `kudo_operator.install_order`."))
            .attribute(Attribute::new("graph", Type::String).computed().description(super::schema::GRAPH_DESCRIPTION)),
    )
}

/// Reads the data source. Unknown inputs leave the results unknown; load and
/// resolution errors are diagnostics on `package`.
pub async fn read(config: &Value, session: &Session) -> (Value, Vec<Diagnostic>) {
    let model: DependenciesModel = match config.decode() {
        Ok(m) => m,
        Err(d) => return (config.clone(), vec![d]),
    };
    let source = match &model.package {
        Attr::Unknown => return (schema().mark_computed_unknown(config), Vec::new()),
        Attr::Known(s) if !s.trim().is_empty() => s.clone(),
        _ => {
            return (
                config.clone(),
                vec![
                    Diagnostic::error(
                        "Missing package",
                        "`package` must name a package folder, a .tgz file or URL, or a repository reference such as `kafka@1.3.2`.",
                    )
                    .with_attribute(AttributePath::attribute("package")),
                ],
            );
        }
    };
    if !model.dependency_overrides.is_fully_known() {
        return (schema().mark_computed_unknown(config), Vec::new());
    }
    // No cluster here (CI resolves without one): versions are not filtered by the
    // cluster's Kubernetes version.
    let overrides = overrides_of(&model.dependency_overrides);
    match load_tree(session, None, &source, overrides, None).await {
        Ok((_, resolution)) => {
            let (deps, order) = resolution_values(&resolution);
            let state = DependenciesModel {
                dependencies: Attr::Known(deps),
                install_order: Attr::Known(order),
                graph: Attr::Known(resolution_graph(&resolution)),
                ..model
            };
            (
                state.into_value(),
                super::resolve::unused_override_warnings(&resolution),
            )
        }
        Err(d) => (config.clone(), vec![d]),
    }
}
