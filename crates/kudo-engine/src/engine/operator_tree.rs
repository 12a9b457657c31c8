//! An operator with its dependency operators, as one install: every package of a
//! resolved tree goes in before the packages that need it (their OperatorVersions must
//! exist before an instance's KudoOperator task asks for them, as KUDO's install made
//! sure), versions the new tree no longer uses go, and a failed create takes back what
//! it wrote. Removal goes the other way round.

use std::collections::{HashMap, HashSet};

use kudo_package::Package;
use kudo_resolve::Resolution;
use tokio_util::sync::CancellationToken;

use super::error::EngineError;
use super::namespace::NamespaceProblem;
use super::operator::install_operator;
use super::operator::operator_version_ref;
use super::operator::uninstall_operator;
use super::removal::Kept;
use crate::cluster::{Cluster, ClusterError};

/// One OperatorVersion of an operator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstalledVersion {
    pub operator: String,
    pub operator_version_name: String,
}

impl InstalledVersion {
    /// A record's entry. An entry without its operator or OperatorVersion name (written
    /// by an older version, or damaged) names nothing an install may remove: None.
    fn recorded(
        operator: Option<&str>,
        operator_version_name: Option<&str>,
    ) -> Option<InstalledVersion> {
        Some(InstalledVersion {
            operator: operator?.to_string(),
            operator_version_name: operator_version_name?.to_string(),
        })
    }

    fn of(pkg: &Package) -> InstalledVersion {
        InstalledVersion {
            operator: pkg.operator.name.clone(),
            operator_version_name: pkg.operator_version_name(),
        }
    }
}

/// What an install left in a namespace, as its record (the `kudo_operator` state)
/// keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstalledTree {
    pub namespace: String,
    pub(crate) root: InstalledVersion,
    /// The dependencies' OperatorVersions, in the order the record lists them.
    pub(crate) dependencies: Vec<InstalledVersion>,
    /// OperatorVersion names in install order; empty in a record made before it had one.
    pub(crate) install_order: Vec<String>,
    /// The record's `create_namespace`: the install asked for its namespace to be
    /// created, so its destroy releases it. An update goes by its own request's.
    pub(crate) create_namespace: bool,
}

impl InstalledTree {
    /// The tree a record names in `namespace`: the root's Operator and OperatorVersion,
    /// each dependency's (an entry without both names, written by an older version or
    /// damaged, names nothing an install may remove: it is left out), the OperatorVersion
    /// names in install order, and whether the install created the namespace.
    pub fn recorded<'r>(
        namespace: String,
        (operator, operator_version_name): (&str, &str),
        dependencies: impl IntoIterator<Item = (Option<&'r str>, Option<&'r str>)>,
        install_order: Vec<String>,
        create_namespace: bool,
    ) -> InstalledTree {
        InstalledTree {
            namespace,
            root: InstalledVersion {
                operator: operator.to_string(),
                operator_version_name: operator_version_name.to_string(),
            },
            dependencies: dependencies
                .into_iter()
                .filter_map(|(op, ov)| InstalledVersion::recorded(op, ov))
                .collect(),
            install_order,
            create_namespace,
        }
    }

    /// Removal order: the root first, then its dependencies in reverse install order,
    /// so a package goes before the ones it needs. Dependencies `install_order` does
    /// not name follow in reverse record order.
    pub(crate) fn removal_order(&self) -> Vec<InstalledVersion> {
        let mut removals = vec![self.root.clone()];
        for ov in self.install_order.iter().rev() {
            if let Some(d) = self
                .dependencies
                .iter()
                .find(|d| d.operator_version_name == *ov)
                && !removals.contains(d)
            {
                removals.push(d.clone());
            }
        }
        for d in self.dependencies.iter().rev() {
            if !removals.contains(d) {
                removals.push(d.clone());
            }
        }
        removals
    }

    /// The versions this tree installed that the tree of `root` no longer uses: the
    /// previous root version when the version changed, and dependency versions the
    /// new resolution does not pick (operators installed without an instance count too).
    pub fn stale_after(&self, root: &Package, resolution: &Resolution) -> Vec<InstalledVersion> {
        let mut stale = Vec::new();
        let old = &self.root.operator_version_name;
        if !old.is_empty() && *old != root.operator_version_name() {
            stale.push(InstalledVersion {
                operator: root.operator.name.clone(),
                operator_version_name: old.clone(),
            });
        }
        let current = resolution.install_order_versions();
        for dep in &self.dependencies {
            if !current.contains(&dep.operator_version_name) && !stale.contains(dep) {
                stale.push(dep.clone());
            }
        }
        stale
    }
}

