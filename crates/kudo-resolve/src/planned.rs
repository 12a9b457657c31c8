//! What a plan resolved, recorded so that the apply installs exactly that.
//!
//! Terraform plans each change twice: for `terraform plan`, and again inside
//! `terraform apply` just before applying (the "final plan"), and refuses the apply
//! when the second plan differs from the first. A saved plan is often applied in
//! another job, with a fresh `.terraform`, after the repositories moved on: a newer
//! version published, a version withdrawn or republished, a package folder edited.
//! Resolving again would then plan something else than what was reviewed.
//!
//! So the plan records every package it resolved as a [`PlannedTree`] (name, versions,
//! content digest, where it was read), kept in the resource's private data. The final
//! plan (Terraform 1.16+ hands the first plan's private data back) and the apply read
//! exactly those packages again, by version and location ([`PinnedPackage::load`]),
//! and refuse one that can no longer be had or whose content differs
//! ([`PlannedError`]), before anything is written. Downloads kept under the data
//! directory serve as a cache: an archive is taken from there when its sha256 matches.

use kudo_package::{LoadContext, Origin, Package, PackageError};
use serde::{Deserialize, Serialize};

use crate::Resolution;

/// One package a plan resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedPackage {
    pub name: String,
    pub operator_version: String,
    pub app_version: Option<String>,
    /// [`kudo_package::crd::content_digest`]: the digest of what gets installed, the
    /// same one `kudo_operator.digest` shows.
    pub digest: String,
    pub from: PinnedSource,
}

/// Where a pinned package is read again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PinnedSource {
    /// A package folder or `.tgz` file, as the plan named it (relative paths stay
    /// relative to the working directory, which a saved plan's apply recreates).
    Path { path: String },
    /// An http(s) URL of a `.tgz`; `sha256` is that of the archive the plan read.
    Url { url: String, sha256: String },
    /// An entry of a repository's index, found again by name and exact versions.
    Repository {
        repository: String,
        url: String,
        sha256: String,
    },
    /// The OperatorVersion already in the cluster (a `cluster:` source).
    Cluster,
}

/// Everything one `kudo_operator` plan resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedTree {
    /// The `package` value the plan was made for; the record holds for it only.
    pub source: String,
    pub root: PinnedPackage,
    /// The dependency tree, when the plan knew it (an offline plan whose choice of
    /// versions depends on the cluster leaves it to the apply).
    pub tree: Option<PlannedDependencies>,
}

/// A resolved dependency tree with every package of it but the root pinned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedDependencies {
    /// The tree as resolved (its `packages` are not serialised: see `packages`).
    pub resolution: Resolution,
    pub packages: Vec<PinnedPackage>,
}

/// The key of the record in a resource's private data (JSON), so that other parts
/// can share the same bytes later.
#[derive(Deserialize)]
struct Private {
    planned: PlannedTree,
}

/// Why a planned package cannot be installed as planned. Each says which package and
/// version, the digest the plan recorded, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum PlannedError {
    #[error(
        "{package} from {location} is not the package this plan was made with: the plan recorded content digest {planned}, and {location} now has content digest {found}. Nothing was installed. Run `terraform plan` again, review the new plan and apply that one."
    )]
    Changed {
        /// `name operatorVersion (app appVersion)`.
        package: String,
        location: String,
        planned: String,
        found: String,
    },
    #[error(
        "{package} (planned content digest {planned}) is no longer listed in repository {repository}: the version was withdrawn after the plan. Nothing was installed. Run `terraform plan` again to choose from the versions the repository offers now, review the new plan and apply that one."
    )]
    Withdrawn {
        package: String,
        repository: String,
        planned: String,
    },
    #[error(
        "{package} (planned content digest {planned}) cannot be read from {location} any more: {source}. Nothing was installed. Make {location} reachable again and apply this plan, or run `terraform plan` again, review the new plan and apply that one."
    )]
    Unavailable {
        package: String,
        location: String,
        planned: String,
        #[source]
        source: Box<PackageError>,
    },
}

