//! The destroy of a `kudo_instance`, as one action: the caller decodes its state into a
//! [`DestroyRequest`] and gets one [`Destroyed`] answer (or a [`DestroyError`]) back.
//!
//! A destroy is a sequence whose order matters, and every step of it is a decision of
//! the engine's, not of the caller's: the `cleanup` plan runs only when the package has
//! one (and only then is the dependency tree worth resolving); the volume claims of the
//! StatefulSets are read while the StatefulSets still exist; the uninstall leaves the
//! claims to keep alone; the claims are settled once the instance is gone; and the
//! namespace `create_namespace` made is released last, because kept claims keep it.
//! Keeping the whole sequence here leaves the provider to translate values only.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use kudo_resolve::Resolution;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::apply_run::PackageSource;
use super::error::EngineError;
use super::installed_package::{dependency_tree, read_package};
use super::namespace::{NamespaceUser, Released, release_namespace};
use super::removal::{CrdDeletion, DestroyError, Kept};
use super::uninstall::{Cleanup, uninstall_instance_keeping};
use super::volumes::{InstanceVolumes, NotChecked};
use crate::cluster::{Cluster, ObjectRef};

/// What [`destroy_instance`] removes, and how.
pub struct DestroyRequest<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// The objects the instance's state records: the cleanup run's previous
    /// inventory, and what the uninstall deletes before it sweeps for labelled leftovers.
    pub inventory: &'a [ObjectRef],
    /// The package the instance runs. Only its `cleanup` plan needs it: when it cannot
    /// be read (no such OperatorVersion, no copy) the objects still go.
    pub package: PackageSource<'a>,
    /// Where an [`PackageSource::Installed`] OperatorVersion is.
    pub operator_namespace: &'a str,
    /// `spec.parameters`, as the cleanup run takes them (it reads the sensitive ones
    /// from the instance's Secret).
    pub parameters: &'a BTreeMap<String, String>,
    /// The sensitive parameters; with `parameters` they decide the dependency tree.
    pub sensitive: &'a BTreeMap<String, String>,
    /// The instance's render seed, so that cleanup renders what deploy did.
    pub render_seed: Option<&'a str>,
    /// The dependency tree of `package` as `kudo_operator` recorded it. Needed only when
    /// the package has a `cleanup` plan; without it, an [`PackageSource::Installed`]
    /// package's tree is resolved again from its sources. KudoOperator tasks of the
    /// cleanup plan take their packages from it, as the apply's plans do. Without one
    /// only folder dependencies run, which is no reason to keep the instance: the
    /// cleanup run says which task it could not load.
    pub resolution: Option<&'a Resolution>,
    pub crd_deletion: CrdDeletion,
    /// Delete the volume claims the instance's StatefulSets leave behind, rather than
    /// keep them as Kubernetes does.
    pub delete_volumes: bool,
    /// `create_namespace`: the instance created its namespace, which is released last
    /// (deleted when nothing else is left in it).
    pub create_namespace: bool,
    /// How long the uninstall may take, and then how long settling the claims may.
    pub timeout: Duration,
}

/// What a destroy did: the instance (or, from [`super::destroy_operator`], the operator)
/// is gone. What it left behind, and the steps after the uninstall that did not work
/// out, are for the caller to report as warnings (or, for [`Destroyed::volumes`], as an
/// error on a resource that is gone anyway). An operator's destroy leaves no volume
/// claims: its `not_checked` and `volumes` are empty.
#[derive(Debug)]
pub struct Destroyed {
    /// Volume claims that could not be looked for before the uninstall.
    pub not_checked: Vec<NotChecked>,
    /// Objects the uninstall left for other instances or their data (of an operator:
    /// OperatorVersions Instances still run).
    pub kept: Vec<Kept>,
    /// The volume claims the instance's StatefulSets left behind and that stay (none
    /// with `delete_volumes`), or why they could not be listed or deleted.
    pub volumes: Result<Vec<ObjectRef>, DestroyError>,
    /// What became of the namespace `create_namespace` created; `None` when the request
    /// did not set [`DestroyRequest::create_namespace`].
    pub namespace: Option<Result<Released, EngineError>>,
}