/// The dependency packages of a resolution in install order (the root package excluded:
/// it goes last). A chosen package the order does not name still gets installed, after
/// the others, so nothing the tree needs is skipped.
pub fn dependency_install_sequence<'r>(
    resolution: &'r Resolution,
    root: &Package,
) -> Vec<&'r Package> {
    let root_ov = root.operator_version_name();
    let mut sequence: Vec<&Package> = Vec::new();
    for ov_name in resolution.install_order_versions() {
        if ov_name == root_ov {
            continue;
        }
        if let Some(p) = resolution
            .packages
            .values()
            .find(|p| p.operator_version_name() == ov_name)
        {
            sequence.push(p);
        }
    }
    for (name, p) in &resolution.packages {
        if *name != root.operator.name && !sequence.iter().any(|s| std::ptr::eq(*s, p)) {
            sequence.push(p);
        }
    }
    sequence
}

/// `all` (in install order, the root last) in levels: each package after the packages it
/// needs (its instances' dependency instances' packages, and the operators it requires),
/// the others beside it. A loop between required operators (harmless: no instance runs
/// between them) is broken by taking the next in install order alone.
fn install_waves<'p>(
    all: Vec<(&'p Package, bool, bool)>,
    resolution: &Resolution,
) -> Vec<Vec<(&'p Package, bool, bool)>> {
    let mut needs: HashMap<&str, HashSet<&str>> = HashMap::new();
    for node in &resolution.nodes {
        let parent = node
            .parent
            .as_deref()
            .and_then(|p| resolution.nodes.iter().find(|n| n.instance == p));
        if let Some(parent) = parent {
            needs
                .entry(parent.package.as_str())
                .or_default()
                .insert(node.package.as_str());
        }
    }
    for required in &resolution.operators {
        needs
            .entry(required.required_by.as_str())
            .or_default()
            .insert(required.package.as_str());
    }
    let mut remaining = all;
    let mut waves = Vec::new();
    while !remaining.is_empty() {
        let pending: HashSet<&str> = remaining
            .iter()
            .map(|(p, _, _)| p.operator.name.as_str())
            .collect();
        let ready = |pkg: &Package| {
            needs.get(pkg.operator.name.as_str()).is_none_or(|deps| {
                deps.iter()
                    .all(|d| *d == pkg.operator.name || !pending.contains(d))
            })
        };
        let (mut wave, rest): (Vec<_>, Vec<_>) =
            remaining.into_iter().partition(|(p, _, _)| ready(p));
        remaining = rest;
        if wave.is_empty() {
            wave.push(remaining.remove(0));
        }
        waves.push(wave);
    }
    waves
}

/// What [`install_tree`] installs.
#[derive(Debug, Clone, Copy)]
pub struct InstallRequest<'a> {
    pub namespace: &'a str,
    pub root: &'a Package,
    pub resolution: &'a Resolution,
    /// What the previous install left (an update): versions it no longer needs are
    /// removed. `None`: a create, which removes what it wrote when it fails.
    pub previous: Option<&'a InstalledTree>,
    /// For a create, whether each OperatorVersion of [`install_sequence`] was there
    /// before it ([`versions_present`], read beside the namespace's and the CRDs'
    /// checks); an update's are all there.
    pub existed: &'a [bool],
}

