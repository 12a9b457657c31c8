//! Finding the package behind an operator: from its source when `kudo_operator` plans
//! and applies, and from a plan-time copy ([`PlanCache`]) or the cluster when
//! `kudo_instance` does. The copies live under Terraform's data directory, as does the
//! discovery the provider's processes share.

use std::path::PathBuf;

use kudo_package::{LoadContext, Package, Repository};
use kudo_resolve::PlanCache;

/// Terraform's data directory for this configuration (`.terraform` unless `TF_DATA_DIR`).
fn data_dir() -> PathBuf {
    std::env::var_os("TF_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".terraform"))
}

/// The plan-time package copies of this configuration (`<data dir>/kudo/operators`).
pub fn plan_cache() -> PlanCache {
    PlanCache::new(data_dir().join("kudo").join("operators"))
}

/// Where the provider processes of this configuration share discovery
/// (`<data dir>/kudo/discovery`, one file per API server): Terraform starts the provider
/// several times per command, and each would otherwise ask the API server again.
pub fn discovery_cache_dir() -> PathBuf {
    data_dir().join("kudo").join("discovery")
}

/// Where a plan keeps its dry-run answers, sealed, for the final plan of the same
/// `terraform apply` (`<data dir>/kudo/dry-runs`), which would otherwise dry-run every
/// object again.
pub fn dry_run_cache_dir() -> PathBuf {
    data_dir().join("kudo").join("dry-runs")
}

/// Where packages are read from: the repositories, with downloads kept by digest under
/// the data directory so that plan and apply read the same bytes.
pub fn load_context(repositories: &[Repository]) -> LoadContext {
    LoadContext {
        repositories: repositories.to_vec(),
        cache_dir: Some(data_dir().join("kudo").join("downloads")),
        base_dir: None,
    }
}

/// Content digest of what gets installed ([`kudo_package::crd::content_digest`]).
pub fn digest(pkg: &Package) -> String {
    kudo_package::crd::content_digest(pkg)
}

/// How a `package` names an OperatorVersion already in the cluster (`terraform
/// query` generates it).
pub use kudo_resolve::CLUSTER_SOURCE;

/// Splits a `kudo_operator` id into namespace and OperatorVersion name.
pub use kudo_resolve::parse_operator_id;
