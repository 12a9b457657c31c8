//! Where dependency versions come from: a [`Catalog`] lists the versions of a package
//! name and loads one. [`RepositoryCatalog`] reads KUDO repositories (index or folder of
//! packages, through `kudo-package`); [`MemoryCatalog`] holds packages in memory (tests,
//! benchmarks, callers that already loaded packages).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use kudo_package::{Index, LoadContext, Origin, Package, Repository};
use serde::{Deserialize, Serialize};

use crate::error::ResolveError;

/// One version of a package offered by a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub name: String,
    pub operator_version: String,
    pub app_version: Option<String>,
    /// Repository name.
    pub repository: String,
    /// Lower wins.
    pub priority: i32,
    /// Position of the repository in the catalog's list; breaks priority ties.
    pub order: usize,
    /// Where the package is read from (first URL or path), for messages.
    pub location: String,
}

/// A source of package versions.
pub trait Catalog {
    /// Every version of `name`, in any order (the resolver orders them). Unknown name:
    /// empty list.
    fn versions(&self, name: &str) -> Result<Vec<CatalogEntry>, ResolveError>;

    /// [`Catalog::versions`] as shared entries: the resolver keeps one per candidate, so
    /// a catalog that holds its entries already hands them out without copying their
    /// strings (the default wraps [`Catalog::versions`]).
    fn shared_versions(&self, name: &str) -> Result<Vec<Arc<CatalogEntry>>, ResolveError> {
        Ok(self.versions(name)?.into_iter().map(Arc::new).collect())
    }

    /// Every package name the catalog offers (to find the package that provides an
    /// API). A catalog that cannot list its names offers none.
    fn names(&self) -> Result<Vec<String>, ResolveError> {
        Ok(Vec::new())
    }

    /// Load one listed version (shared: a catalog that keeps packages in memory hands
    /// out its own copy instead of cloning one per load).
    fn load(&self, entry: &CatalogEntry) -> Result<Arc<Package>, ResolveError>;

    /// Load a dependency given as a folder or `.tgz` (relative to `parent`'s folder when
    /// the parent came from a folder) or an http(s) URL.
    fn load_source(&self, parent: &Package, source: &str) -> Result<Package, ResolveError> {
        load_source_with(parent, source, &LoadContext::default())
    }
}

/// Is this `package` value of a KudoOperator task a path or URL rather than a name?
pub fn is_path_or_url(parent: &Package, source: &str) -> bool {
    if source.starts_with("http://")
        || source.starts_with("https://")
        || source.starts_with("file://")
    {
        return true;
    }
    if let Origin::Dir(dir) = &parent.origin
        && dir.join(source).exists()
    {
        return true;
    }
    source.contains('/')
        || source.contains('\\')
        || source.starts_with('.')
        || source.ends_with(".tgz")
        || source.ends_with(".tar.gz")
}

/// Shared implementation of [`Catalog::load_source`]: relative paths are taken from the
/// parent's folder (a packaged parent has no folder, so they stay relative to `ctx`).
pub fn load_source_with(
    parent: &Package,
    source: &str,
    ctx: &LoadContext,
) -> Result<Package, ResolveError> {
    let is_url = source.starts_with("http://") || source.starts_with("https://");
    let resolved = match &parent.origin {
        Origin::Dir(dir) if !is_url => {
            let p = source.strip_prefix("file://").unwrap_or(source);
            if Path::new(p).is_absolute() {
                p.to_string()
            } else {
                dir.join(p).display().to_string()
            }
        }
        _ => source.to_string(),
    };
    kudo_package::load(&resolved, ctx).map_err(|source_err| ResolveError::Package {
        what: format!(
            "dependency {source:?} of {} {}",
            parent.operator.name, parent.operator.operator_version
        ),
        source: Box::new(source_err),
    })
}

/// Repositories (indexes or folders of packages) read through `kudo-package`, lowest
/// priority number first, ties in list order. An unreachable repository is skipped with
/// a warning so that the others still count.
pub struct RepositoryCatalog {
    repositories: Vec<Repository>,
    ctx: LoadContext,
    indexes: Mutex<BTreeMap<usize, Option<Index>>>,
}

impl RepositoryCatalog {
    pub fn new(repositories: Vec<Repository>, ctx: LoadContext) -> RepositoryCatalog {
        RepositoryCatalog {
            repositories,
            ctx,
            indexes: Mutex::new(BTreeMap::new()),
        }
    }

    /// A catalog over one local folder of package folders / `.tgz` files.
    pub fn folder(name: &str, dir: &Path) -> RepositoryCatalog {
        RepositoryCatalog::new(
            vec![Repository {
                name: name.to_string(),
                url: dir.display().to_string(),
                priority: 0,
            }],
            LoadContext::default(),
        )
    }

    fn index(&self, order: usize) -> Option<Index> {
        let mut cache = match self.indexes.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        cache
            .entry(order)
            .or_insert_with(|| {
                let repo = self.repositories.get(order)?;
                match kudo_package::repository_index(repo, &self.ctx) {
                    Ok(i) => Some(i),
                    Err(e) => {
                        tracing::warn!(repository = %repo.name, error = %e, "repository unreadable; skipping it");
                        None
                    }
                }
            })
            .clone()
    }
}