/// The packages of the tree in install order, the root last, each with whether it is
/// the root.
fn install_sequence<'p>(resolution: &'p Resolution, root: &'p Package) -> Vec<(&'p Package, bool)> {
    dependency_install_sequence(resolution, root)
        .into_iter()
        .map(|d| (d, false))
        .chain(std::iter::once((root, true)))
        .collect()
}

/// Which OperatorVersions of the tree of `root` are in `namespace`, in install order,
/// asked all at once: what a create finds already there is not its to remove when it
/// fails. Absent when their kind is not served yet.
pub(crate) async fn versions_present(
    cluster: &Cluster,
    namespace: &str,
    root: &Package,
    resolution: &Resolution,
) -> Vec<bool> {
    let all = install_sequence(resolution, root);
    futures::future::join_all(all.iter().map(|(pkg, _)| {
        let r = operator_version_ref(namespace, &pkg.operator_version_name());
        async move { matches!(cluster.get(&r).await, Ok(Some(_))) }
    }))
    .await
}

/// An OperatorVersion a removal could not take away.
#[derive(Debug, Clone)]
pub struct NotRemoved {
    pub version: InstalledVersion,
    pub namespace: String,
    pub error: EngineError,
}

impl NotRemoved {
    /// The title of a warning about a version a failed create left behind.
    pub fn left_behind_summary(&self) -> String {
        let (namespace, name) = (&self.namespace, &self.version.operator_version_name);
        format!("OperatorVersion {namespace}/{name} left behind")
    }

    /// Why a failed create left the version behind, and how to delete it.
    pub fn left_behind_detail(&self) -> String {
        let (namespace, name) = (&self.namespace, &self.version.operator_version_name);
        format!(
            "The failed create could not remove what it wrote: {}. Delete it with kubectl delete operatorversion -n {namespace} {name}.",
            self.error
        )
    }

    /// The title of a warning about a version an install no longer uses
    /// ([`Installed::stale_left`]).
    pub fn stale_summary(&self) -> &'static str {
        "Previous OperatorVersion not removed"
    }

    /// Why the unused version is still there, and what to do about it.
    pub fn stale_detail(&self) -> String {
        format!(
            "{}: {}\n\nNothing uses it any more; delete it with kubectl if it stays.",
            self.version.operator_version_name, self.error
        )
    }
}

/// A completed [`install_tree`].
#[derive(Debug, Clone, Default)]
pub struct Installed {
    /// Versions the previous install left that nothing uses any more and that could
    /// not be removed.
    pub stale_left: Vec<NotRemoved>,
}

/// Why a `kudo_operator`'s plan refuses ([`super::plan_operator`]) or its apply stopped
/// ([`super::apply_operator`]; [`install_tree`] and [`check_install`] meet the last two).
#[derive(Debug)]
pub enum OperatorFailure {
    /// The package could not be loaded or its dependencies resolved (boxed: the error
    /// is large); nothing was written.
    Load(Box<super::tree_load::TreeLoadError>),
    /// The apply's package is not the one its plan showed (its content digest
    /// differs); nothing was written.
    Changed { package: String },
    /// The namespace is missing (and not to be created), being deleted, or could not
    /// be created: nothing was written.
    Namespace(NamespaceProblem),
    /// KUDO's CRDs are missing and could not be installed; nothing was written.
    Crds(ClusterError),
    /// Installing the package `operator` failed. A create removed what it had written
    /// (OperatorVersions that did not exist before, and their Operators once unused),
    /// except `left_behind`; what existed before stays.
    Package {
        operator: String,
        /// The root package rather than one of its dependencies.
        root: bool,
        /// Boxed: the failure stays small on the `Err` side.
        error: Box<EngineError>,
        left_behind: Vec<NotRemoved>,
    },
}

