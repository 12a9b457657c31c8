//! The plan, apply and destroy of a `kudo_operator`, as one action each: the caller
//! decodes its values into an [`OperatorRequest`] (or, to destroy, the
//! [`InstalledTree`] its state records) and gets one answer back.
//!
//! Each is a sequence whose order is the engine's decision, not the caller's: the
//! package and its dependency tree are loaded first (the apply holds them to what its
//! plan showed), the namespace is checked (and, for `create_namespace`, created) before anything is
//! written into it; the versions an update is about to remove are read before they
//! go, so the caller can keep copies for the instances that still move off them; and
//! on destroy the namespace is released only once the tree is gone.

use std::collections::BTreeMap;

use kudo_package::{LoadContext, Package};
use kudo_resolve::{PlannedTree, Resolution};
use tokio_util::sync::CancellationToken;

use super::destroy::Destroyed;
use super::error::EngineError;
use super::namespace::{NamespaceUser, ensure_namespace, plan_namespace, release_namespace};
use super::operator::load_operator;
use super::operator_tree::{
    InstallRequest, InstalledTree, NotRemoved, OperatorFailure, check_install, install_tree,
    uninstall_tree, versions_present,
};
use super::tree_load::load_operator_tree;
use crate::cluster::{Cluster, CrdsEnsured};

/// What [`plan_operator`] checks and [`apply_operator`] installs: the package `package`
/// names with its dependency tree, in a namespace. `previous` and `planned_digest` are
/// the apply's.
#[derive(Debug, Clone, Copy)]
pub struct OperatorRequest<'a> {
    pub namespace: &'a str,
    /// The package as `kudo_operator.package` names it (a folder, archive, URL,
    /// repository name or `cluster:` source), loaded and its dependencies resolved
    /// from `sources` with `overrides` ([`super::load_operator_tree`]).
    pub package: &'a str,
    pub sources: &'a LoadContext,
    pub overrides: &'a BTreeMap<String, String>,
    /// Exactly what an earlier plan of this change resolved, read again and checked.
    pub planned: Option<&'a PlannedTree>,
    /// The apply's: the content digest its plan showed (`kudo_operator.digest`; the
    /// empty string for one the plan left null, which no package matches): a package
    /// that no longer has it is [`OperatorFailure::Changed`], before anything is
    /// written. `None`: the plan did not know it.
    pub planned_digest: Option<&'a str>,
    /// Create the namespace when it is missing (`create_namespace`), for this operator.
    pub create_namespace: bool,
    /// What the previous install left (an update): versions the new tree no longer
    /// uses are removed. `None`: a create, which removes what it wrote when it fails.
    pub previous: Option<&'a InstalledTree>,
}

impl OperatorRequest<'_> {
    /// The user the namespace is created for, when it is to be created.
    fn namespace_user(&self, root: &Package) -> Option<NamespaceUser> {
        self.create_namespace
            .then(|| NamespaceUser::operator(self.namespace, &root.operator.name))
    }

    /// The package and its tree (offline, a `cluster:` source is
    /// [`super::TreeLoadError::NoCluster`]).
    async fn load(
        &self,
        cluster: Option<&Cluster>,
    ) -> Result<(Package, Resolution), OperatorFailure> {
        let (sources, overrides) = (self.sources.clone(), self.overrides.clone());
        load_operator_tree(
            cluster,
            self.package,
            sources,
            overrides,
            self.planned.cloned(),
        )
        .await
        .map_err(|e| OperatorFailure::Load(Box::new(e)))
    }
}

/// A completed [`apply_operator`].
#[derive(Debug, Clone)]
pub struct OperatorApplied {
    /// The package installed, and its dependency tree: what the caller's state records.
    pub package: Package,
    pub resolution: Resolution,
    /// The versions the previous install left that the new tree no longer uses, as read
    /// just before the install removed them: instances move off them later in the same
    /// apply, and one that fails with `rollback_on_failure` goes back to its version, so
    /// the caller keeps copies. A version that could not be read is missing (and logged).
    pub stale: Vec<Package>,
    /// Those of them the install could not remove (a warning each:
    /// `stale_summary()`, `stale_detail()`).
    pub stale_left: Vec<NotRemoved>,
}

/// The plan of the request's tree: the package loaded and its dependencies resolved
/// (`cluster` is `None` while the connection is not known: a `cluster:` source then
/// fails with [`super::TreeLoadError::NoCluster`], and dependency versions go
/// unfiltered), then, with a cluster and when `applies` says the caller's apply will
/// install this tree (Terraform plans a change: a plan that changes nothing asks the
/// cluster nothing more), what the apply would meet, without writing anything: a
/// namespace that is not there (unless the request creates it, and these credentials
/// may), KUDO's CRDs these credentials may not create, a refused Operator or
/// OperatorVersion of the root. Answers the package and its tree.
pub async fn plan_operator(
    cluster: Option<&Cluster>,
    req: &OperatorRequest<'_>,
    applies: impl FnOnce(&Package, &Resolution) -> bool,
) -> Result<(Package, Resolution), OperatorFailure> {
    let (root, resolution) = req.load(cluster).await?;
    let Some(cluster) = cluster.filter(|_| applies(&root, &resolution)) else {
        return Ok((root, resolution));
    };
    let user = req.namespace_user(&root);
    // Two independent questions, asked side by side; the namespace's answer comes first.
    let (namespace, install) = futures::future::join(
        plan_namespace(cluster, req.namespace, user.as_ref()),
        check_install(cluster, &root, req.namespace),
    )
    .await;
    namespace.map_err(OperatorFailure::Namespace)?;
    install?;
    Ok((root, resolution))
}