impl PlannedError {
    /// A short title for the error, for a diagnostic's summary.
    pub fn summary(&self) -> &'static str {
        match self {
            PlannedError::Changed { .. } => "Planned package changed since the plan",
            PlannedError::Withdrawn { .. } => "Planned package version withdrawn",
            PlannedError::Unavailable { .. } => "Planned package not available",
        }
    }
}

impl PinnedPackage {
    /// The pin of a loaded package; `None` for one that cannot be read again (built
    /// in memory).
    pub fn of(pkg: &Package) -> Option<PinnedPackage> {
        let from = match &pkg.origin {
            Origin::Dir(path) | Origin::Tgz { path, .. } => PinnedSource::Path {
                path: path.display().to_string(),
            },
            Origin::Url { url, digest } => PinnedSource::Url {
                url: url.clone(),
                sha256: digest.clone(),
            },
            Origin::Repository {
                repository,
                url,
                digest,
            } => PinnedSource::Repository {
                repository: repository.clone(),
                url: url.clone(),
                sha256: digest.clone(),
            },
            Origin::Cluster { .. } => PinnedSource::Cluster,
            Origin::Memory => return None,
        };
        Some(PinnedPackage {
            name: pkg.operator.name.clone(),
            operator_version: pkg.operator.operator_version.clone(),
            app_version: pkg.operator.app_version.clone(),
            digest: kudo_package::crd::content_digest(pkg),
            from,
        })
    }

    /// `name operatorVersion (app appVersion)`, for messages.
    fn describe(&self) -> String {
        match &self.app_version {
            Some(app) => format!("{} {} (app {app})", self.name, self.operator_version),
            None => format!("{} {}", self.name, self.operator_version),
        }
    }

    fn location(&self) -> String {
        match &self.from {
            PinnedSource::Path { path } => path.clone(),
            PinnedSource::Url { url, .. } => url.clone(),
            PinnedSource::Repository { repository, .. } => format!("repository {repository}"),
            PinnedSource::Cluster => "the cluster".to_string(),
        }
    }

    fn unavailable(&self, source: PackageError) -> PlannedError {
        PlannedError::Unavailable {
            package: self.describe(),
            location: self.location(),
            planned: self.digest.clone(),
            source: Box::new(source),
        }
    }

    /// Reads this package again from where the plan read it (blocking: reads files
    /// and may download) and checks that it is the same: same name, versions and
    /// content digest. `loaded`: the package read from the cluster, for a
    /// [`PinnedSource::Cluster`] pin.
    pub fn load(
        &self,
        ctx: &LoadContext,
        loaded: Option<Package>,
    ) -> Result<Package, PlannedError> {
        let pkg = match &self.from {
            PinnedSource::Path { path } => {
                kudo_package::load(path, ctx).map_err(|e| self.unavailable(e))?
            }
            PinnedSource::Url { url, sha256 } => self.load_url(url, sha256, ctx)?,
            PinnedSource::Repository { repository, .. } => self.load_listed(repository, ctx)?,
            PinnedSource::Cluster => loaded.ok_or_else(|| {
                self.unavailable(PackageError::Source {
                    source_name: "the cluster".to_string(),
                    message: "the OperatorVersion was not read".to_string(),
                })
            })?,
        };
        self.check(pkg)
    }

    /// The archive at `url`: the downloaded copy with the planned sha256 when there is
    /// one, else a fresh download (whose content the caller compares).
    fn load_url(
        &self,
        url: &str,
        sha256: &str,
        ctx: &LoadContext,
    ) -> Result<Package, PlannedError> {
        match kudo_package::load(&format!("{url}#sha256={sha256}"), ctx) {
            // Other bytes: read them as they are, so that a repacked archive with the
            // same content still counts, and a changed one names its content digest.
            Err(PackageError::Digest { .. }) => {
                kudo_package::load(url, ctx).map_err(|e| self.unavailable(e))
            }
            other => other.map_err(|e| self.unavailable(e)),
        }
    }