impl OperatorFailure {
    /// A short title: what could not be installed (`root_operator`: the name of the
    /// tree's root, named when one of its dependencies failed). A namespace problem
    /// stops the whole install; callers usually word it from the [`NamespaceProblem`].
    pub fn summary(&self, root_operator: &str) -> String {
        match self {
            OperatorFailure::Load(e) => e.summary().to_string(),
            OperatorFailure::Changed { .. } => {
                "Operator package changed after the plan".to_string()
            }
            OperatorFailure::Crds(_) => "Cannot install the KUDO CRDs".to_string(),
            OperatorFailure::Namespace(_) | OperatorFailure::Package { root: true, .. } => {
                "Cannot install the operator".to_string()
            }
            OperatorFailure::Package { operator, .. } => {
                format!("Cannot install dependency {operator} of operator {root_operator}")
            }
        }
    }
}

/// What [`install_tree`] would meet installing `root`, asked without writing anything,
/// for a plan: KUDO's CRDs the apply would have to create and these credentials may
/// not ([`Cluster::check_kudo_crds`]), and a refusal of the root's Operator or
/// OperatorVersion ([`super::check_operator`]: an object too large to store, missing
/// permissions). Failures the apply might not meet (the cluster unreachable, a
/// namespace being deleted) pass: the apply meets them itself.
pub async fn check_install(
    cluster: &Cluster,
    root: &Package,
    namespace: &str,
) -> Result<(), OperatorFailure> {
    // It writes nothing: what it finds unserved stays so while it asks.
    let cluster = &cluster.remembering_misses();
    cluster
        .check_kudo_crds()
        .await
        .map_err(OperatorFailure::Crds)?;
    match super::operator::check_operator(cluster, root, namespace).await {
        Err(error)
            if !error.is_cancelled()
                && matches!(
                    super::planning::classify(error.clone(), "install"),
                    super::planning::PlanFailure::Refused { .. }
                ) =>
        {
            Err(OperatorFailure::Package {
                operator: root.operator.name.clone(),
                root: true,
                error: Box::new(error),
                left_behind: Vec::new(),
            })
        }
        _ => Ok(()),
    }
}

/// Installs the dependency packages of `req.resolution` (KUDO's CRDs there already:
/// the operator's apply action ensures them beside the namespace)
/// level by level and the root last (each package after the packages it needs, so an
/// interrupted apply never leaves a package without what it needs; the packages of one
/// level side by side), then removes what the previous install left unused.
pub async fn install_tree(
    cluster: &Cluster,
    req: &InstallRequest<'_>,
    cancel: &CancellationToken,
) -> Result<Installed, OperatorFailure> {
    let creating = req.previous.is_none();
    // What this create wrote, for the rollback (Terraform keeps no state of a failed
    // create, so nothing else would remove it).
    let mut written: Vec<InstalledVersion> = Vec::new();
    let all = install_sequence(req.resolution, req.root);
    let existed = match creating {
        true => req.existed.iter().copied().chain(std::iter::repeat(false)),
        false => [].iter().copied().chain(std::iter::repeat(true)),
    };
    let all: Vec<(&Package, bool, bool)> = all
        .into_iter()
        .zip(existed)
        .map(|((pkg, root), existed)| (pkg, root, existed))
        .collect();
    // Level by level: a package goes in once the packages its KudoOperator tasks and
    // `dependencies:` name are there, the packages of one level side by side.
    for wave in install_waves(all, req.resolution) {
        let installs = wave
            .iter()
            .map(|(pkg, _, _)| install_operator(cluster, pkg, req.namespace));
        let installed = futures::future::join_all(installs).await;
        let mut failed = None;
        for ((pkg, root, existed), installed) in wave.into_iter().zip(installed) {
            if !existed {
                written.push(InstalledVersion::of(pkg));
            }
            if let (Err(error), None) = (installed, &failed) {
                failed = Some((pkg.operator.name.clone(), root, error));
            }
        }
        if let Some((operator, root, error)) = failed {
            return Err(OperatorFailure::Package {
                operator,
                root,
                error: Box::new(error),
                left_behind: remove_all(cluster, req.namespace, &written, cancel).await,
            });
        }
    }
    let stale_left = match req.previous {
        Some(previous) => remove_stale(cluster, previous, req, cancel).await,
        None => Vec::new(),
    };
    Ok(Installed { stale_left })
}

