//! Plan-time copies of operator packages and their resolved dependency trees.
//!
//! Why a local copy: on the first `terraform plan` nothing is installed yet, so an
//! instance cannot read its OperatorVersion from the cluster to check its parameters
//! or show its children. The operator plans first and leaves the package it read (as
//! the Operator and OperatorVersion specs it installs) and its tree in a folder, keyed
//! by `<namespace>/<operatorversion-name>`; the instance reads them from there.

use std::io;
use std::path::{Path, PathBuf};

use kudo_package::Package;

use crate::Resolution;

/// The copies in one folder (see the module comment).
#[derive(Debug, Clone)]
pub struct PlanCache {
    dir: PathBuf,
}

/// Writes `bytes` to `path` through a temporary file, so a reader never sees half.
fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(tmp, path)
}

impl PlanCache {
    pub fn new(dir: impl Into<PathBuf>) -> PlanCache {
        PlanCache { dir: dir.into() }
    }

    fn file(&self, namespace: &str, ov_name: &str) -> PathBuf {
        // Namespace and object names are DNS labels, so `_` cannot occur in either.
        self.dir.join(format!("{namespace}_{ov_name}.json"))
    }

    fn resolution_file(&self, namespace: &str, ov_name: &str) -> PathBuf {
        self.dir
            .join(format!("{namespace}_{ov_name}.dependencies.json"))
    }

    /// Keeps a copy of `pkg` as installed in `namespace`.
    pub fn store(&self, namespace: &str, pkg: &Package) -> io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let doc = kudo_package::crd::package_document(pkg);
        let bytes = serde_json::to_vec(&doc).map_err(io::Error::other)?;
        write_whole(&self.file(namespace, &pkg.operator_version_name()), &bytes)
    }

    /// `None` when there is no copy or it cannot be read (the caller then asks the cluster).
    pub fn load(&self, namespace: &str, ov_name: &str) -> Option<Package> {
        let bytes = std::fs::read(self.file(namespace, ov_name)).ok()?;
        let doc: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        match kudo_package::crd::package_from_document(&doc) {
            Ok(pkg) => Some(pkg),
            Err(e) => {
                tracing::warn!(error = %e, "ignoring an unreadable plan-time package copy");
                None
            }
        }
    }

    /// Keeps `root` and, when the tree is known, its resolution ([`Self::store_resolution`]);
    /// `None` removes a tree kept before ([`Self::forget_resolution`]), so instances show
    /// their children as unknown rather than from an old tree.
    pub fn store_tree(
        &self,
        namespace: &str,
        root: &Package,
        resolution: Option<&Resolution>,
    ) -> io::Result<()> {
        self.store(namespace, root)?;
        match resolution {
            Some(resolution) => self.store_resolution(namespace, resolution),
            None => self.forget_resolution(namespace, &root.operator_version_name()),
        }
    }

    /// Keeps an operator's resolved dependency tree next to its package copy, with a
    /// copy of every chosen package, so that instances of it can show and run their
    /// children without the operator's source, repositories or overrides.
    pub fn store_resolution(&self, namespace: &str, resolution: &Resolution) -> io::Result<()> {
        let Some(root) = resolution.nodes.first() else {
            return Ok(());
        };
        for pkg in resolution.packages.values() {
            self.store(namespace, pkg)?;
        }
        std::fs::create_dir_all(&self.dir)?;
        let bytes = serde_json::to_vec(resolution).map_err(io::Error::other)?;
        write_whole(
            &self.resolution_file(namespace, &root.operator_version_name),
            &bytes,
        )
    }

    /// Removes the tree kept for the operator `ov_name`, if any: a plan that cannot
    /// know the tree must not leave an older one for instances to read.
    pub fn forget_resolution(&self, namespace: &str, ov_name: &str) -> io::Result<()> {
        match std::fs::remove_file(self.resolution_file(namespace, ov_name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RepositoryCatalog, Resolver};

    const KEP29: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/deps/kep29"
    );

    fn kep29() -> (Package, Resolution) {
        let dir = Path::new(KEP29);
        let root = Package::load_dir(&dir.join("aa")).expect("root package");
        let catalog = RepositoryCatalog::folder("fixtures", dir);
        let resolution = Resolver::new(&catalog)
            .resolve(&root, &root.operator.name)
            .expect("resolves");
        (root, resolution)
    }

    #[test]
    fn cache_round_trip_keeps_the_digest() {
        let (pkg, _) = kep29();
        let tmp = tempfile::tempdir().expect("tempdir");
        let cache = PlanCache::new(tmp.path());
        cache.store("ns1", &pkg).expect("store");
        let back = cache
            .load("ns1", &pkg.operator_version_name())
            .expect("copy is found");
        let digest = kudo_package::crd::content_digest;
        assert_eq!(digest(&back), digest(&pkg));
        assert!(cache.load("other", &pkg.operator_version_name()).is_none());
    }

    #[test]
    fn a_tree_is_kept_with_its_packages_and_forgotten_when_not_known() {
        let (root, resolution) = kep29();
        let tmp = tempfile::tempdir().expect("tempdir");
        let cache = PlanCache::new(tmp.path());
        let ov = root.operator_version_name();
        cache
            .store_tree("ns1", &root, Some(&resolution))
            .expect("store");
        let back = cache.load_resolution("ns1", &ov).expect("tree kept");
        assert_eq!(
            back.install_order_versions(),
            resolution.install_order_versions()
        );
        assert_eq!(
            back.packages.keys().collect::<Vec<_>>(),
            resolution.packages.keys().collect::<Vec<_>>()
        );
        cache.store_tree("ns1", &root, None).expect("store");
        assert!(cache.load_resolution("ns1", &ov).is_none());
        assert!(cache.load("ns1", &ov).is_some(), "the package copy stays");
    }
}
