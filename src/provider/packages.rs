//! Finding the package behind an operator: from its source when `kudo_operator` plans
//! and applies, and from a plan-time copy or the cluster when `kudo_instance` does.
//!
//! Why a local copy: on the first `terraform plan` nothing is installed yet, so the
//! instance cannot read the OperatorVersion from the cluster to check its parameters.
//! `kudo_operator` plans first (the instance references its id) and leaves the package
//! it read under the Terraform data directory, keyed by `<namespace>/<ov-name>`.

use std::path::PathBuf;

use std::collections::BTreeMap;

use kudo_package::{LoadContext, Package, PackageError, Repository, Severity};
use kudo_resolve::{ClusterVersion, Resolution, ResolveError};

use super::config::RepositoryConfig;
use serde_json::json;

/// Terraform's data directory for this configuration (`.terraform` unless `TF_DATA_DIR`).
fn data_dir() -> PathBuf {
    std::env::var_os("TF_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".terraform"))
}

/// The provider's `repository` blocks as the package loader takes them.
pub fn repositories(configured: &[RepositoryConfig]) -> Vec<Repository> {
    configured
        .iter()
        .map(|r| Repository {
            name: r.name.clone(),
            url: r.url.clone(),
            priority: i32::try_from(r.priority).unwrap_or(i32::MAX),
        })
        .collect()
}

fn load_context(configured: &[RepositoryConfig]) -> LoadContext {
    LoadContext {
        repositories: repositories(configured),
        cache_dir: Some(data_dir().join("kudo").join("downloads")),
        base_dir: None,
    }
}

/// Reads a package from the `package` attribute's text: a folder, a `.tgz`, an http(s)
/// URL, or `name[@version]` looked up in the provider's repositories. Downloads are
/// kept by digest so that plan and apply read the same bytes.
pub fn load_source(
    source: &str,
    repositories: &[RepositoryConfig],
) -> Result<Package, PackageError> {
    kudo_package::load(source, &load_context(repositories))
}

/// The operator's dependency tree (KudoOperator tasks, transitively) with one version
/// chosen per package, from the provider's repositories and folders next to the package.
pub fn resolve(
    pkg: &Package,
    repositories: &[RepositoryConfig],
    overrides: BTreeMap<String, String>,
    cluster: Option<ClusterVersion>,
) -> Result<Resolution, ResolveError> {
    kudo_resolve::resolve_from_repositories(
        pkg,
        &pkg.operator.name,
        load_context(repositories),
        overrides,
        cluster,
    )
}

/// Verification warnings, as KUDO's `package verify` reports them; errors already
/// stopped `load_source`.
pub fn warnings(pkg: &Package) -> Vec<String> {
    kudo_package::verify(pkg)
        .into_iter()
        .filter(|f| f.severity == Severity::Warning)
        .map(|f| f.to_string())
        .collect()
}

/// Content digest of what gets installed ([`kudo_package::crd::content_digest`]).
pub fn digest(pkg: &Package) -> String {
    kudo_package::crd::content_digest(pkg)
}

/// The plan-time copies (see the module comment).
#[derive(Debug, Clone)]
pub struct PlanCache {
    dir: PathBuf,
}

impl PlanCache {
    pub fn from_env() -> PlanCache {
        PlanCache {
            dir: data_dir().join("kudo").join("operators"),
        }
    }

    #[cfg(test)]
    pub fn at(dir: &std::path::Path) -> PlanCache {
        PlanCache {
            dir: dir.to_path_buf(),
        }
    }

    fn file(&self, namespace: &str, ov_name: &str) -> PathBuf {
        // Namespace and object names are DNS labels, so `_` cannot occur in either.
        self.dir.join(format!("{namespace}_{ov_name}.json"))
    }

    pub fn store(&self, namespace: &str, pkg: &Package) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let doc = json!({
            "operator": {"spec": kudo_package::crd::operator_spec(pkg)},
            "operatorVersion": {
                "metadata": {"name": pkg.operator_version_name()},
                "spec": kudo_package::crd::operator_version_spec(pkg),
            },
        });
        let path = self.file(namespace, &pkg.operator_version_name());
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(&doc).unwrap_or_default())?;
        std::fs::rename(tmp, path)
    }

    /// `None` when there is no copy or it cannot be read (the caller then asks the cluster).
    pub fn load(&self, namespace: &str, ov_name: &str) -> Option<Package> {
        let bytes = std::fs::read(self.file(namespace, ov_name)).ok()?;
        let doc: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        match kudo_package::crd::package_from_operator_version(
            doc.get("operator"),
            doc.get("operatorVersion")?,
        ) {
            Ok(pkg) => Some(pkg),
            Err(e) => {
                tracing::warn!(error = %e, "ignoring an unreadable plan-time package copy");
                None
            }
        }
    }
}