/// Removes the versions `previous` installed that `req`'s tree no longer uses; returns
/// what could not be removed.
async fn remove_stale(
    cluster: &Cluster,
    previous: &InstalledTree,
    req: &InstallRequest<'_>,
    cancel: &CancellationToken,
) -> Vec<NotRemoved> {
    let mut left = Vec::new();
    for version in previous.stale_after(req.root, req.resolution) {
        tracing::info!(operator = %version.operator, operator_version = %version.operator_version_name, "removing an OperatorVersion no longer used");
        // Not kept while used: this configuration's instances move to the new version
        // later in the same apply. Only the OperatorVersion goes: its Operator may
        // serve the new version.
        let removed = uninstall_operator(
            cluster,
            &previous.namespace,
            &version.operator,
            &version.operator_version_name,
            false,
            false,
            cancel,
        );
        if let Err(error) = removed.await {
            left.push(NotRemoved {
                version,
                namespace: previous.namespace.clone(),
                error,
            });
        }
    }
    left
}

/// Removes `written` newest first, with their Operators once no version is left;
/// returns what could not be removed.
async fn remove_all(
    cluster: &Cluster,
    namespace: &str,
    written: &[InstalledVersion],
    cancel: &CancellationToken,
) -> Vec<NotRemoved> {
    let mut left = Vec::new();
    for version in written.iter().rev() {
        let removed = uninstall_operator(
            cluster,
            namespace,
            &version.operator,
            &version.operator_version_name,
            true,
            true,
            cancel,
        );
        if let Err(error) = removed.await {
            left.push(NotRemoved {
                version: version.clone(),
                namespace: namespace.to_string(),
                error,
            });
        }
    }
    left
}