    /// The entry of `repository`'s index with exactly this name and versions.
    fn load_listed(&self, repository: &str, ctx: &LoadContext) -> Result<Package, PlannedError> {
        let Some(repo) = ctx.repositories.iter().find(|r| r.name == repository) else {
            return Err(self.unavailable(PackageError::Source {
                source_name: format!("repository {repository}"),
                message:
                    "no `repository` block of the provider configuration has this name any more"
                        .to_string(),
            }));
        };
        let index = kudo_package::repository_index(repo, ctx).map_err(|e| self.unavailable(e))?;
        let entry = index.entries.get(&self.name).and_then(|list| {
            list.iter().find(|e| {
                e.operator_version == self.operator_version && e.app_version == self.app_version
            })
        });
        let Some(entry) = entry else {
            return Err(PlannedError::Withdrawn {
                package: self.describe(),
                repository: repository.to_string(),
                planned: self.digest.clone(),
            });
        };
        kudo_package::load_entry(entry, repo, ctx).map_err(|e| self.unavailable(e))
    }

    fn check(&self, pkg: Package) -> Result<Package, PlannedError> {
        let found = kudo_package::crd::content_digest(&pkg);
        let same = found == self.digest
            && pkg.operator.name == self.name
            && pkg.operator.operator_version == self.operator_version
            && pkg.operator.app_version == self.app_version;
        if same {
            return Ok(pkg);
        }
        Err(PlannedError::Changed {
            package: self.describe(),
            location: self.location(),
            planned: self.digest.clone(),
            found,
        })
    }
}

impl PlannedTree {
    /// What a plan of `source` resolved: `root` and, when known, its tree. `None` when
    /// a package cannot be read again (built in memory).
    pub fn record(
        source: &str,
        root: &Package,
        resolution: Option<&Resolution>,
    ) -> Option<PlannedTree> {
        let tree = match resolution {
            Some(resolution) => Some(PlannedDependencies {
                resolution: resolution.clone(),
                packages: resolution
                    .packages
                    .iter()
                    .filter(|(name, _)| **name != root.operator.name)
                    .map(|(_, pkg)| PinnedPackage::of(pkg))
                    .collect::<Option<Vec<_>>>()?,
            }),
            None => None,
        };
        Some(PlannedTree {
            source: source.to_string(),
            root: PinnedPackage::of(root)?,
            tree,
        })
    }

    /// The record as private data (JSON).
    pub fn to_private(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({ "planned": self })).unwrap_or_default()
    }

    /// The record `private` holds for `source`: `None` when it holds none (a first
    /// plan, a client that keeps nothing of the first plan, a plan made by an older
    /// provider) or one for another source.
    pub fn from_private(private: &[u8], source: &str) -> Option<PlannedTree> {
        if private.is_empty() {
            return None;
        }
        match serde_json::from_slice::<Private>(private) {
            Ok(p) if p.planned.source == source => Some(p.planned),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "ignoring unreadable planned packages; resolving again");
                None
            }
        }
    }
}

