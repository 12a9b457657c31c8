//! The plan, apply and destroy of a `kudo_operator`, as one action each: the caller
//! decodes its values into an [`OperatorRequest`] (or, to destroy, the
//! [`InstalledTree`] its state records) and gets one answer back.
//!
//! Each is a sequence whose order is the engine's decision, not the caller's: the
//! namespace is checked (and, for `create_namespace`, created) before anything is
//! written into it; the versions an update is about to remove are read before they
//! go, so the caller can keep copies for the instances that still move off them; and
//! on destroy the namespace is released only once the tree is gone.

use kudo_package::Package;
use kudo_resolve::Resolution;
use tokio_util::sync::CancellationToken;

use super::destroy::Destroyed;
use super::error::EngineError;
use super::namespace::{NamespaceUser, ensure_namespace, plan_namespace, release_namespace};
use super::operator::load_operator;
use super::operator_tree::{
    InstallRequest, InstalledTree, NotRemoved, OperatorFailure, check_install, install_tree,
    uninstall_tree, versions_present,
};
use crate::cluster::{Cluster, CrdsEnsured};

/// What [`plan_operator`] checks and [`apply_operator`] installs: a package tree in a
/// namespace. The plan checks the namespace and the root; `resolution` and `previous`
/// are the apply's.
#[derive(Debug, Clone, Copy)]
pub struct OperatorRequest<'a> {
    pub namespace: &'a str,
    pub root: &'a Package,
    pub resolution: &'a Resolution,
    /// Create the namespace when it is missing (`create_namespace`), for this operator.
    pub create_namespace: bool,
    /// What the previous install left (an update): versions the new tree no longer
    /// uses are removed. `None`: a create, which removes what it wrote when it fails.
    pub previous: Option<&'a InstalledTree>,
}

impl OperatorRequest<'_> {
    /// The user the namespace is created for, when it is to be created.
    fn namespace_user(&self) -> Option<NamespaceUser> {
        self.create_namespace
            .then(|| NamespaceUser::operator(self.namespace, &self.root.operator.name))
    }
}

/// A completed [`apply_operator`].
#[derive(Debug, Clone, Default)]
pub struct OperatorApplied {
    /// The versions the previous install left that the new tree no longer uses, as read
    /// just before the install removed them: instances move off them later in the same
    /// apply, and one that fails with `rollback_on_failure` goes back to its version, so
    /// the caller keeps copies. A version that could not be read is missing (and logged).
    pub stale: Vec<Package>,
    /// Those of them the install could not remove (a warning each:
    /// `stale_summary()`, `stale_detail()`).
    pub stale_left: Vec<NotRemoved>,
}

/// The plan's check of what [`apply_operator`] would meet, without writing anything: a
/// namespace that is not there (unless the request creates it, and these credentials
/// may), KUDO's CRDs these credentials may not create, a refused Operator or
/// OperatorVersion of the root.
pub async fn plan_operator(
    cluster: &Cluster,
    req: &OperatorRequest<'_>,
) -> Result<(), OperatorFailure> {
    let user = req.namespace_user();
    // Two independent questions, asked side by side; the namespace's answer comes first.
    let (namespace, install) = futures::future::join(
        plan_namespace(cluster, req.namespace, user.as_ref()),
        check_install(cluster, req.root, req.namespace),
    )
    .await;
    namespace.map_err(OperatorFailure::Namespace)?;
    install
}

/// Installs the request's tree: the namespace first (created for `create_namespace`,
/// or a failure for good when missing), then the tree, removing what the previous
/// install left unused.
pub async fn apply_operator(
    cluster: &Cluster,
    req: &OperatorRequest<'_>,
    cancel: &CancellationToken,
) -> Result<OperatorApplied, OperatorFailure> {
    let user = req.namespace_user();
    // KUDO's CRDs are cluster-scoped and the versions about to go are only read: both
    // go beside the namespace's check instead of after it (the install below counts on
    // the CRDs being there).
    let stale = async {
        match req.previous {
            Some(previous) => read_stale(cluster, previous, req.root, req.resolution).await,
            None => Vec::new(),
        }
    };
    // A create's look at which of its versions are there already goes beside them too,
    // when this process knows where OperatorVersions are served (else it would ask
    // discovery a second time for what the CRDs' check is asking: read after it).
    let creating = req.previous.is_none();
    let present = async {
        match creating && cluster.knows_kind(crate::cluster::KUDO_API_VERSION, "OperatorVersion") {
            true => Some(versions_present(cluster, req.namespace, req.root, req.resolution).await),
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
        (_, None) if creating => {
            versions_present(cluster, req.namespace, req.root, req.resolution).await
        }
        (_, None) => Vec::new(),
    };
    let install = InstallRequest {
        namespace: req.namespace,
        root: req.root,
        resolution: req.resolution,
        previous: req.previous,
        existed: &existed,
    };
    let installed = install_tree(cluster, &install, cancel).await?;
    Ok(OperatorApplied {
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
