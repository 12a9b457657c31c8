//! KUDO operator dependencies (KEP-29, KEP-36, and version ranges from the OLM
//! dependency-resolution proposal), without a cluster or Terraform.
//!
//! ```text
//! root Package ──► Resolver (Catalog + overrides) ──► Resolution
//!                    │ collect KudoOperator tasks transitively (plan order)
//!                    │ pubgrub: one version per package, newest satisfying
//!                    │ petgraph: cycle check; KEP-29 instance tree + install order
//! ```
//!
//! * [`parse_range`]: blang/semver ranges (`>=1.0.0 <2.0.0 || >3.0.0`, `1.x`, `!=1.2.3`)
//!   onto `version_ranges::Ranges<semver::Version>`; see [`range`] for the exact rules
//!   and our small extensions (`X`/`*` wildcards, `1.2` = `1.2.0`).
//! * Versions of packages are (appVersion, operatorVersion) pairs compared as lenient
//!   semantic versions (`5.7` = `5.7.0`). A version that is not semver (`latest`) is
//!   older than any semver and matched only by an ask with exactly that text.
//! * [`Catalog`]: where versions come from — [`RepositoryCatalog`] (KUDO repositories
//!   and local folders through `kudo-package`), [`MemoryCatalog`]. Preference: the root
//!   package and folder/URL dependencies first, then repositories by priority (lower
//!   wins, ties by list order), newest first inside one repository.
//! * A KudoOperator `package` is a folder/`.tgz` (relative to the parent's folder), an
//!   http(s) URL (both: exactly the version found there, which must satisfy the task's
//!   versions), or a repository package name.
//! * Every KudoOperator task used by any plan counts (deploy first, then the others by
//!   name), including subtrees switched off by an `enablingParameter`, so that turning
//!   one on later cannot fail on versions.
//! * operator.yaml `dependencies:` (OLM's "required operators") join the same solve:
//!   a package entry is an ask on that package; an API entry (group/version/kind) is an
//!   ask on the package whose versions provide it (first provider in candidate order,
//!   see [`Catalog::names`]). They become [`Resolution::operators`], not instances.
//! * [`Resolver::with_overrides`]: `package -> "<operatorVersion range>"` (or
//!   `"app=<range>"`, or both joined by `;`) replaces every ask on that package.
//! * Errors ([`ResolveError`]) say which packages, versions and tasks clash, list the
//!   versions that exist, and name a cycle's path.
//! * [`to_mermaid`] and [`to_dot`] draw a [`Resolution`] (see [`diagram`]).
//!
//! ```no_run
//! # use kudo_resolve::*;
//! # fn demo(root: &kudo_package::Package) -> Result<(), ResolveError> {
//! let catalog = RepositoryCatalog::folder("local", std::path::Path::new("operators"));
//! let resolution = Resolver::new(&catalog).resolve(root, "demo")?;
//! print!("{}", resolution.render_tree());
//! # Ok(()) }
//! ```

pub mod catalog;
pub mod diagram;
mod error;
mod explain;
mod graph;
pub mod kubernetes;
mod load;
pub mod naming;
pub mod plan_cache;
pub mod planned;
pub mod range;
mod rank;
mod rank_set;
mod resolution;
mod solve;

use std::collections::BTreeMap;

use kudo_package::{LoadContext, Package};

pub use catalog::{Catalog, CatalogEntry, MemoryCatalog, RepositoryCatalog};
pub use diagram::{to_dot, to_mermaid};
pub use error::{MissingVersion, ResolveError, TooNew};
pub use graph::MAX_INSTANCES;
pub use kubernetes::{
    ClusterVersion, KubernetesRequirement, check_cluster, kubernetes_minimum,
    needs_cluster_version, runs_on,
};
pub use load::{
    CLUSTER_SOURCE, LoadError, LoadRequest, cluster_source, load_and_resolve, parse_operator_id,
};
pub use plan_cache::PlanCache;
pub use planned::{PinnedPackage, PinnedSource, PlannedDependencies, PlannedError, PlannedTree};
pub use range::{LenientVersion, RangeError, VersionRange, VersionReq, parse_range};
pub use resolution::{Dependency, RequiredOperator, Resolution, ResolvedInstance};
pub use solve::{Override, PackageVersion, version_errors};

/// Resolves `root` against the repositories of `ctx` (and folders/URLs its tasks name),
/// as both `kudo_operator` and the `resolve` command do: one function so that the
/// provider and the CLI cannot drift apart.
pub fn resolve_from_repositories(
    root: &Package,
    root_instance: &str,
    ctx: LoadContext,
    overrides: BTreeMap<String, String>,
    cluster: Option<ClusterVersion>,
) -> Result<Resolution, ResolveError> {
    let catalog = RepositoryCatalog::new(ctx.repositories.clone(), ctx);
    Resolver::new(&catalog)
        .with_overrides(overrides)
        .with_cluster(cluster)
        .resolve(root, root_instance)
}

/// Resolves the dependency tree of a root package against a catalog.
pub struct Resolver<'a> {
    catalog: &'a dyn Catalog,
    overrides: BTreeMap<String, String>,
    root_params: BTreeMap<String, String>,
    cluster: Option<ClusterVersion>,
}

impl<'a> Resolver<'a> {
    pub fn new(catalog: &'a dyn Catalog) -> Resolver<'a> {
        Resolver {
            catalog,
            overrides: BTreeMap::new(),
            root_params: BTreeMap::new(),
            cluster: None,
        }
    }

    /// User pins, `package name -> version or range` (see [`Override::parse`]); they
    /// replace what the packages ask for that dependency.
    pub fn with_overrides(mut self, overrides: BTreeMap<String, String>) -> Resolver<'a> {
        self.overrides = overrides;
        self
    }

    /// The cluster the tree is for: among the versions that satisfy the ranges, those
    /// whose `kubernetesVersion` the cluster meets are chosen (the newest of them), and
    /// [`ResolveError::ClusterTooOld`] says so when none does. `None`: no filtering
    /// (no cluster reachable, or resolution for CI).
    pub fn with_cluster(mut self, cluster: Option<ClusterVersion>) -> Resolver<'a> {
        self.cluster = cluster;
        self
    }

    /// The root instance's parameter values (used to decide which `enablingParameter`
    /// subtrees are on in [`ResolvedInstance::enabled`]).
    pub fn with_root_parameters(mut self, params: BTreeMap<String, String>) -> Resolver<'a> {
        self.root_params = params;
        self
    }

    /// Choose versions and build the instance tree of `root`, installed as
    /// `root_instance`.
    pub fn resolve(&self, root: &Package, root_instance: &str) -> Result<Resolution, ResolveError> {
        let mut overrides = BTreeMap::new();
        for (name, text) in &self.overrides {
            let o = Override::parse(text).map_err(|source| ResolveError::Override {
                package: name.clone(),
                source,
            })?;
            overrides.insert(name.clone(), o);
        }
        let provider = solve::Provider::new(self.catalog, &overrides, root, self.cluster.clone());
        let selection = solve::solve(&provider)?;
        tracing::debug!(
            root = %root.operator.name,
            packages = selection.len(),
            "dependency versions chosen"
        );
        let mut resolution = graph::build(&provider, &selection, root_instance, &self.root_params)?;
        let used = provider.used_overrides.borrow();
        resolution.unused_overrides = overrides
            .keys()
            .filter(|k| !used.contains(*k))
            .cloned()
            .collect();
        for k in &resolution.unused_overrides {
            tracing::warn!(package = %k, "version override names no dependency of this package");
        }
        Ok(resolution)
    }
}