/// Destroys the instance `req` names: the `cleanup` plan when the package has one, the
/// instance with every object it and its dependency instances own (the volume claims
/// it keeps excepted), then its volume claims and its namespace, in that order.
/// `cancel` stops it; the request's timeout limits the uninstall and the claims each.
pub async fn destroy_instance(
    cluster: &Cluster,
    req: DestroyRequest<'_>,
    cancel: &CancellationToken,
) -> Result<Destroyed, DestroyError> {
    let DestroyRequest {
        namespace,
        name,
        inventory,
        package,
        operator_namespace,
        parameters,
        sensitive,
        render_seed,
        resolution,
        crd_deletion,
        delete_volumes,
        create_namespace,
        timeout,
    } = req;
    let (package, sources) = match package {
        PackageSource::Given(p) => (Some(Cow::Borrowed(p)), None),
        PackageSource::Installed {
            operator_version,
            copy,
            sources,
        } => {
            let read = read_package(cluster, operator_namespace, operator_version, copy)
                .await
                .map_err(|why| tracing::warn!(%why, "cleanup cannot run: no package"))
                .ok()
                .map(Cow::Owned);
            (read, Some(sources))
        }
    };
    let tree = match package.as_deref() {
        Some(p) if p.operator.plans.contains_key("cleanup") => {
            let mut all = parameters.clone();
            all.extend(sensitive.iter().map(|(k, v)| (k.clone(), v.clone())));
            let resolved = match (resolution, sources) {
                (Some(r), _) => Ok(Cow::Borrowed(r)),
                (None, Some(sources)) => dependency_tree(cluster, p, sources)
                    .await
                    .map(Cow::Owned)
                    .map_err(|e| e.to_string()),
                (None, None) => Err("no dependency tree".to_string()),
            };
            let tree = resolved.and_then(|r| {
                kudo_plan::change::tree_of(&r, p, name, namespace, &all, render_seed, None)
                    .map_err(|e| e.to_string())
            });
            tree.map_err(|why| tracing::warn!(%why, "cleanup runs without the dependency tree"))
                .ok()
        }
        _ => None,
    };
    let (volumes, not_checked) =
        InstanceVolumes::of_instance(cluster, namespace, name, inventory).await;
    let limit = Limit::new(cancel, timeout);
    let kept = uninstall_instance_keeping(
        cluster,
        namespace,
        name,
        inventory,
        package.as_deref().map(|package| Cleanup {
            package,
            parameters,
            render_seed,
            dependencies: tree.as_ref().map(|t| &t.packages),
        }),
        crd_deletion,
        volumes.keep(delete_volumes),
        &limit.token,
    )
    .await
    .map_err(|error| DestroyError::Uninstall {
        timed_out: (error.is_cancelled() && !cancel.is_cancelled()).then_some(timeout),
        error,
    })?;
    drop(limit);
    // The instance is gone; the claims are what its StatefulSets leave behind.
    let limit = Limit::new(cancel, timeout);
    let volumes = volumes.settle(cluster, delete_volumes, &limit.token).await;
    drop(limit);
    // Last: kept volume claims keep a namespace this instance created.
    let namespace = match create_namespace {
        true => {
            let user = NamespaceUser::instance(namespace, name);
            Some(release_namespace(cluster, namespace, &user, cancel).await)
        }
        false => None,
    };
    Ok(Destroyed {
        not_checked,
        kept,
        volumes,
        namespace,
    })
}

/// A child of the caller's token that also fires after a time limit, so that the
/// engine can say which object it was still waiting for rather than being dropped
/// (a rollback's limit too).
pub(super) struct Limit {
    pub(super) token: CancellationToken,
    timer: JoinHandle<()>,
}

impl Limit {
    pub(super) fn new(cancel: &CancellationToken, limit: Duration) -> Limit {
        let token = cancel.child_token();
        let fire = token.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            fire.cancel();
        });
        Limit { token, timer }
    }
}

impl Drop for Limit {
    fn drop(&mut self) {
        self.timer.abort();
    }
}