impl PlannedDependencies {
    /// The planned tree with every package read again and checked ([`PinnedPackage::load`]).
    pub fn load(&self, root: &Package, ctx: &LoadContext) -> Result<Resolution, PlannedError> {
        let mut resolution = self.resolution.clone();
        resolution
            .packages
            .insert(root.operator.name.clone(), root.clone());
        for pin in &self.packages {
            let pkg = pin.load(ctx, None)?;
            resolution.packages.insert(pin.name.clone(), pkg);
        }
        Ok(resolution)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use kudo_package::Repository;

    use super::*;
    use crate::{LoadError, LoadRequest, load_and_resolve};

    /// A package folder `name` `version` whose ConfigMap holds `value`; `dependency`:
    /// a KudoOperator task on that repository package (any 0.x version).
    fn write_package(dir: &Path, name: &str, version: &str, value: &str, dependency: Option<&str>) {
        let (dep_task, dep_step) = match dependency {
            Some(dep) => (
                format!(
                    "  - name: dep\n    kind: KudoOperator\n    spec:\n      package: {dep}\n      operatorVersion: \"0.x\"\n"
                ),
                "          - name: dep\n            tasks: [dep]\n".to_string(),
            ),
            None => (String::new(), String::new()),
        };
        std::fs::create_dir_all(dir.join("templates")).expect("package dir");
        std::fs::write(
            dir.join("operator.yaml"),
            format!(
                "apiVersion: kudo.dev/v1beta1\nname: {name}\noperatorVersion: \"{version}\"\nkubernetesVersion: 1.18.0\nmaintainers:\n  - name: tests\n    email: tests@example.com\ntasks:\n{dep_task}  - name: cm\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n{dep_step}          - name: cm\n            tasks: [cm]\n"
            ),
        )
        .expect("operator.yaml");
        std::fs::write(
            dir.join("templates/cm.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-cm\ndata:\n  value: {value:?}\n"),
        )
        .expect("template");
    }

    /// A repository folder with an index, a root package folder depending on `dep`,
    /// and a download cache: what one working folder sees.
    struct World {
        _tmp: tempfile::TempDir,
        repo: PathBuf,
        root: PathBuf,
        build: PathBuf,
        cache: PathBuf,
    }

    impl World {
        fn new() -> World {
            let tmp = tempfile::tempdir().expect("tempdir");
            let repo = tmp.path().join("repo");
            let root = tmp.path().join("root");
            std::fs::create_dir_all(&repo).expect("repo");
            write_package(&root, "app", "1.0.0", "root", Some("dep"));
            let world = World {
                repo,
                root,
                build: tmp.path().join("build"),
                cache: tmp.path().join("cache"),
                _tmp: tmp,
            };
            world.publish("dep", "0.1.0", "first");
            world
        }

        /// Builds and publishes `dep` `version` (replacing an archive of that version).
        fn publish(&self, name: &str, version: &str, value: &str) {
            let dir = self.build.join(format!("{name}-{version}"));
            let _ = std::fs::remove_dir_all(&dir);
            write_package(&dir, name, version, value, None);
            let bytes = kudo_package::create_tgz(&dir).expect("tgz");
            let pkg = Package::load_dir(&dir).expect("package");
            std::fs::write(self.repo.join(kudo_package::tgz_file_name(&pkg)), bytes)
                .expect("publish");
            self.reindex();
        }

        fn withdraw(&self, file: &str) {
            std::fs::remove_file(self.repo.join(file)).expect("withdraw");
            self.reindex();
        }

        fn reindex(&self) {
            let index = kudo_package::index_dir(&self.repo, None).expect("index");
            std::fs::write(self.repo.join("index.yaml"), index).expect("index.yaml");
        }

        fn context(&self) -> LoadContext {
            LoadContext {
                repositories: vec![Repository {
                    name: "test".to_string(),
                    url: self.repo.display().to_string(),
                    priority: 0,
                }],
                cache_dir: Some(self.cache.clone()),
                base_dir: None,
            }
        }

        fn request(&self, source: &str, planned: Option<PlannedTree>) -> LoadRequest {
            LoadRequest {
                source: source.to_string(),
                loaded: None,
                context: self.context(),
                overrides: BTreeMap::new(),
                cluster: None,
                planned,
            }
        }

        fn root_source(&self) -> String {
            self.root.display().to_string()
        }

        /// The plan: resolve, and record what was resolved (through private data, as
        /// Terraform carries it).
        fn plan(&self, source: &str) -> PlannedTree {
            let (pkg, resolution) = load_and_resolve(self.request(source, None)).expect("plan");
            let record = PlannedTree::record(source, &pkg, Some(&resolution)).expect("pinned");
            PlannedTree::from_private(&record.to_private(), source).expect("round trip")
        }

        /// The apply of `planned`, in a working folder with an empty download cache.
        fn apply(
            &self,
            source: &str,
            planned: PlannedTree,
        ) -> Result<(Package, Resolution), LoadError> {
            let _ = std::fs::remove_dir_all(&self.cache);
            load_and_resolve(self.request(source, Some(planned)))
        }
    }

    fn dependency_version(resolution: &Resolution) -> String {
        resolution.packages["dep"].operator.operator_version.clone()
    }

    #[test]
    fn a_newer_version_published_after_the_plan_is_ignored() {
        let world = World::new();
        let source = world.root_source();
        let planned = world.plan(&source);
        world.publish("dep", "0.2.0", "second");
        let (_, fresh) = load_and_resolve(world.request(&source, None)).expect("resolves");
        assert_eq!(
            dependency_version(&fresh),
            "0.2.0",
            "a new plan takes the newer one"
        );
        let (_, applied) = world
            .apply(&source, planned.clone())
            .expect("planned packages");
        assert_eq!(dependency_version(&applied), "0.1.0");
        assert_eq!(
            applied.install_order_versions(),
            planned
                .tree
                .expect("tree")
                .resolution
                .install_order_versions()
        );
    }

    #[test]
    fn a_root_named_in_a_repository_keeps_its_planned_version() {
        let world = World::new();
        let planned = world.plan("dep");
        world.publish("dep", "0.2.0", "second");
        let (root, _) = world.apply("dep", planned).expect("planned packages");
        assert_eq!(root.operator.operator_version, "0.1.0");
    }

    #[test]
    fn republished_content_is_refused_naming_both_digests() {
        let world = World::new();
        let source = world.root_source();
        let planned = world.plan(&source);
        let was = planned.tree.as_ref().expect("tree").packages[0]
            .digest
            .clone();
        world.publish("dep", "0.1.0", "changed");
        let err = world.apply(&source, planned).expect_err("refused");
        let LoadError::Planned(PlannedError::Changed {
            package,
            planned,
            found,
            ..
        }) = &err
        else {
            panic!("expected a changed package, got {err:?}");
        };
        assert_eq!(package, "dep 0.1.0");
        assert_eq!(*planned, was);
        assert_ne!(found, planned);
        let text = err.to_string();
        assert!(
            text.contains(&was) && text.contains(found.as_str()),
            "{text}"
        );
        assert!(text.contains("Run `terraform plan` again"), "{text}");
    }

    #[test]
    fn a_withdrawn_version_is_refused() {
        let world = World::new();
        let source = world.root_source();
        let planned = world.plan(&source);
        world.publish("dep", "0.2.0", "second");
        world.withdraw("dep-0.1.0.tgz");
        let err = world.apply(&source, planned).expect_err("refused");
        assert!(
            matches!(&err, LoadError::Planned(PlannedError::Withdrawn { package, repository, .. })
                if package == "dep 0.1.0" && repository == "test"),
            "{err:?}"
        );
    }

    #[test]
    fn an_unreachable_repository_is_refused() {
        let world = World::new();
        let source = world.root_source();
        let planned = world.plan(&source);
        std::fs::rename(&world.repo, world.repo.with_extension("gone")).expect("rename");
        let err = world.apply(&source, planned).expect_err("refused");
        let text = err.to_string();
        assert!(
            matches!(&err, LoadError::Planned(PlannedError::Unavailable { .. })),
            "{err:?}"
        );
        assert!(
            text.contains("dep 0.1.0") && text.contains("repository test"),
            "{text}"
        );
    }

    #[test]
    fn a_package_folder_edited_after_the_plan_is_refused() {
        let world = World::new();
        let source = world.root_source();
        let planned = world.plan(&source);
        write_package(&world.root, "app", "1.0.0", "edited", Some("dep"));
        let err = world.apply(&source, planned).expect_err("refused");
        assert!(
            matches!(&err, LoadError::Planned(PlannedError::Changed { package, location, .. })
                if package == "app 1.0.0" && *location == source),
            "{err:?}"
        );
    }

    #[test]
    fn an_unchanged_tree_applies_and_the_record_holds_for_its_source_only() {
        let world = World::new();
        let source = world.root_source();
        let planned = world.plan(&source);
        let (_, fresh) = load_and_resolve(world.request(&source, None)).expect("resolves");
        let (_, applied) = world
            .apply(&source, planned.clone())
            .expect("same packages");
        assert_eq!(applied.nodes, fresh.nodes);
        assert_eq!(
            applied.packages.keys().collect::<Vec<_>>(),
            fresh.packages.keys().collect::<Vec<_>>()
        );
        let private = planned.to_private();
        assert!(PlannedTree::from_private(&private, "other").is_none());
        assert!(PlannedTree::from_private(b"", &source).is_none());
        assert!(PlannedTree::from_private(b"{not json", &source).is_none());
    }
}