impl PlanCache {
    fn resolution_file(&self, namespace: &str, ov_name: &str) -> PathBuf {
        self.dir
            .join(format!("{namespace}_{ov_name}.dependencies.json"))
    }

    /// Keeps an operator's resolved dependency tree next to its package copy, with a
    /// copy of every chosen package, so that instances of it can show and run their
    /// children without the operator's source, repositories or overrides.
    pub fn store_resolution(
        &self,
        namespace: &str,
        resolution: &Resolution,
    ) -> std::io::Result<()> {
        let Some(root) = resolution.nodes.first() else {
            return Ok(());
        };
        for pkg in resolution.packages.values() {
            self.store(namespace, pkg)?;
        }
        std::fs::create_dir_all(&self.dir)?;
        let path = self.resolution_file(namespace, &root.operator_version_name);
        let tmp = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec(resolution).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(tmp, path)
    }

    /// Removes the tree kept for the operator `ov_name`, if any: a plan that cannot
    /// know the tree must not leave an older one for instances to read.
    pub fn forget_resolution(&self, namespace: &str, ov_name: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.resolution_file(namespace, ov_name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// The tree `store_resolution` kept for the operator `ov_name`, packages included;
    /// `None` when it or one of its packages is missing or unreadable.
    pub fn load_resolution(&self, namespace: &str, ov_name: &str) -> Option<Resolution> {
        let bytes = std::fs::read(self.resolution_file(namespace, ov_name)).ok()?;
        let mut resolution: Resolution = match serde_json::from_slice(&bytes) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "ignoring an unreadable plan-time dependency tree");
                return None;
            }
        };
        for node in &resolution.nodes {
            if !resolution.packages.contains_key(&node.package) {
                let pkg = self.load(namespace, &node.operator_version_name)?;
                resolution.packages.insert(node.package.clone(), pkg);
            }
        }
        Some(resolution)
    }
}

/// How a `package` names an OperatorVersion already in the cluster:
/// `cluster:<namespace>/<operatorversion-name>`. `terraform query` generates it for
/// operators whose package source the cluster does not record (KUDO stores none).
pub const CLUSTER_SOURCE: &str = "cluster:";

/// The namespace and OperatorVersion name of a `cluster:` package source.
pub fn cluster_source(source: &str) -> Option<(&str, &str)> {
    parse_operator_id(source.strip_prefix(CLUSTER_SOURCE)?)
}

/// Splits a `kudo_operator` id into namespace and OperatorVersion name.
pub fn parse_operator_id(id: &str) -> Option<(&str, &str)> {
    let (ns, name) = id.split_once('/')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains('/')).then_some((ns, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> Option<PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/operators")
            .join(name);
        if p.is_dir() {
            Some(p)
        } else {
            eprintln!(
                "skipping: {} is absent (clone without ../shared)",
                p.display()
            );
            None
        }
    }

    #[test]
    fn cache_round_trip_keeps_the_digest() {
        let Some(dir) = fixture("zookeeper") else {
            return;
        };
        let pkg = load_source(dir.to_str().unwrap_or_default(), &[]).expect("zookeeper loads");
        let tmp = tempfile::tempdir().expect("tempdir");
        let cache = PlanCache::at(tmp.path());
        cache.store("ns1", &pkg).expect("store");
        let back = cache
            .load("ns1", &pkg.operator_version_name())
            .expect("copy is found");
        assert_eq!(digest(&back), digest(&pkg));
        assert!(cache.load("other", &pkg.operator_version_name()).is_none());
    }

    #[test]
    fn operator_ids() {
        assert_eq!(
            parse_operator_id("ns/zk-3.4-0.3"),
            Some(("ns", "zk-3.4-0.3"))
        );
        assert_eq!(parse_operator_id("nope"), None);
        assert_eq!(parse_operator_id("a/b/c"), None);
        assert_eq!(parse_operator_id("/b"), None);
    }
}