impl Catalog for RepositoryCatalog {
    fn versions(&self, name: &str) -> Result<Vec<CatalogEntry>, ResolveError> {
        // Unreadable repositories are skipped, but one that can never be read (a URL
        // scheme we do not speak) is a mistake to name, not to skip.
        for repo in &self.repositories {
            if let Some(problem) = kudo_package::repository_url_problem(&repo.url) {
                return Err(ResolveError::Catalog(format!(
                    "repository {}: {problem}",
                    repo.name
                )));
            }
        }
        let mut out = Vec::new();
        for (order, repo) in self.repositories.iter().enumerate() {
            let Some(index) = self.index(order) else {
                continue;
            };
            for e in index.entries.get(name).into_iter().flatten() {
                out.push(CatalogEntry {
                    name: e.name.clone(),
                    operator_version: e.operator_version.clone(),
                    app_version: e.app_version.clone(),
                    repository: repo.name.clone(),
                    priority: repo.priority,
                    order,
                    location: e.urls.first().cloned().unwrap_or_default(),
                });
            }
        }
        Ok(out)
    }

    fn names(&self) -> Result<Vec<String>, ResolveError> {
        let mut out = std::collections::BTreeSet::new();
        for order in 0..self.repositories.len() {
            if let Some(index) = self.index(order) {
                out.extend(index.entries.keys().cloned());
            }
        }
        Ok(out.into_iter().collect())
    }

    fn load(&self, entry: &CatalogEntry) -> Result<Arc<Package>, ResolveError> {
        let what = || {
            format!(
                "{} {} from repository {}",
                entry.name, entry.operator_version, entry.repository
            )
        };
        let repo = self
            .repositories
            .get(entry.order)
            .ok_or_else(|| ResolveError::Catalog(format!("{}: unknown repository", what())))?;
        let index = self
            .index(entry.order)
            .ok_or_else(|| ResolveError::Catalog(format!("{}: repository unreadable", what())))?;
        let found = index.entries.get(&entry.name).and_then(|list| {
            list.iter().find(|e| {
                e.operator_version == entry.operator_version && e.app_version == entry.app_version
            })
        });
        let Some(found) = found else {
            return Err(ResolveError::Catalog(format!(
                "{}: no longer listed in the repository index",
                what()
            )));
        };
        kudo_package::load_entry(found, repo, &self.ctx)
            .map(Arc::new)
            .map_err(|source| ResolveError::Package {
                what: what(),
                source: Box::new(source),
            })
    }

    fn load_source(&self, parent: &Package, source: &str) -> Result<Package, ResolveError> {
        load_source_with(parent, source, &self.ctx)
    }
}

/// One version held by a [`MemoryCatalog`]: its entry (shared with the resolver) and
/// the package.
type Offered = (Arc<CatalogEntry>, Arc<Package>);

/// Packages held in memory, each under a repository name and priority.
#[derive(Default)]
pub struct MemoryCatalog {
    entries: BTreeMap<String, Vec<Offered>>,
    repositories: Vec<String>,
}

impl MemoryCatalog {
    pub fn new() -> MemoryCatalog {
        MemoryCatalog::default()
    }

    /// Add a package as offered by `repository` with `priority`.
    pub fn add(&mut self, package: Package, repository: &str, priority: i32) {
        let order = match self.repositories.iter().position(|r| r == repository) {
            Some(i) => i,
            None => {
                self.repositories.push(repository.to_string());
                self.repositories.len() - 1
            }
        };
        let entry = CatalogEntry {
            name: package.operator.name.clone(),
            operator_version: package.operator.operator_version.clone(),
            app_version: package.operator.app_version.clone(),
            repository: repository.to_string(),
            priority,
            order,
            location: package.origin.label(),
        };
        self.entries
            .entry(entry.name.clone())
            .or_default()
            .push((Arc::new(entry), Arc::new(package)));
    }

    /// Load every package folder directly under `dir` (unreadable ones are skipped with
    /// a warning) as repository `repository`.
    pub fn add_folder(
        &mut self,
        dir: &Path,
        repository: &str,
        priority: i32,
    ) -> Result<usize, ResolveError> {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| {
                ResolveError::Catalog(format!("{}: cannot read folder: {e}", dir.display()))
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("operator.yaml").is_file())
            .collect();
        paths.sort();
        let mut n = 0;
        for p in paths {
            match Package::load_dir(&p) {
                Ok(pkg) => {
                    self.add(pkg, repository, priority);
                    n += 1;
                }
                Err(e) => {
                    tracing::warn!(path = %p.display(), error = %e, "skipping unreadable package")
                }
            }
        }
        Ok(n)
    }
}

impl Catalog for MemoryCatalog {
    fn versions(&self, name: &str) -> Result<Vec<CatalogEntry>, ResolveError> {
        Ok(self
            .entries
            .get(name)
            .map(|list| list.iter().map(|(e, _)| (**e).clone()).collect())
            .unwrap_or_default())
    }

    fn shared_versions(&self, name: &str) -> Result<Vec<Arc<CatalogEntry>>, ResolveError> {
        Ok(self
            .entries
            .get(name)
            .map(|list| list.iter().map(|(e, _)| e.clone()).collect())
            .unwrap_or_default())
    }

    fn names(&self) -> Result<Vec<String>, ResolveError> {
        Ok(self.entries.keys().cloned().collect())
    }

    fn load(&self, entry: &CatalogEntry) -> Result<Arc<Package>, ResolveError> {
        self.entries
            .get(&entry.name)
            .and_then(|list| {
                // The resolver passes back the entries `shared_versions` handed out: find
                // by address first, by value for an entry built elsewhere.
                list.iter()
                    .find(|(e, _)| std::ptr::eq(&**e, entry))
                    .or_else(|| list.iter().find(|(e, _)| **e == *entry))
            })
            .map(|(_, p)| p.clone())
            .ok_or_else(|| {
                ResolveError::Catalog(format!(
                    "{} {} is not in the in-memory catalog",
                    entry.name, entry.operator_version
                ))
            })
    }
}