/// Removes everything `tree` installed, in [`InstalledTree::removal_order`], so that
/// nothing is left behind the way KUDO left it. Versions Instances still run stay (the
/// configuration's own instances are gone by now; others' are not ours to break) and
/// are returned; the first failure stops the removal.
pub async fn uninstall_tree(
    cluster: &Cluster,
    tree: &InstalledTree,
    cancel: &CancellationToken,
) -> Result<Vec<Kept>, EngineError> {
    let mut kept = Vec::new();
    for version in tree.removal_order() {
        kept.extend(
            uninstall_operator(
                cluster,
                &tree.namespace,
                &version.operator,
                &version.operator_version_name,
                true,
                true,
                cancel,
            )
            .await?,
        );
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_resolve::{RepositoryCatalog, Resolver};
    use std::path::Path;

    #[test]
    fn a_record_entry_without_its_names_is_not_ours_to_remove() {
        let full = InstalledVersion::recorded(Some("bb"), Some("bb-0.1.0"));
        assert_eq!(
            full.map(|v| v.operator_version_name).as_deref(),
            Some("bb-0.1.0")
        );
        assert_eq!(InstalledVersion::recorded(Some("half"), None), None);
        assert_eq!(InstalledVersion::recorded(None, Some("cc-0.1.0")), None);
    }

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

    fn version(operator: &str, ov: &str) -> InstalledVersion {
        InstalledVersion {
            operator: operator.into(),
            operator_version_name: ov.into(),
        }
    }

    fn operators(versions: &[InstalledVersion]) -> Vec<&str> {
        versions.iter().map(|v| v.operator.as_str()).collect()
    }

    #[test]
    fn dependencies_install_children_first_not_alphabetically() {
        let (root, resolution) = kep29();
        let installed: Vec<&str> = dependency_install_sequence(&resolution, &root)
            .into_iter()
            .map(|p| p.operator.name.as_str())
            .collect();
        // bb needs ee and gg; aa (installed last) needs bb and cc.
        assert_eq!(installed, ["ee", "gg", "bb", "cc"]);
    }

    #[test]
    fn the_tree_installs_level_by_level_each_package_after_what_it_needs() {
        let (root, resolution) = kep29();
        let all: Vec<(&Package, bool, bool)> = dependency_install_sequence(&resolution, &root)
            .into_iter()
            .map(|p| (p, false, false))
            .chain(std::iter::once((&root, true, false)))
            .collect();
        let waves: Vec<Vec<&str>> = install_waves(all, &resolution)
            .into_iter()
            .map(|wave| {
                wave.into_iter()
                    .map(|(p, _, _)| p.operator.name.as_str())
                    .collect()
            })
            .collect();
        // ee, gg and cc need nothing; bb needs ee and gg; aa needs bb and cc.
        assert_eq!(waves, [vec!["ee", "gg", "cc"], vec!["bb"], vec!["aa"]]);
    }

    #[test]
    fn the_operator_goes_first_then_dependencies_in_reverse_install_order() {
        let tree = InstalledTree {
            namespace: "b".into(),
            root: version("aa", "aa-0.1.0"),
            dependencies: vec![
                version("bb", "bb-0.1.0"),
                version("ee", "ee-0.1.0"),
                version("gg", "gg-0.1.0"),
                version("cc", "cc-0.1.0"),
            ],
            install_order: ["ee-0.1.0", "gg-0.1.0", "bb-0.1.0", "cc-0.1.0", "aa-0.1.0"]
                .map(String::from)
                .to_vec(),
            create_namespace: false,
        };
        assert_eq!(
            operators(&tree.removal_order()),
            ["aa", "cc", "bb", "gg", "ee"]
        );
    }

    #[test]
    fn a_record_without_install_order_still_removes_every_dependency() {
        let tree = InstalledTree {
            namespace: "b".into(),
            root: version("aa", "aa-0.1.0"),
            dependencies: vec![version("bb", "bb-0.1.0"), version("cc", "cc-0.1.0")],
            install_order: Vec::new(),
            create_namespace: false,
        };
        assert_eq!(operators(&tree.removal_order()), ["aa", "cc", "bb"]);
    }

    #[test]
    fn versions_the_new_tree_does_not_use_are_stale() {
        let (root, resolution) = kep29();
        let previous = InstalledTree {
            namespace: "b".into(),
            root: version("aa", "aa-0.0.9"),
            dependencies: vec![version("bb", "bb-0.1.0"), version("old", "old-1.0.0")],
            install_order: Vec::new(),
            create_namespace: false,
        };
        assert_eq!(
            previous.stale_after(&root, &resolution),
            [version("aa", "aa-0.0.9"), version("old", "old-1.0.0")]
        );
        let same = InstalledTree {
            root: version("aa", "aa-0.1.0"),
            dependencies: vec![version("bb", "bb-0.1.0")],
            ..previous
        };
        assert!(same.stale_after(&root, &resolution).is_empty());
    }

    #[test]
    fn failures_and_versions_left_say_what_and_how_to_clean_up() {
        let left = NotRemoved {
            version: InstalledVersion {
                operator: "bb".into(),
                operator_version_name: "bb-0.1.0".into(),
            },
            namespace: "ns".into(),
            error: EngineError::transient("forbidden"),
        };
        assert_eq!(
            left.left_behind_summary(),
            "OperatorVersion ns/bb-0.1.0 left behind"
        );
        assert_eq!(
            left.left_behind_detail(),
            format!(
                "The failed create could not remove what it wrote: {}. Delete it with kubectl delete operatorversion -n ns bb-0.1.0.",
                left.error
            )
        );
        assert_eq!(left.stale_summary(), "Previous OperatorVersion not removed");
        assert_eq!(
            left.stale_detail(),
            format!(
                "bb-0.1.0: {}\n\nNothing uses it any more; delete it with kubectl if it stays.",
                left.error
            )
        );
        let failure = |root| OperatorFailure::Package {
            operator: "bb".into(),
            root,
            error: Box::new(EngineError::transient("refused")),
            left_behind: Vec::new(),
        };
        assert_eq!(failure(true).summary("aa"), "Cannot install the operator");
        assert_eq!(
            failure(false).summary("aa"),
            "Cannot install dependency bb of operator aa"
        );
    }
}