/// Installs the request's tree: the package loaded (as its plan resolved it, and with
/// the digest its plan showed), then the namespace (created for `create_namespace`, or
/// a failure for good when missing), then the tree, removing what the previous install
/// left unused.
pub async fn apply_operator(
    cluster: &Cluster,
    req: &OperatorRequest<'_>,
    cancel: &CancellationToken,
) -> Result<OperatorApplied, OperatorFailure> {
    let (root, resolution) = req.load(Some(cluster)).await?;
    if let Some(planned) = req.planned_digest
        && planned != kudo_package::crd::content_digest(&root)
    {
        return Err(OperatorFailure::Changed {
            package: req.package.to_string(),
        });
    }
    let (root, resolution) = (&root, &resolution);
    let user = req.namespace_user(root);
    // KUDO's CRDs are cluster-scoped and the versions about to go are only read: both
    // go beside the namespace's check instead of after it (the install below counts on
    // the CRDs being there).
    let stale = async {
        match req.previous {
            Some(previous) => read_stale(cluster, previous, root, resolution).await,
            None => Vec::new(),
        }
    };
    // A create's look at which of its versions are there already goes beside them too,
    // when this process knows where OperatorVersions are served (else it would ask
    // discovery a second time for what the CRDs' check is asking: read after it).
    let creating = req.previous.is_none();
    let present = async {
        match creating && cluster.knows_kind(crate::cluster::KUDO_API_VERSION, "OperatorVersion") {
            true => Some(versions_present(cluster, req.namespace, root, resolution).await),
            false => None,
        }
    };
    let (namespace, crds, stale, present) = futures::join!(
        ensure_namespace(cluster, req.namespace, user.as_ref()),
        cluster.ensure_kudo_crds(),
        stale,
        present
    );
    namespace.map_err(OperatorFailure::Namespace)?;
    let crds = crds.map_err(OperatorFailure::Crds)?;
    // The OperatorVersion CRD was created a moment ago: no version existed.
    let existed = match (crds, present) {
        (
            CrdsEnsured::Established {
                operator_versions_created: true,
            },
            _,
        ) => Vec::new(),
        (_, Some(present)) => present,
        (_, None) if creating => versions_present(cluster, req.namespace, root, resolution).await,
        (_, None) => Vec::new(),
    };
    let install = InstallRequest {
        namespace: req.namespace,
        root,
        resolution,
        previous: req.previous,
        existed: &existed,
    };
    let installed = install_tree(cluster, &install, cancel).await?;
    Ok(OperatorApplied {
        package: root.clone(),
        resolution: resolution.clone(),
        stale,
        stale_left: installed.stale_left,
    })
}

/// The packages of the versions `previous` installed that the tree of `root` no longer
/// uses, read all at once. One that cannot be read is left out: only the caller's
/// copies depend on it, and the install goes ahead either way.
async fn read_stale(
    cluster: &Cluster,
    previous: &InstalledTree,
    root: &Package,
    resolution: &Resolution,
) -> Vec<Package> {
    let stale = previous.stale_after(root, resolution);
    let reads = stale.iter().map(|v| {
        let operator = Some(v.operator.as_str());
        load_operator(
            cluster,
            &previous.namespace,
            &v.operator_version_name,
            operator,
        )
    });
    let mut packages = Vec::new();
    for (version, read) in stale.iter().zip(futures::future::join_all(reads).await) {
        match read {
            Ok(Some(pkg)) => packages.push(pkg),
            Ok(None) => {}
            Err(e) => tracing::warn!(
                error = %e,
                operator_version = %version.operator_version_name,
                "could not read a version about to be removed"
            ),
        }
    }
    packages
}

/// Removes everything `tree` installed (OperatorVersions Instances still run stay, and
/// are answered in [`Destroyed::kept`]), then releases the namespace when the record asked for it to be
/// created. A failed removal stops before the namespace is touched.
pub async fn destroy_operator(
    cluster: &Cluster,
    tree: &InstalledTree,
    cancel: &CancellationToken,
) -> Result<Destroyed, EngineError> {
    let kept = uninstall_tree(cluster, tree, cancel).await?;
    let namespace = match tree.create_namespace {
        true => {
            let user = NamespaceUser::operator(&tree.namespace, &tree.root.operator);
            Some(release_namespace(cluster, &tree.namespace, &user, cancel).await)
        }
        false => None,
    };
    // An operator leaves no volume claims: only what stayed and the namespace count.
    Ok(Destroyed {
        not_checked: Vec::new(),
        kept,
        volumes: Ok(Vec::new()),
        namespace,
    })
}
